// Package catalog is the table of cause codes: the public contract runbooks
// match on. A code, once shipped, keeps its name. Each is declared in
// causes.yaml with its rank and documentation; docs/causes.md is generated
// from it, and codes.go, a constant for each code, and data.go, the
// catalogues a run reads (TestGeneratedFilesAreCurrent).
package catalog

import (
	"sort"
	"strings"
)

// Code is a stable cause code.
type Code string

// Identity is a set of report.About fields a code's causes must fill.
type Identity uint8

const (
	// ByCodeAlone: the code says it all (a namespace's own conditions, the
	// object's own grace period).
	ByCodeAlone Identity = 0
	// ByNode: the node (a pod's, a node's own).
	ByNode Identity = 1 << (iota - 1)
	// ByFinalizer: the finalizers the cause explains.
	ByFinalizer
	// ByObject: the other object the cause names.
	ByObject
	// ByWebhook: the webhook's name.
	ByWebhook
)

// Has reports whether i includes every field of x.
func (i Identity) Has(x Identity) bool { return i&x == x }

// Lookup returns the entry of a code and whether it is catalogued.
func Lookup(c Code) (Entry, bool) {
	e, ok := entries[c]
	return e, ok
}

// Codes lists every catalogued code, sorted by name.
func Codes() []Code {
	out := make([]Code, 0, len(entries))
	for c := range entries {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Find resolves a code as a person types it: exactly, or whatever its case
// ("nodeunreachable"). When none matches, it suggests the codes that contain
// what was typed or are a few letters from it, closest first.
func Find(typed string) (Code, []Code) {
	lower := strings.ToLower(typed)
	type nearby struct {
		code Code
		dist int
	}
	var near []nearby
	for c := range entries {
		name := strings.ToLower(string(c))
		if name == lower {
			return c, nil
		}
		d := EditDistance(lower, name)
		if lower != "" && strings.Contains(name, lower) {
			d = 0
		}
		if d <= 3 {
			near = append(near, nearby{c, d})
		}
	}
	sort.Slice(near, func(i, j int) bool {
		if near[i].dist != near[j].dist {
			return near[i].dist < near[j].dist
		}
		return near[i].code < near[j].code
	})
	out := make([]Code, 0, len(near))
	for _, n := range near {
		out = append(out, n.code)
	}
	return "", out
}

// EditDistance is the Levenshtein distance between a and b, by bytes: how
// far a typed name is from a cause code, or from a resource type.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
