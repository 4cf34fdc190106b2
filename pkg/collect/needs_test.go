package collect

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery/cached/memory"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
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

// The scan works out, while its lists are in flight, what each object being
// deleted is named in the report and what its rules need: what the old
// path (Found.Ref, then the first stage's rememberNeeds) gives of its
// target, which has no other part yet. A namespace is left to that path
// (its early reads take its spec to hold the namespace controller's
// finalizer), as is an object not being deleted.
func TestTheScanWorksOutTheFirstStagesNeeds(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	widgets := &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"},
		GroupVersionKind: schema.GroupVersionKind{Group: "acme.io", Version: "v1", Kind: "Widget"}, Scope: meta.RESTScopeNamespace}
	pods := &meta.RESTMapping{Resource: corev1.SchemeGroupVersion.WithResource("pods"), GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Pod"), Scope: meta.RESTScopeNamespace}
	namespaces := &meta.RESTMapping{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"), GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Scope: meta.RESTScopeRoot}
	object := func(apiVersion, kind, namespace, name string, deleted bool, finalizers ...string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: k8stypes.UID("uid-" + name), Finalizers: finalizers,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "acme.io/v1", Kind: "Widget", Name: "owner", UID: "uid-owner"}},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "acme-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: &now}}}}
		if deleted {
			o.DeletionTimestamp = &now
		}
		return o
	}
	md := metadatafake.NewSimpleMetadataClient(metaScheme(t),
		object("acme.io/v1", "Widget", "shop", "held", true, "acme.io/cleanup"),
		object("acme.io/v1", "Widget", "shop", "bare", true),
		object("acme.io/v1", "Widget", "shop", "live", false, "acme.io/cleanup"),
		object("v1", "Pod", "shop", "web", true),
		object("v1", "Namespace", "", "shop", true, "acme.io/cleanup"))
	fake := kubefake.NewClientset()
	c := &Collector{Clients: &kube.Clients{Typed: fake, Metadata: md, Discovery: memory.NewMemCacheClient(fake.Discovery()),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"})}}
	found, err := c.Scan(ctx, Scope{Namespace: "shop"}, []*meta.RESTMapping{widgets, pods, namespaces})
	if err != nil {
		t.Fatal(err)
	}
	var worked []string
	for _, f := range found {
		if f.listed == nil {
			continue
		}
		worked = append(worked, f.Object.GetName())
		unworked := Found{GVR: f.GVR, Object: f.Object, Whole: f.Whole}
		if f.Ref() != unworked.Ref() || !unworked.Terminating() {
			t.Errorf("%s: named %+v, want %+v (terminating: %v)", f.Object.GetName(), f.Ref(), unworked.Ref(), unworked.Terminating())
		}
		if want := diagnose.Needs(&observed.Target{Ref: unworked.Ref(), Object: f.Object}); f.listed.needs != want {
			t.Errorf("%s: needs %v, want %v", f.Object.GetName(), f.listed.needs, want)
		}
	}
	if !sameSet(worked, []string{"held", "bare", "web"}) {
		t.Errorf("worked out %v, want the objects being deleted but the namespace", worked)
	}

	// What the first stage records of each target is what it would have
	// asked.
	targets := make([]*observed.Target, len(found))
	for i, f := range found {
		targets[i] = &observed.Target{Ref: f.Ref(), Object: f.Object, Whole: f.Whole, Forecast: !f.Terminating()}
	}
	s := &observed.Snapshot{Targets: targets}
	seeded, asked := &Collector{}, &Collector{}
	seeded.stageNeeds = listedNeeds(found, targets)
	seeded.rememberNeeds(s)
	asked.rememberNeeds(s)
	for _, tg := range targets {
		if seeded.stageNeeds[tg].e != asked.stageNeeds[tg].e {
			t.Errorf("%s: the first stage recorded %v, want %v", tg.Ref.Name, seeded.stageNeeds[tg].e, asked.stageNeeds[tg].e)
		}
	}
}
