package diagnose

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// checkVerdicts holds Verdicts to what it promises, on the snapshot of every
// report Diagnose makes in this package's tests (check): the report Diagnose
// made, less each cause's evidence and remediation and each item's
// timeline, nested items included, and nothing else.
func checkVerdicts(s *observed.Snapshot, whole report.Report) []string {
	want := verdictsOf(whole)
	got := Verdicts(s)
	if reflect.DeepEqual(got, want) {
		return nil
	}
	for i := range min(len(got.Items), len(want.Items)) {
		if !reflect.DeepEqual(got.Items[i], want.Items[i]) {
			return []string{fmt.Sprintf("Verdicts' item %d differs from Diagnose's without detail:\n got %s\nwant %s", i, jsonOf(got.Items[i]), jsonOf(want.Items[i]))}
		}
	}
	return []string{fmt.Sprintf("Verdicts' report differs from Diagnose's without detail:\n got %s\nwant %s", jsonOf(got), jsonOf(want))}
}

// verdictsOf is a whole report as Verdicts would have made it.
func verdictsOf(r report.Report) report.Report {
	r.Items = verdictItems(r.Items)
	return r
}

func verdictItems(items []report.Item) []report.Item {
	if items == nil {
		return nil
	}
	out := make([]report.Item, len(items))
	for i, it := range items {
		it.Timeline = nil
		causes := make([]report.Cause, len(it.Causes))
		for j, c := range it.Causes {
			c.Facts, c.Remediation, c.Evidence = nil, nil, report.Lines(nil)
			c.BlockedBy = verdictItems(c.BlockedBy)
			causes[j] = c
		}
		if it.Causes == nil {
			causes = nil
		}
		it.Causes = causes
		out[i] = it
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Verdicts judges held objects as Diagnose does (checkVerdicts holds every
// report of the tests to it), and builds less: a third of the allocations
// for a held object's FinalizerPending, most of them its evidence and steps.
func TestVerdictsBuildLessThanDiagnose(t *testing.T) {
	s := snapOf(heldObject("ConfigMap", "configmaps", "w-0", time.Hour, "example.com/cleanup"))
	whole := testing.AllocsPerRun(50, func() { Diagnose(s) })
	verdicts := testing.AllocsPerRun(50, func() { Verdicts(s) })
	if verdicts > whole*2/3 {
		t.Errorf("Verdicts allocates %.0f times a run, Diagnose %.0f: want at most two thirds", verdicts, whole)
	}
	r := Verdicts(s)
	if len(r.Items) != 1 || len(r.Items[0].Causes) == 0 || r.Items[0].Causes[0].Code == "" {
		t.Fatalf("no verdict: %+v", r)
	}
	for _, c := range r.Items[0].Causes {
		if len(c.Facts) > 0 || len(c.Remediation) > 0 || len(c.Evidence) > 0 {
			t.Errorf("cause %s kept its detail: %+v", c.Code, c)
		}
	}
}
