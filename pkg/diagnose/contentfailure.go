package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/celeval"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// contentFailureCauses explains why the namespace controller cannot delete
// the content: admission webhooks refusing its DELETEs, conversion webhooks
// that make the content impossible to list. Read from its condition message,
// from the live scan's own failed lists, and from the webhook configuration.
func contentFailureCauses(s *observed.Snapshot, t *observed.Target, tm timing) []report.Cause {
	var named []string
	if c := namespaceCondition(t.Namespace, corev1.NamespaceDeletionContentFailure); c != nil && c.Status == corev1.ConditionTrue {
		named = parseWebhookNames(c.Message)
	}
	causes := namespaceWebhookCauses(s, t, named, tm)
	for _, f := range conversionFailures(s, t) {
		causes = append(causes, conversionCause(s, f, tm))
	}
	return causes
}

// conversionFailures are the kinds a namespace's live scan failed to list,
// and its condition says, for want of a conversion webhook.
func conversionFailures(s *observed.Snapshot, t *observed.Target) []conversionFailure {
	var conversions []conversionFailure
	if c := t.Contents; c != nil {
		for _, sk := range c.Skipped {
			conversions = addConversions(conversions, sk.APIMessage)
		}
	}
	if c := namespaceCondition(t.Namespace, corev1.NamespaceDeletionContentFailure); c != nil && c.Status == corev1.ConditionTrue {
		for _, f := range parseConversionFailures(c.Message) {
			// The condition may be minutes old: a kind the live scan listed
			// without error converts fine now.
			if !listedFine(s, t.Contents, f) {
				conversions = addConversions(conversions, c.Message)
			}
		}
	}
	return conversions
}

// ReadsConversionOf reports whether the diagnosis of t reads the backend of
// crd's conversion webhook: a CRD target's own; for a namespace, a kind
// that fails to convert. The collector reads those backends' endpoints.
func ReadsConversionOf(s *observed.Snapshot, t *observed.Target, crd *observed.CRD) bool {
	if t.Namespace == nil {
		return t.Ref.Name == crd.Name
	}
	return slices.ContainsFunc(conversionFailures(s, t), func(f conversionFailure) bool { return f.group == crd.Group && f.kind == crd.Kind })
}

// addConversions adds the conversion failures a text reports, each kind once.
func addConversions(to []conversionFailure, text string) []conversionFailure {
	for _, f := range parseConversionFailures(text) {
		if !slices.ContainsFunc(to, func(o conversionFailure) bool { return o.group == f.group && o.kind == f.kind }) {
			to = append(to, f)
		}
	}
	return to
}

// listedFine reports whether the live scan listed the failing kind without error.
func listedFine(s *observed.Snapshot, c *observed.Contents, f conversionFailure) bool {
	crd := crdOfKind(s, f.group, f.kind)
	if c == nil || crd == nil {
		return false
	}
	gvr, scanned := c.Resources[schema.GroupResource{Group: crd.Group, Resource: crd.Plural}]
	return scanned && !slices.ContainsFunc(c.Skipped, func(sk report.Skip) bool { return sk.Resource.GroupResource() == gvr.GroupResource() })
}

const namedInCondition = "status.conditions[type=NamespaceDeletionContentFailure] names webhook %q"

