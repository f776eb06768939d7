#!/usr/bin/env bash
# Builds the sdnlab container image with buildah (Debian's), from this
# machine, no registry needed: an image FROM scratch holding the release
# binary (`cargo build --release`, the one scripts/main.sh and the
# benchmarks run: one optimised build serves all) and the C library it
# links (the loader, libc, libm, libgcc_s, copied from this machine at
# their own paths, as `ldd` lists them). Names resolve without the C
# library's modules (the fleet crate resolves with hickory).
#   deploy/container/build.sh [TAG]        -> localhost/sdnlab:TAG (default 0.1.0)
#   deploy/container/build.sh net [TAG]    -> localhost/sdnlab-net:TAG (pulls debian:12-slim)
# Prints the image's name. Push it where the cluster's nodes pull from
# (`buildah push localhost/sdnlab:0.1.0 docker://REGISTRY/sdnlab:0.1.0`) and
# name it in deploy/kubernetes/kustomization.yaml.
set -euo pipefail
cd "$(dirname "$0")/../.."
kind=sdnlab file=Containerfile
if [ "${1:-}" = net ]; then kind=sdnlab-net file=Containerfile.net; shift; fi
tag=${1:-0.1.0}
command -v buildah > /dev/null || { echo "build.sh: buildah missing: run scripts/install-deps.sh" >&2; exit 2; }
export PATH="$HOME/.cargo/bin:$PATH"
# Run from a test, cargo's variables for the test would be inherited, and
# build scripts that watch them (ring's) would see a change and rebuild.
for v in $(compgen -e); do
  case $v in
    CARGO_MANIFEST_*|CARGO_PKG_*|CARGO_CRATE_*|CARGO_BIN_*|CARGO_PRIMARY_PACKAGE|CARGO_TARGET_TMPDIR|OUT_DIR) unset "$v" ;;
  esac
done
cargo build --quiet --release -p sdnlab >&2
bin=${CARGO_TARGET_DIR:-$PWD/target}/release/sdnlab
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/usr/bin"
cp "$bin" "$ctx/root/usr/bin/sdnlab"
# Every library the binary loads, at the path the loader looks for it.
for lib in $(ldd "$bin" | grep -oE '/[^ ]+'); do
  mkdir -p "$ctx/root$(dirname "$lib")"
  cp -L "$lib" "$ctx/root$lib"
done
cp "deploy/container/$file" "$ctx/"
buildah ${BUILDAH_STORAGE:+--storage-driver "$BUILDAH_STORAGE"} bud --quiet --layers=false \
  -f "$ctx/$file" -t "localhost/$kind:$tag" "$ctx" > /dev/null
echo "localhost/$kind:$tag"
