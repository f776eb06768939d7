#!/usr/bin/env bash
# The main job on the embedded default: install what is needed, build
# sdnlab, and benchmark sdnlab's own controller (l2-learning) with the
# cbench-style load driver: 16 emulated switches, 1000 MACs, OpenFlow 1.0,
# throughput mode. Extra arguments go to `sdnlab bench ctl` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/install-deps.sh main >&2
cargo build --release --quiet -p sdnlab
exec target/release/sdnlab bench ctl "$@"
