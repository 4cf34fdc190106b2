package cmd

import (
	"reflect"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
)

// list judges verdicts alone where its output shows nothing more of an
// object (its tables, -o wide, -o name) and --sort-by reads nothing else;
// every other output, why and wait are diagnosed whole, preflight forecast.
// (diagnose's tests hold Verdicts' reports to Diagnose's without detail.)
func TestListJudgesVerdictsWhereItShowsThemAlone(t *testing.T) {
	name := func(f any) string {
		switch reflect.ValueOf(f).Pointer() {
		case reflect.ValueOf(diagnose.Verdicts).Pointer():
			return "Verdicts"
		case reflect.ValueOf(diagnose.Diagnose).Pointer():
			return "Diagnose"
		case reflect.ValueOf(diagnose.Preflight).Pointer():
			return "Preflight"
		}
		return "another"
	}
	for _, c := range []struct {
		command, output, sortBy, want string
	}{
		{"list", "", "", "Verdicts"},
		{"list", "wide", "", "Verdicts"},
		{"list", "name", "", "Verdicts"},
		{"list", "", ".overdueSeconds", "Diagnose"},
		{"list", "name", ".overdueSeconds", "Diagnose"},
		{"list", "json", "", "Diagnose"},
		{"list", "yaml", "", "Diagnose"},
		{"list", "jsonpath={.items[*].causes[*].evidence}", "", "Diagnose"},
		{"why", "", "", "Diagnose"},
		{"why", "name", "", "Diagnose"},
		{"wait", "", "", "Diagnose"},
		{preflightCommand, "", "", "Preflight"},
	} {
		o := newOptions(nil, genericiooptions.IOStreams{})
		o.command = c.command
		*o.PrintFlags.OutputFormat = c.output
		if c.command == "list" {
			o.list = &listOptions{SortBy: c.sortBy}
		}
		if got := name(o.judge()); got != c.want {
			t.Errorf("%s -o %q --sort-by %q judged by %s, want %s", c.command, c.output, c.sortBy, got, c.want)
		}
	}
}
