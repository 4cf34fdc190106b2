package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// ownerState is how alive the controller behind a third-party finalizer looks.
type ownerState int

const (
	ownerUnknown ownerState = iota // the workloads were not read
	ownerHealthy                   // a matching workload has ready replicas
	ownerDown                      // matching workloads exist, none ready
	ownerGone                      // nothing in the cluster looks like it
)

// genericLabels are domain labels that say nothing about which controller it is.
var genericLabels = []string{"com", "io", "org", "net", "dev", "sh", "cloud", "co", "app", "apps", "k8s", "x-k8s", "kubernetes",
	"sigs", "www", "github", "finalizer", "finalizers", "controller", "controllers", "operator", "operators", "example"}

// ownerTokens are the distinctive words of a finalizer's name: for
// "finalizers.cert-manager.io/certificate" that is "cert-manager".
func ownerTokens(finalizer string) []string {
	domain, _, _ := strings.Cut(strings.ToLower(finalizer), "/")
	var out []string
	for _, l := range strings.Split(domain, ".") {
		if len(l) >= 3 && !slices.Contains(genericLabels, l) {
			out = append(out, l)
		}
	}
	return out
}

// ownerLiveness judges whether the controller behind a third-party finalizer
// looks alive: a Deployment, StatefulSet or DaemonSet whose name, namespace
// or app labels carry the finalizer's distinctive words, and its readiness;
// when none does, the workloads RBAC lets write held (grantedOwners; nil
// when the finalizer holds no one object: a namespace's count).
func ownerLiveness(ctl *observed.Controllers, finalizer string, held *observed.Target) (ownerState, []report.Fact) {
	if ctl == nil {
		return ownerUnknown, nil
	}
	tokens := ownerWords(finalizer)
	var evidence []report.Fact
	domain, _, _ := strings.Cut(finalizer, "/")
	for _, g := range ctl.APIGroups {
		if g == domain || strings.HasSuffix(domain, "."+g) || strings.HasSuffix(g, "."+domain) {
			evidence = append(evidence, report.Noted(fmt.Sprintf("CRDs of API group %s are installed", g)))
		}
	}
	if len(tokens) == 0 {
		return ownerUnknown, evidence
	}
	state := ownerGone
	for _, w := range ownerWorkloads(ctl, finalizer) {
		evidence = append(evidence, report.Noted(fmt.Sprintf("%s %s/%s: %d/%d ready (looks like the owner of %s)", w.Kind, w.Namespace, w.Name, w.Ready, w.Desired, finalizer)))
		switch {
		case w.Ready > 0:
			state = ownerHealthy
		case state == ownerGone:
			state = ownerDown
		}
	}
	if state == ownerGone && held != nil { // named unlike its finalizer: who may write the object
		granted, grants := grantedLiveness(ctl, held, finalizer)
		state, evidence = granted, append(evidence, grants...)
	}
	if state == ownerGone {
		evidence = append(evidence, report.Noted(fmt.Sprintf("no Deployment, StatefulSet or DaemonSet in the cluster is named or labelled %q: the controller that removes %s looks gone", strings.Join(tokens, "|"), finalizer)))
	}
	return state, evidence
}

// ownerWorkloads are the workloads that look like finalizer's controller:
// those its words name (ownerWords), the closest first: when some carry
// more of its words than others, or its path's word too, only those (an
// operator that runs one controller per finalizer: Config Connector's
// cnrm-deletiondefender removes cnrm.cloud.google.com/deletion-defender,
// cnrm-controller-manager cnrm.cloud.google.com/finalizer; Tekton's
// tekton-chains-controller removes chains.tekton.dev, not
// tekton-pipelines-webhook).
func ownerWorkloads(ctl *observed.Controllers, finalizer string) []observed.Workload {
	tokens := ownerWords(finalizer)
	if ctl == nil || len(tokens) == 0 {
		return nil
	}
	path := pathWord(finalizer)
	var best []observed.Workload
	top := 0
	for _, w := range ctl.Workloads {
		score := 0
		for _, t := range tokens {
			if workloadMatches(w, []string{t}) {
				score++
			}
		}
		if score == 0 {
			continue
		}
		if path != "" && workloadMatches(joined(w), []string{path}) {
			score++
		}
		switch {
		case score > top:
			best, top = []observed.Workload{w}, score
		case score == top:
			best = append(best, w)
		}
	}
	return best
}

// genericPaths are the finalizer paths that name no controller of their own.
var genericPaths = []string{"finalizer", "finalizers", "cleanup", "protection", "teardown", "delete", "deletion", "resources", "resource",
	"controller", "operator", "dependents", "wait", "foreground"}

// pathWord is a finalizer's path, the part after "/", without separators
// ("deletion-defender" -> "deletiondefender"), when it is distinctive.
func pathWord(finalizer string) string {
	_, path, ok := strings.Cut(strings.ToLower(finalizer), "/")
	word := separators.Replace(path)
	if !ok || len(word) < 5 || slices.Contains(genericPaths, word) {
		return ""
	}
	return word
}

