#!/usr/bin/env bash
# Builds the lab's binaries from the Go module proxy into $1 (default .lab/bin):
# etcd, kube-apiserver, kube-controller-manager, kubectl (Kubernetes v1.36.3)
# and kwok; and the version matrix: kube-apiserver and kube-controller-manager
# of other Kubernetes releases into $1/<minor> (v1.31, v1.37), each from its
# own module tools/kube-<minor>. Each directory is rebuilt only when its pins
# change (a stamp per directory of its tool modules' go.mod/go.sum, the
# versions and the Go version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-.lab/bin}" && cd "${1:-.lab/bin}" && pwd)
KUBE_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
# The version matrix (docs/lab.md): each minor's module tools/kube-<minor> pins
# its release (k8s.io/kubernetes and every staging module), the newest patch of
# that minor whose modules the Go module proxy serves.
MATRIX=(v1.31 v1.37)

# up_to_date DIR STAMP BINS...: DIR holds the binaries built for STAMP.
up_to_date() {
  local dir=$1 stamp=$2 b
  shift 2
  [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] || return 1
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# ldflags VERSION: the version kube-apiserver serves on /version.
ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "-X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}

stamp=$( (cat "$here"/tools/{etcd,kube}/go.mod "$here"/tools/{etcd,kube}/go.sum; echo "$KUBE_VERSION $KWOK_VERSION"; go version) | sha256sum | cut -d' ' -f1)
if up_to_date "$out" "$stamp" etcd kube-apiserver kube-controller-manager kubectl kwok; then
  echo "lab binaries up to date in $out"
else
  echo "building the lab binaries into $out (several minutes on a cold cache)..."
  rm -f "$out/.stamp"
  (cd "$here/tools/etcd" && go build -o "$out/etcd" .)
  (cd "$here/tools/kube" && go build -o "$out/" -ldflags "$(ldflags $KUBE_VERSION)" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
  GOBIN="$out" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  echo "$stamp" > "$out/.stamp"
  echo "lab binaries built in $out"
fi

for minor in "${MATRIX[@]}"; do
  mod="$here/tools/kube-$minor" dir="$out/$minor"
  version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$mod/go.mod")
  case $version in
  "$minor".*) ;;
  *) echo "$mod/go.mod pins k8s.io/kubernetes ${version:-nothing}, not a $minor release" >&2; exit 1 ;;
  esac
  mkdir -p "$dir"
  stamp=$( (cat "$mod/go.mod" "$mod/go.sum"; echo "$version"; go version) | sha256sum | cut -d' ' -f1)
  if up_to_date "$dir" "$stamp" kube-apiserver kube-controller-manager; then
    echo "lab binaries $version up to date in $dir"
    continue
  fi
  echo "building kube-apiserver and kube-controller-manager $version into $dir (several minutes on a cold cache)..."
  rm -f "$dir/.stamp"
  (cd "$mod" && go build -o "$dir/" -ldflags "$(ldflags "$version")" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
  echo "$stamp" > "$dir/.stamp"
  echo "lab binaries $version built in $dir"
done
