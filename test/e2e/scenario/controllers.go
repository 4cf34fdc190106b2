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
	return e.ControllerAs(ctx, ns, name, node, "")
}

// ControllerAs is Controller whose pods run as the service account
// account (created here; "" is the namespace's default), as an operator's
// install makes one for its controller and binds it its role.
func (e *Env) ControllerAs(ctx context.Context, ns, name, node, account string) error {
	if account != "" {
		if _, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
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
				Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no, ServiceAccountName: account,
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

// NodeAgent runs a DaemonSet standing for a node agent on the nodes
// labelled label=yes, and waits until it has a pod on each of nodes, bound
// as the scheduler would (the lab has none). kwok runs the pods on its
// nodes; on a node it does not play, the pod's status is written by hand
// from hand (a crash loop, say), as that node's kubelet would.
func (e *Env) NodeAgent(ctx context.Context, ns, name, label string, nodes []string, hand map[string]corev1.PodStatus) error {
	labels := map[string]string{"app.kubernetes.io/name": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{label: "yes"},
					Containers:   []corev1.Container{{Name: "agent", Image: "registry.example/" + name + ":1"}},
				},
			},
		},
	}
	if _, err := e.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return err
	}
	return Until(ctx, 2*time.Minute, "daemonset "+name+" on its nodes", func(ctx context.Context) (bool, error) {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		if err != nil {
			return false, nil
		}
		placed := map[string]bool{}
		for _, p := range pods.Items {
			node := p.Spec.NodeName
			if node == "" { // the node the DaemonSet controller meant it for
				node = daemonNode(&p)
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				_ = e.Client.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{})
				continue
			}
			status, byHand := hand[node]
			switch {
			case byHand && len(p.Status.ContainerStatuses) == 0: // not written yet (the apiserver made it Pending)
				p.Status = status
				_, _ = e.Client.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			case byHand || p.Status.Phase == corev1.PodRunning:
				placed[node] = true
			}
		}
		for _, n := range nodes {
			if !placed[n] {
				return false, nil
			}
		}
		return true, nil
	})
}

// daemonNode is the node a DaemonSet's pod is meant for: the DaemonSet
// controller pins it by a required node affinity on metadata.name.
func daemonNode(p *corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// CrashLoop is the status a kubelet writes for a pod whose one container
// keeps failing: running phase, not ready, the container waiting in
// CrashLoopBackOff after restarts.
func CrashLoop(container string, restarts int32) corev1.PodStatus {
	now := metav1.Now()
	return corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: container, Image: "registry.example/agent:1", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=" + container}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}},
	}
}
