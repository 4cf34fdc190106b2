package collect

import (
	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// needing returns the targets, nested ones included, whose rules need e:
// the rules decide what is read (diagnose.Needs), the collector only reads it.
func needing(s *snapshot.Snapshot, e diagnose.Evidence) []*snapshot.Target {
	var out []*snapshot.Target
	for _, t := range s.AllTargets() {
		if diagnose.Needs(t).Has(e) {
			out = append(out, t)
		}
	}
	return out
}

// topNeeding is needing restricted to the run's own targets, for the reads
// that nest more targets (scans), which run before the nested ones exist.
func topNeeding(s *snapshot.Snapshot, e diagnose.Evidence) []*snapshot.Target {
	var out []*snapshot.Target
	for _, t := range s.Targets {
		if diagnose.Needs(t).Has(e) {
			out = append(out, t)
		}
	}
	return out
}
