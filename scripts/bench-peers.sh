#!/usr/bin/env bash
# One `sdnlab bench ctl` test against sdnlab's controller (l2-learning),
# ovs-testcontroller and os-ken (the project's learning-switch app), each in
# its own process on loopback, one after the other in the same run.
# Usage: scripts/bench-peers.sh TEST [bench ctl options...]
#   scripts/bench-peers.sh security --case-wait-ms 1000   # malformed input, case by case
#   scripts/bench-peers.sh sessions --max-sessions 10000  # session capacity
#   scripts/bench-peers.sh rate --trials 3                # loss-free processing rate
#   scripts/bench-peers.sh dos --trials 3                 # latency under a PACKET_IN flood
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
test=${1:?usage: scripts/bench-peers.sh TEST [options]}; shift
cargo build -q --release -p sdnlab
bin=target/release/sdnlab
python=$(scripts/install-osken.sh)
dir=$(mktemp -d /tmp/sdnlab-bench-peers.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tc_port=$(port); osken_port=$(port); own_port=$(port)
"$bin" controller --listen 127.0.0.1:"$own_port" --app l2-learning --no-rest >/dev/null 2>&1 & pids+=($!)
ovs-testcontroller --unixctl="$dir/tc.ctl" ptcp:"$tc_port":127.0.0.1 >/dev/null 2>&1 & pids+=($!)
OSKEN_HUB_TYPE=eventlet "$python" scripts/peers/osken_run.py "$osken_port" scripts/peers/osken_l2_learning.py >"$dir/osken.log" 2>&1 & pids+=($!)
for p in "$tc_port" "$osken_port" "$own_port"; do
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null && break; sleep 0.1; done
done
status=0
for target in "sdnlab l2-learning|$own_port" "ovs-testcontroller 3.1|$tc_port" "os-ken 4.2.2|$osken_port"; do
  name=${target%%|*}; p=${target#*|}
  echo "## $name"
  "$bin" bench ctl --test "$test" --target 127.0.0.1:"$p" --out "$dir/run-$p" "$@" 2>/dev/null || status=1
  echo
done
exit $status
