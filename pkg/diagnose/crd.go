package diagnose

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// crdCleanupFinalizer is how apiextensions holds a CRD until its instances are gone.
const crdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// crdCauses explains a CRD held by customresourcecleanup: the instances
// apiextensions still has to delete, grouped by the finalizers that hold
// them, with a few of them diagnosed and nested.
func crdCauses(s *observed.Snapshot, t *observed.Target, _ heldBy, tm timing) []report.Cause {
	crd, c := s.CRDs[t.Ref.Name], t.Contents
	if crd == nil || c == nil || t.Object.GetKind() != "CustomResourceDefinition" {
		return nil // not read: the generic FinalizerPending speaks
	}
	finalizers := t.Object.GetFinalizers()
	var causes []report.Cause
	total := sum(c.ByNamespace)
	if total == 0 && len(c.Skipped) == 0 {
		return nil // nothing left: apiextensions removes its finalizer on its next pass
	}
	held := heldCauses(s, t, func(n int) string { return report.Count(n, "instance") + " of " + crd.Kind }, "the instances of CRD "+crd.Name, tm)
	sort.SliceStable(held, func(i, j int) bool { return causeLess(held[i], held[j]) })

	sev := settling(report.Warning, tm)
	summary := fmt.Sprintf("%s %s (%s); apiextensions deletes %s before it lets the CRD go", report.Count(total, crd.Kind+" instance"), agree(total, "remains", "remain"), countsByNamespace(c.ByNamespace), agree(total, "it", "them"))
	var blockedBy []report.Item
	var quotes quoted
	if len(held) > 0 {
		sev = held[0].Severity
		summary += ": " + held[0].Summary
		quotes = quotedOf(held[0])
		for i := range held { // nested once, under the CRD's own cause
			blockedBy = append(blockedBy, held[i].BlockedBy...)
			held[i].BlockedBy = nil
		}
	}
	cond := crd.Terminating
	evidence := []report.Fact{report.FieldFact("metadata.finalizers", "["+strings.Join(finalizers, ", ")+"]")}
	if cond != nil {
		evidence = append(evidence, report.Fact{Text: fmt.Sprintf("status.conditions[type=Terminating]: status %s, reason %s, since %s: %s",
			cond.Status, cond.Reason, cond.LastTransitionTime.UTC().Format(time.RFC3339), cond.Message),
			Field: "status.conditions[Terminating]", Value: string(cond.Status), Reason: cond.Reason, Quote: cond.Message, At: timeOf(cond.LastTransitionTime.Time)})
		if cond.Reason == "InstanceDeletionFailed" {
			sev = settling(report.Critical, tm)
		}
	}
	evidence = append(evidence, report.Noted(fmt.Sprintf("live scan: %s left: %s", report.Count(total, "instance"), countsByNamespace(c.ByNamespace))))
	for _, f := range sortedKeys(c.Finalizers) {
		evidence = append(evidence, report.Noted(fmt.Sprintf("finalizer %s on %s: removed by %s", f, report.Count(c.Finalizers[f], "instance"), catalog.FinalizerOwner(f).Owner)))
	}
	for _, sk := range c.Skipped {
		evidence = append(evidence, report.Noted(fmt.Sprintf("live scan: could not %s (%s)", sk.Check, sk.Reason)))
	}
	resource := crd.Plural + "." + crd.Group
	remaining := cause(catalog.CRDInstancesRemaining, sev, 0.9, summary, evidence,
		step(catalog.CRDInstancesRemaining, "list-instances", kubectl("", "get", resource, "-A")),
		step(catalog.CRDInstancesRemaining, "resolve-instances", ""),
	)
	remaining.About.Count = total
	quotes.on(&remaining)
	for _, f := range sortedKeys(c.Finalizers) {
		remaining.Remediation = append(remaining.Remediation, step(catalog.CRDInstancesRemaining, "remove-instance-finalizers", removeFromEach(resource, "", f), "owner", catalog.FinalizerOwner(f).Owner, "finalizer", f, "instances", report.Count(c.Finalizers[f], "instance")))
	}
	remaining.Remediation = append(remaining.Remediation,
		step(catalog.CRDInstancesRemaining, "never-remove-cleanup", ""))
	remaining.BlockedBy = blockedBy
	causes = append(causes, remaining)
	return append(causes, held...)
}

// removeFromEach removes one finalizer from every object of a type, in a
// namespace or in all of them (""), that is being deleted and has it, each
// with a JSON patch that tests the finalizer at its index before removing
// it (never the whole list). jq writes the kubectl commands, quoted with
// @sh, from what the cluster returns: no name is pasted by the plugin.
func removeFromEach(resource, namespace, finalizer string) string {
	return removeFromEachOf([]string{resource}, namespace, finalizer)
}

// removeFromEachOf is removeFromEach over several types: one loop over
// them, not a pipeline each (a namespace's leftovers may span a hundred
// types).
func removeFromEachOf(resources []string, namespace, finalizer string) string {
	const program = `.items[] | select(.metadata.deletionTimestamp != null) | (.metadata.finalizers // [] | index($f)) as $i | select($i != null)` +
		` | ["kubectl", "patch", $r, .metadata.name] + (if .metadata.namespace then ["-n", .metadata.namespace] else [] end)` +
		` + ["--type=json", "-p", ([{op: "test", path: "/metadata/finalizers/\($i)", value: $f}, {op: "remove", path: "/metadata/finalizers/\($i)"}] | tojson)] | @sh`
	each := func(resource string) string {
		get := kubectl(namespace, "get", resource, "-o", "json")
		if namespace == "" {
			get = kubectl("", "get", resource, "-A", "-o", "json")
		}
		return pipe(get, command("jq", "-r", "--arg", "f", finalizer, "--arg", "r", resource, program), "sh")
	}
	switch len(resources) {
	case 0:
		return ""
	case 1:
		return each(resources[0])
	}
	// A placeholder word quote leaves alone stands for the loop's variable.
	const placeholder = "RESOURCE"
	words := make([]string, len(resources))
	for i, r := range resources {
		words[i] = shellWord(r)
	}
	body := strings.ReplaceAll(each(placeholder), " "+placeholder+" ", ` "$r" `)
	return "for r in " + strings.Join(words, " ") + "; do " + body + "; done"
}

// countsByNamespace reads "ns-a: 3, ns-b: 1"; cluster-scoped instances have no namespace.
func countsByNamespace(counts map[string]int) string {
	var parts []string
	for _, ns := range sortedKeys(counts) {
		name := ns
		if name == "" {
			name = "cluster-scoped"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, counts[ns]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
