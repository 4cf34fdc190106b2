#!/bin/bash
# pace.sh [CRDS] [GROUPS]: the plugin's pace (issue 38, item 2) on a lab of
# its own with CRDS CustomResourceDefinitions in GROUPS API groups (default
# 1000 in 100): `list -A` and `why ns/big --full-scan` by this plugin and by
# $OLD_PLUGIN (a build with the fixed client-side limit, when given), beside
# the floor (`bench floor`: discovery and a metadata list of every type).
# Prints each run's time and requests (from the lab's audit log) and the
# 429s the apiserver answered. The apiserver runs with priority and
# fairness, as a real cluster does, serving at most $SEATS reads at once
# (default 400, kube-apiserver's own; a low figure makes a busy server).
# Run after `make build lab-bin`.
set -eu
crds=${1:-1000}
groups=${2:-100}
LAB_FLAGS="-apf-seats ${SEATS:-400}"
. "$(dirname "$0")/lib/types-lab.sh"
(cd "$root/test/e2e" && go build -o "$run/bench" ./cmd/bench)

measure() { # measure NAME AGENT COMMAND...
	local name=$1 agent=$2
	shift 2
	for n in 1 2 3; do
		local before start end
		before=$(wc -l <"$audit")
		start=$(date +%s.%N)
		"$@" >/dev/null 2>&1 || true
		end=$(date +%s.%N)
		printf '%-34s run %d: %.2fs, %s requests, %s answered 429\n' "$name" "$n" "$(echo "$end - $start" | bc)" \
			"$(requests_since "$before" "$agent")" "$(tail -n +$((before + 1)) "$audit" | grep -c '"code":429' || true)"
	done
}
measure "floor, every type (-A)" bench/ "$run/bench" floor -kubeconfig "$KUBECONFIG"
measure "floor, namespace big" bench/ "$run/bench" floor -kubeconfig "$KUBECONFIG" -namespace big
for p in "$plugin" ${OLD_PLUGIN:-}; do
	label=new
	[ "$p" = "$plugin" ] || label=old
	measure "list -A ($label)" kubectl-terminating/ "$p" list -A -o json
	measure "why ns/big --full-scan ($label)" kubectl-terminating/ "$p" why ns/big --full-scan -o json
done

# A busy server: the runs as a user (lab-nobody, reading everything) whose
# requests go to a priority level of one seat that rejects what it cannot
# serve at once (429 with Retry-After).
nobody=$(sed -n 2p "$run/state/tokens.csv" | cut -d, -f1)
"$k" apply -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pace-reader}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["get", "list", "watch"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pace-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pace-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: lab-nobody}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: pace-busy}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: pace-busy}
spec:
  matchingPrecedence: 2
  priorityLevelConfiguration: {name: pace-busy}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: lab-nobody}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
YAML
cp "$KUBECONFIG" "$run/nobody.kubeconfig"
KUBECONFIG=$run/nobody.kubeconfig "$k" config set-credentials nobody --token="$nobody" >/dev/null
KUBECONFIG=$run/nobody.kubeconfig "$k" config set-context --current --user=nobody >/dev/null
export KUBECONFIG=$run/nobody.kubeconfig
sleep 2
echo "--- a busy server (one seat, rejecting)"
measure "floor, every type (-A), busy" bench/ "$run/bench" floor -kubeconfig "$KUBECONFIG"
for p in "$plugin" ${OLD_PLUGIN:-}; do
	label=new
	[ "$p" = "$plugin" ] || label=old
	measure "list -A ($label), busy" kubectl-terminating/ "$p" list -A -o json
done
