// Package scenario builds stuck deletions on the lab through the API, as the
// real components would leave them, and waits until the cluster shows them.
// Used by the e2e tests and by `make demo`.
package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-terminating/kubectl-terminating/test/e2e/lab"
)

// Env holds the clients scenarios are built with.
type Env struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewEnv connects to the lab through its kubeconfig.
func NewEnv(kubeconfig string) (*Env, error) {
	return NewEnvQPS(kubeconfig, 200)
}

// NewEnvQPS connects with a client-side rate limit of qps (burst twice that):
// `make bench` creates objects by the hundred thousand.
func NewEnvQPS(kubeconfig string, qps float32) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Env{Client: c, Dynamic: d}, nil
}

// Until polls cond every 250 ms until it holds or the timeout passes.
func Until(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, cond); err != nil {
		return fmt.Errorf("waiting %s for %s: %w", timeout, what, err)
	}
	return nil
}

// Namespace creates a namespace and waits for its default ServiceAccount
// (the ServiceAccount admission plugin refuses pods until it exists).
func (e *Env) Namespace(ctx context.Context, name string) error {
	_, err := e.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return Until(ctx, time.Minute, "serviceaccount "+name+"/default", func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// LiveNode creates a node whose kubelet kwok plays, and waits until it is Ready.
func (e *Env) LiveNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{lab.FakeNodeAnnotation: "fake"},
		Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name},
	}}
	if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return Until(ctx, time.Minute, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return readyStatus(n) == corev1.ConditionTrue, nil
	})
}

// WaitNodeUnreachable waits until the node lifecycle controller has given up on the node.
func (e *Env) WaitNodeUnreachable(ctx context.Context, name string) error {
	return Until(ctx, 2*time.Minute, "node "+name+" Unknown and tainted unreachable:NoExecute", func(ctx context.Context) (bool, error) {
		n, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		// The NoSchedule taint comes first; wait for the NoExecute one too.
		tainted := false
		for _, t := range n.Spec.Taints {
			tainted = tainted || (t.Key == "node.kubernetes.io/unreachable" && t.Effect == corev1.TaintEffectNoExecute)
		}
		return tainted && readyStatus(n) == corev1.ConditionUnknown, nil
	})
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// PodSpec is a minimal pod bound to a node (the lab runs no scheduler).
func PodSpec(ns, name, node string) *corev1.Pod {
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: &no,
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// RunningPod creates the pod and waits until its (fake) kubelet runs it.
func (e *Env) RunningPod(ctx context.Context, pod *corev1.Pod) error {
	if _, err := e.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "pod "+pod.Name+" Running", func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
}

// DeletePod deletes a pod with the given grace period, as `kubectl delete --grace-period` does.
func (e *Env) DeletePod(ctx context.Context, ns, name string, grace int64) error {
	return e.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
}

// WaitPod waits until the pod satisfies cond.
func (e *Env) WaitPod(ctx context.Context, ns, name, what string, cond func(*corev1.Pod) bool) error {
	return Until(ctx, time.Minute, "pod "+name+" "+what, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(p), nil
	})
}

// WaitFinalDelete waits until the pod's kubelet has sent the final grace-0
// DELETE (a finalizer may still hold the pod), and returns its deadline.
func (e *Env) WaitFinalDelete(ctx context.Context, ns, name string) (deadline time.Time, err error) {
	err = e.WaitPod(ctx, ns, name, "finally deleted by its kubelet", func(p *corev1.Pod) bool {
		deadline = p.DeletionTimestamp.Time
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	})
	return deadline, err
}

// WaitGone waits until a pod no longer exists. Three minutes: the pod GC
// controller removes an orphan only after a 40 s quarantine and its 20 s period,
// and later on a loaded machine.
func (e *Env) WaitGone(ctx context.Context, ns, name string) error {
	return Until(ctx, 3*time.Minute, "pod "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// CRD creates a namespaced custom resource definition (group, kind, plural)
// and waits until it is served.
func (e *Env) CRD(ctx context.Context, group, kind, plural string) error {
	return e.createCRD(ctx, crdObject(group, kind, plural, []string{"v1"}, nil))
}

// ConversionCRD creates a CRD served in v1 (its storage version) and v2,
// converted by a webhook whose Service has no endpoints, as when an
// operator's Deployment was removed but its CRD left behind. Objects created
// in v1 need no conversion; listing them in v2 (the preferred version) fails.
func (e *Env) ConversionCRD(ctx context.Context, group, kind, plural, ns, svc string) error {
	if err := e.Namespace(ctx, ns); err != nil {
		return err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": svc + "-that-is-gone"}, Ports: []corev1.ServicePort{{Port: 443}}}}
	if _, err := e.Client.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	conversion := map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"conversionReviewVersions": []any{"v1"},
		"clientConfig":             map[string]any{"service": map[string]any{"namespace": ns, "name": svc, "path": "/convert"}},
	}}
	return e.createCRD(ctx, crdObject(group, kind, plural, []string{"v1", "v2"}, conversion))
}

// crdObject is a namespaced CRD whose first version is the storage version.
func crdObject(group, kind, plural string, versions []string, conversion map[string]any) *unstructured.Unstructured {
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{
			"name": v, "served": true, "storage": i == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		})
	}
	spec := map[string]any{
		"group":    group,
		"scope":    "Namespaced",
		"names":    map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
		"versions": vs,
	}
	if conversion != nil {
		spec["conversion"] = conversion
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec":       spec,
	}}
}

// createCRD creates a CRD and waits until its storage version is served.
func (e *Env) createCRD(ctx context.Context, crd *unstructured.Unstructured) error {
	crds := e.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	return Until(ctx, time.Minute, "CRD "+plural+"."+group+" served", func(ctx context.Context) (bool, error) {
		_, err := e.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

// CustomResource creates one instance of a CRD made by CRD, with finalizers.
func (e *Env) CustomResource(ctx context.Context, group, kind, plural, ns, name string, finalizers ...string) error {
	fin := make([]any, 0, len(finalizers))
	for _, f := range finalizers {
		fin = append(fin, f)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns, "finalizers": fin},
	}}
	_, err := e.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// DeleteNamespace deletes a namespace and waits until the namespace
// controller reports the given condition True.
func (e *Env) DeleteNamespace(ctx context.Context, name string, waitFor corev1.NamespaceConditionType) error {
	if err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return Until(ctx, 2*time.Minute, "namespace "+name+" condition "+string(waitFor), func(ctx context.Context) (bool, error) {
		ns, err := e.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == waitFor && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// WaitEvent waits until an event with the reason is recorded about the pod.
func (e *Env) WaitEvent(ctx context.Context, ns, pod, reason string) error {
	return Until(ctx, time.Minute, "event "+reason+" on pod "+pod, func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod + ",reason=" + reason})
		return err == nil && len(list.Items) > 0, nil
	})
}

// DeleteCustomResource deletes an instance of a CRD made by CRD.
func (e *Env) DeleteCustomResource(ctx context.Context, group, plural, ns, name string) error {
	return e.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// DeleteCRD deletes a CustomResourceDefinition and waits until its
// Terminating condition has the reason.
func (e *Env) DeleteCRD(ctx context.Context, name, reason string) error {
	crds := e.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "CRD "+name+" Terminating "+reason, func(ctx context.Context) (bool, error) {
		u, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Terminating" && m["reason"] == reason {
				return true, nil
			}
		}
		return false, nil
	})
}
