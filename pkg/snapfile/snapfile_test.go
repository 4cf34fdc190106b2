package snapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func secretTarget() *observed.Target {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name": "token", "namespace": "shop", "uid": "uid-token", "finalizers": []any{"example.com/hold"},
			"annotations": map[string]any{lastApplied: `{"data":{"password":"aHVudGVyMg=="}}`, "keep": "me"},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Update", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:data": map[string]any{"f:password": map[string]any{}}, "f:metadata": map[string]any{
					"f:finalizers": map[string]any{`v:"example.com/hold"`: map[string]any{}}, "f:labels": map[string]any{"f:keep": map[string]any{}}}}}},
		},
		"data": map[string]any{"password": "aHVudGVyMg=="},
	}}
	return &observed.Target{Ref: observed.ObjectRef{APIVersion: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: "token", UID: "uid-token"}, Object: u}
}

func object(apiVersion, kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
}

// What the rules tell apart survives the trip: nil (not read) and empty
// (read, none found), targets shared by two parents, struct-keyed maps, the
// skips' fields reports do not print.
func TestRoundTripKeepsWhatRulesDistinguish(t *testing.T) {
	shared := secretTarget()
	ns := &observed.Target{Ref: observed.ObjectRef{Kind: "Namespace", Resource: "namespaces", Name: "shop"},
		Object:     object("v1", "Namespace", "shop"),
		Namespace:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		Dependents: []*observed.Target{}, // read, none
		Contents: &observed.Contents{
			Counts:    map[schema.GroupResource]int{{Resource: "secrets"}: 10000},
			Resources: map[schema.GroupResource]schema.GroupVersionResource{{Resource: "secrets"}: {Version: "v1", Resource: "secrets"}},
			Held:      map[string][]*observed.Target{"example.com/hold": {shared}},
			Skipped:   []observed.Skip{{Check: "widgets.example.com", Reason: observed.SkipError, Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, APIMessage: "conversion webhook failed"}},
		}}
	owner := &observed.Target{Ref: observed.ObjectRef{Name: "owner"}, Object: object("apps/v1", "Deployment", "owner"), Dependents: []*observed.Target{shared}}
	in := &observed.Snapshot{
		Now:       time.Date(2026, 11, 23, 1, 2, 3, 456, time.UTC),
		Targets:   []*observed.Target{ns, owner},
		Admission: &observed.Admission{ServiceEndpoints: map[types.NamespacedName]int{{Namespace: "hooks", Name: "svc"}: 0}},
		Volumes:   observed.Volumes{Claims: map[types.NamespacedName]*corev1.PersistentVolumeClaim{{Namespace: "shop", Name: "gone"}: nil}},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, Saved{PluginVersion: "v1.2.3", Selection: Selection{Command: "why", Args: []string{"ns/shop"}}, Snapshot: in}); err != nil {
		t.Fatal(err)
	}
	saved, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	out := saved.Snapshot
	if !out.Now.Equal(in.Now) || saved.PluginVersion != "v1.2.3" || saved.Selection.Args[0] != "ns/shop" {
		t.Errorf("run: %v %q %+v", out.Now, saved.PluginVersion, saved.Selection)
	}
	gotNS, gotOwner := out.Targets[0], out.Targets[1]
	if gotNS.Dependents == nil || len(gotNS.Dependents) != 0 || gotOwner.ClaimUsers != nil || out.Leases != nil || out.Controllers != nil {
		t.Errorf("nil and empty are told apart: dependents %v, claim users %v, leases %v", gotNS.Dependents, gotOwner.ClaimUsers, out.Leases)
	}
	if gotNS.Contents.Held["example.com/hold"][0] != gotOwner.Dependents[0] {
		t.Error("a target shared by two parents is one target again")
	}
	if gotNS.Contents.Counts[schema.GroupResource{Resource: "secrets"}] != 10000 || gotNS.Contents.Resources[schema.GroupResource{Resource: "secrets"}].Version != "v1" {
		t.Errorf("contents: %+v", gotNS.Contents)
	}
	if sk := gotNS.Contents.Skipped[0]; sk.APIMessage != "conversion webhook failed" || sk.Resource.Resource != "widgets" {
		t.Errorf("skip: %+v", sk)
	}
	if n, ok := out.Admission.ServiceEndpoints[types.NamespacedName{Namespace: "hooks", Name: "svc"}]; !ok || n != 0 {
		t.Errorf("admission endpoints: %v", out.Admission.ServiceEndpoints)
	}
	if c, ok := out.Volumes.Claims[types.NamespacedName{Namespace: "shop", Name: "gone"}]; !ok || c != nil {
		t.Errorf("a claim looked up and not found stays so: %v", out.Volumes.Claims)
	}
	if out.DRA.Claims != nil {
		t.Errorf("DRA claims were not read: %v", out.DRA.Claims)
	}
}

