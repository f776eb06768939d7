#!/usr/bin/env bash
# Builds the sdnlab container image with buildah (Debian's), from this
# machine, no registry needed: the binary linked statically
# (scripts/build-static.sh), then an image FROM scratch holding it alone.
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
bin=$(scripts/build-static.sh)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "deploy/container/$file" "$ctx/"
buildah ${BUILDAH_STORAGE:+--storage-driver "$BUILDAH_STORAGE"} bud --quiet --layers=false \
  -f "$ctx/$file" -t "localhost/$kind:$tag" "$ctx" > /dev/null
echo "localhost/$kind:$tag"
