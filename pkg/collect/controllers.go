package collect

import (
	"context"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/diagnose"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/observed"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

func init() {
	register(source{name: "controllers", after: nesting, read: (*Collector).readControllers,
		early: (*Collector).controllerLists, earlyOn: diagnose.OwnerEvidence,
		permissions: []Permission{
			{Read: "`list` deployments, statefulsets, daemonsets (all namespaces) and customresourcedefinitions (metadata)", UsedFor: "whether a third-party finalizer's controller looks alive", Without: "`FinalizerPending` without the liveness judgement"},
			{Read: "`list` clusterroles, clusterrolebindings, roles and rolebindings (all namespaces), with the workloads", UsedFor: "the controller a finalizer's words do not name: the workloads whose service account may update the held object's resource", Without: "`skipped` names the list; the controller is judged by its name alone"},
		}})
}

// readControllers reads the workloads (Deployments, StatefulSets, DaemonSets)
// and the CRD groups, when a target waits on a third-party finalizer.
func (c *Collector) readControllers(ctx context.Context, s *observed.Snapshot) {
	if len(c.needing(s, diagnose.OwnerEvidence)) == 0 && !slices.ContainsFunc(s.Targets, diagnose.ForecastNeedsOwners) {
		return
	}
	ctl := &observed.Controllers{}
	// The lists at once (one round trip, not four); judged in order.
	var (
		deployments                []appsv1.Deployment
		statefulSets               []appsv1.StatefulSet
		daemonSets                 []appsv1.DaemonSet
		crds                       []metav1.PartialObjectMetadata
		dErr, stErr, dsErr, crdErr error
		grantsFailed               *report.Skip
	)
	concurrently(
		func() { ctl.Grants, grantsFailed = c.readGrants(ctx) },
		func() { deployments, statefulSets, daemonSets, dErr, stErr, dsErr = c.workloadLists(ctx) },
		func() {
			if len(s.CRDs) == 0 { // else already read in full for a CRD or a conversion error
				crds, crdErr = c.crdNames(ctx)
			}
		},
	)
	if grantsFailed != nil { // judged by names alone
		c.Skip(*grantsFailed)
	}
	if dErr != nil {
		c.Skip(skipOf("list deployments.apps", dErr))
		return
	}
	for _, d := range deployments {
		ctl.Workloads = append(ctl.Workloads, workload("deployment", d.ObjectMeta, d.Spec.Template.Spec, replicas(d.Spec.Replicas), d.Status.ReadyReplicas))
	}
	if stErr != nil {
		c.Skip(skipOf("list statefulsets.apps", stErr))
		return
	}
	for _, st := range statefulSets {
		ctl.Workloads = append(ctl.Workloads, workload("statefulset", st.ObjectMeta, st.Spec.Template.Spec, replicas(st.Spec.Replicas), st.Status.ReadyReplicas))
	}
	if dsErr != nil {
		c.Skip(skipOf("list daemonsets.apps", dsErr))
		return
	}
	for _, ds := range daemonSets {
		ctl.Workloads = append(ctl.Workloads, workload("daemonset", ds.ObjectMeta, ds.Spec.Template.Spec, ds.Status.DesiredNumberScheduled, ds.Status.NumberReady))
	}
	s.Controllers = ctl
	groups := map[string]bool{}
	for _, crd := range s.CRDs { // already read in full for a CRD or a conversion error
		groups[crd.Group] = true
	}
	if len(s.CRDs) == 0 {
		if crdErr != nil {
			c.Skip(skipOf("list customresourcedefinitions", crdErr))
			return
		}
		for _, crd := range crds {
			if _, group, ok := strings.Cut(crd.Name, "."); ok {
				groups[group] = true
			}
		}
	}
	for g := range groups {
		ctl.APIGroups = append(ctl.APIGroups, g)
	}
	sort.Strings(ctl.APIGroups)
}

// controllerLists starts, or waits for, what readControllers reads whatever
// the targets: the workloads, the RBAC grants' lists and the CRDs' names
// (unless the CRDs are read in full, for a CRD being deleted or a
// namespace whose content deletion failed: then that one was not needed).
func (c *Collector) controllerLists(ctx context.Context) {
	concurrently(func() { c.rbacLists(ctx) }, func() { c.workloadLists(ctx) }, func() { _, _ = c.crdNames(ctx) })
}

// crdNames lists the CRDs' metadata (their names say their groups), once
// per run.
func (c *Collector) crdNames(ctx context.Context) ([]metav1.PartialObjectMetadata, error) {
	return crdNameList.read(c, ctx)
}

// workloadLists lists the Deployments, StatefulSets and DaemonSets at once,
// each once per run: the scan may have started them (early.go).
func (c *Collector) workloadLists(ctx context.Context) (d []appsv1.Deployment, st []appsv1.StatefulSet, ds []appsv1.DaemonSet, dErr, stErr, dsErr error) {
	concurrently(
		func() { d, dErr = deploymentList.read(c, ctx) },
		func() { st, stErr = statefulSetList.read(c, ctx) },
		func() { ds, dsErr = daemonSetList.read(c, ctx) },
	)
	return
}

func workload(kind string, m metav1.ObjectMeta, pod corev1.PodSpec, desired, ready int32) observed.Workload {
	var labels map[string]string
	for _, l := range observed.WorkloadNameLabels {
		if v, ok := m.Labels[l]; ok {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[l] = v
		}
	}
	sa := pod.ServiceAccountName
	if sa == "" {
		sa = "default" // what the ServiceAccount admission plugin sets
	}
	return observed.Workload{Kind: kind, Namespace: m.Namespace, Name: m.Name, Labels: labels, Desired: desired, Ready: ready, ServiceAccount: sa}
}

// replicas reads spec.replicas, which defaults to 1.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
