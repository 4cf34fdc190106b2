package scenario

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Controller creates a Deployment standing for an add-on's controller. With
// node set, its pod is bound there and the fake kubelet runs it (ready);
// without, no scheduler places it and it has zero ready replicas. It waits
// until the real deployment controller reports that state.
func (e *Env) Controller(ctx context.Context, ns, name, node string) error {
	one := int32(1)
	labels := map[string]string{"app.kubernetes.io/name": name}
	no := false
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no,
					Containers: []corev1.Container{{Name: "manager", Image: "registry.example/" + name + ":1"}}},
			},
		},
	}
	if _, err := e.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	want := int32(0)
	if node != "" {
		want = 1
	}
	return Until(ctx, time.Minute, "deployment "+name+" observed", func(ctx context.Context) (bool, error) {
		got, err := e.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration >= got.Generation && got.Status.Replicas == 1 && got.Status.ReadyReplicas == want, nil
	})
}

// DaemonSetOn runs a DaemonSet whose one pod is on node, and waits until it
// runs. The lab has no scheduler: the pod the DaemonSet controller makes is
// bound here, as the scheduler would.
func (e *Env) DaemonSetOn(ctx context.Context, ns, name, node string) error {
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/hostname": node},
					Containers:   []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
				},
			},
		},
	}
	if _, err := e.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, 2*time.Minute, "daemonset "+name+" running on "+node, func(ctx context.Context) (bool, error) {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			switch {
			case p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning:
				return true, nil
			case p.Spec.NodeName == "":
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				_ = e.Client.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
			}
		}
		return false, nil
	})
}
