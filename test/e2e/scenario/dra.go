package scenario

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllocatedClaim creates a ResourceClaim for one device of driver and writes
// its allocation, as the scheduler does (the lab runs none).
func (e *Env) AllocatedClaim(ctx context.Context, ns, name, driver, node string) error {
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: driver},
		}}}},
	}
	created, err := e.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	created.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
		Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: node, Device: "gpu-0"}},
	}}
	_, err = e.Client.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// WaitClaimReserved waits until the claim's status.reservedFor names the pod:
// the resourceclaim controller of kube-controller-manager records a scheduled
// pod as the consumer of the claims it references.
func (e *Env) WaitClaimReserved(ctx context.Context, ns, name string, pod *corev1.Pod) error {
	return Until(ctx, time.Minute, "claim "+name+" reserved for pod "+pod.Name, func(ctx context.Context) (bool, error) {
		claim, err := e.Client.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, r := range claim.Status.ReservedFor {
			if r.UID == pod.UID {
				return true, nil
			}
		}
		return false, nil
	})
}
