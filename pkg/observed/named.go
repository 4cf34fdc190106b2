package observed

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NamedRef is a field of an object's spec that may name another object,
// whatever the kind: a typed reference (a map with kind and name: sourceRef,
// claimRef), or a string field whose key says what it names (backupName ->
// a Backup; storageLocation -> a BackupStorageLocation of the object's own
// API group). Which kind a key names is left to discovery: a key that names
// no kind of the group names nothing.
type NamedRef struct {
	// Field is its path, as the evidence quotes it; Path its keys.
	Field string
	Path  []string
	// Kind and Group, for a typed reference; Word otherwise: the key
	// without a Name or Ref suffix, lower case.
	Kind, Group, Word string
	// Suffixed: the key ends in Name or Ref (it says it names something).
	Suffixed  bool
	Name      string
	Namespace string // a typed reference's own namespace, if it gives one
}

// maxNamed bounds the references read from one object.
const maxNamed = 8

// NamedIn lists the references in an object's spec, two levels deep at
// most, in the order of the paths; node fields are NodeReferences' and
// plain names of the object itself (name, generateName) are left out.
func NamedIn(u *unstructured.Unstructured) []NamedRef {
	spec, _ := u.Object["spec"].(map[string]any) // read in place, as NodeReferences does
	out := namedFields(spec, []string{"spec"}, 1)
	return out[:min(len(out), maxNamed)]
}

func namedFields(m map[string]any, path []string, depth int) []NamedRef {
	if len(m) == 0 {
		return nil
	}
	var out []NamedRef
	for _, k := range slices.Sorted(maps.Keys(m)) {
		keys := append(slices.Clone(path), k)
		at := strings.Join(keys, ".")
		switch v := m[k].(type) {
		case string:
			word, suffixed := strings.CutSuffix(k, "Name")
			if !suffixed {
				word, suffixed = strings.CutSuffix(k, "Ref")
			}
			if word == "" || nodeKey(k) || k == "generateName" || len(validation.IsDNS1123Subdomain(v)) > 0 {
				continue
			}
			out = append(out, NamedRef{Field: at, Path: keys, Word: strings.ToLower(word), Suffixed: suffixed, Name: v})
		case map[string]any:
			kind, _ := v["kind"].(string)
			name, _ := v["name"].(string)
			if kind != "" && name != "" && !strings.EqualFold(kind, "Node") {
				ref := NamedRef{Field: at, Path: keys, Kind: kind, Name: name}
				ref.Namespace, _ = v["namespace"].(string)
				if g, ok := v["apiGroup"].(string); ok {
					ref.Group = g
				} else if av, ok := v["apiVersion"].(string); ok {
					if gv, err := schema.ParseGroupVersion(av); err == nil {
						ref.Group = gv.Group
					}
				}
				out = append(out, ref)
			} else if depth < maxNodeDepth {
				out = append(out, namedFields(v, append(slices.Clone(path), k), depth+1)...)
			}
		}
	}
	return out
}

// Names reports whether the reference names the object kind/name: a typed
// reference to that kind, or a key that is (or, five letters or more, ends)
// the kind's name: backupName names a Backup, storageLocation a
// BackupStorageLocation, eventBusName an EventBus.
func (r NamedRef) Names(kind, name string) bool {
	if r.Name != name {
		return false
	}
	k := strings.ToLower(kind)
	return strings.EqualFold(r.Kind, kind) || r.Word != "" && (k == r.Word || len(r.Word) >= 5 && strings.HasSuffix(k, r.Word))
}

// NamingField is the field of u's spec that names the object kind/name, if
// one does.
func NamingField(u *unstructured.Unstructured, kind, name string) (string, bool) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	for _, r := range namedFields(spec, []string{"spec"}, 1) {
		if r.Names(kind, name) {
			return r.Field, true
		}
	}
	return "", false
}
