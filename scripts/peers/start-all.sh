# Sourced by the side-by-side benchmark scripts: builds sdnlab, then starts
# sdnlab's controller (l2-learning), ovs-testcontroller and os-ken (the
# project's learning-switch app) on free loopback ports, waits until they
# listen, and stops them (by the pids started here) when the script exits.
# With no_osken=1 set, os-ken is not started (osken_port stays empty).
# Sets: bin, dir, own_port, tc_port, osken_port.
cargo build -q --release -p sdnlab
bin=target/release/sdnlab
[ "${no_osken:-0}" = 1 ] || python=$(scripts/install-osken.sh)
dir=$(mktemp -d /tmp/sdnlab-bench-peers.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tc_port=$(port); own_port=$(port); osken_port=
[ "${no_osken:-0}" = 1 ] || osken_port=$(port)
"$bin" controller --listen 127.0.0.1:"$own_port" --app l2-learning --no-rest >/dev/null 2>&1 & pids+=($!)
ovs-testcontroller --unixctl="$dir/tc.ctl" ptcp:"$tc_port":127.0.0.1 >/dev/null 2>&1 & pids+=($!)
if [ -n "$osken_port" ]; then
  OSKEN_HUB_TYPE=eventlet "$python" scripts/peers/osken_run.py "$osken_port" scripts/peers/osken_l2_learning.py >"$dir/osken.log" 2>&1 & pids+=($!)
fi
for p in "$tc_port" $osken_port "$own_port"; do
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null && break; sleep 0.1; done
done
