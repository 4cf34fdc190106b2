// Package snapfile saves a run's evidence (a observed.Snapshot) to a file and
// loads it back, so that a diagnosis can be replayed where the cluster cannot
// be reached: the rules are pure functions of the snapshot and its clock.
//
// The file is one JSON document (gzip-compressed when its name ends in .gz),
// versioned by apiVersion/kind: the run (plugin version, selection), the
// snapshot's fields written by reflection (codec.go, so that a field added
// to package observed needs no edit here), and its targets, which nest and
// share one another, as a flat table referenced by index. Every Kubernetes
// object goes through an allow-list of what the rules read (allow.go); a
// file is read as a stranger's (read.go).
package snapfile

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
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
	// Context is the kubeconfig context it was read through ("" when not
	// recorded: the run named none, or an older plugin saved it).
	Context   string
	Selection Selection
	Snapshot  *observed.Snapshot
}

// maxLabel bounds the run's labels a file carries (plugin version,
// context): a replay prints them, and the file may be a stranger's.
const maxLabel = 256

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
	snap := s.Snapshot
	all := snap.AllTargets()
	e := &encoder{index: make(map[*observed.Target]int, len(all)), keys: keysOf(snap)}
	for i, t := range all {
		e.index[t] = i
	}
	body, err := e.encode(reflect.ValueOf(snap).Elem())
	if err != nil {
		return err
	}
	table := make([]any, len(all))
	for i, t := range all {
		if table[i], err = e.encode(reflect.ValueOf(t).Elem()); err != nil {
			return fmt.Errorf("saving %s/%s: %w", t.Ref.Resource, t.Ref.Name, err)
		}
	}
	doc := body.(map[string]any)
	doc["apiVersion"], doc["kind"], doc["pluginVersion"], doc["context"], doc["selection"], doc["targets"] = APIVersion, Kind, s.PluginVersion, s.Context, s.Selection, table
	return json.NewEncoder(w).Encode(doc)
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
	var doc struct {
		PluginVersion string            `json:"pluginVersion"`
		Context       string            `json:"context"`
		Selection     Selection         `json:"selection"`
		Targets       []json.RawMessage `json:"targets"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Saved{}, fmt.Errorf("a damaged snapshot: %v", err)
	}
	d := &decoder{targets: make([]*observed.Target, len(doc.Targets))}
	for i := range d.targets {
		d.targets[i] = &observed.Target{}
	}
	for i, raw := range doc.Targets {
		if err := d.decode(raw, reflect.ValueOf(d.targets[i]).Elem()); err != nil {
			return Saved{}, fmt.Errorf("a damaged snapshot: target %d: %v", i, err)
		}
	}
	snap := &observed.Snapshot{}
	if err := d.decode(data, reflect.ValueOf(snap).Elem()); err != nil {
		return Saved{}, fmt.Errorf("a damaged snapshot: %v", err)
	}
	return Saved{PluginVersion: clip(doc.PluginVersion), Context: clip(doc.Context), Selection: doc.Selection, Snapshot: snap}, nil
}

// clip cuts a label to maxLabel bytes, on a rune's boundary.
func clip(s string) string {
	if len(s) <= maxLabel {
		return s
	}
	cut := maxLabel
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
