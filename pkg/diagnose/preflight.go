package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// Preflight forecasts, for each target not being deleted (kubectl
// terminating preflight), what would hold its deletion were it to begin
// now: the judgements and codes of Diagnose, applied to what the deletion
// would run into. Its items and causes are marked Forecast, and an item is
// Stuck when its deletion would stick. A target already being deleted is
// diagnosed as Diagnose does: there is nothing left to foresee.
func Preflight(s *observed.Snapshot) report.Report {
	r := reportOf(s, preflightTarget)
	if diagnosed != nil {
		diagnosed(s, r, true)
	}
	return r
}

func preflightTarget(s *observed.Snapshot, t *observed.Target) report.Item {
	if t.Object.GetDeletionTimestamp() != nil {
		return diagnoseTarget(s, t)
	}
	item := itemOf(t)
	item.Node, item.Forecast, item.Causes = nodeOf(t), true, []report.Cause{}
	for _, r := range forecastRules {
		item.Causes = append(item.Causes, r.causes(s, t)...)
	}
	rank(item.Causes)
	for i := range documented(item.Causes) {
		item.Causes[i].Forecast = true
	}
	if len(item.Causes) > 0 {
		item.Severity = item.Causes[0].Severity
	}
	item.Stuck = item.Severity.Weight() > report.Info.Weight()
	return item
}

// forecastRule is one thing a deletion runs into: what it must read, and
// the causes it would hold the deletion by.
type forecastRule struct {
	name   string
	needs  func(*observed.Target) Evidence
	causes func(*observed.Snapshot, *observed.Target) []report.Cause
}

// forecastRules are what a deletion runs into, in the order their causes
// are gathered (the ranking orders them afterwards). Filled in init: a
// namespace's rules forecast its pods in turn, which would make the table's
// initialisation circular.
var forecastRules []forecastRule

func init() {
	forecastRules = []forecastRule{
		{"its own finalizers", ownFinalizerNeeds, ownFinalizerForecasts},
		{"the finalizers of what its deletion deletes (a namespace's objects, a CRD's instances)", contentNeeds, contentForecasts},
		{"unavailable APIServices, which stop the namespace controller", apiServiceNeeds, apiServiceForecasts},
		{"failing conversion webhooks, which stop the namespace controller", conversionNeeds, conversionForecasts},
		{"what is already being deleted in it, and stuck", contentNeeds, stuckInsideForecasts},
		{"admission of the writes its deletion needs", admissionNeeds, admissionForecasts},
		{"the node of a pod", podNodeNeeds, podNodeForecasts},
		{"a namespace's pods, on nodes that would not finish them", contentNeeds, livePodForecasts},
		{"the objects elsewhere whose finalizer's controller it deletes", strandedNeeds, strandedForecasts},
		{"its dependents, under --cascade=foreground", dependentNeeds, dependentForecasts},
	}
}

// forecastNeeds is what the forecast rules read about t beyond t itself.
func forecastNeeds(t *observed.Target) Evidence {
	var e Evidence
	for _, r := range forecastRules {
		e |= r.needs(t)
	}
	return e
}

// contentNeeds: a namespace's objects; a CRD's instances (apiextensions adds
// its cleanup finalizer only once the CRD is deleted, so the finalizer's
// rule does not ask for them before).
func contentNeeds(t *observed.Target) Evidence {
	switch {
	case t.Namespace != nil:
		return ContentEvidence
	case t.Ref.Kind == "CustomResourceDefinition" && t.Object.GroupVersionKind().Group == "apiextensions.k8s.io":
		return InstanceEvidence | CRDEvidence
	}
	return 0
}

func apiServiceNeeds(t *observed.Target) Evidence {
	if t.Namespace != nil {
		return APIServiceEvidence
	}
	return 0
}

// apiServiceForecasts: an unavailable APIService stops the namespace
// controller, whichever namespace it deletes.
func apiServiceForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if t.Namespace == nil {
		return nil
	}
	return leadWith("deleting the namespace now would stop at discovery: ", apiServiceCauses(s, unavailableGroupVersions(s)))
}

// conversionNeeds: a namespace's objects, and the CRDs (their conversion
// webhooks' backends) once its scan failed to convert a kind: the CRDs are
// read after the scan.
func conversionNeeds(t *observed.Target) Evidence {
	if t.Namespace == nil {
		return 0
	}
	if c := t.Contents; c != nil && slices.ContainsFunc(c.Skipped, func(sk report.Skip) bool { return len(parseConversionFailures(sk.APIMessage)) > 0 }) {
		return ContentEvidence | CRDEvidence
	}
	return ContentEvidence
}

// conversionForecasts: a kind the namespace holds whose conversion webhook
// fails cannot be listed nor deleted, by the scan as by the namespace
// controller, which would stop there.
func conversionForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if t.Namespace == nil {
		return nil
	}
	var causes []report.Cause
	for _, f := range conversionFailures(s, t) {
		causes = append(causes, conversionCause(s, f, timing{}))
	}
	return leadWith("deleting the namespace now would stop at its content: ", causes)
}