// A Secret's data, the last-applied annotation (which may copy it), any
// annotation no rule reads and the fields managers own beyond finalizers
// are never written; the metadata the rules read is, and who wrote the
// object when.
func TestSaveLeavesOutPayloads(t *testing.T) {
	in := &observed.Snapshot{Targets: []*observed.Target{secretTarget()}}
	var buf bytes.Buffer
	if err := Encode(&buf, Saved{Snapshot: in}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"aHVudGVyMg", "f:data", "f:password", "f:labels", lastApplied, `"keep"`} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("%s written:\n%s", secret, buf.String())
		}
	}
	saved, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := saved.Snapshot.Targets[0].Object
	if got.GetFinalizers()[0] != "example.com/hold" || got.GetUID() != "uid-token" || got.GetNamespace() != "shop" {
		t.Errorf("metadata lost: %v", got.Object)
	}
	if mf := got.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "kubectl" || mf[0].Time == nil || !strings.Contains(mf[0].FieldsV1.GetRawString(), `example.com/hold`) {
		t.Errorf("who wrote the object, and its finalizer, lost: %+v", mf)
	}
	if in.Targets[0].Object.Object["data"] == nil {
		t.Error("saving changed the live snapshot")
	}
}

func TestLoadReadsGzipAndRefusesOtherFormats(t *testing.T) {
	dir := t.TempDir()
	in := &observed.Snapshot{Now: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}
	for _, name := range []string{"a.json", "a.json.gz"} {
		path := filepath.Join(dir, name)
		if err := Save(path, Saved{Snapshot: in}); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if gz := bytes.HasPrefix(data, []byte{0x1f, 0x8b}); gz != strings.HasSuffix(name, ".gz") {
			t.Errorf("%s: compressed %t", name, gz)
		}
		// Whatever the name: a renamed file still loads.
		renamed := filepath.Join(dir, "renamed-"+strings.TrimSuffix(name, ".gz"))
		if err := os.WriteFile(renamed, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := Load(renamed); err != nil || !s.Snapshot.Now.Equal(in.Now) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for doc, want := range map[string]string{
		`{"apiVersion":"snapshot.terminating.kubectl.io/v9","kind":"Snapshot"}`: "cannot read",
		`{"apiVersion":"v1","kind":"Pod"}`:                                      "not a snapshot",
		`not json`:                                                              "not a snapshot",
		`{"apiVersion":"` + APIVersion + `","kind":"Snapshot","roots":[7]}`:     "damaged",
	} {
		if _, err := Decode(strings.NewReader(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// A Kubernetes object of a kind without an allow-list is refused, not
// written whole: a new data source must say what of its objects the rules read.
func TestObjectsWithoutAnAllowListAreRefused(t *testing.T) {
	e := &encoder{}
	_, err := e.encode(reflect.ValueOf(appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"secret": "x"}}}))
	if err == nil || !strings.Contains(err.Error(), "no allow-list") {
		t.Errorf("a Deployment was written without an allow-list: %v", err)
	}
	if _, err := e.encode(reflect.ValueOf(&corev1.Node{})); err != nil {
		t.Errorf("a Node, which has one: %v", err)
	}
}

// The run's labels a file carries are a stranger's text: read back, they
// are cut to a bound, on a rune's boundary; within it, kept whole.
func TestRunLabelsAreBounded(t *testing.T) {
	for _, tc := range []struct{ context, want string }{
		{"prod-eu", "prod-eu"},
		{strings.Repeat("é", 1000), strings.Repeat("é", maxLabel/2) + "..."},
		{"x" + strings.Repeat("é", 1000), "x" + strings.Repeat("é", maxLabel/2-1) + "..."},
	} {
		var buf bytes.Buffer
		in := &observed.Snapshot{Now: time.Date(2026, 11, 23, 1, 2, 3, 0, time.UTC)}
		if err := Encode(&buf, Saved{PluginVersion: tc.context, Context: tc.context, Snapshot: in}); err != nil {
			t.Fatal(err)
		}
		saved, err := Decode(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if saved.Context != tc.want || saved.PluginVersion != tc.want {
			t.Errorf("%d bytes read back as %q, want %q", len(tc.context), saved.Context, tc.want)
		}
	}
}

// Of a custom resource, a file keeps what the generic rules read whatever
// the kind: the fields that name a node or another object and the status
// fields that carry its controller's words; never the rest of its spec or
// status.
func TestSaveKeepsNodeFieldsAndControllerWords(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "openebs.io/v1alpha1", "kind": "LVMVolume",
		"metadata": map[string]any{"name": "pvc-1", "namespace": "openebs", "uid": "uid-lv", "finalizers": []any{"lvm.openebs.io/finalizer"}},
		"spec": map[string]any{"ownerNodeID": "worker-1", "capacity": "10Gi", "password": "hunter2", "backupName": "nightly",
			"sourceRef": map[string]any{"kind": "Backup", "name": "b1", "token": "zzz-token"}},
		"status": map[string]any{"state": "Failed", "error": map[string]any{"code": "Internal", "message": "lvremove failed"}, "token": "s3cr3t"},
	}}
	in := &observed.Snapshot{Targets: []*observed.Target{{Ref: observed.ObjectRef{Kind: "LVMVolume", Resource: "lvmvolumes.local.openebs.io", Namespace: "openebs", Name: "pvc-1", UID: "uid-lv"}, Object: u}}}
	var buf bytes.Buffer
	if err := Encode(&buf, Saved{Snapshot: in}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "s3cr3t", "10Gi", "zzz-token"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("%s written", secret)
		}
	}
	saved, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := saved.Snapshot.Targets[0].Object
	node, _, _ := unstructured.NestedString(got.Object, "spec", "ownerNodeID")
	state, _, _ := unstructured.NestedString(got.Object, "status", "state")
	message, _, _ := unstructured.NestedString(got.Object, "status", "error", "message")
	backup, _, _ := unstructured.NestedString(got.Object, "spec", "backupName")
	source, _, _ := unstructured.NestedString(got.Object, "spec", "sourceRef", "name")
	if node != "worker-1" || state != "Failed" || message != "lvremove failed" || backup != "nightly" || source != "b1" {
		t.Errorf("kept %v", got.Object)
	}
}

// A file whose namespace claims to hold pods (being deleted, or not yet:
// a preflight's) that are not pods is refused, not walked.
func TestHeldPodsMustBePods(t *testing.T) {
	for _, live := range []bool{false, true} {
		ns := secretTarget()
		notAPod := secretTarget()
		ns.Contents = &observed.Contents{}
		if live {
			ns.Contents.Live = []*observed.Target{notAPod}
		} else {
			ns.Contents.Pods = []*observed.Target{notAPod}
		}
		var buf bytes.Buffer
		if err := Encode(&buf, Saved{Snapshot: &observed.Snapshot{Targets: []*observed.Target{ns}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(&buf); err == nil || !strings.Contains(err.Error(), "a pod it holds is not a pod") {
			t.Errorf("live %t: %v", live, err)
		}
	}
}
