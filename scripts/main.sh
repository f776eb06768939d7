#!/usr/bin/env bash
# The main job on the embedded default. For now: install what is needed,
# build sdnlab, and decode the bundled capture of a real Open vSwitch talking
# to a real controller (OpenFlow 1.0 and 1.3). Later issues replace this with
# a benchmark of sdnlab's own controller.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/install-deps.sh >&2
cargo build --release --quiet -p sdnlab
exec target/release/sdnlab ofp decode --pcap captures/ovs-learning-switch.pcapng "$@"
