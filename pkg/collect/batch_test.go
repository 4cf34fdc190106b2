package collect

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/kube"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Pods on n nodes, of which the last does not exist: the nodes and their
// Leases are read with a GET each for a few nodes, with one list each for many.
func TestReadNodes(t *testing.T) {
	for _, n := range []int{3, batchThreshold + 5} {
		var objs []runtime.Object
		s := observed.New(time.Now())
		for i := range n {
			name := fmt.Sprintf("node-%d", i)
			if i < n-1 {
				objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
					&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease}})
			}
			s.Targets = append(s.Targets, podTarget(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + name}, Spec: corev1.PodSpec{NodeName: name}}))
		}
		fake := kubefake.NewClientset(objs...)
		c := &Collector{Clients: &kube.Clients{Typed: fake}}
		c.readNodes(context.Background(), s)
		if len(s.Nodes) != n-1 || len(s.Leases) != n-1 || !s.MissingNodes[fmt.Sprintf("node-%d", n-1)] || len(s.MissingNodes) != 1 {
			t.Errorf("%d nodes: read %d nodes, %d leases, missing %v", n, len(s.Nodes), len(s.Leases), s.MissingNodes)
		}
		verbs := map[string]int{}
		for _, a := range fake.Actions() {
			verbs[a.GetVerb()]++
		}
		want := map[string]int{"get": 2 * n}
		if n > batchThreshold {
			want = map[string]int{"list": 2}
		}
		if fmt.Sprint(verbs) != fmt.Sprint(want) {
			t.Errorf("%d nodes: requests %v, want %v", n, verbs, want)
		}
	}
}

// Many pods in one namespace: one list of the namespace's events, each
// event given to the pod it is about.
func TestReadEventsOfManyPodsInANamespace(t *testing.T) {
	var objs []runtime.Object
	s := observed.New(time.Now())
	n := batchThreshold + 2
	for i := range n {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "shop", UID: uid}}
		u := &unstructured.Unstructured{}
		u.SetUID(uid)
		s.Targets = append(s.Targets, &observed.Target{Pod: pod, Object: u, Ref: report.ObjectRef{Namespace: "shop", Name: pod.Name}})
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: "shop"},
			InvolvedObject: corev1.ObjectReference{UID: uid}, Reason: "Killing"})
	}
	fake := kubefake.NewClientset(objs...)
	c := &Collector{Clients: &kube.Clients{Typed: fake}}
	c.readEvents(context.Background(), s)
	// What a claim's or a snapshot's controller says in the same namespace
	// comes from the same list, whichever reader asks first.
	s.NamespaceClaims = map[string][]corev1.PersistentVolumeClaim{"shop": {{ObjectMeta: metav1.ObjectMeta{Name: "data", UID: "uid-0"}}}}
	c.readBlockerEvents(context.Background(), s, []string{"shop"})
	if len(fake.Actions()) != 1 {
		t.Errorf("%d requests, want one list", len(fake.Actions()))
	}
	if len(s.BlockerEvents["uid-0"]) != 1 {
		t.Errorf("blocker events %v", s.BlockerEvents)
	}
	for i := range n {
		if ev := s.Events[types.UID(fmt.Sprintf("uid-%d", i))]; len(ev) != 1 || ev[0].Name != fmt.Sprintf("e%d", i) {
			t.Errorf("pod %d: events %+v", i, ev)
		}
	}
}

// Many terminating pods that are most of their namespace: one list. A few,
// or a few among many: a GET each.
func TestReadPods(t *testing.T) {
	for _, tc := range []struct {
		terminating, inNamespace int
		want                     map[string]int
	}{
		{batchThreshold + 2, batchThreshold + 4, map[string]int{"list": 1}},
		{batchThreshold + 2, 100 * batchThreshold, map[string]int{"get": batchThreshold + 2}},
		{3, 3, map[string]int{"get": 3}},
	} {
		var objs []runtime.Object
		var targets []*observed.Target
		for i := range tc.inNamespace {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", i))}}
			objs = append(objs, pod)
			if i < tc.terminating {
				u := &unstructured.Unstructured{}
				u.SetUID(pod.UID)
				targets = append(targets, &observed.Target{Object: u, Ref: report.ObjectRef{Resource: "pods", Namespace: "shop", Name: pod.Name}})
			}
		}
		fake := kubefake.NewClientset(objs...)
		(&Collector{Clients: &kube.Clients{Typed: fake}}).readPods(context.Background(), targets, map[string]int{"shop": tc.inNamespace})
		verbs := map[string]int{}
		for _, a := range fake.Actions() {
			verbs[a.GetVerb()]++
		}
		if fmt.Sprint(verbs) != fmt.Sprint(tc.want) {
			t.Errorf("%d of %d: requests %v, want %v", tc.terminating, tc.inNamespace, verbs, tc.want)
		}
		for _, tg := range targets {
			if tg.Pod == nil || tg.Pod.Name != tg.Ref.Name {
				t.Errorf("%d of %d: %s not read", tc.terminating, tc.inNamespace, tg.Ref.Name)
			}
		}
	}
}

