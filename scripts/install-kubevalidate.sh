#!/usr/bin/env bash
# Creates target/peers/kubevalidate (a Python venv with kubernetes-validate,
# which ships the Kubernetes JSON schemas of every release it knows, so
# manifests validate offline) if absent, and prints the venv's bin
# directory. PyPI is the only network used.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peers/kubevalidate
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q 'kubernetes-validate==1.37.0' >&2
fi
echo "$PWD/$venv/bin"
