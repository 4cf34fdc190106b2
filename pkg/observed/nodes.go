package observed

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeReference is a field of an object's spec or status that names a Node.
type NodeReference struct {
	// Field is its path, as the evidence quotes it (status.nodeName,
	// spec.ownerNodeID, status.nodeRef.name).
	Field string
	// Path is Field's keys, to read or keep it.
	Path []string
	Node string
}

// maxNodeDepth is how deep below spec or status node fields are looked for:
// spec.nodeName, spec.placement.nodeName; a deeper one is not the object's own.
const maxNodeDepth = 2

// NodeReferences lists, whatever the object's kind, the fields of its spec
// and status that name a node: a string field whose key is node or ends in
// nodeName or nodeID (nodeName, ownerNodeID, targetNodeName), and the name of
// a nodeRef; values that are not valid node names are left out. The rules
// judge those nodes (gone, not reporting); a snapshot file keeps these
// fields. In the order of the paths.
func NodeReferences(u *unstructured.Unstructured) []NodeReference {
	var out []NodeReference
	for _, top := range []string{"spec", "status"} {
		// Read in place, not copied (NestedMap): several rules ask this of
		// each of thousands of held objects, and nodeFields only reads.
		m, _ := u.Object[top].(map[string]any)
		out = append(out, nodeFields(m, []string{top}, 1)...)
	}
	return out
}

func nodeFields(m map[string]any, path []string, depth int) []NodeReference {
	if len(m) == 0 {
		return nil // most held objects listed by the scan have no spec or status
	}
	var out []NodeReference
	for _, k := range slices.Sorted(maps.Keys(m)) {
		at := append(slices.Clone(path), k)
		switch v := m[k].(type) {
		case string:
			if nodeKey(k) && len(validation.IsDNS1123Subdomain(v)) == 0 {
				out = append(out, NodeReference{Field: strings.Join(at, "."), Path: at, Node: v})
			}
		case map[string]any:
			if name, ok := v["name"].(string); ok && strings.HasSuffix(strings.ToLower(k), "noderef") && len(validation.IsDNS1123Subdomain(name)) == 0 {
				at = append(at, "name")
				out = append(out, NodeReference{Field: strings.Join(at, "."), Path: at, Node: name})
			} else if depth < maxNodeDepth {
				out = append(out, nodeFields(v, at, depth+1)...)
			}
		}
	}
	return out
}

func nodeKey(k string) bool {
	k = strings.ToLower(k)
	return k == "node" || strings.HasSuffix(k, "nodename") || strings.HasSuffix(k, "nodeid")
}
