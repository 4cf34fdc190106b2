package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func widget(requested time.Duration, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("shop")
	u.SetName("w1")
	u.SetDeletionTimestamp(ago(requested))
	u.SetDeletionGracePeriodSeconds(int64p(0))
	u.SetFinalizers(finalizers)
	return u
}

func TestFinalizerPending(t *testing.T) {
	it := Diagnose(snap(widget(10*time.Minute, "example.com/cleanup", "kubernetes.io/pvc-protection"))).Items[0]
	if got := codes(it); !slices.Equal(got, []string{"FinalizerPending"}) {
		t.Fatalf("codes = %v", got)
	}
	c := it.Causes[0]
	if it.Severity != report.Warning || !it.Stuck {
		t.Errorf("severity %s stuck %v", it.Severity, it.Stuck)
	}
	for _, want := range []string{"finalizer example.com/cleanup: removed by a third-party controller", "finalizer kubernetes.io/pvc-protection: removed by PVC protection controller"} {
		if !slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("evidence %q lacks %q", c.Evidence, want)
		}
	}
	last := c.Remediation[len(c.Remediation)-1]
	if !strings.Contains(last.Command, "kubectl patch widgets.example.com w1 -n shop") || !strings.Contains(last.Risk, "skips the cleanup") {
		t.Errorf("last step = %+v", last)
	}
}

// Issue 35: a long list of finalizers is named in full once (the item's
// finalizers, and a removal step each, at its own index), not in every
// sentence: 200 of the longest names on each target made a replay's YAML
// take 900 MiB.
func TestManyFinalizersAreNamedOnce(t *testing.T) {
	var fs []string
	for i := range 7 {
		fs = append(fs, fmt.Sprintf("f%d.example.com/cleanup", i))
	}
	it := Diagnose(snap(widget(10*time.Minute, fs...))).Items[0]
	c := it.Causes[0]
	if want := "deletion waits for 7 finalizers to be removed: f0.example.com/cleanup, f1.example.com/cleanup, f2.example.com/cleanup, f3.example.com/cleanup, f4.example.com/cleanup, +2 more"; c.Summary != want {
		t.Errorf("summary = %q, want %q", c.Summary, want)
	}
	if !slices.Equal(it.Finalizers, fs) || !slices.Equal(c.About.Finalizers, fs) {
		t.Errorf("finalizers %q, about %q: want all of %q", it.Finalizers, c.About.Finalizers, fs)
	}
	owners := slices.DeleteFunc(slices.Clone(c.Evidence), func(e string) bool { return !strings.Contains(e, "removed by") })
	if want := "finalizers f0.example.com/cleanup, f1.example.com/cleanup, f2.example.com/cleanup, f3.example.com/cleanup, f4.example.com/cleanup, +2 more: removed by a third-party controller"; len(owners) != 1 || !strings.HasPrefix(owners[0], want) {
		t.Errorf("who removes them: %q, want one line %q...", owners, want)
	}
	var removed []string
	for _, s := range c.Remediation {
		if s.Apply != nil && s.Apply.Verb == report.ActionRemoveFinalizer {
			removed = append(removed, s.Apply.Finalizer)
			if i := slices.Index(fs, s.Apply.Finalizer); !strings.Contains(s.Command, fmt.Sprintf(`"path":"/metadata/finalizers/%d","value":%q`, i, s.Apply.Finalizer)) {
				t.Errorf("the step for %s does not test index %d: %s", s.Apply.Finalizer, i, s.Command)
			}
		}
	}
	if !slices.Equal(removed, fs) {
		t.Errorf("removal steps for %q, want one for each of %q", removed, fs)
	}
}

func TestFinalizerJustAfterDeleteIsProgress(t *testing.T) {
	it := Diagnose(snap(widget(5*time.Second, "example.com/cleanup"))).Items[0]
	if it.Stuck || it.Severity != report.Info {
		t.Errorf("5s after the delete a finalizer is normal progress: stuck %v severity %s", it.Stuck, it.Severity)
	}
}

func TestExternalAttacherOwner(t *testing.T) {
	if o := catalog.FinalizerOwner("external-attacher/ebs.csi.aws.com"); !strings.Contains(o.Owner, "ebs.csi.aws.com") {
		t.Errorf("owner = %+v", o)
	}
}

func TestItemsMostSevereFirst(t *testing.T) {
	s := snap(widget(5*time.Second, "x/y"), terminatingNamespace(10*time.Minute), terminatingPod(10*time.Second, 30))
	var sev []report.Severity
	for _, it := range Diagnose(s).Items {
		sev = append(sev, it.Severity)
	}
	if !slices.Equal(sev, []report.Severity{report.Critical, report.Info, report.Info}) {
		t.Errorf("order = %v", sev)
	}
}

// The first step finds the controller of a third-party finalizer among the
// workloads as the liveness judgement does, by its words; for Kubernetes'
// own finalizers, it reads the object.
func TestFinalizerPendingFirstStepFindsTheController(t *testing.T) {
	first := func(finalizers ...string) report.Step {
		return Diagnose(snap(widget(10*time.Minute, finalizers...))).Items[0].Causes[0].Remediation[0]
	}
	if s := first("finalizers.acme.io/cleanup", "kubernetes.io/pvc-protection"); s.Command != "kubectl get deployments,statefulsets,daemonsets -A --show-labels | grep -Fi -e acme" || s.RiskLevel != report.RiskNone {
		t.Errorf("third-party: %+v", s)
	}
	if s := first("kubernetes"); s.Command != "kubectl get widgets.example.com w1 -n shop -o yaml" || s.RiskLevel != report.RiskNone {
		t.Errorf("Kubernetes' own: %+v", s)
	}
}
