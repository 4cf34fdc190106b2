#!/bin/sh
# drain-node.sh NODE [TIMEOUT]
# Drain a node, then wait for its pods to be gone. If some stay Terminating,
# print why (root cause first) and exit 2; exit 0 once they are all gone.
set -eu
node=$1
timeout=${2:-5m}

# The pods on the node that drain evicts, before they go: "namespace name"
# lines. DaemonSet pods (drain leaves them, --ignore-daemonsets) and mirror
# pods (the kubelet's static pods: not evicted) are not waited for.
pods=$(kubectl get pods -A --field-selector "spec.nodeName=$node" \
  -o jsonpath='{range .items[*]}{.metadata.namespace}|{.metadata.name}|{.metadata.ownerReferences[0].kind}|{.metadata.annotations.kubernetes\.io/config\.mirror}{"\n"}{end}' |
  awk -F'|' '$3 != "DaemonSet" && $4 == "" {print $1, $2}')

# Evict them (PodDisruptionBudgets respected). Drain's own wait is kept short:
# kubectl terminating does the waiting, and explains what does not go.
kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --force --timeout=10s ||
  echo "drain-node: some pods are not gone yet; waiting for them" >&2

status=0
for ns in $(printf '%s\n' "$pods" | awk 'NF == 2 {print $1}' | sort -u); do
  # shellcheck disable=SC2046 # one argument per pod
  kubectl terminating wait $(printf '%s\n' "$pods" | awk -v ns="$ns" '$1 == ns {print "pod/" $2}') \
    -n "$ns" --timeout "$timeout" --ignore-not-found || status=$?
done
exit "$status"