// namespaceWebhookCauses finds the webhooks that refuse the namespace
// controller's DELETEs: those its error names, and those matching DELETE of
// a leftover type whose service has no ready endpoints.
func namespaceWebhookCauses(s *observed.Snapshot, t *observed.Target, named []string, tm timing) []report.Cause {
	ns := t.Ref.Name
	var causes []report.Cause
	if s.Admission == nil {
		for _, name := range named {
			c := cause(catalog.AdmissionWebhookDenied, settling(report.Critical, tm), 0.8,
				fmt.Sprintf("webhook %s refuses the namespace controller's deletes in namespace %s", name, ns),
				[]report.Fact{report.Noted(fmt.Sprintf(namedInCondition, name)), report.Noted("webhook configurations: not read")},
				step(catalog.AdmissionWebhookDenied, "find-configuration", pipe(kubectl("", "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "json"),
					command("jq", "-r", `.items[] | select(any(.webhooks[]; .name == `+jsonText(name)+`)) | .kind + "/" + .metadata.name`))))
			c.About.Webhook = name
			causes = append(causes, c)
		}
		return causes
	}
	for _, h := range hooksOf(*s.Admission) {
		resources := leftoverTypesMatching(t, h)
		isNamed := slices.Contains(named, h.name)
		if !isNamed && len(resources) == 0 {
			continue
		}
		what := fmt.Sprintf("the namespace controller's DELETE of %s in namespace %s", orContent(resources), ns)
		// Its matchConditions are not evaluated: the controller deletes whole
		// collections, and its error names the webhooks that refused.
		f, ok := webhookRefusal(*s.Admission, h, what, conditionsOutcome{result: celeval.True})
		switch {
		case !ok:
			continue
		case isNamed:
			f.severity, f.confidence = report.Critical, 0.95
			f.summary = fmt.Sprintf("webhook %s refuses %s (the namespace controller's error names it)", h.name, what)
			f.evidence = append(f.evidence, report.Noted(fmt.Sprintf(namedInCondition, h.name)))
		case f.severity != report.Critical:
			continue // a reachable webhook that matches may well allow the deletes
		}
		causes = append(causes, f.asCause(tm))
	}
	return causes
}

// leftoverTypesMatching lists the types left in the namespace whose DELETE
// the webhook intercepts. A webhook with an objectSelector is left out: the
// leftovers' labels are not read, and guessing would blame webhooks that
// guard other objects (the condition's message names the ones that refuse).
func leftoverTypesMatching(t *observed.Target, h hook) []string {
	c := t.Contents
	if c == nil || (h.objectSelector != nil && (len(h.objectSelector.MatchLabels) > 0 || len(h.objectSelector.MatchExpressions) > 0)) {
		return nil
	}
	var out []string
	for gr, gvr := range c.Resources {
		r := request{operation: admissionregistrationv1.Delete, group: gvr.Group, version: gvr.Version, resource: gvr.Resource,
			namespaced: true, nsLabels: namespaceLabels(t.Namespace)}
		if c.Counts[gr] > 0 && h.matches(r) {
			out = append(out, gr.String())
		}
	}
	sort.Strings(out)
	return out
}

func orContent(resources []string) string {
	if len(resources) == 0 {
		return "its content"
	}
	return strings.Join(resources, ", ")
}

// conversionCause explains a conversion webhook that fails: the apiserver
// cannot serve the kind in the version asked for, so a namespace holding such
// objects cannot be emptied.
func conversionCause(s *observed.Snapshot, f conversionFailure, tm timing) report.Cause {
	crd := crdOfKind(s, f.group, f.kind)
	name := strings.ToLower(f.kind) + "s." + f.group // a guess, replaced by the CRD's name once read
	evidence := []report.Fact{report.Noted(fmt.Sprintf("conversion webhook for %s/%s, Kind=%s failed: %s", f.group, f.version, f.kind, f.err))}
	why := f.err
	check := step(catalog.ConversionWebhookFailing, "read-conversion", kubectlOn("", "get", "crd", name, "-o", "jsonpath={.spec.conversion}"))
	if crd != nil {
		name = crd.Name
		evidence = append(evidence, report.Noted(fmt.Sprintf("customresourcedefinition %s: spec.conversion.strategy %s, storage version %s, served %v, status.storedVersions %v",
			crd.Name, crd.ConversionStrategy, crd.StorageVersion, crd.Served, crd.StoredVersions)))
		if svc := crd.ConversionService; svc != "" {
			nsName, svcName, _ := strings.Cut(svc, "/")
			check = step(catalog.ConversionWebhookFailing, "check-backend", endpointsCommand(nsName, svcName))
			if p := crd.ConversionServiceEndpoints; p != nil {
				n := *p
				evidence = append(evidence, report.Noted(fmt.Sprintf("service %s: %d ready endpoints", svc, n)))
				if n == 0 {
					why = fmt.Sprintf("its service %s has no ready endpoints", svc)
				}
			}
		} else if crd.ConversionURL != "" {
			evidence = append(evidence, report.Noted("conversion webhook url: "+crd.ConversionURL))
		}
	}
	evidence = append(evidence, report.Noted("the namespace controller lists and deletes in the preferred version: the apiserver must convert each stored object to it, and cannot"))
	c := cause(catalog.ConversionWebhookFailing, settling(report.Critical, tm), 0.9,
		fmt.Sprintf("the conversion webhook of CRD %s fails (%s): %s objects cannot be listed nor deleted", name, why, f.kind),
		evidence,
		check,
		step(catalog.ConversionWebhookFailing, "restore-backend", ""),
		step(catalog.ConversionWebhookFailing, "stop-converting", kubectlOn("", "patch", "crd", name, "--type=merge", "-p", `{"spec":{"conversion":{"strategy":"None"}}}`)),
		step(catalog.ConversionWebhookFailing, "delete-crd", kubectlOn("", "delete", "crd", name)))
	c.About.Object = &report.ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions", Name: name}
	return c
}

func crdOfKind(s *observed.Snapshot, group, kind string) *observed.CRD {
	for _, crd := range s.CRDs {
		if crd.Group == group && crd.Kind == kind {
			return crd
		}
	}
	return nil
}

// asCause turns an admission refusal into a cause.
func (f refusal) asCause(tm timing, evidence ...report.Fact) report.Cause {
	c := cause(f.code, settling(f.severity, tm), f.confidence, f.summary, append(f.evidence, evidence...), f.steps...)
	c.About = f.about
	return c
}
