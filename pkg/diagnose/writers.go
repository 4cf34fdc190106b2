package diagnose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Who wrote an object, and when, is in its managedFields: one entry per
// field manager (and subresource), with the time it last changed a field it
// owns. A controller that wrote after the deletion began and within the
// settle time is at work (a restore's counters moving); one that has not
// written since the deletion began is alive but not acting on it; the
// manager that added a finalizer names its controller when the catalogue
// does not know the finalizer.

// write is one field manager's latest change to an object.
type write struct {
	manager, operation, subresource string
	at                              time.Time
	// finalizers are the finalizers this manager's fields include (read
	// from fieldsV1, which a live scan does not keep).
	finalizers []string
}

// what names the part of the object a write changed.
func (w write) what() string {
	if w.subresource != "" {
		return "its " + w.subresource
	}
	return "the object"
}

// humanManagers are the field managers of people's tools, whose writes say
// nothing about a controller (prefixes: kubectl-client-side-apply,
// kubectl-edit, Mozilla/... for a browser's dashboard).
var humanManagers = []string{"kubectl", "Mozilla", "k9s", "helm", "kustomize", "Lens", "OpenAPI-Generator"}

func human(manager string) bool {
	return slices.ContainsFunc(humanManagers, func(p string) bool { return strings.HasPrefix(manager, p) })
}

// writesOf reads an object's managedFields, latest first, from its maps
// (no conversion: the rules ask for them several times per object, for
// every object a scan found).
func writesOf(u *unstructured.Unstructured) []write {
	var out []write
	eachWrite(u, func(w write, fields map[string]any) {
		w.finalizers = finalizersIn(fields)
		out = append(out, w)
	})
	slices.SortStableFunc(out, func(a, b write) int { return b.at.Compare(a.at) })
	return out
}

// eachWrite calls f with each managedFields entry that names its manager
// and time, in the object's order, and the entry's field set.
func eachWrite(u *unstructured.Unstructured, f func(w write, fields map[string]any)) {
	md, _ := u.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		manager, _ := m["manager"].(string)
		at, _ := m["time"].(string)
		t, err := time.Parse(time.RFC3339, at)
		if err != nil || manager == "" {
			continue
		}
		operation, _ := m["operation"].(string)
		subresource, _ := m["subresource"].(string)
		fields, _ := m["fieldsV1"].(map[string]any)
		f(write{manager: manager, operation: operation, subresource: subresource, at: t}, fields)
	}
}

