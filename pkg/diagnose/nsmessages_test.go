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

// Both messages as the v1.36 namespace controller wrote them on the lab.
const (
	webhookFailureMessage    = `Failed to delete all resource types, 2 remaining: Internal error occurred: failed calling webhook "cm.deny.example.com": failed to call webhook: Post "https://hook-down.default.svc:443/validate?timeout=10s": service "hook-down" not found, storage is (re)initializing: failed to list conv.example.com/v2, Kind=Gadget: conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://conv-down.default.svc:443/convert?timeout=30s": service "conv-down" not found`
	conversionFailureMessage = `Failed to delete all resource types, 1 remaining: conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://conv-down.default.svc:443/convert?timeout=30s": service "conv-down" not found`
)

func TestParseWebhookNames(t *testing.T) {
	if got := parseWebhookNames(webhookFailureMessage); !reflect.DeepEqual(got, []string{"cm.deny.example.com"}) {
		t.Errorf("failed call: %v", got)
	}
	denied := `admission webhook "deny.example.com" denied the request: configmaps are protected, admission webhook "deny.example.com" denied the request: again`
	if got := parseWebhookNames(denied); !reflect.DeepEqual(got, []string{"deny.example.com"}) {
		t.Errorf("denied: %v", got)
	}
	if got := parseWebhookNames(conversionFailureMessage); got != nil {
		t.Errorf("a conversion webhook is not an admission webhook: %v", got)
	}
}

func TestParseConversionFailures(t *testing.T) {
	want := []conversionFailure{{"conv.example.com", "v1", "Gadget", `Post "https://conv-down.default.svc:443/convert?timeout=30s": service "conv-down" not found`}}
	for _, msg := range []string{conversionFailureMessage, webhookFailureMessage} {
		if got := parseConversionFailures(msg); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\ngot  %+v\nwant %+v", msg, got, want)
		}
	}
}

func FuzzNamespaceMessages(f *testing.F) {
	for _, s := range []string{
		"Some resources are remaining: configmaps. has 1 resource instances, pods. has 2 resource instances",
		"Some content in the namespace has finalizers remaining: a.io/b in 3 resource instances",
		"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: x",
		"remaining: x has 99999999999999999999999 resource instances",
		webhookFailureMessage,
		conversionFailureMessage,
		"Failed to delete all resource types, 1 remaining: failed to delete pods for namespace: shop, err: unexpected items still remain in namespace: shop for gvr: /v1, Resource=pods",
		"Failed to delete all resource types, 99999999999999999999 remaining: unexpected items still remain",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if onlyLeftovers(msg) && !strings.Contains(msg, "unexpected items still remain") {
			t.Fatalf("%q: only leftovers, yet none reported", msg)
		}
		for _, r := range append(parseContentRemaining(msg), parseFinalizersRemaining(msg)...) {
			if r.count < 0 || r.name == "" || !strings.Contains(msg, r.name) {
				t.Fatalf("%q: %+v", msg, r)
			}
		}
		for _, c := range parseConversionFailures(msg) {
			if !strings.Contains(msg, c.group+"/"+c.version+", Kind="+c.kind) {
				t.Fatalf("%q: %+v", msg, c)
			}
		}
		for _, g := range append(parseFailingGroups(msg), parseWebhookNames(msg)...) {
			if !strings.Contains(msg, g) {
				t.Fatalf("%q: %q", msg, g)
			}
		}
	})
}

func TestOnlyLeftovers(t *testing.T) {
	for msg, want := range map[string]bool{
		"Failed to delete all resource types, 1 remaining: failed to delete pods for namespace: shop, err: unexpected items still remain in namespace: shop for gvr: /v1, Resource=pods": true,
		"Failed to delete all resource types, 2 remaining: unexpected items still remain in namespace: shop for gvr: /v1, Resource=pods, " + webhookFailureMessage:                       false,
		webhookFailureMessage:           false,
		"unexpected items still remain": false,
	} {
		if got := onlyLeftovers(msg); got != want {
			t.Errorf("onlyLeftovers(%q) = %t, want %t", msg, got, want)
		}
	}
}
