#!/usr/bin/env bash
# Creates target/peers/osken (a Python venv with os-ken, the maintained Ryu
# fork) if absent, and prints its python. PyPI is the only network used.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peers/osken
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import os_ken" 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q 'os-ken==4.2.2' >&2 || "$venv/bin/pip" install -q os-ken >&2
fi
echo "$venv/bin/python"
