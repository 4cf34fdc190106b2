package scenario

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourcesMutator registers a mutating webhook, served on 127.0.0.1, on
// UPDATE of the pods labelled GuardLabel=name, with failurePolicy Ignore:
// it answers every update with a patch that sets the first container's CPU
// limit, as a defaulting webhook written for CREATE but registered for
// UPDATE too does. A pod's resources are immutable: every update of such a
// pod (a controller removing its finalizer) becomes an invalid one.
func (e *Env) ResourcesMutator(ctx context.Context, name string) (stop func(), err error) {
	cert, err := selfSigned("127.0.0.1")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/containers/0/resources", "value": map[string]any{"limits": map[string]any{"cpu": "1"}}}})
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		jsonPatch := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &jsonPatch}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	stop = func() { _ = srv.Close() }
	url := "https://" + ln.Addr().String() + "/"
	ignore, none, never := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NeverReinvocationPolicy
	hook := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "defaults." + name + ".example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			FailurePolicy: &ignore, SideEffects: &none, ReinvocationPolicy: &never, AdmissionReviewVersions: []string{"v1"},
			ObjectSelector: guardSelector(name),
		}},
	}
	if _, err := e.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, hook, metav1.CreateOptions{}); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// RunningJobPod runs a Job of one pod (labelled GuardLabel=guard) on node,
// whose pod the job controller creates with its job-tracking finalizer, and
// returns the pod once it runs.
func (e *Env) RunningJobPod(ctx context.Context, ns, name, node, guard string) (*corev1.Pod, error) {
	one, no := int32(1), false
	labels := map[string]string{GuardLabel: guard}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Completions: &one, Parallelism: &one, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: &no,
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}}}
	if _, err := e.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := Until(ctx, time.Minute, "job "+name+"'s pod running", func(ctx context.Context) (bool, error) {
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		if err != nil || len(pods.Items) == 0 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, nil
		}
		pod = pods.Items[0]
		return true, nil
	}); err != nil {
		return nil, err
	}
	return &pod, nil
}

// FinishedJobPod runs a Job of one pod (labelled GuardLabel=guard) on node,
// whose pod the job controller creates with its job-tracking finalizer; then
// reports the pod's container finished (phase Succeeded), as its kubelet
// would, and returns the pod's name.
func (e *Env) FinishedJobPod(ctx context.Context, ns, name, node, guard string) (string, error) {
	pod, err := e.RunningJobPod(ctx, ns, name, node, guard)
	if err != nil {
		return "", err
	}
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.Now()}}}}
	if _, err := e.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return "", err
	}
	return pod.Name, nil
}
