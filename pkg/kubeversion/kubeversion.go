// Package kubeversion holds what the rules must know about the Kubernetes
// release a cluster runs: the feature gates whose default changes a verdict,
// each with the releases it changed in and where that was read. Data, not
// code: docs/versions.md lists the same table (TestDocsListEveryGate). Not to
// be confused with pkg/version, the plugin's own build version.
package kubeversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Gate is a feature gate's life across releases, as minor versions of 1.x;
// 0 means never.
type Gate struct {
	Name string
	// Effect is what the gate changes for a stuck deletion.
	Effect string
	// Since is the first release with the gate (off by default there);
	// DefaultOn the first with it on by default; Locked the first where it
	// can no longer be turned off.
	Since, DefaultOn, Locked int
	// Source is where these releases were read.
	Source string
}

// OrderedNamespaceDeletion: the namespace controller deletes a namespace's
// pods first and the rest of its content only once no pod is left.
var OrderedNamespaceDeletion = Gate{
	Name:   "OrderedNamespaceDeletion",
	Effect: "the namespace controller deletes the pods first and the other content only once no pod is left; without it, every type is deleted at once",
	Since:  30, DefaultOn: 33, Locked: 34,
	Source: "kubernetes/website feature-gates/OrderedNamespaceDeletion.md (beta off 1.30-1.32, beta on 1.33, GA locked 1.34); pkg/controller/namespace/deletion/namespaced_resources_deleter.go deleteAllContent",
}

// SidecarContainers: init containers with restartPolicy Always run beside
// the main containers and stop after them.
var SidecarContainers = Gate{
	Name:   "SidecarContainers",
	Effect: "restartable init containers (sidecars) stop after the main containers; without it the API drops their restartPolicy, so the rules never see one",
	Since:  28, DefaultOn: 29, Locked: 33,
	Source: "kubernetes/website feature-gates/SidecarContainers.md (alpha 1.28, beta on 1.29, GA 1.33)",
}

// Gates lists every gate the rules consult.
var Gates = []Gate{OrderedNamespaceDeletion, SidecarContainers}

// State is a gate's state on a server, and why the verdict assumes it.
type State struct {
	On  bool
	Why string
}

// On says whether the gate is on for a server of minor version minor (0:
// unknown, taken as the newest releases are).
func (g Gate) On(minor int) State {
	switch {
	case minor == 0:
		return State{g.DefaultOn > 0, fmt.Sprintf("%s: server version unknown, assumed as in the newest releases (%s)", g.Name, onOff(g.DefaultOn > 0))}
	case g.Locked > 0 && minor >= g.Locked:
		return State{true, fmt.Sprintf("%s: always on in 1.%d (GA since 1.%d)", g.Name, minor, g.Locked)}
	case g.DefaultOn > 0 && minor >= g.DefaultOn:
		return State{true, fmt.Sprintf("%s: on by default in 1.%d; the verdict assumes the default (a cluster can turn it off)", g.Name, minor)}
	case g.Since > 0 && minor >= g.Since:
		return State{false, fmt.Sprintf("%s: off by default in 1.%d; the verdict assumes the default (a cluster can turn it on)", g.Name, minor)}
	}
	return State{false, fmt.Sprintf("%s: not in 1.%d (from 1.%d)", g.Name, minor, g.Since)}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// Minor reads the minor version of a Kubernetes 1.x server from its
// gitVersion ("v1.31.14", "v1.33.2-eks-1234"); 0 when it cannot.
func Minor(gitVersion string) int {
	v, err := version.ParseGeneric(gitVersion)
	if err != nil || v.Major() != 1 {
		return 0
	}
	return int(v.Minor())
}
