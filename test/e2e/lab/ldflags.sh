# Sourced by lab/build.sh and realnode/setup.sh: how a Kubernetes component
# is linked, so that the control plane and the real node's kubelet report
# their versions alike.

# Without the symbol table and DWARF, which no test reads (a shorter link).
NO_DEBUG="-s -w"

# ldflags VERSION: the version a component reports (kube-apiserver on
# /version, the kubelet in its Node's status), its minor taken from VERSION.
ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "$NO_DEBUG -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}
