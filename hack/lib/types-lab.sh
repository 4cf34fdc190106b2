# types-lab.sh, sourced: a lab of its own with $crds CustomResourceDefinitions
# in $groups API groups (defaults 300 in 30) and a deleted namespace "big"
# whose 30 custom resources are held by a finalizer, past the settle time.
# Sets $run (a temporary directory, removed with the lab at exit), $k
# (kubectl), $plugin, $audit (the lab's audit log) and KUBECONFIG.
: "${crds:=300}" "${groups:=30}"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/.lab/bin
plugin=$root/bin/kubectl-terminating
run=$(mktemp -d)
(cd "$root/test/e2e" && go build -o "$run/labtool" ./cmd/lab)
trap '"$run/labtool" down -dir "$run/state" >/dev/null 2>&1; rm -rf "$run"' EXIT
"$run/labtool" up -dir "$run/state" -bin "$bin" ${LAB_FLAGS:-} >"$run/up.log" 2>&1
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

# requests_since N [AGENT]: the requests of user agent AGENT (default the
# plugin's) in the audit log after its line N (written after the response).
requests_since() {
	sleep 2
	tail -n +$(($1 + 1)) "$audit" | grep -c "\"userAgent\":\"${2:-kubectl-terminating/}" || true
}
