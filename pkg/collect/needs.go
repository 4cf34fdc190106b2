package collect

import (
	"runtime"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/parallel"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// needing returns the targets, nested ones included, whose rules need e:
// the rules decide what is read (diagnose.Needs), the collector only reads it.
// During a stage, they are the targets as it began (walking the nested
// ones for each source of each stage cost a list -A of thousands of held
// objects a twentieth of its CPU).
func (c *Collector) needing(s *observed.Snapshot, e diagnose.Evidence) []*observed.Target {
	all := c.stageTargets
	if all == nil {
		all = s.AllTargets()
	}
	var out []*observed.Target
	for _, t := range all {
		if c.needs(t).Has(e) {
			out = append(out, t)
		}
	}
	return out
}

// needs is what t's rules need: as they said at the start of the stage
// being read, or now for a target the stage nested. Every source of a stage
// asks it of every target, and walking the rules for each (thousands of
// held objects in a list -A) was most of a run's CPU; what a source of a
// stage changes in a target is for the next stages to see anyway (sources
// of one stage run at once).
func (c *Collector) needs(t *observed.Target) diagnose.Evidence {
	if n, ok := c.stageNeeds[t]; ok {
		return n.e
	}
	return diagnose.Needs(t)
}

// targetNeeds is what a target needed, and the parts of it the rules read
// it from: the readers replace them (a pod read, an object read in full),
// never change them in place.
type targetNeeds struct {
	object *unstructured.Unstructured
	pod    *corev1.Pod
	ns     *corev1.Namespace
	e      diagnose.Evidence
}

// needsOfFound is what an object a scan finds needs, as listed: asked of the
// first objects found only, until every early read has started (early.go).
// A namespace's spec is not in its metadata: one being deleted is taken as
// held by the namespace controller's finalizer, as it is until its
// contents are gone (and a run that finds it reads it in full).
func needsOfFound(f Found) diagnose.Evidence {
	if f.listed != nil {
		return f.listed.needs
	}
	t := &observed.Target{Ref: f.Ref(), Object: f.Object}
	if isNamespaces(f.GVR) && f.Terminating() {
		t.Namespace = &corev1.Namespace{Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	}
	return diagnose.Needs(t)
}

// listedOf is what the scan works out of an object being deleted, o
// listed under ref: its needs as the first stage's rememberNeeds would ask
// them of its target, which has no other part yet.
func listedOf(ref report.ObjectRef, o *unstructured.Unstructured) *listedObject {
	return &listedObject{ref: ref, needs: diagnose.Needs(&observed.Target{Ref: ref, Object: o})}
}

// listedNeeds are the needs the scan worked out of the targets made of
// what it found, as rememberNeeds records them.
func listedNeeds(found []Found, targets []*observed.Target) map[*observed.Target]targetNeeds {
	out := make(map[*observed.Target]targetNeeds, len(targets))
	for i, t := range targets {
		if found[i].listed != nil {
			out[t] = targetNeeds{object: t.Object, e: found[i].listed.needs}
		}
	}
	return out
}

func needsOf(t *observed.Target) targetNeeds {
	return targetNeeds{object: t.Object, pod: t.Pod, ns: t.Namespace, e: diagnose.Needs(t)}
}

func (n targetNeeds) current(t *observed.Target) bool {
	return n.object == t.Object && n.pod == t.Pod && n.ns == t.Namespace
}

// rememberNeeds records what each target needs, before a stage is read: a
// target whose parts were not replaced since the last stage keeps its
// answer (a preflight's forecast, which reads the scans, is asked again).
// nil forgets it (after the last stage).
func (c *Collector) rememberNeeds(s *observed.Snapshot) {
	if s == nil {
		c.stageNeeds, c.stageTargets = nil, nil
		return
	}
	all := s.AllTargets()
	same := c.stageNeeds != nil && slices.Equal(all, c.stageTargets)
	c.stageTargets = all
	// On every CPU: the rules are asked of each of thousands of held objects
	// at the scan's end, while the apiserver waits for the next reads.
	needs := make([]targetNeeds, len(all))
	var asked atomic.Bool
	parallel.Run("the targets' needs", runtime.GOMAXPROCS(0), len(all), func(i int) {
		if n, ok := c.stageNeeds[all[i]]; ok && !all[i].Forecast && n.current(all[i]) {
			needs[i] = n
		} else {
			needs[i] = needsOf(all[i])
			asked.Store(true)
		}
	})
	if same && !asked.Load() {
		return // the same targets, each needing what it did: the record stands
	}
	fresh := make(map[*observed.Target]targetNeeds, len(all))
	for i, t := range all {
		fresh[t] = needs[i]
	}
	c.stageNeeds = fresh
}

// topNeeding is needing restricted to the run's own targets, for the reads
// that nest more targets (scans), which run before the nested ones exist.
func (c *Collector) topNeeding(s *observed.Snapshot, e diagnose.Evidence) []*observed.Target {
	var out []*observed.Target
	for _, t := range s.Targets {
		if c.needs(t).Has(e) {
			out = append(out, t)
		}
	}
	return out
}