// stuckInsideForecasts: what a namespace holds (or a CRD: its instances)
// that is already being deleted and stuck, its pods and the objects each
// finalizer holds, diagnosed and nested as why does: the deletion would
// wait for them. Their last resort, emptying a Terminating namespace's
// spec.finalizers, is not one for a namespace not being deleted.
func stuckInsideForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if t.Contents == nil {
		return nil
	}
	var tm timing // not being deleted: each nested object is judged by its own deletion
	var causes []report.Cause
	where, things := "namespace "+t.Ref.Name, func(n int) string { return report.Count(n, "object") + " in the namespace" }
	if t.Namespace != nil {
		if pc, ok := stuckPodsCause(s, t, tm); ok {
			causes = append(causes, pc)
		}
	} else {
		where, things = "the instances of CRD "+t.Ref.Name, func(n int) string { return report.Count(n, "instance") }
	}
	for _, c := range heldCauses(s, t, things, where, tm) {
		if c.Severity != report.Info {
			causes = append(causes, c)
		}
	}
	for i := range causes {
		causes[i].Remediation = slices.DeleteFunc(causes[i].Remediation, func(st report.Step) bool { return st.ID == "finalize-namespace" })
	}
	return leadWith("already being deleted, and stuck: ", causes)
}

// admissionNeeds: the webhooks and policies, for an object whose finalizers
// a controller will remove, and for a namespace, whose content the
// namespace controller will delete.
func admissionNeeds(t *observed.Target) Evidence {
	if t.Namespace != nil || len(t.Object.GetFinalizers()) > 0 {
		return AdmissionEvidence
	}
	return 0
}

// admissionForecasts: the writes a deletion needs that admission would
// refuse, as why finds them once they are refused: the UPDATE that removes
// a finalizer (a webhook whose backend is gone, a policy whose expression
// denies it), the namespace controller's DELETEs of what the namespace
// holds.
func admissionForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	tm := asIfDeleted // a suspect webhook is judged as why judges it once the deletion is due
	causes := finalizerUpdateRefusals(s, t, tm)
	if t.Namespace != nil {
		causes = append(causes, namespaceWebhookCauses(s, t, nil, tm)...)
	}
	return wouldStick(causes)
}

func podNodeNeeds(t *observed.Target) Evidence {
	if t.Pod != nil && t.Pod.Spec.NodeName != "" {
		return NodeEvidence
	}
	return 0
}

// podNodeForecasts: a pod whose node is gone or does not report would not
// finish its deletion: only its kubelet runs the shutdown.
func podNodeForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if podNodeNeeds(t) == 0 {
		return nil
	}
	node := t.Pod.Spec.NodeName
	return wouldStick(aboutNode(nodeHealthOf(s, node).causes(t.Pod, timing{}), node))
}

// wouldStick says of causes found about a deletion not begun that they
// would hold it.
func wouldStick(causes []report.Cause) []report.Cause { return leadWith(wouldStickPrefix, causes) }

// leadWith puts lead before each cause's summary: what the forecast makes
// of a judgement why makes of a deletion under way.
func leadWith(lead string, causes []report.Cause) []report.Cause {
	for i := range causes {
		prefixed(&causes[i], lead)
	}
	return causes
}

const wouldStickPrefix = "the deletion would stick: "

// whyItWouldStick is a forecast cause's summary without its lead, for a
// summary that quotes it under a lead of its own.
func whyItWouldStick(c report.Cause) string { return strings.TrimPrefix(c.Summary, wouldStickPrefix) }

// livePodForecasts: the pods of a namespace not being deleted whose
// deletion would stick (their node gone or not reporting), nested: the
// namespace controller deletes pods first and waits for them, and why then
// reports PodStuckTerminating.
func livePodForecasts(s *observed.Snapshot, t *observed.Target) []report.Cause {
	if t.Contents == nil || t.Namespace == nil {
		return nil
	}
	var stuck []report.Item
	for _, p := range t.Contents.Live {
		if it := preflightTarget(s, p); it.Stuck {
			stuck = append(stuck, it)
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	SortItems(stuck)
	top := stuck[0]
	why := whyItWouldStick(top.Causes[0])
	summary := fmt.Sprintf("once deleted, pod %s would be stuck terminating: %s", top.Object.Name, why)
	if len(stuck) > 1 {
		summary = fmt.Sprintf("once deleted, %d pods would be stuck terminating; pod %s: %s", len(stuck), top.Object.Name, why)
	}
	evidence := []report.Fact{report.Noted(fmt.Sprintf("pods of namespace %s not being deleted: %d on a node, %d whose deletion would stick", t.Ref.Name, len(t.Contents.Live), len(stuck)))}
	for _, it := range stuck {
		evidence = append(evidence, report.Noted(fmt.Sprintf("pod %s on node %s: %s (%s)", it.Object.Name, it.Node, it.Causes[0].Code, it.Severity)))
	}
	c := cause(catalog.PodStuckTerminating, top.Severity, 0.85, summary, evidence,
		step(catalog.PodStuckTerminating, "resolve-pods", command("kubectl", "terminating", "preflight", "pod/"+top.Object.Name, "-n", t.Ref.Name)))
	c.About = report.About{Object: &top.Object, Count: len(stuck)}
	c.BlockedBy = stuck
	return []report.Cause{c}
}

// nodeOf is a pod's node ("" for any other kind, or a pod not scheduled).
func nodeOf(t *observed.Target) string {
	if t.Pod == nil {
		return ""
	}
	return t.Pod.Spec.NodeName
}
