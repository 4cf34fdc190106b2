package collect

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Progress is what a collector is reading now, for a progress line: the
// phases under way, in the order they began: a scan ("the cluster",
// "objects in namespace shop") with the types it listed and the objects
// it saw, a read of the objects found, a source ("nodes", "events"). Safe
// for concurrent use; a nil Progress records nothing.
type Progress struct {
	mu     sync.Mutex
	active []*tracker
}

// tracker is one phase under way; a scan's counts are kept as its pages
// come (listEach). A nil tracker counts nothing.
type tracker struct {
	name           string
	total          int // the types a scan lists; 0 for a phase that is no scan
	types, objects atomic.Int64
	progress       *Progress
}

// track records that a phase began; finish ends it.
func (c *Collector) track(name string, totalTypes int) *tracker {
	t := &tracker{name: name, total: totalTypes, progress: c.Progress}
	if p := c.Progress; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.active = append(p.active, t)
	}
	return t
}

// page counts the objects of one page; typeDone one type fully listed.
func (t *tracker) page(n int) {
	if t != nil {
		t.objects.Add(int64(n))
	}
}

func (t *tracker) typeDone() {
	if t != nil {
		t.types.Add(1)
	}
}

// finish ends the phase.
func (t *tracker) finish() {
	if p := t.progress; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.active = slices.DeleteFunc(p.active, func(a *tracker) bool { return a == t })
	}
}

// String says what is under way: "reading the cluster: 2/5 types listed,
// 10 objects seen; events", or "diagnosing" between reads. Names from the
// cluster (a namespace's) are shown escaped.
func (p *Progress) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.active) == 0 {
		return "diagnosing"
	}
	parts := make([]string, 0, len(p.active))
	for _, t := range p.active {
		part := report.Safe(t.name)
		if t.total > 0 {
			part += fmt.Sprintf(": %d/%s listed, %s seen", t.types.Load(), report.Count(t.total, "type"), report.Count(int(t.objects.Load()), "object"))
		}
		parts = append(parts, part)
	}
	return "reading " + strings.Join(parts, "; ")
}
