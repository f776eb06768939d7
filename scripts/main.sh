#!/usr/bin/env bash
# The main job on the embedded default: install what is needed, build
# sdnlab (and put it on PATH), and benchmark sdnlab's own controller (l2-learning) with the
# cbench-style load driver: 16 emulated switches, 1000 MACs, OpenFlow 1.0,
# throughput mode. Extra arguments go to `sdnlab bench ctl` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/install-deps.sh main >&2
cargo build --release --quiet -p sdnlab
# On PATH for every command the README shows: /usr/local/bin for root,
# ~/.local/bin for anyone else (Debian's ~/.profile puts it on PATH at login).
if [ "$(id -u)" = 0 ]; then dest=/usr/local/bin; else dest=$HOME/.local/bin; mkdir -p "$dest"; fi
install -m 0755 target/release/sdnlab "$dest/sdnlab"
echo "main.sh: sdnlab installed as $dest/sdnlab" >&2
exec target/release/sdnlab bench ctl "$@"
