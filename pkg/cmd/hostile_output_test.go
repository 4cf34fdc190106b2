package cmd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Text YAML's reader refuses raw (DEL, C1, U+FFFE, U+FFFF), folds (NEL) or
// that JSON escapes (NUL, ESC), and bytes that are not UTF-8 (a lone
// surrogate's encoding, 0xff): in a finalizer, a pod's name and a condition's
// message.
const (
	hostileText      = "quota\x7f\u0085\u009b31m\ufffe\uffff\x00\x1b[2J\xed\xa0\x80\xff end"
	hostileFinalizer = "example.com/drain\x7f\u0080\uffff"
	hostilePodName   = "cache-0\u009f\ufffe\xed\xbf\xbf"
)

func hostileCluster() []runtime.Object {
	objs := cluster()
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			if o.Name == "cache-0" {
				o.Name, o.UID, o.Finalizers = hostilePodName, "uid-hostile", []string{hostileFinalizer}
			}
		case *corev1.Namespace:
			if o.Name == "old" {
				o.Status.Conditions[0].Message = hostileText
			}
		}
	}
	return objs
}

// -o yaml prints the report whatever the cluster's text (it failed as a
// whole, exit 1: "yaml: control characters are not allowed"), with those
// runes escaped, and holds exactly what -o json holds.
func TestYAMLSurvivesHostileText(t *testing.T) {
	y, errOut, err := execute(t, fakes(t, hostileCluster(), nil), "why", "-A", "-o", "yaml")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("-o yaml: exit %d (%v), stderr %s", ExitCode(err), err, errOut)
	}
	j, _, err := execute(t, fakes(t, hostileCluster(), nil), "why", "-A", "-o", "json")
	if ExitCode(err) != ExitStuck {
		t.Fatalf("-o json: exit %d (%v)", ExitCode(err), err)
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal([]byte(y), &fromYAML); err != nil {
		t.Fatalf("-o yaml is not YAML: %v\n%s", err, y)
	}
	if err := json.Unmarshal([]byte(j), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Errorf("-o yaml does not hold what -o json holds:\n%s", y)
	}
	// Visibly escaped, as YAML writes them (invalid UTF-8 is U+FFFD, as in -o json).
	for _, want := range []string{`quota\x7F\N\x9B31m\uFFFE\uFFFF\0\e[2J` + "\ufffd\ufffd\ufffd\ufffd end", `cache-0\x9F\uFFFE`, `example.com/drain\x7F\x80\uFFFF`} {
		if !strings.Contains(y, want) {
			t.Errorf("-o yaml does not show %q:\n%s", want, y)
		}
	}
	// The exact text, for scripts: jsonpath and go-template share nothing of YAML's escaping.
	for _, format := range []string{"jsonpath={.items[*].object.name}", `go-template={{range .items}}{{.object.name}} {{end}}`} {
		out, _, err := execute(t, fakes(t, hostileCluster(), nil), "why", "-A", "-o", format)
		if ExitCode(err) != ExitStuck || !strings.Contains(out, "cache-0\u009f\ufffe") {
			t.Errorf("-o %s: exit %d (%v), out %q", format, ExitCode(err), err, out)
		}
	}
}
