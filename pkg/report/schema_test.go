package report

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The report's JSON contract is derived from its types, not from a sample:
// every field of every struct the report holds is listed by its json tag, so
// a field added to any of them changes the list (and fails the golden until
// `make golden` records it), and a field removed or renamed is missing from
// it (and fails whatever the golden says: runbooks depend on it).

// schemaPaths lists the JSON paths a value of type t is written with, as
// encoding/json writes it: ".name" for each field (its json tag's name, else
// its Go name; "-" is never written), "[]" for the elements of a list,
// ".*" for the values of a map. A type that recurses (Item in
// Cause.BlockedBy) is unfolded twice, the depth runbooks read
// (.items[].causes[].blockedBy[].causes[].code); below that its field is
// listed and not unfolded (stopped).
func schemaPaths(prefix string, t reflect.Type) (paths, stopped []string) {
	var walk func(prefix string, t reflect.Type, onPath map[reflect.Type]int)
	walk = func(prefix string, t reflect.Type, onPath map[reflect.Type]int) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if marshals(t) {
			return
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			if t.Elem().Kind() != reflect.Uint8 {
				walk(prefix+"[]", t.Elem(), onPath)
			}
		case reflect.Map:
			walk(prefix+".*", t.Elem(), onPath)
		case reflect.Struct:
			if onPath[t] == 2 {
				field := prefix
				for strings.HasSuffix(field, "[]") || strings.HasSuffix(field, ".*") {
					field = field[:len(field)-2]
				}
				stopped = append(stopped, field)
				return
			}
			onPath[t]++
			for _, f := range jsonFields(t) {
				paths = append(paths, prefix+"."+f.name)
				walk(prefix+"."+f.name, f.typ, onPath)
			}
			onPath[t]--
		}
	}
	walk(prefix, t, map[reflect.Type]int{})
	sort.Strings(paths)
	return paths, stopped
}

// marshals says whether a type writes itself (metav1.Time): a leaf.
func marshals(t reflect.Type) bool {
	for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the fields encoding/json writes of a struct: exported
// fields not tagged "-", the fields of embedded structs without a name of
// their own promoted, a name written by two fields at the same depth by
// neither unless one of them is tagged (encoding/json's rules).
func jsonFields(t reflect.Type) []jsonField {
	type candidate struct {
		jsonField
		depth  int
		tagged bool
	}
	var all []candidate
	var collect func(t reflect.Type, depth int, seen map[reflect.Type]bool)
	collect = func(t reflect.Type, depth int, seen map[reflect.Type]bool) {
		if seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				collect(ft, depth+1, seen)
				continue
			}
			if !sf.IsExported() {
				continue
			}
			tagged := name != ""
			if !tagged {
				name = sf.Name
			}
			all = append(all, candidate{jsonField{name, sf.Type}, depth, tagged})
		}
	}
	collect(t, 0, map[reflect.Type]bool{})
	var out []jsonField
	byName := map[string][]candidate{}
	var names []string
	for _, c := range all {
		if len(byName[c.name]) == 0 {
			names = append(names, c.name)
		}
		byName[c.name] = append(byName[c.name], c)
	}
	for _, n := range names {
		cs := byName[n]
		slices.SortStableFunc(cs, func(a, b candidate) int { return a.depth - b.depth })
		var top []candidate // the shallowest
		for _, c := range cs {
			if c.depth == cs[0].depth {
				top = append(top, c)
			}
		}
		if len(top) > 1 {
			var tagged []candidate
			for _, c := range top {
				if c.tagged {
					tagged = append(tagged, c)
				}
			}
			if len(tagged) != 1 {
				continue // ambiguous: encoding/json writes neither
			}
			top = tagged
		}
		out = append(out, top[0].jsonField)
	}
	return out
}

// schemaDiff compares paths with the golden's: added are paths the golden
// lacks, removed the golden's paths no longer written.
func schemaDiff(golden, paths []string) (added, removed []string) {
	for _, p := range paths {
		if !slices.Contains(golden, p) {
			added = append(added, p)
		}
	}
	for _, p := range golden {
		if !slices.Contains(paths, p) {
			removed = append(removed, p)
		}
	}
	return added, removed
}

