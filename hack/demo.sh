#!/usr/bin/env bash
# make demo: a lab control plane with a gallery of stuck objects, diagnosed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
run="$root/.lab/run"
plugin="$root/bin/kubectl-terminating"
(cd test/e2e && go run ./cmd/lab up -dir "$run" -bin "$root/.lab/bin")
(cd test/e2e && go run ./cmd/lab gallery -dir "$run")
kc="$run/kubeconfig"
show() { printf '\n$ %s\n' "$*"; "$@" || true; }
show "$plugin" list -A --kubeconfig "$kc"
show "$plugin" why pod/web-0 -n shop --kubeconfig "$kc"
show "$plugin" why ns/legacy-widgets --kubeconfig "$kc"
show "$plugin" why crd/widgets.demo.example.com --kubeconfig "$kc"
show "$plugin" why ns/settings --kubeconfig "$kc"
show "$plugin" why pod/pay-0 -n shop --kubeconfig "$kc"
show "$plugin" why pod/batch-0 -n shop --kubeconfig "$kc"
cat <<EOT

The lab is still running. To explore it:
  export KUBECONFIG=$kc
  export PATH=$root/bin:$root/.lab/bin:\$PATH    # kubectl and the plugin
  kubectl get pods -A
  kubectl terminating list -A
  kubectl terminating why pod/cache-0 -n shop -o yaml
Stop it with: make lab-down
EOT
