package observed

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Node fields are found whatever the kind names them, two levels deep at
// most, and only with a value that can be a node's name.
func TestNodeReferences(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"ownerNodeID":  "worker-1",
			"placement":    map[string]any{"targetNodeName": "worker-2", "deeper": map[string]any{"nodeName": "too-deep"}},
			"nodeSelector": map[string]any{"kubernetes.io/hostname": "worker-3"},
			"node":         "worker-4",
			"nodeID":       "Not A Node Name!",
			"nodeCount":    int64(3),
		},
		"status":   map[string]any{"nodeName": "worker-5", "nodeRef": map[string]any{"kind": "Node", "name": "worker-6"}},
		"metadata": map[string]any{"nodeName": "not-read"},
	}}
	var got []string
	for _, r := range NodeReferences(u) {
		got = append(got, r.Field+"="+r.Node)
	}
	want := []string{"spec.node=worker-4", "spec.ownerNodeID=worker-1", "spec.placement.targetNodeName=worker-2",
		"status.nodeName=worker-5", "status.nodeRef.name=worker-6"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestStatusWordField(t *testing.T) {
	for key, want := range map[string][2]bool{
		"error": {true, false}, "lastError": {true, false}, "failureReason": {true, false}, "validationErrors": {true, false},
		"failureDomain": {false, false}, "message": {false, true}, "statusMessage": {false, true}, "phase": {false, true},
		"state": {false, true}, "reason": {false, true}, "progress": {false, false}, "conditions": {false, false},
	} {
		if named, describes := StatusWordField(key); named != want[0] || describes != want[1] {
			t.Errorf("%s: named %t describes %t, want %v", key, named, describes, want)
		}
	}
}

// References are found whatever the kind: typed ones (kind and name, with
// the group their apiVersion or apiGroup gives) and string fields, marked
// when their key says it holds a name; node fields and non-names are not.
func TestNamedIn(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"backupName":      "nightly",
		"storageLocation": "default",
		"sourceRef":       map[string]any{"kind": "GitRepository", "name": "app", "namespace": "flux-system", "apiVersion": "source.toolkit.fluxcd.io/v1"},
		"claimRef":        map[string]any{"kind": "PersistentVolumeClaim", "name": "data"},
		"nodeName":        "worker-1",
		"replicas":        int64(3),
		"description":     "Not a name!",
		"template":        map[string]any{"spec": map[string]any{"podName": "too-deep"}, "serviceName": "db"},
	}}}
	var got []string
	for _, r := range NamedIn(u) {
		got = append(got, fmt.Sprintf("%s=%s kind=%q group=%q word=%q suffixed=%t ns=%q", r.Field, r.Name, r.Kind, r.Group, r.Word, r.Suffixed, r.Namespace))
	}
	want := []string{
		`spec.backupName=nightly kind="" group="" word="backup" suffixed=true ns=""`,
		`spec.claimRef=data kind="PersistentVolumeClaim" group="" word="" suffixed=false ns=""`,
		`spec.sourceRef=app kind="GitRepository" group="source.toolkit.fluxcd.io" word="" suffixed=false ns="flux-system"`,
		`spec.storageLocation=default kind="" group="" word="storagelocation" suffixed=false ns=""`,
		`spec.template.serviceName=db kind="" group="" word="service" suffixed=true ns=""`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
