package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// BrokenAPIService registers an aggregated API served by a Service without
// endpoints, as when an add-on's Deployment was removed but its APIService
// left behind, and waits until the aggregator reports it unavailable.
func (e *Env) BrokenAPIService(ctx context.Context, group, version, ns, svc string) error {
	if err := e.Namespace(ctx, ns); err != nil {
		return err
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": svc + "-that-is-gone"}, Ports: []corev1.ServicePort{{Port: 443}}}}
	if _, err := e.Client.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return err
	}
	return e.APIService(ctx, group, version, ns, svc)
}

// APIService registers an aggregated API served by the Service ns/svc and
// waits until the aggregator reports it unavailable.
func (e *Env) APIService(ctx context.Context, group, version, ns, svc string) error {
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	name := version + "." + group
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "version": version, "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": ns, "name": svc}},
	}}
	if _, err := e.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, time.Minute, "apiservice "+name+" unavailable", func(ctx context.Context) (bool, error) {
		got, err := e.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "False" {
				return true, nil
			}
		}
		return false, nil
	})
}
