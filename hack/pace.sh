#!/bin/bash
# pace.sh [CRDS] [GROUPS]: the plugin's pace (issue 38, item 2) on a lab of
# its own with CRDS CustomResourceDefinitions in GROUPS API groups (default
# 1000 in 100): `list -A` and `why ns/big --full-scan` by this plugin and by
# $OLD_PLUGIN (a build with the fixed client-side limit, when given), beside
# the floor (`bench floor`: discovery and a metadata list of every type).
# Prints each run's time and requests (from the lab's audit log) and the
# 429s the apiserver answered. Run after `make build lab-bin`.
set -eu
crds=${1:-1000}
groups=${2:-100}
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
