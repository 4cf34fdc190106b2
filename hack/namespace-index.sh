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
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/.lab/bin
plugin=$root/bin/kubectl-terminating
run=$(mktemp -d)
lab=$run/lab
(cd "$root/test/e2e" && go build -o "$run/labtool" ./cmd/lab)
trap '"$run/labtool" down -dir "$run/state" >/dev/null 2>&1; rm -rf "$run"' EXIT
"$run/labtool" up -dir "$run/state" -bin "$bin" >"$run/up.log" 2>&1
export KUBECONFIG=$run/state/kubeconfig
k="$bin/kubectl"

for i in $(seq 1 "$crds"); do
	g=$((i % groups))
	cat <<YAML
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: res${i}s.g${g}.bench.example.com}
spec:
  group: g${g}.bench.example.com
  scope: Namespaced
  names: {plural: res${i}s, singular: res${i}, kind: Res${i}, listKind: Res${i}List}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
YAML
done | "$k" apply -f - >/dev/null
"$k" wait --for condition=established --timeout=300s crd --all >/dev/null
"$k" create namespace big >/dev/null
for i in 1 2 3; do
	for j in $(seq 1 10); do
		printf 'apiVersion: g%s.bench.example.com/v1\nkind: Res%s\nmetadata: {name: obj-%s, namespace: big, finalizers: [bench.example.com/hold]}\n' $((i % groups)) "$i" "$j"
		echo ---
	done
done | "$k" apply -f - >/dev/null
"$k" delete namespace big --wait=false >/dev/null
until "$k" get namespace big -o jsonpath='{.status.conditions[?(@.type=="NamespaceContentRemaining")].message}' | grep -q 'has 10 resource instances'; do sleep 2; done
sleep 31 # past the settle time

audit=$run/state/audit.log
for mode in "" --full-scan; do
	for n in 1 2 3; do
		before=$(wc -l <"$audit")
		start=$(date +%s.%N)
		"$plugin" why ns/big -o json $mode >"$run/out.json" 2>/dev/null || true
		end=$(date +%s.%N)
		sleep 2 # the audit log is written after the response
		requests=$(tail -n +$((before + 1)) "$audit" | grep -c '"userAgent":"kubectl-terminating/' || true)
		printf '%-11s run %d: %.2fs, %s requests, read %s, causes %s\n' "${mode:-index}" "$n" "$(echo "$end - $start" | bc)" "$requests" \
			"$(jq -c '.items[0].contentsRead' "$run/out.json")" "$(jq -c '[.items[0].causes[].code]' "$run/out.json")"
	done
done
