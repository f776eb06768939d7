#!/usr/bin/env bash
# Regenerates crates/stats/tests/scipy_vectors.json with Debian's scipy
# (installed here if missing). The vectors are committed; tests only read them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/python3 -c 'import scipy' 2>/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-scipy >/dev/null
fi
exec /usr/bin/python3 scripts/stats-vectors.py
