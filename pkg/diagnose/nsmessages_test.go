package diagnose

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseContentRemaining(t *testing.T) {
	got := parseContentRemaining("Some resources are remaining: configmaps. has 1 resource instances, widgets.demo.example.com has 3 resource instances")
	want := []remaining{{"configmaps", 1}, {"widgets.demo.example.com", 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := parseContentRemaining("All content successfully removed"); got != nil {
		t.Errorf("no list: %+v", got)
	}
}

func TestParseFinalizersRemaining(t *testing.T) {
	got := parseFinalizersRemaining("Some content in the namespace has finalizers remaining: demo.example.com/release-quota in 3 resource instances, kubernetes.io/pvc-protection in 1 resource instances")
	want := []remaining{{"demo.example.com/release-quota", 3}, {"kubernetes.io/pvc-protection", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseFailingGroups(t *testing.T) {
	msg := "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1, custom.metrics.k8s.io/v1beta2: the server is currently unable to handle the request"
	got := parseFailingGroups(msg)
	want := []string{"metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func FuzzNamespaceMessages(f *testing.F) {
	for _, s := range []string{
		"Some resources are remaining: configmaps. has 1 resource instances, pods. has 2 resource instances",
		"Some content in the namespace has finalizers remaining: a.io/b in 3 resource instances",
		"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: x",
		"remaining: x has 99999999999999999999999 resource instances",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		for _, r := range append(parseContentRemaining(msg), parseFinalizersRemaining(msg)...) {
			if r.count < 0 || r.name == "" || !strings.Contains(msg, r.name) {
				t.Fatalf("%q: %+v", msg, r)
			}
		}
		for _, g := range parseFailingGroups(msg) {
			if !strings.Contains(msg, g) {
				t.Fatalf("%q: %q", msg, g)
			}
		}
	})
}
