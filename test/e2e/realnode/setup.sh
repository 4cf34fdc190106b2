#!/usr/bin/env bash
# Prepares this machine for the real-node lab (issue 28, docs/lab.md "A real
# node"), idempotently, from Debian packages and the Go module proxy only:
#   - apt: containerd, runc, the CNI plugins, a static busybox (once);
#   - the kubelet v1.36.3, built from k8s.io/kubernetes like the lab's control
#     plane (tools/kubelet pins it), into $1 (default .lab/bin/realnode);
#   - two images as docker archives in $1/images, no registry needed: the
#     sandbox image registry.k8s.io/pause:3.10 (./pause, a static Go program)
#     and lab.local/busybox:1 (busybox-static), imported into the node's
#     containerd when the node starts.
# A stamp of the pins and the Go version decides when to rebuild.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-.lab/bin/realnode}" && cd "${1:-.lab/bin/realnode}" && pwd)
KUBE_VERSION=v1.36.3
# shellcheck source=../lab/ldflags.sh
. "$here/../lab/ldflags.sh" # the kubelet reports its version as the control plane does
PAUSE_IMAGE=registry.k8s.io/pause:3.10
TEST_IMAGE=lab.local/busybox:1
PACKAGES=(containerd runc containernetworking-plugins busybox-static)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "setup.sh: installing ${missing[*]} needs root" >&2; exit 1; }
  echo "installing ${missing[*]} (apt)..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Debian containerd package starts no daemon here (no systemd); if it did,
# the node would still run its own containerd on its own socket.

stamp=$( (cat "$here"/tools/kubelet/go.mod "$here"/tools/kubelet/go.sum; echo "$KUBE_VERSION"; go version) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$out/kubelet" ]; then
  echo "kubelet up to date in $out"
else
  echo "building the kubelet $KUBE_VERSION into $out (about 5 minutes of CPU on a cold cache)..."
  rm -f "$out/.stamp"
  # Static and path-trimmed, as the control plane (test/e2e/lab/build.sh):
  # it shares their build cache.
  (cd "$here/tools/kubelet" && CGO_ENABLED=0 go build -trimpath -o "$out/kubelet" \
    -ldflags "$(ldflags "$KUBE_VERSION")" k8s.io/kubernetes/cmd/kubelet)
  echo "$stamp" > "$out/.stamp"
fi

# docker_archive NAME TAG ROOTFS CMD_JSON: a one-layer docker archive of ROOTFS
# into $out/images/NAME.tar, tagged TAG, running CMD_JSON.
docker_archive() {
  local name=$1 tag=$2 rootfs=$3 cmd=$4 work
  work=$(mktemp -d)
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$work/layer.tar" .
  local diff config
  diff=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  printf '{"architecture":"%s","os":"linux","config":{"Cmd":%s,"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$(go env GOARCH)" "$cmd" "$diff" > "$work/config.json"
  config=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  mv "$work/config.json" "$work/$config.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$config" "$tag" > "$work/manifest.json"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out/images/$name.tar.tmp" manifest.json "$config.json" layer.tar
  mv "$out/images/$name.tar.tmp" "$out/images/$name.tar"
  rm -rf "$work"
}

mkdir -p "$out/images"
imgstamp=$( (cat "$here/pause/main.go" /bin/busybox; echo "$PAUSE_IMAGE $TEST_IMAGE"; go version; declare -f docker_archive) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/images/.stamp" 2>/dev/null)" = "$imgstamp" ] && [ -f "$out/images/pause.tar" ] && [ -f "$out/images/busybox.tar" ]; then
  echo "images up to date in $out/images"
else
  echo "making the images $PAUSE_IMAGE and $TEST_IMAGE..."
  rm -f "$out/images/.stamp"
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root/pause" "$root/busybox/bin" "$root/busybox/tmp"
  (cd "$here/pause" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$root/pause/pause" .)
  docker_archive pause "$PAUSE_IMAGE" "$root/pause" '["/pause"]'
  cp /bin/busybox "$root/busybox/bin/busybox"
  for applet in sh sleep true kill ls cat; do ln -s busybox "$root/busybox/bin/$applet"; done
  docker_archive busybox "$TEST_IMAGE" "$root/busybox" '["/bin/sh"]'
  echo "$imgstamp" > "$out/images/.stamp"
fi
echo "real node ready: $out"
