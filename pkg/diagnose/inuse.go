package diagnose

import (
	"fmt"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// An in-use protection finalizer (a GatewayClass's while Gateways use it, an
// EC2NodeClass's while NodeClaims do) is removed by a live controller once
// no object names the held one where the catalogue's referencedBy says:
// the root cause is those objects, nested and diagnosed in turn when they
// are being deleted themselves, as a claim's pods are.

// inUseNeeds: the referrers, and what the owner says and whether it is
// alive (a gone owner never removes the finalizer, referrers or not).
func inUseNeeds(_ *observed.Target, _ heldBy) Evidence {
	return ReferenceEvidence | OwnerEvidence | EventEvidence
}

// ReferencesOf are the kinds of object that keep t's finalizers on while
// they name it (what the collector lists for ReferenceEvidence).
func ReferencesOf(t *observed.Target) []catalog.Reference {
	var out []catalog.Reference
	for _, f := range finalizersOf(t) {
		row, _ := catalog.LookupFinalizer(f.name)
		out = append(out, row.ReferencesTo(t.Ref.Kind)...)
	}
	return out
}

func inUseCause(s *observed.Snapshot, t *observed.Target, f heldBy, tm timing) []report.Cause {
	row, _ := catalog.LookupFinalizer(f.name)
	var users []*observed.Target
	refs := row.ReferencesTo(t.Ref.Kind)
	fields := map[*observed.Target]string{} // the field by which each user names it
	for _, r := range t.Referrers {
		if ref, ok := referenceOf(refs, r); ok {
			users = append(users, r)
			fields[r] = ref.Path
		}
	}
	if len(users) == 0 {
		return nil // nothing uses it: whether its owner is alive says the rest
	}
	state, liveness := livenessOf(s, f.name, t)
	if state == ownerGone || state == ownerDown {
		return nil // no controller removes it even once they are gone: that comes first
	}
	evidence := append([]report.Fact{report.Noted(fmt.Sprintf("finalizer %s: removed by %s once %s", f.name, row.Owner, row.HoldsWhile))}, liveness...)
	for _, c := range complaints(s, t, []heldBy{f}) {
		evidence = append(evidence, c.evidence)
	}
	var items []report.Item
	sev := report.Warning
	for _, u := range users {
		evidence = append(evidence, report.Noted(fmt.Sprintf("%s names %s/%s (%s), %s", report.Name(u.Ref), t.Ref.Kind, t.Ref.Name, fields[u], deletionState(u))))
		it := nestedItem(s, u, tm)
		items = append(items, it)
		if it.Stuck && it.Severity.Weight() > sev.Weight() {
			sev = it.Severity
		}
	}
	SortItems(items)
	first := users[0]
	noun := strings.ToLower(first.Ref.Kind)
	summary := fmt.Sprintf("%s still %s %s %s: %s; %s keeps %s until none does", report.Count(len(users), noun), agree(len(users), "uses", "use"), strings.ToLower(t.Ref.Kind), t.Ref.Name, podNames(users), row.Owner, f.name)
	deleted := 0
	for _, u := range users {
		if u.Object.GetDeletionTimestamp() != nil {
			deleted++
		}
	}
	var quotes quoted
	switch {
	case items[0].Stuck:
		summary += "; " + nestedSummary(items[0])
		quotes = nestedQuotes(items[0])
	case deleted == len(items):
		// Judged by its users, as a claim by its pods: all being deleted,
		// none stuck, they release it by themselves.
		sev = report.Info
		summary = fmt.Sprintf("progressing: the %s that %s %s %s %s being deleted and %s stuck (%s); %s then removes %s", report.Count(len(users), noun), agree(len(users), "uses", "use"), strings.ToLower(t.Ref.Kind), t.Ref.Name, agree(len(users), "is", "are"), agree(len(users), "is not", "none is"), nestedSummary(items[0]), row.Owner, f.name)
		quotes = nestedQuotes(items[0])
	}
	resource := first.Ref.Resource
	get := kubectl(sameNamespace(users), append([]string{"get", resource}, targetNames(users)...)...)
	del := kubectl(sameNamespace(users), append([]string{"delete", resource}, targetNames(users)...)...)
	if sameNamespace(users) == "" && first.Ref.Namespace != "" {
		get = kubectl("", "get", resource, "-A")
		del = ""
	}
	c := cause(catalog.ObjectInUse, settling(sev, tm), 0.9, summary, evidence,
		step(catalog.ObjectInUse, "see-users", get, "users", report.Plural(noun)),
		step(catalog.ObjectInUse, "delete-users", del, "users", report.Plural(noun), "kind", strings.ToLower(t.Ref.Kind), "owner", row.Owner),
		step(catalog.ObjectInUse, "never-remove-finalizer", "", "finalizer", f.name, "users", report.Plural(noun), "kind", strings.ToLower(t.Ref.Kind)))
	c.About = report.About{Count: len(users), Object: &first.Ref}
	c.BlockedBy = items
	quotes.on(&c)
	return []report.Cause{c}
}

// referenceOf is the reference by which r, of a kind the references say
// names the held object, names it.
func referenceOf(refs []catalog.Reference, r *observed.Target) (catalog.Reference, bool) {
	group, _ := splitAPIVersion(r.Ref.APIVersion)
	resource, _, _ := strings.Cut(r.Ref.Resource, ".")
	for _, ref := range refs {
		if group == ref.Group && resource == ref.Resource {
			return ref, true
		}
	}
	return catalog.Reference{}, false
}

// sameNamespace is the namespace every target is in, or "" when they
// differ or are cluster-scoped.
func sameNamespace(ts []*observed.Target) string {
	ns := ts[0].Ref.Namespace
	for _, t := range ts[1:] {
		if t.Ref.Namespace != ns {
			return ""
		}
	}
	return ns
}
