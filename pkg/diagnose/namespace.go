package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/kubeversion"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
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
			return []report.Step{step(catalog.NamespaceDiscoveryFailure, "find-apiservice", "kubectl get apiservices | grep False")}
		}},
	{corev1.NamespaceDeletionGVParsingFailure, catalog.NamespaceDiscoveryFailure, report.Critical,
		"an API group version cannot be parsed, so the namespace controller cannot list the content",
		func(string) []report.Step {
			return []report.Step{step(catalog.NamespaceDiscoveryFailure, "find-group-version", "kubectl get apiservices")}
		}},
	{corev1.NamespaceDeletionContentFailure, catalog.NamespaceContentFailure, report.Critical,
		"the namespace controller failed to delete some content",
		func(ns string) []report.Step {
			return []report.Step{step(catalog.NamespaceContentFailure, "read-errors",
				kubectlOn("", "get", "namespace", ns, "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceDeletionContentFailure")].message}`))}
		}},
	{corev1.NamespaceFinalizersRemaining, catalog.NamespaceFinalizersRemaining, report.Warning,
		"objects left in the namespace wait for their finalizers",
		func(ns string) []report.Step {
			return []report.Step{
				step(catalog.NamespaceFinalizersRemaining, "group-by-finalizer", command("kubectl", "terminating", "list", "-n", ns, "--group-by", "finalizer")),
				step(catalog.NamespaceFinalizersRemaining, "restore-controllers", ""),
			}
		}},
	{corev1.NamespaceContentRemaining, catalog.NamespaceContentRemaining, report.Warning,
		"objects remain in the namespace",
		func(ns string) []report.Step {
			return []report.Step{step(catalog.NamespaceContentRemaining, "list-leftovers", command("kubectl", "terminating", "why", "-n", ns))}
		}},
}

// namespaceCauses reads the namespace controller's conditions, then what the
// live scan found left in the namespace: the facts once, then each of
// namespaceRules in order, as kubectl drain runs its filters.
func namespaceCauses(s *observed.Snapshot, t *observed.Target, _ heldBy, tm timing) []report.Cause {
	if t.Namespace == nil {
		return nil // not read: the generic FinalizerPending speaks
	}
	f := namespaceFactsOf(s, t, tm)
	var causes []report.Cause
	for _, r := range namespaceRules {
		causes = append(causes, r.causes(f)...)
	}
	return causes
}

// namespaceFacts is what the namespace rules judge by, computed once.
type namespaceFacts struct {
	s  *observed.Snapshot
	t  *observed.Target
	ns *corev1.Namespace
	tm timing
	// content are the causes of what the live scan found held.
	content []report.Cause
	// ordered is whether the namespace controller deletes pods first.
	ordered kubeversion.State
	// podsFirst: pods are left and, deleted first, the rest waits for them
	// by design; without ordered deletion every type is deleted at once.
	podsFirst bool
	// podsProgressing: pods are left and none of them is stuck.
	podsProgressing bool
	// restProgressing: everything left is progressing (the pods in grace,
	// what only they hold, and, under ordered deletion, the rest not
	// deleted yet): the controller's *Remaining conditions then describe
	// progress, not a blocker.
	restProgressing bool
	// unreported are the leftovers the live scan counts that are not pods
	// terminating normally.
	unreported int
}

func namespaceFactsOf(s *observed.Snapshot, t *observed.Target, tm timing) namespaceFacts {
	f := namespaceFacts{s: s, t: t, ns: t.Namespace, tm: tm, content: contentCauses(s, t, tm)}
	f.ordered = kubeversion.OrderedNamespaceDeletion.On(minorOf(s))
	podsLeft := t.Contents != nil && t.Contents.Counts[observed.Pods] > 0
	f.podsFirst = podsLeft && f.ordered.On
	stuckPods := slices.ContainsFunc(f.content, func(c report.Cause) bool { return c.Code == string(catalog.PodStuckTerminating) })
	f.podsProgressing = podsLeft && !stuckPods
	f.restProgressing = f.podsProgressing && !slices.ContainsFunc(f.content, func(c report.Cause) bool { return c.Severity != report.Info }) &&
		(f.ordered.On || sum(t.Contents.NotDeleted)-t.Contents.NotDeleted[observed.Pods] == 0)
	f.unreported = leftovers(t.Contents)
	if f.podsProgressing {
		f.unreported -= t.Contents.Counts[observed.Pods]
	}
	return f
}

// namespaceRules are the namespace's rules, in the order their causes are
// gathered (the ranking orders them afterwards).
var namespaceRules = []struct {
	name   string
	causes func(namespaceFacts) []report.Cause
}{
	{"what the live scan found held", func(f namespaceFacts) []report.Cause { return slices.Clone(f.content) }},
	{"the controller's content failure, by its parts", func(f namespaceFacts) []report.Cause { return contentFailureCauses(f.s, f.t, f.tm) }},
	{"pods in their grace period, and what will hold the namespace after them", podsProgressingCauses},
	{"unavailable APIServices the controller has not named yet", unnamedAPIServiceCauses},
	{"leftovers the controller has not reported yet", unreportedLeftoverCauses},
	{"the controller's conditions", conditionCauses},
	{"a controller that has not acted", inactiveControllerCauses},
}

func podsProgressingCauses(f namespaceFacts) []report.Cause {
	if !f.podsProgressing {
		return nil
	}
	return append([]report.Cause{podsInGraceCause(f.s, f.t, f.tm, f.ordered)}, forecastCauses(f.s, f.t)...)
}

// unnamedAPIServiceCauses: an unavailable APIService the namespace
// controller has not named (yet) blocks it all the same.
func unnamedAPIServiceCauses(f namespaceFacts) []report.Cause {
	if c := namespaceCondition(f.ns, corev1.NamespaceDeletionDiscoveryFailure); c != nil && c.Status == corev1.ConditionTrue {
		return nil // conditionCauses names it
	}
	return apiServiceCauses(f.s, unavailableGroupVersions(f.s))
}

// unreportedLeftoverCauses: the live scan finds objects the controller has
// not reported. While pods remain under ordered deletion, the rest waits for
// them by design (see podsInGraceCause).
func unreportedLeftoverCauses(f namespaceFacts) []report.Cause {
	if c := namespaceCondition(f.ns, corev1.NamespaceContentRemaining); c != nil && c.Status == corev1.ConditionTrue || f.unreported == 0 || f.podsFirst {
		return nil
	}
	c := cause(catalog.NamespaceContentRemaining, settling(report.Warning, f.tm), 0.6,
		fmt.Sprintf("the live scan finds %s left in the namespace; the namespace controller has not reported %s (yet)", report.Count(f.unreported, "object"), agree(f.unreported, "it", "them")),
		scanEvidence(f.t.Contents),
		step(catalog.NamespaceContentRemaining, "list-leftovers", command("kubectl", "terminating", "why", "-n", f.ns.Name)),
		clearNamespaceFinalizers(catalog.NamespaceContentRemaining, f.ns.Name))
	c.About.Count = f.unreported
	return []report.Cause{c}
}

// conditionCauses are the namespace controller's conditions that are True,
// each a cause of its code (namespaceConditions).
func conditionCauses(f namespaceFacts) []report.Cause {
	var causes []report.Cause
	for _, nc := range namespaceConditions {
		c := namespaceCondition(f.ns, nc.condition)
		if c == nil || c.Status != corev1.ConditionTrue {
			continue
		}
		if (c.Type == corev1.NamespaceContentRemaining || c.Type == corev1.NamespaceFinalizersRemaining) && f.restProgressing {
			continue // all that remains is progressing: podsInGraceCause and the content's own causes speak
		}
		evidence := []report.Fact{{Text: fmt.Sprintf("status.conditions[type=%s]: status True, reason %s, since %s: %s", c.Type, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message),
			Field: "status.conditions[" + string(c.Type) + "]", Value: string(c.Status), Reason: c.Reason, Quote: c.Message, At: timeOf(c.LastTransitionTime.Time)}}
		evidence = append(evidence, conditionDetails(c)...)
		if c.Type == corev1.NamespaceContentRemaining {
			evidence = append(evidence, scanEvidence(f.t.Contents)...)
		}
		if c.Type == corev1.NamespaceDeletionDiscoveryFailure {
			causes = append(causes, apiServiceCauses(f.s, parseFailingGroups(c.Message))...)
		}
		sev := nc.severity
		if c.Type == corev1.NamespaceDeletionContentFailure && onlyLeftovers(c.Message) {
			sev = report.Warning // a symptom: what holds the leftovers is named by the live scan's causes
		}
		causes = append(causes, cause(nc.code, settling(sev, f.tm), 0.8,
			fmt.Sprintf("%s: %s", nc.summary, c.Message),
			append(evidence, specFinalizers(f.ns)),
			append(nc.steps(f.ns.Name), clearNamespaceFinalizers(nc.code, f.ns.Name))...))
	}
	return causes
}

// inactiveControllerCauses: Terminating for a while without any deletion
// condition, the namespace controller is not acting on it.
func inactiveControllerCauses(f namespaceFacts) []report.Cause {
	if hasDeletionConditions(f.ns) || f.tm.terminating <= controllerSilence {
		return nil
	}
	return []report.Cause{cause(catalog.NamespaceControllerInactive, report.Critical, 0.7,
		fmt.Sprintf("Terminating for %s without any deletion condition: the namespace controller is not acting on it", report.HumanDuration(f.tm.terminating)),
		append([]report.Fact{report.Noted("status.conditions: no NamespaceDeletion* or Namespace*Remaining condition"), report.FieldFact("status.phase", string(f.ns.Status.Phase)), specFinalizers(f.ns)},
			scanEvidence(f.t.Contents)...),
		step(catalog.NamespaceControllerInactive, "check-controller-manager", "kubectl get pods -n kube-system -l component=kube-controller-manager"),
		clearNamespaceFinalizers(catalog.NamespaceControllerInactive, f.ns.Name))}
}

// leftovers counts the objects the live scan found.
func leftovers(c *observed.Contents) int {
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
func clearNamespaceFinalizers(code catalog.Code, name string) report.Step {
	return step(code, "finalize-namespace", finalizeNamespace(name, ".spec.finalizers = []"))
}
