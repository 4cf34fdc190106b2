package snapfile

import (
	"maps"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A snapshot file is attached to tickets, so it holds what the rules read
// and nothing else: every object is written through an allow-list of its
// fields (fields below). Environment variables, arguments, commands, probes,
// termination messages, a custom resource's spec, volume options and
// attributes, and labels and annotations the rules do not read are never
// written, whatever a user put in them.

// fields is an allow-list of JSON fields: each kept field maps to the
// allow-list of its own fields; nil keeps the field whole (scalars, and
// values no user text hides in). In a list, every element is kept through
// the same allow-list.
type fields map[string]fields

// whole marks a field kept with everything in it.
var whole fields

// metadata is what the rules read of any object's metadata; labels and
// annotations are filtered by key afterwards (keptLabels, keptAnnotations).
var metadata = fields{
	"name": whole, "generateName": whole, "namespace": whole, "uid": whole, "resourceVersion": whole,
	"generation": whole, "creationTimestamp": whole, "deletionTimestamp": whole,
	"deletionGracePeriodSeconds": whole, "finalizers": whole, "ownerReferences": whole,
	"labels": whole, "annotations": whole,
}

// networkSources are the fields that name a volume's backend, the only ones
// the volume rules read (diagnose/volumes.go), for pod and persistent
// volumes alike; a source type the rules do not follow keeps its presence.
var networkSources = fields{
	"nfs":                  {"server": whole, "path": whole},
	"iscsi":                {"targetPortal": whole, "iqn": whole, "lun": whole},
	"fc":                   {"targetWWNs": whole, "lun": whole, "wwids": whole},
	"cephfs":               {"monitors": whole, "path": whole},
	"rbd":                  {"monitors": whole, "pool": whole, "image": whole},
	"glusterfs":            {"endpoints": whole, "path": whole},
	"awsElasticBlockStore": {"volumeID": whole},
	"gcePersistentDisk":    {"pdName": whole},
	"azureDisk":            {"diskName": whole},
	"azureFile":            {"shareName": whole},
	"cinder":               {"volumeID": whole},
	"vsphereVolume":        {"volumePath": whole},
	"portworxVolume":       {"volumeID": whole},
	"quobyte":              {"registry": whole, "volume": whole},
	"scaleIO":              {"gateway": whole, "volumeName": whole},
	"storageos":            {"volumeName": whole},
	"photonPersistentDisk": {"pdID": whole},
	"flocker":              {"datasetName": whole, "datasetUUID": whole},
	"csi":                  {"driver": whole, "volumeHandle": whole},
	"flexVolume":           {"driver": whole},
	"hostPath":             {}, "local": {}, "emptyDir": {}, "configMap": {}, "secret": {}, "projected": {},
	"downwardAPI": {}, "image": {}, "gitRepo": {}, "ephemeral": {}, "persistentVolumeClaim": {"claimName": whole},
}

var containerState = fields{
	"running":    whole,
	"waiting":    {"reason": whole},
	"terminated": {"exitCode": whole, "signal": whole, "reason": whole, "startedAt": whole, "finishedAt": whole, "containerID": whole},
}

// containerStatus leaves out the termination message, which the container writes.
var containerStatus = fields{
	"name": whole, "state": containerState, "lastState": containerState, "ready": whole, "started": whole,
	"restartCount": whole, "containerID": whole,
}

var condition = fields{"type": whole, "status": whole, "reason": whole, "message": whole, "lastTransitionTime": whole,
	"lastHeartbeatTime": whole, "lastProbeTime": whole, "observedGeneration": whole}

func withVolumeName(f fields) fields {
	out := fields{"name": whole}
	for k, v := range f {
		out[k] = v
	}
	return out
}

func withMetadata(f fields) fields {
	f["metadata"] = metadata
	return f
}

// allowed is the allow-list of each kind of object a snapshot holds.
var allowed = map[reflect.Type]fields{
	reflect.TypeFor[corev1.Pod](): withMetadata(fields{
		"spec": {
			"nodeName": whole, "terminationGracePeriodSeconds": whole, "resourceClaims": whole,
			"volumes":        withVolumeName(networkSources),
			"containers":     {"name": whole},
			"initContainers": {"name": whole, "restartPolicy": whole},
		},
		"status": {
			"phase": whole, "reason": whole, "conditions": condition, "startTime": whole, "resourceClaimStatuses": whole,
			"containerStatuses": containerStatus, "initContainerStatuses": containerStatus, "ephemeralContainerStatuses": containerStatus,
		},
	}),
	reflect.TypeFor[corev1.Namespace](): withMetadata(fields{"spec": {"finalizers": whole}, "status": {"phase": whole, "conditions": condition}}),
	reflect.TypeFor[corev1.Node](): withMetadata(fields{
		"spec":   {"taints": whole, "unschedulable": whole},
		"status": {"conditions": condition, "volumesInUse": whole, "volumesAttached": whole, "nodeInfo": {"kubeletVersion": whole}},
	}),
	reflect.TypeFor[corev1.ContainerStatus](): containerStatus,
	reflect.TypeFor[coordinationv1.Lease]():   withMetadata(fields{"spec": whole}),
	reflect.TypeFor[corev1.Event](): withMetadata(fields{
		"involvedObject": whole, "reason": whole, "message": whole, "source": whole, "firstTimestamp": whole,
		"lastTimestamp": whole, "count": whole, "type": whole, "eventTime": whole, "series": whole, "action": whole,
		"related": whole, "reportingComponent": whole, "reportingInstance": whole,
	}),
	reflect.TypeFor[corev1.PersistentVolumeClaim](): withMetadata(fields{
		"spec":   {"volumeName": whole, "storageClassName": whole, "dataSource": whole, "dataSourceRef": whole},
		"status": {"phase": whole, "conditions": condition},
	}),
	reflect.TypeFor[corev1.PersistentVolume](): withMetadata(fields{
		"spec":   {"claimRef": whole, "persistentVolumeReclaimPolicy": whole, "storageClassName": whole, "nodeAffinity": whole},
		"status": {"phase": whole, "message": whole, "reason": whole},
	}),
	reflect.TypeFor[policyv1.PodDisruptionBudget](): withMetadata(fields{
		"spec":   {"selector": whole, "minAvailable": whole, "maxUnavailable": whole, "unhealthyPodEvictionPolicy": whole},
		"status": {"disruptionsAllowed": whole, "currentHealthy": whole, "desiredHealthy": whole, "expectedPods": whole, "observedGeneration": whole},
	}),
	reflect.TypeFor[corev1.Service]():                                           withMetadata(fields{"spec": {"type": whole}, "status": {"loadBalancer": whole}}),
	reflect.TypeFor[storagev1.VolumeAttachment]():                               withMetadata(fields{"spec": whole, "status": {"attached": whole, "attachError": whole, "detachError": whole}}),
	reflect.TypeFor[storagev1.CSINode]():                                        withMetadata(fields{"spec": whole}),
	reflect.TypeFor[storagev1.CSIDriver]():                                      withMetadata(fields{"spec": {"attachRequired": whole}}),
	reflect.TypeFor[resourcev1.ResourceClaim]():                                 withMetadata(fields{"spec": whole, "status": whole}),
	reflect.TypeFor[resourcev1.ResourceSlice]():                                 withMetadata(fields{"spec": {"driver": whole, "nodeName": whole, "pool": whole}}),
	reflect.TypeFor[admissionregistrationv1.ValidatingWebhookConfiguration]():   withMetadata(fields{"webhooks": webhook}),
	reflect.TypeFor[admissionregistrationv1.MutatingWebhookConfiguration]():     withMetadata(fields{"webhooks": webhook}),
	reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicy]():        withMetadata(fields{"spec": whole}),
	reflect.TypeFor[admissionregistrationv1.ValidatingAdmissionPolicyBinding](): withMetadata(fields{"spec": whole}),
}

