// Package snapfile saves a run's evidence (a snapshot.Snapshot) to a file and
// loads it back, so that a diagnosis can be replayed where the cluster cannot
// be reached: the rules are pure functions of the snapshot and its clock.
//
// The file is one JSON document (gzip-compressed when its name ends in .gz),
// versioned by apiVersion/kind. The snapshot's maps with struct keys become
// lists of entries, and its targets, which nest and share one another, a flat
// table referenced by index. What the rules never read is left out: managed
// fields, the last-applied annotation, Secret and ConfigMap payloads, node
// images.
package snapfile

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

const (
	// APIVersion versions the file format; a change that an older reader
	// would misread gets a new version (and Load a conversion or a refusal).
	APIVersion = "snapshot.terminating.kubectl.io/v1alpha1"
	Kind       = "Snapshot"
)

// Selection is what the saved run was asked to diagnose, so that a replay
// shows the same thing (and refuses to pretend it could select anything else).
type Selection struct {
	Command       string   `json:"command"`
	Args          []string `json:"args,omitempty"`
	Namespace     string   `json:"namespace,omitempty"`
	AllNamespaces bool     `json:"allNamespaces,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	FieldSelector string   `json:"fieldSelector,omitempty"`
	Kinds         []string `json:"kinds,omitempty"`
}

// Saved is a snapshot with what describes the run that read it.
type Saved struct {
	// PluginVersion is the version of the plugin that saved it.
	PluginVersion string
	Selection     Selection
	Snapshot      *snapshot.Snapshot
}

// file is the document on disk.
type file struct {
	APIVersion    string    `json:"apiVersion"`
	Kind          string    `json:"kind"`
	PluginVersion string    `json:"pluginVersion"`
	Selection     Selection `json:"selection"`
	Now           time.Time `json:"now"`
	// Targets is every target, nested ones included, each once; Roots are
	// the indexes of the snapshot's own Targets.
	Targets      []target                         `json:"targets"`
	Roots        []int                            `json:"roots"`
	Nodes        map[string]*corev1.Node          `json:"nodes"`
	MissingNodes map[string]bool                  `json:"missingNodes"`
	Leases       map[string]*coordinationv1.Lease `json:"leases"`
	Events       map[types.UID][]corev1.Event     `json:"events"`
	Admission    *admission                       `json:"admission"`
	Volumes      volumes                          `json:"volumes"`
	DRA          dra                              `json:"dra"`
	Controllers  *snapshot.Controllers            `json:"controllers"`
	APIServices  []snapshot.APIService            `json:"apiServices"`
	Namespaces   map[string]*corev1.Namespace     `json:"namespaces"`
	CRDs         map[string]*snapshot.CRD         `json:"crds"`
	Kubelets     map[string]*snapshot.Kubelet     `json:"kubelets"`
	Skipped      []skip                           `json:"skipped"`
}

type target struct {
	Ref         snapshot.ObjectRef            `json:"ref"`
	Object      json.RawMessage               `json:"object,omitempty"`
	Pod         *corev1.Pod                   `json:"pod,omitempty"`
	Namespace   *corev1.Namespace             `json:"namespace,omitempty"`
	Skipped     []skip                        `json:"skipped,omitempty"`
	Contents    *contents                     `json:"contents,omitempty"`
	Claim       *corev1.PersistentVolumeClaim `json:"claim,omitempty"`
	Volume      *corev1.PersistentVolume      `json:"volume,omitempty"`
	Service     *corev1.Service               `json:"service,omitempty"`
	Attachments []storagev1.VolumeAttachment  `json:"attachments"`
	Dependents  []int                         `json:"dependents"`
	ClaimUsers  []int                         `json:"claimUsers"`
}

type contents struct {
	Counts      []entry[schema.GroupResource, int]                         `json:"counts"`
	ByNamespace map[string]int                                             `json:"byNamespace"`
	Resources   []entry[schema.GroupResource, schema.GroupVersionResource] `json:"resources"`
	NotDeleted  []entry[schema.GroupResource, int]                         `json:"notDeleted"`
	Finalizers  map[string]int                                             `json:"finalizers"`
	Held        map[string][]int                                           `json:"held"`
	Pods        []int                                                      `json:"pods"`
	Skipped     []skip                                                     `json:"skipped"`
}

type admission struct {
	snapshot.Admission
	ServiceEndpoints []entry[types.NamespacedName, int] `json:"ServiceEndpoints"`
}

type volumes struct {
	snapshot.Volumes
	Claims []entry[types.NamespacedName, *corev1.PersistentVolumeClaim] `json:"Claims"`
}

type dra struct {
	snapshot.DRA
	Claims []entry[types.NamespacedName, *resourcev1.ResourceClaim] `json:"Claims"`
}

// skip is snapshot.Skip with the fields the rules read but reports do not print.
type skip struct {
	Check      string                      `json:"check"`
	Reason     snapshot.SkipReason         `json:"reason"`
	Detail     string                      `json:"detail,omitempty"`
	Resource   schema.GroupVersionResource `json:"resource,omitzero"`
	APIMessage string                      `json:"apiMessage,omitempty"`
}

// entry is one key and value of a map whose keys JSON cannot name.
type entry[K comparable, V any] struct {
	Key   K `json:"key"`
	Value V `json:"value"`
}

// Save writes s to path, gzip-compressed when path ends in .gz.
func Save(path string, s Saved) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	var out io.Writer = w
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(w)
		out = gz
	}
	if err := Encode(out, s); err != nil {
		return err
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return err
		}
	}
	return w.Flush()
}

// Encode writes s as the file's JSON document.
func Encode(w io.Writer, s Saved) error {
	f, err := toFile(s)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(f)
}

// Decode reads a file's JSON document within DefaultLimits.
func Decode(r io.Reader) (Saved, error) {
	return DecodeLimited(r, DefaultLimits)
}

func decode(data []byte) (Saved, error) {
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(data, &head); err != nil {
		return Saved{}, fmt.Errorf("not a snapshot (%v)", err)
	}
	if head.Kind != Kind || head.APIVersion != APIVersion {
		if head.Kind == Kind && strings.HasPrefix(head.APIVersion, "snapshot.terminating.kubectl.io/") {
			return Saved{}, fmt.Errorf("a snapshot in format %s, which this plugin cannot read (it reads %s): replay it with the plugin version that saved it", head.APIVersion, APIVersion)
		}
		return Saved{}, fmt.Errorf("not a snapshot: apiVersion %q, kind %q (want %s, %s)", head.APIVersion, head.Kind, APIVersion, Kind)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return Saved{}, fmt.Errorf("a damaged snapshot: %v", err)
	}
	return fromFile(f)
}

func toFile(s Saved) (file, error) {
	snap := s.Snapshot
	all := snap.AllTargets()
	index := make(map[*snapshot.Target]int, len(all))
	for i, t := range all {
		index[t] = i
	}
	indexes := func(ts []*snapshot.Target) []int {
		if ts == nil {
			return nil
		}
		out := make([]int, len(ts))
		for i, t := range ts {
			out[i] = index[t]
		}
		return out
	}
	keys := keysOf(snap)
	ev := allowedEvidence(snap, keys)
	f := file{
		APIVersion:    APIVersion,
		Kind:          Kind,
		PluginVersion: s.PluginVersion,
		Selection:     s.Selection,
		Now:           snap.Now,
		Targets:       make([]target, len(all)),
		Roots:         indexes(snap.Targets),
		Nodes:         ev.Nodes,
		MissingNodes:  ev.MissingNodes,
		Leases:        ev.Leases,
		Events:        ev.Events,
		Volumes:       volumes{Volumes: ev.Volumes, Claims: toEntries(ev.Volumes.Claims)},
		DRA:           dra{DRA: ev.DRA, Claims: toEntries(ev.DRA.Claims)},
		Controllers:   ev.Controllers,
		APIServices:   ev.APIServices,
		Namespaces:    ev.Namespaces,
		CRDs:          ev.CRDs,
		Kubelets:      ev.Kubelets,
		Skipped:       toSkips(ev.Skipped),
	}
	f.Volumes.Volumes.Claims = nil
	f.DRA.DRA.Claims = nil
	if ev.Admission != nil {
		f.Admission = &admission{Admission: *ev.Admission, ServiceEndpoints: toEntries(ev.Admission.ServiceEndpoints)}
		f.Admission.Admission.ServiceEndpoints = nil
	}
	for i, t := range all {
		kept := allowedTarget(t, keys)
		var object json.RawMessage
		if kept.Object != nil {
			var err error
			if object, err = kept.Object.MarshalJSON(); err != nil {
				return file{}, fmt.Errorf("saving %s/%s: %w", t.Ref.Resource, t.Ref.Name, err)
			}
		}
		wt := target{
			Ref:         t.Ref,
			Object:      object,
			Pod:         kept.Pod,
			Namespace:   kept.Namespace,
			Skipped:     toSkips(t.Skipped),
			Claim:       kept.Claim,
			Volume:      kept.Volume,
			Service:     kept.Service,
			Attachments: kept.Attachments,
			Dependents:  indexes(t.Dependents),
			ClaimUsers:  indexes(t.ClaimUsers),
		}
		if c := t.Contents; c != nil {
			held := make(map[string][]int, len(c.Held))
			for k, ts := range c.Held {
				held[k] = indexes(ts)
			}
			if c.Held == nil {
				held = nil
			}
			wt.Contents = &contents{
				Counts:      toEntries(c.Counts),
				ByNamespace: c.ByNamespace,
				Resources:   toEntries(c.Resources),
				NotDeleted:  toEntries(c.NotDeleted),
				Finalizers:  c.Finalizers,
				Held:        held,
				Pods:        indexes(c.Pods),
				Skipped:     toSkips(c.Skipped),
			}
		}
		f.Targets[i] = wt
	}
	return f, nil
}

func fromFile(f file) (Saved, error) {
	all := make([]*snapshot.Target, len(f.Targets))
	for i := range all {
		all[i] = &snapshot.Target{}
	}
	var bad error
	targets := func(idx []int) []*snapshot.Target {
		if idx == nil {
			return nil
		}
		out := make([]*snapshot.Target, len(idx))
		for i, n := range idx {
			if n < 0 || n >= len(all) {
				bad = fmt.Errorf("a damaged snapshot: target %d of %d", n, len(all))
				return nil
			}
			out[i] = all[n]
		}
		return out
	}
	for i, wt := range f.Targets {
		t := all[i]
		*t = snapshot.Target{
			Ref:         wt.Ref,
			Pod:         wt.Pod,
			Namespace:   wt.Namespace,
			Skipped:     fromSkips(wt.Skipped),
			Claim:       wt.Claim,
			Volume:      wt.Volume,
			Service:     wt.Service,
			Attachments: wt.Attachments,
			Dependents:  targets(wt.Dependents),
			ClaimUsers:  targets(wt.ClaimUsers),
		}
		obj, err := decodeObject(wt.Object)
		if err != nil {
			return Saved{}, fmt.Errorf("a damaged snapshot: target %s: %v", wt.Ref.Name, err)
		}
		t.Object = obj
		if c := wt.Contents; c != nil {
			var held map[string][]*snapshot.Target
			if c.Held != nil {
				held = make(map[string][]*snapshot.Target, len(c.Held))
				for k, idx := range c.Held {
					held[k] = targets(idx)
				}
			}
			t.Contents = &snapshot.Contents{
				Counts:      fromEntries(c.Counts),
				ByNamespace: c.ByNamespace,
				Resources:   fromEntries(c.Resources),
				NotDeleted:  fromEntries(c.NotDeleted),
				Finalizers:  c.Finalizers,
				Held:        held,
				Pods:        targets(c.Pods),
				Skipped:     fromSkips(c.Skipped),
			}
		}
	}
	snap := &snapshot.Snapshot{
		Now:          f.Now,
		Targets:      targets(f.Roots),
		Nodes:        f.Nodes,
		MissingNodes: f.MissingNodes,
		Leases:       f.Leases,
		Events:       f.Events,
		Volumes:      f.Volumes.Volumes,
		DRA:          f.DRA.DRA,
		Controllers:  f.Controllers,
		APIServices:  f.APIServices,
		Namespaces:   f.Namespaces,
		CRDs:         f.CRDs,
		Kubelets:     f.Kubelets,
		Skipped:      fromSkips(f.Skipped),
	}
	snap.Volumes.Claims = fromEntries(f.Volumes.Claims)
	snap.DRA.Claims = fromEntries(f.DRA.Claims)
	if f.Admission != nil {
		a := f.Admission.Admission
		a.ServiceEndpoints = fromEntries(f.Admission.ServiceEndpoints)
		snap.Admission = &a
	}
	if bad != nil {
		return Saved{}, bad
	}
	return Saved{PluginVersion: f.PluginVersion, Selection: f.Selection, Snapshot: snap}, nil
}

func toSkips(in []snapshot.Skip) []skip {
	if in == nil {
		return nil
	}
	out := make([]skip, len(in))
	for i, s := range in {
		out[i] = skip{Check: s.Check, Reason: s.Reason, Detail: s.Detail, Resource: s.Resource, APIMessage: s.APIMessage}
	}
	return out
}

func fromSkips(in []skip) []snapshot.Skip {
	if in == nil {
		return nil
	}
	out := make([]snapshot.Skip, len(in))
	for i, s := range in {
		out[i] = snapshot.Skip{Check: s.Check, Reason: s.Reason, Detail: s.Detail, Resource: s.Resource, APIMessage: s.APIMessage}
	}
	return out
}

// toEntries lists a map's entries in a stable order (the file is the same for
// the same snapshot); nil stays nil: "not read" is not "read, nothing found".
func toEntries[K comparable, V any](m map[K]V) []entry[K, V] {
	if m == nil {
		return nil
	}
	out := make([]entry[K, V], 0, len(m))
	for k, v := range m {
		out = append(out, entry[K, V]{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b entry[K, V]) int { return cmp.Compare(fmt.Sprint(a.Key), fmt.Sprint(b.Key)) })
	return out
}

func fromEntries[K comparable, V any](es []entry[K, V]) map[K]V {
	if es == nil {
		return nil
	}
	m := make(map[K]V, len(es))
	for _, e := range es {
		m[e.Key] = e.Value
	}
	return m
}

// mapValues copies m with each value passed through f; nil stays nil.
func mapValues[K comparable, V any](m map[K]V, f func(V) V) map[K]V {
	if m == nil {
		return nil
	}
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}