// separators removes the separators of a name's words (a Replacer builds
// its tables on first use: one for the run, not one a call).
var separators = strings.NewReplacer("-", "", "_", "", ".", "")

// joined is w with separators removed from the fields workloadMatches reads.
func joined(w observed.Workload) observed.Workload {
	out := observed.Workload{Name: separators.Replace(w.Name), Namespace: separators.Replace(w.Namespace), Labels: map[string]string{}}
	for _, l := range observed.WorkloadNameLabels {
		out.Labels[l] = separators.Replace(w.Labels[l])
	}
	return out
}

// ownerWords are what names a finalizer's controller: the words of the
// finalizer's name, and the workloads its catalogue row names (Cluster
// API's capi-controller-manager shares no word with machine.cluster.x-k8s.io).
func ownerWords(finalizer string) []string {
	tokens := ownerTokens(finalizer)
	for _, w := range catalog.FinalizerOwner(finalizer).Workloads {
		tokens = append(tokens, strings.ToLower(w))
	}
	return tokens
}

// ownerServiceAccount is the user the controller of a third-party finalizer
// sends its writes as: the service account of the ready workloads that look
// like its owner, when they agree on one.
func ownerServiceAccount(ctl *observed.Controllers, finalizer string) (account string, from observed.Workload, ok bool) {
	for _, w := range ownerWorkloads(ctl, finalizer) {
		if w.Ready == 0 || w.ServiceAccount == "" {
			continue
		}
		sa := "system:serviceaccount:" + w.Namespace + ":" + w.ServiceAccount
		if account != "" && account != sa {
			return "", observed.Workload{}, false // two candidates: the sender is unknown
		}
		account, from = sa, w
	}
	return account, from, account != ""
}

func workloadMatches(w observed.Workload, tokens []string) bool {
	fields := []string{w.Name, w.Namespace}
	for _, l := range observed.WorkloadNameLabels {
		fields = append(fields, w.Labels[l])
	}
	for _, f := range fields {
		f = strings.ToLower(f)
		for _, t := range tokens {
			if f != "" && strings.Contains(f, t) {
				return true
			}
		}
	}
	return false
}

// grantedOwners are the workloads whose service account RBAC lets update or
// patch the held object's resource (or its finalizers), by a rule naming
// its API group: the controller allowed to remove the finalizer, whatever
// it is named (Cluster API's AWS provider runs as capa-controller-manager
// for awscluster.infrastructure.cluster.x-k8s.io), with how it is granted.
func grantedOwners(ctl *observed.Controllers, t *observed.Target) ([]observed.Workload, []string) {
	if ctl == nil || len(ctl.Grants) == 0 {
		return nil, nil
	}
	gr := schema.ParseGroupResource(t.Ref.Resource)
	if gr.Group == "" {
		return nil, nil // a core kind: every controller of the cluster may write some
	}
	var out []observed.Workload
	var via []string
	for _, w := range ctl.Workloads {
		for _, g := range ctl.Grants {
			if g.ServiceAccount != w.Namespace+"/"+w.ServiceAccount || (g.Namespace != "" && g.Namespace != t.Ref.Namespace) ||
				!slices.Contains(g.APIGroups, gr.Group) ||
				!slices.ContainsFunc(g.Resources, func(r string) bool { return r == "*" || r == gr.Resource || r == gr.Resource+"/finalizers" }) {
				continue
			}
			out, via = append(out, w), append(via, g.Via)
			break
		}
	}
	return out, via
}

// grantedLiveness judges, when no workload is named like a finalizer's
// controller, the workloads RBAC lets write the object.
func grantedLiveness(ctl *observed.Controllers, t *observed.Target, finalizer string) (ownerState, []report.Fact) {
	owners, via := grantedOwners(ctl, t)
	if len(owners) == 0 {
		return ownerGone, nil
	}
	state := ownerDown
	var evidence []report.Fact
	for i, w := range owners {
		evidence = append(evidence, report.Noted(fmt.Sprintf("%s %s/%s: %d/%d ready (its service account %s may update %s: %s; may be the controller that removes %s)",
			w.Kind, w.Namespace, w.Name, w.Ready, w.Desired, w.ServiceAccount, t.Ref.Resource, via[i], finalizer)))
		if w.Ready > 0 {
			state = ownerHealthy
		}
	}
	return state, evidence
}

// livenessOf is ownerLiveness of the snapshot's controllers, judged once
// per finalizer and kind and namespace of held object while s is judged
// (the RBAC grants it falls back on are per resource and namespace).
func livenessOf(s *observed.Snapshot, finalizer string, held *observed.Target) (ownerState, []report.Fact) {
	type key struct {
		finalizer, resource, namespace string
		held                           bool
	}
	k := key{finalizer: finalizer, held: held != nil}
	if held != nil {
		k.resource, k.namespace = held.Ref.Resource, held.Ref.Namespace
	}
	type liveness struct {
		state    ownerState
		evidence []report.Fact
	}
	l := derive(s, k, func() liveness {
		state, evidence := ownerLiveness(s.Controllers, finalizer, held)
		return liveness{state, evidence}
	})
	return l.state, slices.Clip(l.evidence)
}
