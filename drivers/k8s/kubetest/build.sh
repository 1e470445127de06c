#!/usr/bin/env bash
# Builds the kube-apiserver and etcd that the Kubernetes driver's tests run
# against, from the Go module proxy (no Docker, no release download needed).
# The binaries land in ${SVC_KUBE_BIN:-$HOME/.cache/svc-kube/v1.36.4}; a binary
# already there is kept, so only the first run on a machine pays the cold build
# (about 8 minutes of compile on 2 cores for kube-apiserver, under 1 for etcd).
# Each tool has a go.mod of its own under tools/ so svc's go.mod never requires
# k8s.io/kubernetes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${SVC_KUBE_BIN:-$HOME/.cache/svc-kube/v1.36.4}"
mkdir -p "$bin"

build() { # build NAME MODULE-DIR PACKAGE
  local name=$1 dir=$2 pkg=$3
  if [ -x "$bin/$name" ]; then
    echo "kubetest: $bin/$name is already built"
    return
  fi
  echo "kubetest: building $name into $bin (cold: several minutes)"
  local start=$(date +%s)
  # Build to a temporary name and rename, so an interrupted build never leaves
  # a half-written binary that the next run would take for a finished one.
  (cd "$here/tools/$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$bin/$name.partial" "$pkg")
  mv "$bin/$name.partial" "$bin/$name"
  echo "kubetest: built $name in $(( $(date +%s) - start ))s"
}

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver apiserver k8s.io/kubernetes/cmd/kube-apiserver
