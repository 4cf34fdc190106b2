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
	apps := c.Clients.Typed.AppsV1()
	ctl := &observed.Controllers{}
	// The lists at once (one round trip, not four); judged in order.
	var (
		deployments                []appsv1.Deployment
		statefulSets               []appsv1.StatefulSet
		daemonSets                 []appsv1.DaemonSet
		crds                       []metav1.PartialObjectMetadata
		dErr, stErr, dsErr, crdErr error
		all                        = metav1.ListOptions{}
		grantsFailed               *report.Skip
	)
	concurrently(
		func() { ctl.Grants, grantsFailed = c.readGrants(ctx) },
		func() { deployments, dErr = listAll[appsv1.Deployment](ctx, all, pages(apps.Deployments("").List)) },
		func() { statefulSets, stErr = listAll[appsv1.StatefulSet](ctx, all, pages(apps.StatefulSets("").List)) },
		func() { daemonSets, dsErr = listAll[appsv1.DaemonSet](ctx, all, pages(apps.DaemonSets("").List)) },
		func() {
			if len(s.CRDs) == 0 { // else already read in full for a CRD or a conversion error
				crds, crdErr = listAll[metav1.PartialObjectMetadata](ctx, all, pages(c.Clients.Metadata.Resource(crdResource).List))
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
