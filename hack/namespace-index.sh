#!/bin/bash
# namespace-index.sh [CRDS] [GROUPS]: why ns/NAME reading the namespace
# controller's conditions (issue 38) against --full-scan, on a lab of its own
# with CRDS CustomResourceDefinitions in GROUPS API groups (default 300 in 30)
# and a deleted namespace whose 30 custom resources are held by a finalizer.
# Prints each run's time, the requests the lab's audit log counts for it, and
# how it read. Run after `make build lab-bin`; the lab is torn down at the end.
set -eu
crds=${1:-300}
groups=${2:-30}
. "$(dirname "$0")/lib/types-lab.sh"

for mode in "" --full-scan; do
	for n in 1 2 3; do
		before=$(wc -l <"$audit")
		start=$(date +%s.%N)
		"$plugin" why ns/big -o json $mode >"$run/out.json" 2>/dev/null || true
		end=$(date +%s.%N)
		requests=$(requests_since "$before")
		printf '%-11s run %d: %.2fs, %s requests, read %s, causes %s\n' "${mode:-index}" "$n" "$(echo "$end - $start" | bc)" "$requests" \
			"$(jq -c '.items[0].contentsRead' "$run/out.json")" "$(jq -c '[.items[0].causes[].code]' "$run/out.json")"
	done
done
