package scenario

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return e.registerAPIService(ctx, group, version, ns, svc, "False")
}
