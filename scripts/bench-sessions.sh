#!/usr/bin/env bash
# RFC 8456 control session capacity, side by side: `sdnlab bench ctl --test
# sessions` against sdnlab's controller, ovs-testcontroller and os-ken (each
# in its own process, with the machine's open-file limits). Prints how many
# sessions each held and what ended the count.
# Usage: scripts/bench-sessions.sh [MAX_SESSIONS] [TRIALS]   (default 10000 1)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
max=${1:-10000}; trials=${2:-1}
cargo build -q --release -p sdnlab
bin=target/release/sdnlab
python=$(scripts/install-osken.sh)
dir=$(mktemp -d /tmp/sdnlab-bench-sessions.XXXXXX)
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
echo "open-file limit (soft/hard) for the peers: $(ulimit -Sn)/$(ulimit -Hn); sdnlab raises its own to the hard limit"
for target in "sdnlab l2-learning|$own_port" "ovs-testcontroller 3.1|$tc_port" "os-ken 4.2.2|$osken_port"; do
  name=${target%%|*}; p=${target#*|}
  printf '%-24s ' "$name"
  "$bin" bench ctl --test sessions --target 127.0.0.1:"$p" --max-sessions "$max" --trials "$trials" --out "$dir/run-$p" 2>/dev/null
done
