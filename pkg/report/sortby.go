package report

import (
	"bytes"
	"fmt"
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