// A listed object is kept with who wrote it and when, without the fields
// each manager owns, and the page it came from is left as it was.
func TestMetadataToUnstructuredKeepsOnlyWriters(t *testing.T) {
	at := metav1.Now()
	p := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "shop", Finalizers: []string{"example.com/hold"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status", Time: &at,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}}}
	u := metadataToUnstructured(p, typeRef{apiVersion: "v1", kind: "ConfigMap"})
	mf := u.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != "kubectl" || mf[0].Subresource != "status" || mf[0].Time == nil || mf[0].FieldsV1 != nil ||
		len(u.GetFinalizers()) != 1 || u.GetKind() != "ConfigMap" || u.GetNamespace() != "shop" {
		t.Errorf("kept %v", u.Object)
	}
	if len(p.ManagedFields) != 1 || p.ManagedFields[0].FieldsV1 == nil {
		t.Errorf("the listed object lost its managedFields: %v", p.ManagedFields)
	}
}

// Objects of one kind held in many namespaces, a few in each (configmaps
// held by a finalizer in a hundred namespaces): one list of that kind's
// events in every namespace, each event given to the object it is about.
func TestReadEventsOfOneKindOverManyNamespaces(t *testing.T) {
	var objs []runtime.Object
	s := observed.New(time.Now())
	now := metav1.Now()
	n := batchThreshold + 2
	for i := range n {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		ns := fmt.Sprintf("apps-%02d", i)
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
		u.SetUID(uid)
		u.SetNamespace(ns)
		u.SetName("settings")
		u.SetFinalizers([]string{"acme.io/keep"})
		u.SetDeletionTimestamp(&now)
		s.Targets = append(s.Targets, &observed.Target{Object: u, Ref: report.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: "settings"}})
		objs = append(objs, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", UID: uid}, Reason: "CleanupFailed"})
	}
	fake := kubefake.NewClientset(objs...)
	c := &Collector{Clients: &kube.Clients{Typed: fake}}
	c.readEvents(context.Background(), s)
	if a := fake.Actions(); len(a) != 1 || a[0].GetNamespace() != "" ||
		a[0].(k8stesting.ListAction).GetListRestrictions().Fields.String() != "involvedObject.kind=ConfigMap" {
		t.Errorf("requests %v, want one list of ConfigMaps' events in every namespace", a)
	}
	for i := range n {
		if ev := s.Events[types.UID(fmt.Sprintf("uid-%d", i))]; len(ev) != 1 || ev[0].Name != fmt.Sprintf("e%d", i) {
			t.Errorf("configmap %d: events %+v", i, ev)
		}
	}
}

// The object a scan keeps is the one the reflecting converter makes of the
// listed metadata (its managedFields trimmed to their writers), every field
// set, none empty left behind: its nulls (a zero creationTimestamp) aside,
// the same map.
func TestMetadataToUnstructuredAsTheConverterDoes(t *testing.T) {
	created, deleted, wrote := metav1.NewTime(time.Unix(1700000000, 0)), metav1.NewTime(time.Unix(1700000500, 0)), metav1.NewTime(time.Unix(1700000400, 0))
	grace, yes := int64(30), true
	full := metav1.ObjectMeta{Name: "cm", GenerateName: "cm-", Namespace: "shop", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: created, DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace,
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u-0", Controller: &yes, BlockOwnerDeletion: &yes}},
		Finalizers:      []string{"example.com/hold", "kubernetes.io/pvc-protection"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &wrote, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)},
			{Manager: "operator", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}}
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for name, meta := range map[string]metav1.ObjectMeta{"every field": full, "none": {}} {
		p := &metav1.PartialObjectMetadata{ObjectMeta: meta}
		kept := *p
		kept.ManagedFields = writersOnly(p.ManagedFields)
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kept)
		if err != nil {
			t.Fatal(err)
		}
		(&unstructured.Unstructured{Object: want}).SetGroupVersionKind(gvk)
		if got := metadataToUnstructured(p, typeRef{apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind}).Object; !reflect.DeepEqual(withoutNulls(got), withoutNulls(want)) {
			t.Errorf("%s: kept\n%v\nthe converter's\n%v", name, got, want)
		}
	}
}

// withoutNulls is m without its null values and the maps they leave empty.
func withoutNulls(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = withoutNulls(sub)
			if len(v.(map[string]any)) == 0 {
				continue
			}
		}
		if v != nil {
			out[k] = v
		}
	}
	return out
}
