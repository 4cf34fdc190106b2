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
# Each command as a person types it (KUBECONFIG and PATH as said at the end).
show() { printf '\n$ kubectl terminating %s\n' "$*"; "$plugin" "$@" --kubeconfig "$kc" || true; }
show list -A
show why pod/web-0 -n shop
show why ns/legacy-widgets
show why crd/widgets.demo.example.com
show why ns/settings
show why pod/pay-0 -n shop
show why pod/batch-0 -n shop
cat <<EOT

The lab is still running. To explore it:
  export KUBECONFIG=$kc
  export PATH=$root/bin:$root/.lab/bin:\$PATH    # kubectl and the plugin
  kubectl get pods -A
  kubectl terminating list -A
  kubectl terminating why pod/cache-0 -n shop             # one object
  kubectl terminating why pod/web-0 -n shop -o wide       # every step, with its command and risk
  kubectl terminating fix pod/cache-0 -n shop --max-risk high   # a repair plan (changes nothing without your yes)
Stop it with: make lab-down
EOT
