package collect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// What a stage's readers are told a target needs is what its rules said
// when the stage began; a target whose object a reader replaced (read in
// full) is asked again before the next stage, one untouched keeps its
// answer. A target nested during a stage is for the next stage's readers
// (the readers that ask run after the nesting ones: sources.go's nesting),
// and asked when met by needs.
func TestNeedsAreRememberedPerStage(t *testing.T) {
	held := func(withSpec bool) *unstructured.Unstructured {
		u := deletedWidget("acme.io/cleanup")
		if withSpec {
			u.Object["spec"] = map[string]any{"size": "big"}
		}
		return u
	}
	widget := &observed.Target{Ref: observed.ObjectRef{Kind: "Widget", Namespace: "shop", Name: "w"}, Object: held(false)}
	pod := &observed.Target{Ref: observed.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "p"}, Object: &unstructured.Unstructured{Object: map[string]any{}},
		Pod: &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}}
	s := &observed.Snapshot{Targets: []*observed.Target{widget, pod}}
	c := &Collector{}

	c.rememberNeeds(s)
	if got := c.needing(s, diagnose.NamedByEvidence); len(got) != 0 {
		t.Fatalf("a metadata-only object is not asked what names it: %v", got)
	}
	first := c.stageNeeds[pod]
	widget.Object = held(true) // read in full by a reader of the stage
	if got := c.needing(s, diagnose.NamedByEvidence); len(got) != 0 {
		t.Errorf("within the stage the answer is the stage's: %v", got)
	}
	c.rememberNeeds(s)
	if got := c.needing(s, diagnose.NamedByEvidence); len(got) != 1 || got[0] != widget {
		t.Errorf("the next stage asks the object read in full again: %v", got)
	}
	if c.stageNeeds[pod] != first {
		t.Errorf("an untouched target keeps its answer: %+v, was %+v", c.stageNeeds[pod], first)
	}
	nested := &observed.Target{Ref: observed.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "q"}, Object: &unstructured.Unstructured{Object: map[string]any{}},
		Pod: &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}}}
	widget.Dependents = append(widget.Dependents, nested)
	if got := c.needing(s, diagnose.NodeEvidence); len(got) != 1 {
		t.Errorf("a target nested during the stage is for the next: %d targets need their node, want 1", len(got))
	}
	if !c.needs(nested).Has(diagnose.NodeEvidence) {
		t.Error("a target nested during the stage is asked when met")
	}
	c.rememberNeeds(s)
	if got := c.needing(s, diagnose.NodeEvidence); len(got) != 2 {
		t.Errorf("the next stage: %d targets need their node, want 2", len(got))
	}
	c.rememberNeeds(nil)
	if c.stageNeeds != nil || c.stageTargets != nil {
		t.Error("forgotten after the last stage")
	}
}

// What names a held object is looked for around the run's own targets and
// the objects a namespace not being deleted holds (a preflight's), not
// around the objects in a namespace the run finds being deleted, held or
// targets themselves (list -A): its controller deletes what names them too.
func TestNamedByIsNotReadInsideANamespaceBeingDeleted(t *testing.T) {
	now := metav1.Now()
	object := func(ns, name string) *observed.Target {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "acme.io/v1", "kind": "Widget"}}
		u.SetNamespace(ns)
		u.SetName(name)
		return &observed.Target{Ref: observed.ObjectRef{Kind: "Widget", Namespace: ns, Name: name}, Object: u}
	}
	namespace := func(name string, deleted bool, held ...*observed.Target) *observed.Target {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if deleted {
			ns.DeletionTimestamp = &now
		}
		return &observed.Target{Ref: observed.ObjectRef{Kind: "Namespace", Name: name}, Namespace: ns,
			Contents: &observed.Contents{Held: map[string][]*observed.Target{"acme.io/cleanup": held}}}
	}
	inDeleted, inLive, top := object("gone", "a"), object("staying", "b"), object("gone", "c")
	s := &observed.Snapshot{Targets: []*observed.Target{namespace("gone", true, inDeleted), namespace("staying", false, inLive), top}}
	got := namedByTargets(s)
	if slices.Contains(got, inDeleted) || slices.Contains(got, top) || !slices.Contains(got, inLive) || len(got) != 3 {
		t.Errorf("targets %v: want the two namespaces and b, not a nor c", got)
	}
}

// TestReadersAskTheStagesAnswer keeps every reader on the stage's answer
// (Collector.needs): a reader that walked the rules itself, as four did,
// walked them for each of thousands of held objects in a list -A, a tenth of
// its CPU.
func TestReadersAskTheStagesAnswer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f == "needs.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "diagnose.Needs("); n > 0 {
			t.Errorf("%s asks diagnose.Needs %d times: ask c.needs (the stage's answer)", f, n)
		}
	}
}

// deletedWidget is widget shop/w of acme.io/v1, being deleted, held by
// finalizers, as a metadata scan lists it.
func deletedWidget(finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "acme.io/v1", "kind": "Widget"}}
	u.SetNamespace("shop")
	u.SetName("w")
	u.SetFinalizers(finalizers)
	now := metav1.Now()
	u.SetDeletionTimestamp(&now)
	return u
}
