#!/usr/bin/env bash
# make demo: the diagnosis of a gallery of stuck objects, first replayed from
# the snapshot the project ships (as soon as the plugin is built), then live
# on a lab control plane built from Go modules. Each long step shows its
# time as it runs (and on a terminal, the modules it has downloaded); go's
# own output goes to .lab/demo.log and .lab/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# DEMO_DIR, DEMO_PLUGIN and LAB_BIN put the demo elsewhere (the e2e test
# that runs it beside the suite's own lab and plugin).
lab=${DEMO_DIR:-$root/.lab}
run="$lab/run"
plugin=${DEMO_PLUGIN:-$root/bin/kubectl-terminating}
bin=${LAB_BIN:-$root/.lab/bin}
snapshots=pkg/cmd/testdata/snapshots # relative: shown as typed
mkdir -p "$lab/tools"
log="$lab/demo.log"
: >"$log"
. test/e2e/lab/progress.sh
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT

cat <<EOT
make demo: the diagnosis of a lab's gallery of stuck objects: first one pod's, as the plugin
printed it (recorded with the project); then the whole gallery replayed by the plugin from the
snapshot the project ships, once it is built (about 2.5 minutes with empty Go caches on two
cores, seconds with warm ones); then the same gallery live, on a local control plane built
from Go modules (about 9 more minutes the first time).

What the plugin says of one stuck pod of the gallery, as recorded ($snapshots/why-pod.txt:
the tests check that the plugin, replaying its snapshot, prints exactly this):

\$ kubectl terminating why pod/web-0 -n shop
EOT
cat "$snapshots/why-pod.txt"
echo
step_detail="downloads_since $marker"
step "downloading the plugin's Go modules" go mod download
step_detail=
step "building bin/kubectl-terminating" env CGO_ENABLED=0 go build -ldflags "${LDFLAGS:-}" -o "$plugin" ./cmd/kubectl-terminating

# Each command as a person types it (KUBECONFIG and PATH as said at the end).
show() { printf '\n$ kubectl terminating %s\n' "$*"; "$plugin" "$@" || true; }
echo
echo "The whole gallery, replayed by the plugin from the snapshot the project ships:"
show list -A --snapshot "$snapshots/list-all.json.gz"

echo
echo "Now the same gallery live:"
step_detail="downloads_since $marker"
step "downloading the lab's Go modules" bash -c 'cd test/e2e && go mod download'
step_detail=
LAB_MATRIX= test/e2e/lab/build.sh "$bin"
step "building the lab's launcher" bash -c "cd test/e2e && go build -o '$lab/tools/lab' ./cmd/lab"
"$lab/tools/lab" up -dir "$run" -bin "$bin"
"$lab/tools/lab" gallery -dir "$run"
kc="$run/kubeconfig"
live() { show "$@" --kubeconfig "$kc"; }
live list -A
live why pod/web-0 -n shop
live why ns/legacy-widgets
live why crd/widgets.demo.example.com
live why ns/settings
live why pod/pay-0 -n shop
live why pod/batch-0 -n shop
echo
echo "Before deleting: what would hold the deletion of namespace shop, which is not being deleted?"
live preflight ns/shop
cat <<EOT

The lab is still running. To explore it:
  export KUBECONFIG=$kc
  export PATH=$(dirname "$plugin"):$bin:\$PATH    # kubectl and the plugin
  kubectl get pods -A
  kubectl terminating list -A
  kubectl terminating why pod/cache-0 -n shop             # one object
  kubectl terminating why pod/web-0 -n shop -o wide       # every step, with its command and risk
  kubectl terminating preflight ns/shop                    # what would hold a deletion, before anyone deletes
  kubectl terminating fix pod/cache-0 -n shop --max-risk high   # a repair plan (changes nothing without your yes)
Stop it with: make lab-down
EOT
