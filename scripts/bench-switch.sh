#!/usr/bin/env bash
# Switch benchmark, side by side in one run with the same generator and
# receiver: sdnlab's switch, Open vSwitch (system and afxdp ports), the
# Linux bridge and a direct veth pair (`sdnlab bench switch`, arguments
# passed on), then the datapath micro-benchmarks (cargo bench: key
# extraction, lookup with 1 and with 1,000,000 rules, a cached plan,
# FLOW_MOD insertion, the fast path's counters read for 10,000 flows). Samples go to the run directory first; tables are
# printed after. Needs root.
# Usage: scripts/bench-switch.sh [--quick] [sdnlab bench switch options]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
crit_args=(--warm-up-time 2 --measurement-time 5)
for a in "$@"; do [ "$a" = "--quick" ] && crit_args=(--quick); done
cargo build -q --release -p sdnlab
target/release/sdnlab bench switch "$@"
log=$(mktemp); trap 'rm -f "$log"' EXIT
cargo bench -q -p ofswitch --bench datapath -- "${crit_args[@]}" > "$log" 2>&1 \
  || { echo "cargo bench failed; its last lines:" >&2; tail -n 30 "$log" >&2; exit 1; }
echo "| datapath step | time per packet, rule or read of every flow |"
echo "|---|---:|"
awk '/^datapath\//{name=substr($1,10)} /time:/ && name != "" {gsub(/\[/,""); for (i=1;i<=NF;i++) if ($i=="time:") print "| " name " | " $(i+3) " " $(i+4) " |"; name=""}' "$log"
