package collect

import (
	"context"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/catalog"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/snapshot"
)

// readControllers reads the workloads (Deployments, StatefulSets, DaemonSets)
// and the CRD groups, when a target waits on a third-party finalizer.
func (c *Collector) readControllers(ctx context.Context, s *snapshot.Snapshot) {
	if !anyThirdPartyFinalizer(s) {
		return
	}
	apps := c.Clients.Typed.AppsV1()
	ctl := &s.Controllers
	deployments, err := apps.Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Skip(skipOf("list deployments", err))
		return
	}
	for _, d := range deployments.Items {
		desired := int32(1)
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		ctl.Workloads = append(ctl.Workloads, snapshot.Workload{Kind: "deployment", Namespace: d.Namespace, Name: d.Name, Labels: d.Labels, Desired: desired, Ready: d.Status.ReadyReplicas})
	}
	statefulSets, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Skip(skipOf("list statefulsets", err))
		return
	}
	for _, st := range statefulSets.Items {
		desired := int32(1)
		if st.Spec.Replicas != nil {
			desired = *st.Spec.Replicas
		}
		ctl.Workloads = append(ctl.Workloads, snapshot.Workload{Kind: "statefulset", Namespace: st.Namespace, Name: st.Name, Labels: st.Labels, Desired: desired, Ready: st.Status.ReadyReplicas})
	}
	daemonSets, err := apps.DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Skip(skipOf("list daemonsets", err))
		return
	}
	for _, ds := range daemonSets.Items {
		ctl.Workloads = append(ctl.Workloads, snapshot.Workload{Kind: "daemonset", Namespace: ds.Namespace, Name: ds.Name, Labels: ds.Labels, Desired: ds.Status.DesiredNumberScheduled, Ready: ds.Status.NumberReady})
	}
	ctl.Read = true
	crds, err := c.Clients.Metadata.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Skip(skipOf("list customresourcedefinitions", err))
		return
	}
	groups := map[string]bool{}
	for _, crd := range crds.Items {
		if _, group, ok := strings.Cut(crd.Name, "."); ok {
			groups[group] = true
		}
	}
	for g := range groups {
		ctl.APIGroups = append(ctl.APIGroups, g)
	}
	sort.Strings(ctl.APIGroups)
}

func anyThirdPartyFinalizer(s *snapshot.Snapshot) bool {
	for _, t := range s.AllTargets() {
		for _, f := range t.Object.GetFinalizers() {
			if catalog.ThirdPartyFinalizer(f) {
				return true
			}
		}
	}
	return false
}
