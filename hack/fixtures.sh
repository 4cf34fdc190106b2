#!/usr/bin/env bash
# make fixtures: the lab's gallery of stuck objects, diagnosed live with
# --save-snapshot; the snapshots and the live reports become the regression
# fixtures pkg/cmd replays without a cluster (TestSnapshotFixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
run="$root/.lab/run"
plugin="$root/bin/kubectl-terminating"
out="$root/pkg/cmd/testdata/snapshots"
(cd test/e2e && go run ./cmd/lab up -dir "$run" -bin "$root/.lab/bin")
trap '(cd test/e2e && go run ./cmd/lab down -dir "$run")' EXIT
(cd test/e2e && go run ./cmd/lab gallery -dir "$run")
rm -rf "$out" && mkdir -p "$out"
save() { # save NAME ARGS...: the snapshot, the table and the JSON report of one run
	local name=$1
	shift
	"$plugin" --kubeconfig "$run/kubeconfig" "$@" --save-snapshot "$out/$name.json.gz" >"$out/$name.txt" || [ $? = 2 ]
	# JSON from the replay: a second live run would have another clock (the e2e
	# test TestSnapshotReplaysWithoutTheCluster proves replays equal live runs).
	"$plugin" "$1" --snapshot "$out/$name.json.gz" -o json >"$out/$name.report.json" || [ $? = 2 ]
}
save why-pod why pod/web-0 -n shop
save why-ns why ns/legacy-widgets
save why-ns-webhook why ns/settings
save why-crd why crd/widgets.demo.example.com
save why-all why -A
save list-all list -A
echo "fixtures written to $out"
