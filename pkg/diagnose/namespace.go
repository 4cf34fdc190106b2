package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/versions"
)

// controllerSilence is how long a Terminating namespace may go without any
// deletion condition before the namespace controller is presumed not running
// (it writes them on its first pass, within seconds).
const controllerSilence = 2 * time.Minute

// namespaceConditions maps the namespace controller's deletion conditions
// (pkg/controller/namespace/deletion) to cause codes.
var namespaceConditions = []struct {
	condition corev1.NamespaceConditionType
	code      catalog.Code
	severity  report.Severity
	summary   string
	steps     func(ns string) []report.Step
}{
	{corev1.NamespaceDeletionDiscoveryFailure, catalog.NamespaceDiscoveryFailure, report.Critical,
		"discovery of some API groups fails, so the namespace controller cannot tell the namespace is empty",
		func(string) []report.Step {
			return []report.Step{read("Find the unavailable APIService, then restore its backend (APIServiceUnavailable, when reported, names it and says how)", "kubectl get apiservices | grep False")}
		}},
	{corev1.NamespaceDeletionGVParsingFailure, catalog.NamespaceDiscoveryFailure, report.Critical,
		"an API group version cannot be parsed, so the namespace controller cannot list the content",
		func(string) []report.Step {
			return []report.Step{read("Find the malformed group version in the message and fix the APIService or CRD that serves it", "kubectl get apiservices")}
		}},
	{corev1.NamespaceDeletionContentFailure, catalog.NamespaceContentFailure, report.Critical,
		"the namespace controller failed to delete some content",
		func(ns string) []report.Step {
			return []report.Step{read("Read the errors in the message: webhooks refusing deletes, conversion webhooks, objects that do not go away",
				kubectlOn("", "get", "namespace", ns, "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceDeletionContentFailure")].message}`))}
		}},
	{corev1.NamespaceFinalizersRemaining, catalog.NamespaceFinalizersRemaining, report.Warning,
		"objects left in the namespace wait for their finalizers",
		func(ns string) []report.Step {
			return []report.Step{
				read("See which finalizers hold what is left, and how many objects each", command("kubectl", "terminating", "list", "-n", ns, "--group-by", "finalizer")),
				repair("Bring back the controllers that own these finalizers", ""),
			}
		}},
	{corev1.NamespaceContentRemaining, catalog.NamespaceContentRemaining, report.Warning,
		"objects remain in the namespace",
		func(ns string) []report.Step {
			return []report.Step{read("List what remains and chase each object's own blocker", command("kubectl", "terminating", "why", "-n", ns))}
		}},
}

// namespaceCauses reads the namespace controller's conditions, then what the
// live scan found left in the namespace.
func namespaceCauses(s *snapshot.Snapshot, t *snapshot.Target, _ heldBy, tm timing) []report.Cause {
	ns := t.Namespace
	if ns == nil {
		return nil // not read: the generic FinalizerPending speaks
	}
	content := contentCauses(s, t, tm)
	causes := append(slices.Clone(content), contentFailureCauses(s, t, tm)...)
	ordered := versions.OrderedNamespaceDeletion.On(minorOf(s))
	podsLeft := t.Contents != nil && t.Contents.Counts[snapshot.Pods] > 0
	// With ordered deletion the rest waits for the pods by design; without
	// it every type is deleted at once and the pods hold back nothing.
	podsFirst := podsLeft && ordered.On
	podsProgressing := podsLeft && !slices.ContainsFunc(causes, func(c report.Cause) bool { return c.Code == string(catalog.PodStuckTerminating) })
	if podsProgressing {
		causes = append(causes, podsInGraceCause(s, t, tm, ordered))
		causes = append(causes, forecastCauses(s, t)...)
	}
	others := leftovers(t.Contents)
	if podsLeft {
		others -= t.Contents.Counts[snapshot.Pods]
	}
	// Everything left is progressing: the pods in grace, what the scan
	// found held only by what they hold (a claim they use), and, under
	// ordered deletion, the rest not deleted yet. The controller's
	// *Remaining conditions then describe progress, not a blocker.
	restProgressing := podsProgressing && !slices.ContainsFunc(content, func(c report.Cause) bool { return c.Severity != report.Info }) &&
		(ordered.On || sum(t.Contents.NotDeleted)-t.Contents.NotDeleted[snapshot.Pods] == 0)
	if c := namespaceCondition(ns, corev1.NamespaceDeletionDiscoveryFailure); c == nil || c.Status != corev1.ConditionTrue {
		// Not (yet) named by the namespace controller, but it will block it all the same.
		causes = append(causes, apiServiceCauses(s, unavailableGroupVersions(s))...)
	}
	// While pods remain under ordered deletion, the rest waits for them by
	// design (see podsInGraceCause); pods terminating normally are no leftover.
	unreported := others
	if !podsProgressing {
		unreported = leftovers(t.Contents)
	}
	if c := namespaceCondition(ns, corev1.NamespaceContentRemaining); (c == nil || c.Status != corev1.ConditionTrue) && unreported > 0 && !podsFirst {
		c := cause(catalog.NamespaceContentRemaining, settling(report.Warning, tm), 0.6,
			fmt.Sprintf("the live scan finds %s left in the namespace; the namespace controller has not reported %s (yet)", report.Count(unreported, "object"), agree(unreported, "it", "them")),
			scanEvidence(t.Contents),
			read("List what remains and chase each object's own blocker", command("kubectl", "terminating", "why", "-n", ns.Name)),
			clearNamespaceFinalizers(ns.Name))
		c.About.Count = unreported
		causes = append(causes, c)
	}
	for _, nc := range namespaceConditions {
		c := namespaceCondition(ns, nc.condition)
		if c == nil || c.Status != corev1.ConditionTrue {
			continue
		}
		if (c.Type == corev1.NamespaceContentRemaining || c.Type == corev1.NamespaceFinalizersRemaining) && restProgressing {
			continue // all that remains is progressing: podsInGraceCause and the content's own causes speak
		}
		evidence := []report.Fact{{Text: fmt.Sprintf("status.conditions[type=%s]: status True, reason %s, since %s: %s", c.Type, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message),
			Field: "status.conditions[" + string(c.Type) + "]", Value: string(c.Status), Reason: c.Reason, Quote: c.Message, At: timeOf(c.LastTransitionTime.Time)}}
		evidence = append(evidence, conditionDetails(c)...)
		if c.Type == corev1.NamespaceContentRemaining {
			evidence = append(evidence, scanEvidence(t.Contents)...)
		}
		if c.Type == corev1.NamespaceDeletionDiscoveryFailure {
			causes = append(causes, apiServiceCauses(s, parseFailingGroups(c.Message))...)
		}
		sev := nc.severity
		if c.Type == corev1.NamespaceDeletionContentFailure && onlyLeftovers(c.Message) {
			sev = report.Warning // a symptom: what holds the leftovers is named by the live scan's causes
		}
		causes = append(causes, cause(nc.code, settling(sev, tm), 0.8,
			fmt.Sprintf("%s: %s", nc.summary, c.Message),
			append(evidence, specFinalizers(ns)),
			append(nc.steps(ns.Name), clearNamespaceFinalizers(ns.Name))...))
	}
	if !hasDeletionConditions(ns) && tm.terminating > controllerSilence {
		causes = append(causes, cause(catalog.NamespaceControllerInactive, report.Critical, 0.7,
			fmt.Sprintf("Terminating for %s without any deletion condition: the namespace controller is not acting on it", report.HumanDuration(tm.terminating)),
			append([]report.Fact{report.Noted("status.conditions: no NamespaceDeletion* or Namespace*Remaining condition"), report.FieldFact("status.phase", string(ns.Status.Phase)), specFinalizers(ns)},
				scanEvidence(t.Contents)...),
			read("Check that kube-controller-manager runs and its namespace controller is enabled", "kubectl get pods -n kube-system -l component=kube-controller-manager"),
			clearNamespaceFinalizers(ns.Name)))
	}
	return causes
}

// leftovers counts the objects the live scan found.
func leftovers(c *snapshot.Contents) int {
	if c == nil {
		return 0
	}
	return sum(c.Counts)
}

func sum[K comparable](counts map[K]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// conditionDetails structures a condition's message: counts by resource, by
// finalizer (with the finalizer's owner), the failing group versions.
func conditionDetails(c *corev1.NamespaceCondition) []report.Fact {
	var out []report.Fact
	switch c.Type {
	case corev1.NamespaceContentRemaining:
		for _, r := range parseContentRemaining(c.Message) {
			out = append(out, report.Noted(fmt.Sprintf("remaining %s: %d (as the namespace controller counted them)", r.name, r.count)))
		}
	case corev1.NamespaceFinalizersRemaining:
		for _, r := range parseFinalizersRemaining(c.Message) {
			out = append(out, report.Noted(fmt.Sprintf("finalizer %s on %d objects: removed by %s", r.name, r.count, catalog.FinalizerOwner(r.name).Owner)))
		}
	case corev1.NamespaceDeletionDiscoveryFailure:
		for _, gv := range parseFailingGroups(c.Message) {
			out = append(out, report.Noted(fmt.Sprintf("discovery fails for %s (usually an APIService that is not Available: kubectl get apiservice %s)", gv, apiServiceName(gv))))
		}
	}
	return out
}

// apiServiceName is the APIService that serves a group version: "v1beta1.metrics.k8s.io".
func apiServiceName(gv string) string {
	group, version, _ := strings.Cut(gv, "/")
	return version + "." + group
}

func namespaceCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}

func hasDeletionConditions(ns *corev1.Namespace) bool {
	for _, nc := range namespaceConditions {
		if namespaceCondition(ns, nc.condition) != nil {
			return true
		}
	}
	return false
}

func specFinalizers(ns *corev1.Namespace) report.Fact {
	f := make([]string, 0, len(ns.Spec.Finalizers))
	for _, x := range ns.Spec.Finalizers {
		f = append(f, string(x))
	}
	return report.FieldFact("spec.finalizers", "["+strings.Join(f, ", ")+"]")
}

// clearNamespaceFinalizers is the last resort, with its real cost stated.
func clearNamespaceFinalizers(name string) report.Step {
	return fix("Last resort, only once the cause above is understood: clear spec.finalizers through the finalize subresource",
		finalizeNamespace(name, ".spec.finalizers = []"), report.RiskDestructive,
		"the leftover objects stay in etcd, unmanaged, and reappear if a namespace of the same name is created again")
}
