package diagnose

import (
	"encoding/json"
	"slices"
	"strings"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
)

// Suggested commands are pasted into a shell by people who trust them, and
// every name in them comes from the cluster: anyone who can name a Role
// could otherwise plant a command in a cluster admin's diagnosis. So every
// word is shell-quoted (al.essio.dev/pkg/shellescape earns its place: a
// small, well-kept quoter that leaves plain words as they are), and JSON
// is built by a marshaller, never by pasting strings.

// command is one program and its arguments, each a shell word.
func command(program string, args ...string) string {
	return shellescape.QuoteCommand(append([]string{program}, args...))
}

// pipe joins commands into a pipeline.
func pipe(cmds ...string) string { return strings.Join(cmds, " | ") }

// then joins commands run one after the other.
func then(cmds ...string) string { return strings.Join(cmds, "; ") }

// jsonText is v as JSON, for a patch or a jq program.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null" // plain strings, maps and slices always marshal
	}
	return string(b)
}

// kubectl is a kubectl command; ns adds -n, after the verb and the names,
// when the object is namespaced.
func kubectl(ns string, args ...string) string {
	if ns != "" {
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
		if i < 0 {
			i = len(args)
		}
		args = slices.Insert(slices.Clone(args), i, "-n", ns)
	}
	return command("kubectl", args...)
}

// endpointsCommand lists a service's EndpointSlices.
func endpointsCommand(ns, service string) string {
	return kubectl(ns, "get", "endpointslices", "-l", "kubernetes.io/service-name="+service)
}

// onNode lists the pods on a node, filtered by an extended regexp.
func onNode(node, grepPattern string) string {
	return pipe(kubectl("", "get", "pods", "-A", "-o", "wide", "--field-selector", "spec.nodeName="+node), command("grep", "-Ei", grepPattern))
}

// finalizeNamespace rewrites a namespace's spec.finalizers with a jq program
// and writes them through its finalize subresource (the only way to change them).
func finalizeNamespace(name, jqProgram string) string {
	return pipe(kubectl("", "get", "namespace", name, "-o", "json"), command("jq", jqProgram),
		kubectl("", "replace", "--raw", "/api/v1/namespaces/"+name+"/finalize", "-f", "-"))
}

// forceDeleteCommand removes a pod from the API without waiting for its kubelet.
func forceDeleteCommand(pod *corev1.Pod) string {
	return kubectl(pod.Namespace, "delete", "pod", pod.Name, "--grace-period=0", "--force")
}

// mountsOnNode looks for a pod's mounts and its kubelet's unmount errors on the node.
func mountsOnNode(pod *corev1.Pod) string {
	uid := string(pod.UID)
	return then(pipe(command("findmnt", "-l"), command("grep", uid)), pipe(command("journalctl", "-u", "kubelet"), command("grep", uid), command("grep", "-i", "unmount")))
}
