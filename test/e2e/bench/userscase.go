package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/scenario"
)

// The namespaces and objects of case 5.
const (
	heldNamespace  = "held"
	ownerNamespace = "shop"
	ownerName      = "web"
)

// usersCase is issue 24's case 5, a cluster as users have them when they
// reach for the plugin: an aggregated API whose backend is gone (its
// APIService unavailable), a Deployment deleted in the foreground whose
// pods are held by a finalizer (Deployment -> ReplicaSet -> pods, each
// waiting in foreground deletion), and a namespace held with its leftovers
// (a tenth of them deleted and held by a finalizer), beside the CRDs of the
// scale. list -A and why -A against the floor over the whole cluster: the
// owner's dependents and the namespace's contents come from the run's one
// scan, so both stay near the floor's requests.
func usersCase(ctx context.Context, o Options, sz sizes) ([]Result, error) {
	l, px, kc, env, kinds, err := labWithKinds(ctx, o, lab.Options{}, sz)
	if err != nil {
		return nil, err
	}
	defer cleanup(l, px)

	t := time.Now()
	if err := env.Namespace(ctx, ownerNamespace); err != nil {
		return nil, err
	}
	if err := Objects(ctx, env, ownerNamespace, kinds[:sz.kinds], sz.perNamespace); err != nil {
		return nil, err
	}
	if err := ForegroundDeployment(ctx, env, ownerNamespace, ownerName, sz.dependents); err != nil {
		return nil, err
	}
	progress("deployment %s/%s deleted in the foreground, its %d pods held, in %s", ownerNamespace, ownerName, sz.dependents, time.Since(t).Round(time.Second))

	t = time.Now()
	if err := env.Namespace(ctx, heldNamespace); err != nil {
		return nil, err
	}
	if err := Objects(ctx, env, heldNamespace, kinds[:sz.kinds], sz.perNamespace); err != nil {
		return nil, err
	}
	if err := DeleteHeld(ctx, env, heldNamespace, kinds[:sz.kinds], sz.perNamespace); err != nil {
		return nil, err
	}
	// No namespace controller in the bench lab: it stays with its content.
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, heldNamespace, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	// Last: the garbage collector above did its work before discovery broke.
	if err := env.BrokenAPIService(ctx, "metrics.bench.example.com", "v1beta1", "bench-system", "metrics-server"); err != nil {
		return nil, err
	}
	progress("namespace %s held with its %d objects, an APIService made unavailable, in %s", heldNamespace, sz.perNamespace, time.Since(t).Round(time.Second))

	c := usersCaseName(sz)
	return measureAll(px, c, []program{
		pluginRun(o, kc, ownerCount, "list", "-A"),
		pluginRun(o, kc, ownerCount, "why", "-A"),
		floorRun(o, kc, ""),
	}, o.QuickRuns)
}

func usersCaseName(sz sizes) string {
	return fmt.Sprintf("5: broken API, foreground owner of %d pods, held namespace", sz.dependents)
}

// ForegroundDeployment makes a Deployment of n replicas (the deployment and
// replicaset controllers create its ReplicaSet and pods; the lab has no
// scheduler, so they stay Pending), holds each pod with Finalizer, deletes
// the Deployment as `kubectl delete --cascade=foreground` does and waits
// until the garbage collector has deleted every pod.
func ForegroundDeployment(ctx context.Context, env *scenario.Env, ns, name string, n int) error {
	replicas := int32(n)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}}}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	selector := "app=" + name
	var pods []corev1.Pod
	if err := scenario.Until(ctx, 2*time.Minute, fmt.Sprintf("%d pods of deployment %s", n, name), func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		return len(pods) == n, nil
	}); err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"finalizers":["` + Finalizer + `"]}}`)
	for _, p := range pods {
		if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	fg := metav1.DeletePropagationForeground
	if err := env.Client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return err
	}
	return scenario.Until(ctx, 2*time.Minute, "the garbage collector to delete the pods of "+name, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(list.Items) != n {
			return false, nil
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// ownerCount counts the items of a list -A or why -A JSON report, and
// returns the foreground owner's top cause.
func ownerCount(stdout string) (int64, string) {
	var r struct {
		Items []struct {
			Object struct{ Kind, Namespace, Name string } `json:"object"`
			Causes []struct{ Code string }                `json:"causes"`
		} `json:"items"`
	}
	if json.Unmarshal([]byte(stdout), &r) != nil {
		return -1, ""
	}
	top := ""
	for _, it := range r.Items {
		if o := it.Object; o.Kind == "Deployment" && o.Namespace == ownerNamespace && o.Name == ownerName && len(it.Causes) > 0 {
			top = it.Causes[0].Code
		}
	}
	return int64(len(r.Items)), top
}
