#!/usr/bin/env bash
# Builds the lab's binaries from the Go module proxy into $1 (default .lab/bin):
# etcd, kube-apiserver, kube-controller-manager, kubectl (Kubernetes v1.36.3)
# and kwok. Rebuilds only when the pinned versions change (a stamp of the tool
# modules' go.mod/go.sum, the kwok version and the Go version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-.lab/bin}" && cd "${1:-.lab/bin}" && pwd)
KUBE_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
stamp=$( (cat "$here"/tools/*/go.mod "$here"/tools/*/go.sum; echo "$KUBE_VERSION $KWOK_VERSION"; go version) | sha256sum | cut -d' ' -f1)
bins=(etcd kube-apiserver kube-controller-manager kubectl kwok)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] && for b in "${bins[@]}"; do [ -x "$out/$b" ] || exit 1; done; then
  echo "lab binaries up to date in $out"
  exit 0
fi
echo "building the lab binaries into $out (several minutes on a cold cache)..."
rm -f "$out/.stamp"
(cd "$here/tools/etcd" && go build -o "$out/etcd" .)
(cd "$here/tools/kube" && go build -o "$out/" \
  -ldflags "-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
GOBIN="$out" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
echo "$stamp" > "$out/.stamp"
echo "lab binaries built in $out"
