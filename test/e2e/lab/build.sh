#!/usr/bin/env bash
# Builds the lab's binaries from the Go module proxy into $1 (default .lab/bin):
# etcd, kube-apiserver, kube-controller-manager, kubectl (Kubernetes v1.36.3)
# and kwok; and the version matrix: kube-apiserver and kube-controller-manager
# of other Kubernetes releases into $1/<minor> (v1.31, v1.37), each from its
# own module tools/kube-<minor>. LAB_MATRIX, when set, names the matrix
# releases to build ("" for none: make demo needs none). Each directory is
# rebuilt only when its pins change (a stamp per directory of its tool
# modules' go.mod/go.sum, the versions and the Go version).
#
# It says which binary it builds ("building kube-apiserver v1.36.3 (2 of 5)")
# and how long each took, on a terminal as it runs with the modules
# downloaded so far (progress.sh); go's own output (30 lines of "go:
# downloading" on a cold module cache) goes to build.log beside $1, shown if
# a build fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-.lab/bin}" && cd "${1:-.lab/bin}" && pwd)
log=$(dirname "$out")/build.log
KUBE_VERSION=v1.36.3
KWOK_VERSION=v0.8.0
# The version matrix (docs/lab.md): each minor's module tools/kube-<minor> pins
# its release (k8s.io/kubernetes and every staging module), the newest patch of
# that minor whose modules the Go module proxy serves.
read -r -a MATRIX <<<"${LAB_MATRIX-v1.31 v1.37}"

# up_to_date DIR STAMP BINS...: DIR holds the binaries built for STAMP.
up_to_date() {
  local dir=$1 stamp=$2 b
  shift 2
  [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] || return 1
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# Static and path-trimmed, as the Makefile builds everything but the race
# detector's tests (one compile of the packages they share), linked by
# ldflags.sh (NO_DEBUG, ldflags VERSION).
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in *" -trimpath "*) ;; *) export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" ;; esac
# shellcheck source=ldflags.sh
. "$here/ldflags.sh"

# The builds this run makes, in order, each "NAME|VERSION|MODULE|DIR|PACKAGE|STAMP":
# go build PACKAGE (in MODULE, with VERSION's ldflags when VERSION is a
# Kubernetes release) into DIR/NAME; MODULE "-" is `go install PACKAGE`.
# STAMP, on a directory's last build, is written to DIR/.stamp after it.
builds=()
minutes=0 # what a first build of them takes on two cores (docs/lab.md)

stamp=$( (cat "$here"/tools/{etcd,kube}/go.mod "$here"/tools/{etcd,kube}/go.sum; echo "$KUBE_VERSION $KWOK_VERSION"; go version) | sha256sum | cut -d' ' -f1)
if up_to_date "$out" "$stamp" etcd kube-apiserver kube-controller-manager kubectl kwok; then
  echo "lab binaries up to date in $out"
else
  rm -f "$out/.stamp"
  etcd=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" { print $3 }' "$here/tools/etcd/go.mod")
  builds+=("etcd|$etcd|$here/tools/etcd|$out|.|")
  for b in kube-apiserver kube-controller-manager kubectl; do
    builds+=("$b|$KUBE_VERSION|$here/tools/kube|$out|k8s.io/kubernetes/cmd/$b|")
  done
  builds+=("kwok|$KWOK_VERSION|-|$out|sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION|$stamp")
  minutes=$((minutes + 10))
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
  rm -f "$dir/.stamp"
  builds+=("kube-apiserver|$version|$mod|$dir|k8s.io/kubernetes/cmd/kube-apiserver|")
  builds+=("kube-controller-manager|$version|$mod|$dir|k8s.io/kubernetes/cmd/kube-controller-manager|$stamp")
  minutes=$((minutes + 6))
done

[ ${#builds[@]} -gt 0 ] || exit 0

. "$here/progress.sh"

# build_one NAME VERSION MODULE DIR PACKAGE: one binary (see builds above).
build_one() {
  local name=$1 version=$2 mod=$3 dir=$4 pkg=$5
  if [ "$mod" = - ]; then
    GOBIN="$dir" go install -ldflags "$NO_DEBUG" "$pkg"
  elif [[ $version == v1.* ]]; then # a Kubernetes release: its version ldflags
    (cd "$mod" && go build -o "$dir/$name" -ldflags "$(ldflags "$version")" "$pkg")
  else
    (cd "$mod" && go build -o "$dir/$name" -ldflags "$NO_DEBUG" "$pkg")
  fi
}

echo "building ${#builds[@]} lab binaries into $out"
echo "  (up to $minutes minutes on two cores with empty Go caches, seconds with warm ones;"
echo "  go's output goes to $log)"
: >"$log"
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
step_detail="downloads_since $marker"
total=$SECONDS
for i in "${!builds[@]}"; do
  IFS='|' read -r name version mod dir pkg stamp <<<"${builds[$i]}"
  step "building $name $version ($((i + 1)) of ${#builds[@]})" build_one "$name" "$version" "$mod" "$dir" "$pkg"
  [ -z "$stamp" ] || echo "$stamp" >"$dir/.stamp"
done
echo "lab binaries built in $(took $((SECONDS - total)))"