// webhook leaves out the CA bundle (large, and read by no rule).
var webhook = fields{
	"name": whole, "clientConfig": {"service": whole, "url": whole}, "rules": whole, "failurePolicy": whole,
	"matchPolicy": whole, "namespaceSelector": whole, "objectSelector": whole, "sideEffects": whole,
	"timeoutSeconds": whole, "admissionReviewVersions": whole, "matchConditions": whole, "reinvocationPolicy": whole,
}

func init() {
	// The PersistentVolume's sources sit in its spec beside the rest.
	pv := allowed[reflect.TypeFor[corev1.PersistentVolume]()]
	for k, v := range networkSources {
		pv["spec"][k] = v
	}
}

// keep returns the parts of v that f allows.
func (f fields) keep(v any) any {
	if f == nil {
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(f))
		for k, sub := range f {
			if x, ok := v[k]; ok {
				out[k] = sub.keep(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = f.keep(x)
		}
		return out
	}
	return nil // a scalar where an object was expected: nothing of it is allowed
}

// allowAny returns a copy of a typed object (a pointer to a value of type t)
// holding only what its allow-list keeps, labels and annotations filtered by
// keys; nil when it cannot be converted.
func allowAny(o any, t reflect.Type, keys keptKeys) any {
	f := allowed[t]
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	kept, _ := f.keep(m).(map[string]any)
	keys.filter(kept)
	out := reflect.New(t).Interface()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(kept, out); err != nil {
		return nil
	}
	return out
}

// targetObject is what the rules read of a target's object, whatever its
// kind: its type, metadata, status conditions (what its controller says),
// and the node a Cluster API Machine or a Karpenter NodeClaim drains.
var targetObject = fields{"apiVersion": whole, "kind": whole, "metadata": targetMetadata,
	"status": {"conditions": condition, "nodeRef": {"name": whole}, "nodeName": whole}}

// targetMetadata adds to metadata who wrote the object and when: each
// field manager's name, operation, subresource and time, and of the fields
// it owns only the finalizers.
var targetMetadata = func() fields {
	f := maps.Clone(metadata)
	f["managedFields"] = fields{"manager": whole, "operation": whole, "subresource": whole, "time": whole,
		"apiVersion": whole, "fieldsType": whole, "fieldsV1": {"f:metadata": {"f:finalizers": whole}}}
	return f
}()

// allowObject is a target's object as the rules read it (targetObject),
// with the status fields that carry its controller's words
// (observed.StatusWordField), the fields that name a node
// (observed.NodeReferences) and the references of its spec
// (observed.NamedIn), whatever their names.
func allowObject(u *unstructured.Unstructured, keys keptKeys) *unstructured.Unstructured {
	kept := targetObject.keep(u.Object).(map[string]any)
	if status, ok := u.Object["status"].(map[string]any); ok {
		keptStatus, _ := kept["status"].(map[string]any)
		for k, v := range status {
			if named, describes := observed.StatusWordField(k); (named || describes) && keptStatus != nil {
				keptStatus[k] = v
			}
		}
	}
	for _, ref := range observed.NodeReferences(u) {
		_ = unstructured.SetNestedField(kept, ref.Node, ref.Path...)
	}
	for _, ref := range observed.NamedIn(u) { // a field named for a name, or a typed reference's kind, group and name
		if ref.Kind == "" {
			if ref.Suffixed { // not any string of a spec: a key that says it holds a name
				_ = unstructured.SetNestedField(kept, ref.Name, ref.Path...)
			}
			continue
		}
		v, _, _ := unstructured.NestedMap(u.Object, ref.Path...)
		_ = unstructured.SetNestedField(kept, fields{"kind": whole, "name": whole, "namespace": whole, "apiGroup": whole, "apiVersion": whole}.keep(v), ref.Path...)
	}
	keys.filter(kept)
	return &unstructured.Unstructured{Object: kept}
}

// keptKeys are the label and annotation keys a snapshot keeps: those its
// rules match or read.
type keptKeys struct{ labels, annotations map[string]bool }

// filter drops the labels and annotations of an object's map that are not kept.
func (k keptKeys) filter(obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	for field, keep := range map[string]map[string]bool{"labels": k.labels, "annotations": k.annotations} {
		values, _ := md[field].(map[string]any)
		for key := range values {
			if !keep[key] {
				delete(values, key)
			}
		}
		if len(values) == 0 {
			delete(md, field)
		}
	}
}

// keysOf lists the label keys the snapshot's selectors match on (webhooks'
// and policies' object and namespace selectors) and the annotations the
// rules read (observed.ReadAnnotations).
func keysOf(s *observed.Snapshot) keptKeys {
	k := keptKeys{labels: map[string]bool{}, annotations: map[string]bool{}}
	for _, a := range observed.ReadAnnotations {
		k.annotations[a] = true
	}
	for _, l := range observed.WorkloadNameLabels {
		k.labels[l] = true
	}
	add := func(sel *metav1.LabelSelector) {
		if sel == nil {
			return
		}
		for key := range sel.MatchLabels {
			k.labels[key] = true
		}
		for _, e := range sel.MatchExpressions {
			k.labels[e.Key] = true
		}
	}
	for _, pdbs := range s.PDBs {
		for _, pdb := range pdbs {
			add(pdb.Spec.Selector)
		}
	}
	if a := s.Admission; a != nil {
		for _, c := range a.Validating {
			for _, w := range c.Webhooks {
				add(w.NamespaceSelector)
				add(w.ObjectSelector)
			}
		}
		for _, c := range a.Mutating {
			for _, w := range c.Webhooks {
				add(w.NamespaceSelector)
				add(w.ObjectSelector)
			}
		}
		for _, p := range a.Policies {
			if m := p.Spec.MatchConstraints; m != nil {
				add(m.NamespaceSelector)
				add(m.ObjectSelector)
			}
		}
		for _, b := range a.PolicyBindings {
			if m := b.Spec.MatchResources; m != nil {
				add(m.NamespaceSelector)
				add(m.ObjectSelector)
			}
		}
	}
	return k
}
