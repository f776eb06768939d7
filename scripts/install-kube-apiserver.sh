#!/usr/bin/env bash
# Builds a real Kubernetes API server (kube-apiserver 1.37.2, from the Go
# module proxy: k8s.io/kubernetes with its k8s.io/* staging modules at
# v0.37.2) into target/peers/kube/ if absent, and prints its path. Go 1.26
# or newer builds it: the machine's, or the toolchain the go command would
# fetch itself (golang.org/toolchain on the module proxy). etcd is
# Debian's (etcd-server). About 4 minutes on two cores the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$PWD/target/peers/kube
bin=$dir/kube-apiserver
k8s=1.37.2 staging=0.37.2 gover=1.26.8
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
mkdir -p "$dir"
go=$(command -v go || true)
if [ -z "$go" ] || ! "$go" version | grep -qE 'go1\.(2[6-9]|[3-9][0-9])'; then
  go=$dir/go/bin/go
  if [ ! -x "$go" ]; then
    echo "install-kube-apiserver: Go $gover from the module proxy" >&2
    zip=$dir/toolchain.zip
    curl -fsSL -o "$zip" "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$gover.linux-amd64.zip"
    rm -rf "$dir/tc" && mkdir -p "$dir/tc"
    unzip -q "$zip" -d "$dir/tc"
    rm -rf "$dir/go" && mv "$dir/tc/golang.org/toolchain@v0.0.1-go$gover.linux-amd64" "$dir/go"
    chmod +x "$dir/go/bin/"* "$dir/go/pkg/tool/"*/* 2>/dev/null || true
    rm -rf "$dir/tc" "$zip"
  fi
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
# The modules and Go's build cache (about 3.4 GB) only for this build,
# removed after it: the binary is what is kept, and on the CI machine the
# disk is not always large.
work=$(mktemp -d "$dir/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
export GOCACHE=$work/cache GOMODCACHE=$work/mod
src=$work/src
mkdir -p "$src"
cd "$src"
printf 'module sdnlab.local/kube\n\ngo 1.26\n\nrequire k8s.io/kubernetes v%s\n' "$k8s" > go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' > tools.go
# k8s.io/kubernetes names its staging modules as v0.0.0 replaced by local
# paths; outside its tree each is replaced by its published release.
modfile=$("$go" mod download -json "k8s.io/kubernetes@v$k8s" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
grep -E '^\s+k8s.io/[a-z0-9-]+ => ' "$modfile" | awk -v v="$staging" '{print "replace " $1 " => " $1 " v" v}' >> go.mod
echo "install-kube-apiserver: building kube-apiserver $k8s" >&2
"$go" mod tidy >&2
# Without the compiler's optimisations and inlining (-N -l): the tests
# need its API, not its speed, and it builds in 222 s instead of 294 on
# two cores (2026-11-30, one build each, nothing else running).
"$go" build -trimpath -gcflags='all=-N -l' -ldflags=-s -o "$bin" k8s.io/kubernetes/cmd/kube-apiserver >&2
echo "$bin"
