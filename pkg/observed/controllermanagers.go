package observed

import coordinationv1 "k8s.io/api/coordination/v1"

// ControllerManagers are the control-plane components whose controllers
// remove Kubernetes' own finalizers, each named as its leader-election Lease
// in ControlPlaneNamespace is (their --leader-elect-resource-name default).
var ControllerManagers = []string{"kube-controller-manager", "cloud-controller-manager"}

// ControlPlaneNamespace holds the controller managers' Leases (their
// --leader-elect-resource-namespace default).
const ControlPlaneNamespace = "kube-system"

// ControllerManagerLeases are the controller managers' leader-election
// Leases, by component: nil where it has none (leader election off, or the
// component not run).
var ControllerManagerLeases = Declare[map[string]*coordinationv1.Lease]("controllerManagerLeases")
