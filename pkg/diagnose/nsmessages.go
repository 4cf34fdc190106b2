package diagnose

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Parsers of the namespace controller's condition messages
// (pkg/controller/namespace/deletion/status_condition_utils.go). They never
// fail: text they do not recognise yields no structure, and the report keeps
// the message as it is.

// remaining is one resource type, or one finalizer, with its count.
type remaining struct {
	name  string // "widgets.example.com", "pods" (core), or a finalizer
	count int
}

var (
	// "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 3 resource instances"
	resourceCountRE = regexp.MustCompile(`([a-z0-9][a-z0-9.-]*) has (\d+) resource instances`)
	// "Some content in the namespace has finalizers remaining: example.com/x in 3 resource instances"
	finalizerCountRE = regexp.MustCompile(`(\S+) in (\d+) resource instances`)
	// "... unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"
	groupVersionRE = regexp.MustCompile(`(?:^|[\s,:])([a-z0-9][a-z0-9.-]*\.[a-z0-9.-]+/v[0-9]+(?:(?:alpha|beta)[0-9]+)?): `)
	// `failed calling webhook "cm.deny.example.com": ...` (the call failed) and
	// `admission webhook "cm.deny.example.com" denied the request: ...` (it answered no)
	webhookNameRE = regexp.MustCompile(`(?:failed calling webhook|admission webhook) "([^"]+)"`)
	// `conversion webhook for conv.example.com/v1, Kind=Gadget failed: Post "https://...": service "conv" not found`
	conversionRE = regexp.MustCompile(`conversion webhook for ([a-z0-9][a-z0-9.-]*)/([a-z0-9]+), Kind=([A-Za-z0-9]+) failed: ([^,]*)`)
)

// conversionFailure is a conversion webhook call that failed for one kind.
type conversionFailure struct {
	group, version, kind, err string
}

// parseWebhookNames reads the names of the admission webhooks an error text
// says failed or refused, each once.
func parseWebhookNames(msg string) []string {
	var out []string
	for _, m := range webhookNameRE.FindAllStringSubmatch(msg, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// parseConversionFailures reads the conversion webhook failures in an error
// text (a namespace condition, a failed list), each kind once.
func parseConversionFailures(msg string) []conversionFailure {
	var out []conversionFailure
	for _, m := range conversionRE.FindAllStringSubmatch(msg, -1) {
		f := conversionFailure{group: m[1], version: m[2], kind: m[3], err: strings.TrimSpace(m[4])}
		if !slices.ContainsFunc(out, func(o conversionFailure) bool { return o.group == f.group && o.kind == f.kind }) {
			out = append(out, f)
		}
	}
	return out
}

// parseContentRemaining reads NamespaceContentRemaining: counts by resource
// ("pods." for the core group becomes "pods").
func parseContentRemaining(msg string) []remaining {
	_, list, ok := strings.Cut(msg, "remaining: ")
	if !ok {
		return nil
	}
	var out []remaining
	for _, m := range resourceCountRE.FindAllStringSubmatch(list, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		out = append(out, remaining{name: strings.TrimSuffix(m[1], "."), count: n})
	}
	return out
}

// parseFinalizersRemaining reads NamespaceFinalizersRemaining: counts by finalizer.
func parseFinalizersRemaining(msg string) []remaining {
	_, list, ok := strings.Cut(msg, "remaining: ")
	if !ok {
		return nil
	}
	var out []remaining
	for _, m := range finalizerCountRE.FindAllStringSubmatch(list, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		out = append(out, remaining{name: strings.TrimPrefix(m[1], ", "), count: n})
	}
	return out
}

// parseFailingGroups reads NamespaceDeletionDiscoveryFailure: the group
// versions that failed discovery, each once.
func parseFailingGroups(msg string) []string {
	var out []string
	for _, m := range groupVersionRE.FindAllStringSubmatch(msg, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// onlyLeftovers reports a content failure whose every error only says that
// objects are still there ("unexpected items still remain": pods past their
// grace period, for instance), with no webhook or conversion error.
func onlyLeftovers(msg string) bool {
	m := failedTypes.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	n, err := strconv.Atoi(m[1])
	return err == nil && n > 0 && strings.Count(msg, "unexpected items still remain") == n
}

var failedTypes = regexp.MustCompile(`^Failed to delete all resource types, (\d+) remaining: `)