// TestSchemaIsStable fails when a field of the JSON contract is removed or
// renamed, whatever the golden says, and when one is added until `make
// golden` adds it to testdata/schema.golden.
func TestSchemaIsStable(t *testing.T) {
	paths, stopped := schemaPaths("", reflect.TypeFor[Report]())
	data, err := os.ReadFile("testdata/schema.golden")
	if err != nil && !*update {
		t.Fatal(err)
	}
	_, removed := schemaDiff(strings.Fields(string(data)), paths)
	for _, p := range removed {
		t.Errorf("field %s was removed or renamed: runbooks depend on it", p)
	}
	golden(t, "schema.golden", []byte(strings.Join(paths, "\n")+"\n"))

	// The paths derived from the types are the paths written: a report with
	// every field set, converted as -o yaml/jsonpath convert it, has each of
	// them (but those where the recursion stopped) and no other.
	var r Report
	fillReport(reflect.ValueOf(&r).Elem(), map[reflect.Type]int{})
	u, err := ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	collectPaths("", u.Object, written)
	for _, p := range paths {
		if !written[p] && !slices.Contains(stopped, p) {
			t.Errorf("%s is derived from the types but not written", p)
		}
	}
	for p := range written {
		if !slices.Contains(paths, p) {
			t.Errorf("%s is written but not derived from the types", p)
		}
	}

	// A field added to a report type is listed, so the golden fails until it
	// holds it: report stands for Report the day it gains a field.
	t.Run("an added field is caught", func(t *testing.T) {
		type report struct {
			Report
			Warnings []string `json:"warnings,omitempty"`
		}
		grown, _ := schemaPaths("", reflect.TypeFor[report]())
		added, removed := schemaDiff(paths, grown)
		if !slices.Equal(added, []string{".warnings"}) || len(removed) > 0 {
			t.Errorf("a field added: added %v, removed %v; want [.warnings] alone", added, removed)
		}
	})
	// A field renamed (its tag changed) in a type nested deep in the report
	// is caught as removed: check stands for Check with its tag "detail"
	// renamed, built from Check's own fields.
	t.Run("a renamed field is caught", func(t *testing.T) {
		base := reflect.TypeFor[Check]()
		var fields []reflect.StructField
		for i := range base.NumField() {
			f := base.Field(i)
			if f.Tag.Get("json") == "detail" {
				f.Tag = `json:"details"`
			}
			fields = append(fields, f)
		}
		const at = ".items[].causes[].blockedBy[].checks[]"
		renamed, _ := schemaPaths(at, reflect.StructOf(fields))
		var golden []string
		for _, p := range paths {
			if strings.HasPrefix(p, at+".") {
				golden = append(golden, p)
			}
		}
		added, removed := schemaDiff(golden, renamed)
		if !slices.Equal(removed, []string{at + ".detail"}) || !slices.Equal(added, []string{at + ".details"}) {
			t.Errorf("a field renamed: added %v, removed %v", added, removed)
		}
	})
	// The fields the first golden (written from a sample report) missed.
	for _, p := range []string{".items[].finalizers", ".items[].causes[].docs", ".items[].causes[].blockedBy[].causes[].docs"} {
		if !slices.Contains(paths, p) {
			t.Errorf("%s is not listed", p)
		}
	}
}

// fillReport sets every field of a report: one element per list, each
// struct unfolded twice (as schemaPaths unfolds them).
func fillReport(v reflect.Value, onPath map[reflect.Type]int) {
	t := v.Type()
	switch {
	case t == reflect.TypeFor[metav1.Time]():
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))))
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		fillReport(p.Elem(), onPath)
		v.Set(p)
	case reflect.Slice:
		if onPath[t.Elem()] == 2 {
			return
		}
		s := reflect.MakeSlice(t, 1, 1)
		fillReport(s.Index(0), onPath)
		v.Set(s)
	case reflect.Struct:
		onPath[t]++
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fillReport(v.Field(i), onPath)
			}
		}
		onPath[t]--
	default:
		panic(fmt.Sprintf("fillReport: a %s", t))
	}
}

func collectPaths(prefix string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := prefix + "." + k
			out[p] = true
			collectPaths(p, val, out)
		}
	case []any:
		for _, val := range x {
			collectPaths(prefix+"[]", val, out)
		}
	}
}
