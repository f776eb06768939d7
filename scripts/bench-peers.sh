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
source scripts/peers/start-all.sh
status=0
for target in "sdnlab l2-learning|$own_port" "ovs-testcontroller 3.1|$tc_port" "os-ken 4.2.2|$osken_port"; do
  name=${target%%|*}; p=${target#*|}
  echo "## $name"
  "$bin" bench ctl --test "$test" --target 127.0.0.1:"$p" --out "$dir/run-$p" "$@" 2>/dev/null || status=1
  echo
done
exit $status
