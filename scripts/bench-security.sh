#!/usr/bin/env bash
# RFC 8456 exception handling, side by side: `sdnlab bench ctl --test
# security` against sdnlab's controller (l2-learning), ovs-testcontroller and
# os-ken (the project's learning-switch app). Prints, per controller, what it
# did with each malformed case and whether the other sessions were served.
# Usage: scripts/bench-security.sh [CASE_WAIT_MS]   (default 1500)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
wait_ms=${1:-1500}
cargo build -q --release -p sdnlab
bin=target/release/sdnlab
python=$(scripts/install-osken.sh)
dir=$(mktemp -d /tmp/sdnlab-bench-security.XXXXXX)
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
for target in "sdnlab l2-learning|$own_port" "ovs-testcontroller 3.1|$tc_port" "os-ken 4.2.2|$osken_port"; do
  name=${target%%|*}; p=${target#*|}
  echo "## $name"
  "$bin" bench ctl --test security --target 127.0.0.1:"$p" --case-wait-ms "$wait_ms" --out "$dir/run-$p" 2>/dev/null
  echo
done