// finalizersIn lists the finalizers a fieldsV1 set owns
// ({"f:metadata":{"f:finalizers":{"v:\"name\"":{}}}}).
func finalizersIn(fields map[string]any) []string {
	md, _ := fields["f:metadata"].(map[string]any)
	set, _ := md["f:finalizers"].(map[string]any)
	var out []string
	for k := range set {
		if v, ok := strings.CutPrefix(k, "v:"); ok {
			if name, err := strconv.Unquote(v); err == nil {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// kubernetesManagers are the field managers of Kubernetes' own components:
// their writes (the namespace controller's conditions, the garbage
// collector's) are their work, not that of a third-party finalizer's
// controller.
var kubernetesManagers = []string{"kube-controller-manager", "kube-apiserver", "kube-scheduler", "kubelet", "cloud-controller-manager"}

// writesOfTarget are u's writes (writesOf), parsed once while s is judged:
// the rules read them several times for each held object.
func writesOfTarget(s *observed.Snapshot, u *unstructured.Unstructured) []write {
	type key struct{ object *unstructured.Unstructured }
	return slices.Clip(derive(s, key{u}, func() []write { return writesOf(u) }))
}

// controllerWrites are the writes (an object's, latest first) of its
// non-human managers other than Kubernetes' own components.
func controllerWrites(writes []write) []write {
	var out []write
	for _, w := range writes {
		if w.byController() {
			out = append(out, w)
		}
	}
	return out
}

// byController: the write's manager is neither a person's tool nor one of
// Kubernetes' own components.
func (w write) byController() bool {
	return !human(w.manager) && !slices.Contains(kubernetesManagers, w.manager)
}

// lastWrite is the latest write of a controller (controllerWrites); false
// when the object's managedFields record none.
func lastWrite(writes []write) (write, bool) {
	ws := controllerWrites(writes)
	if len(ws) == 0 {
		return write{}, false
	}
	return ws[0], true
}

// atWork is a controller's latest write when it came after the deletion
// began and within the settle time: its controller is working on the
// deletion.
func atWork(writes []write, tm timing, now time.Time) (write, bool) {
	w, ok := lastWrite(writes)
	return w, ok && sinceDeletion(w.at, tm) && now.Sub(w.at) <= settleTime
}

// writeEvidence quotes who added each finalizer and each controller's
// latest write, with how long before now.
func writeEvidence(writes []write, finalizers []string, now time.Time) []report.Fact {
	var out []report.Fact
	for _, f := range finalizers {
		for _, w := range writes {
			if slices.Contains(w.finalizers, f) {
				out = append(out, report.Fact{Text: fmt.Sprintf("managedFields: finalizer %s was added by field manager %s (%s)", f, w.manager, w.operation),
					Field: "metadata.managedFields", Value: w.manager, Reason: "added finalizer " + f, At: timeOf(w.at)})
			}
		}
	}
	for _, w := range controllerWrites(writes) {
		out = append(out, report.Fact{Text: fmt.Sprintf("managedFields: %s last wrote %s %s ago (%s)", w.manager, w.what(), report.HumanDuration(now.Sub(w.at)), w.at.UTC().Format(time.RFC3339)),
			Field: "metadata.managedFields", Value: w.manager, Reason: "last wrote " + w.what(), At: timeOf(w.at)})
	}
	return out
}

// silentSince says whether no controller has written to the object since
// its deletion began, and its latest write before that; nothing recorded
// makes no claim either way.
func silentSince(writes []write, tm timing) (last write, silent bool) {
	last, ok := lastWrite(writes)
	return last, ok && !sinceDeletion(last.at, tm)
}

// sinceDeletion: at is no earlier than the deletion's request. Both are
// recorded to the second, so a write in the same second counts as after: a
// claim of silence is made only when it is certain.
func sinceDeletion(at time.Time, tm timing) bool {
	return !at.IsZero() && !at.Before(tm.requestedAt)
}

// writtenSinceDeletion: a controller wrote the object after its deletion
// began (its status is then read in full). A write in the second the object
// was created is taken for its creation: an object created and deleted
// within one second (scripts and tests do it, make bench's case 4 by the
// hundred) is not read again, one GET each, for a status nobody wrote.
// It is asked of every target before the diagnosis: it walks the entries
// without keeping them (writesOf sorted and kept them, a twentieth of a
// list -A's CPU on thousands of held objects).
func writtenSinceDeletion(u *unstructured.Unstructured) bool {
	var last time.Time
	eachWrite(u, func(w write, _ map[string]any) {
		if w.byController() && w.at.After(last) {
			last = w.at
		}
	})
	return sinceDeletion(last, timingOf(u, time.Time{})) && !last.Equal(u.GetCreationTimestamp().Time)
}

// genericManagers are field manager names that say nothing of which
// controller it is: controller-runtime's and Go's defaults.
var genericManagers = []string{"manager", "controller", "operator", "main", "before-first-apply", "unknown"}

// addedBy names the field managers that added finalizer f, when their
// names can find the controller (a controller's, and not a generic one):
// velero-server, cloudsql-manager.
func addedBy(writes []write, f string) []string {
	var out []string
	for _, w := range controllerWrites(writes) {
		if slices.Contains(w.finalizers, f) && !slices.Contains(genericManagers, strings.ToLower(w.manager)) && !slices.Contains(out, w.manager) {
			out = append(out, strings.ToLower(w.manager))
		}
	}
	return out
}

// writtenBefore: the object's last write, by anyone (its creation when its
// managedFields record none), came before t: what a controller does at
// once about it has had the time to be done.
func writtenBefore(u *unstructured.Unstructured, t time.Time) bool {
	last := u.GetCreationTimestamp().Time
	if ws := writesOf(u); len(ws) > 0 {
		last = ws[0].at
	}
	return last.Before(t)
}
