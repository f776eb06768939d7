#!/usr/bin/env bash
# Creates the os-ken 1.4.1 venv (the last os-ken release that ships its
# apps: simple_switch_13, rest_topology, ofctl_rest) where `sdnlab bench`
# keeps it, if absent, and prints its python. The pins are those of
# crates/sdnlab/src/peers.rs. PyPI is the only network used.
set -euo pipefail
venv="${XDG_CACHE_HOME:-$HOME/.cache}/sdnlab/peers/osken-1.4.1"
check="import importlib.metadata as m, webob, routes; assert m.version('os-ken') == '1.4.1'"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "$check" 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q 'os-ken==1.4.1' 'eventlet==0.41.3' 'dnspython>=2.6' >&2
fi
echo "$venv/bin/python"
