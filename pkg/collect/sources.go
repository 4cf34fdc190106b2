package collect

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
)

// A source is one kind of evidence the collector reads about the targets:
// its reader fills its own part of the snapshot, for the targets whose rules
// need it (diagnose.Needs, through needing). Each source registers itself in
// its own file; Snapshot runs them in stages derived from what each reads
// after, the readers of a stage at once.
type source struct {
	name string
	// after names the sources whose results this one reads: the targets
	// they nest, or what they record.
	after []string
	read  func(c *Collector, ctx context.Context, s *observed.Snapshot)
	// early, when set, starts the lists read makes whatever the targets
	// (through listOnce), as soon as the scan finds an object that needs
	// earlyOn (early.go).
	early   func(c *Collector, ctx context.Context)
	earlyOn diagnose.Evidence
	// permissions are what read asks of the apiserver, for docs/rbac.md.
	permissions []Permission
}

var sources []source

func register(s source) { sources = append(sources, s) }

// nesting are the sources that add nested targets: every source that reads
// about all targets, nested ones included, comes after them.
var nesting = []string{"namespace contents", "dependents", "claim users", "referrers", "crd instances", "named objects", "named by"}

// stages orders the sources: each stage holds the sources whose every
// predecessor is in an earlier stage, by name within a stage.
func stages(all []source) ([][]source, error) {
	byName := map[string]bool{}
	for _, s := range all {
		if byName[s.name] {
			return nil, fmt.Errorf("source %q registered twice", s.name)
		}
		byName[s.name] = true
	}
	for _, s := range all {
		for _, a := range s.after {
			if !byName[a] {
				return nil, fmt.Errorf("source %q comes after %q, which is not registered", s.name, a)
			}
		}
	}
	done := map[string]bool{}
	var out [][]source
	for len(done) < len(all) {
		var stage []source
		for _, s := range all {
			if !done[s.name] && !slices.ContainsFunc(s.after, func(a string) bool { return !done[a] }) {
				stage = append(stage, s)
			}
		}
		if len(stage) == 0 {
			var left []string
			for _, s := range all {
				if !done[s.name] {
					left = append(left, s.name)
				}
			}
			return nil, fmt.Errorf("sources wait on one another: %s", strings.Join(left, ", "))
		}
		slices.SortFunc(stage, func(a, b source) int { return strings.Compare(a.name, b.name) })
		for _, s := range stage {
			done[s.name] = true
		}
		out = append(out, stage)
	}
	return out, nil
}

// readSources runs every registered source, stage by stage.
func (c *Collector) readSources(ctx context.Context, s *observed.Snapshot) {
	ordered, err := stages(sources)
	if err != nil {
		panic("collect: " + err.Error()) // a programming error, caught by TestSourcesFormStages
	}
	defer c.rememberNeeds(nil)
	for _, stage := range ordered {
		c.rememberNeeds(s)
		bounded(len(stage), len(stage), func(i int) {
			defer c.track(stage[i].name, 0).finish()
			stage[i].read(c, ctx, s)
		})
	}
}
