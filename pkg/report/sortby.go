package report

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// SortBy orders items by a JSONPath into each item of the JSON report, as
// kubectl's --sort-by does: ".overdueSeconds", ".object.name",
// "{.causes[0].code}". Values that are numbers compare as numbers; a missing
// value sorts first. With no items it only checks the expression.
func SortBy(items []Item, expr string) error {
	if !strings.HasPrefix(expr, "{") {
		expr = "{" + expr + "}"
	}
	jp := jsonpath.New("sort-by").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return fmt.Errorf("invalid --sort-by %q: %v", expr, err)
	}
	if err := inSchema(expr); err != nil {
		return fmt.Errorf("invalid --sort-by %q: %v (the fields of items[] are in docs/runbooks.md)", expr, err)
	}
	keys := make([]string, len(items))
	for i := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&items[i])
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := jp.Execute(&b, m); err != nil {
			return fmt.Errorf("--sort-by %q: %v", expr, err)
		}
		keys[i] = b.String()
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareValues(keys[a], keys[b]) })
	sorted := make([]Item, len(items))
	for i, j := range order {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// compareValues compares two printed values: as numbers when both are.
func compareValues(a, b string) int {
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}

// inSchema checks that the fields a path names exist in the report's items
// (values may be missing in some items, names may not: a misspelt field
// would sort nothing, silently). Filters, wildcards and recursive descent are
// taken as they are.
func inSchema(expr string) error {
	p, err := jsonpath.Parse("sort-by", expr)
	if err != nil {
		return err
	}
	t := reflect.TypeOf(Item{})
	var walk func(nodes []jsonpath.Node) error
	walk = func(nodes []jsonpath.Node) error {
		for _, n := range nodes {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch n := n.(type) {
			case *jsonpath.ListNode:
				if err := walk(n.Nodes); err != nil {
					return err
				}
			case *jsonpath.FieldNode:
				if n.Value == "" { // the root
					continue
				}
				next, ok := jsonFieldType(t, n.Value)
				if !ok {
					return fmt.Errorf("no field %q there", n.Value)
				}
				t = next
			case *jsonpath.ArrayNode:
				if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
					return fmt.Errorf("an index into %s, which is not a list", t)
				}
				t = t.Elem()
			default: // filters, wildcards, recursion: not checked
				return nil
			}
		}
		return nil
	}
	return walk(p.Root.Nodes)
}

// jsonFieldType finds the type of the field a JSON name designates in t (a
// struct, its embedded structs included, or a map, whose keys are free).
func jsonFieldType(t reflect.Type, name string) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), true
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && tag == "" {
				if ft, ok := jsonFieldType(f.Type, name); ok {
					return ft, true
				}
				continue
			}
			if tag == name || (tag == "" && f.Name == name) {
				return f.Type, true
			}
		}
	}
	return nil, false
}
