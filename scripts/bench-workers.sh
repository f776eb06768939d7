#!/usr/bin/env bash
# The controller benchmark spread over workers, on this one machine: three
# network namespaces on a bridge are three "machines", each running
# `sdnlab worker`; sdnlab's controller (l2-learning, its own process,
# started afresh for each run) listens on the bridge in the root namespace.
#   1. the same total switches driven by one process (`bench ctl --target`)
#      in the root namespace, by one process in a worker's namespace (the
#      same path to the controller as a worker's, through a veth and the
#      bridge, without the fleet), and by 1, 2 and 3 workers; the runs
#      interleaved, the controller fresh for each; Mann-Whitney U of each
#      against the first;
#   2. the largest number of OpenFlow 1.3 switches held through 3 workers,
#      growing until sessions are lost or nothing is matched.
# Usage: scripts/bench-workers.sh [SWITCHES] [TRIALS] [MAX_SWITCHES]
#        (defaults 16, 10, 6144; TRIALS 0 skips part 1). Environment:
#        SCALE_FROM (768), CONNECT_RATE (new sessions per second over all
#        workers in part 2; 0: as fast as accepted). Results under
#        results/bench-workers-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
switches=${1:-16} trials=${2:-10} max=${3:-6144}
. scripts/lib/bench.sh workers
tag=bw$(( $$ % 1000 )) net=10.199.0
. scripts/lib/workers-lab.sh
trap workers_lab_down EXIT
workers_lab_up "$bin" "$out" "$tag" "$net"
inventory() { # N workers
  local list=""
  for i in $(seq "$1"); do list+="\"$net.$i:7700\", "; done
  printf 'credentials = "creds"\nworkers = [%s]\n' "${list%, }" > "$out/inventory$1.toml"
  echo "$out/inventory$1.toml"
}
target=$net.254:6653
controller() { workers_lab_controller "$bin" "$net"; }
stop_controller() { workers_lab_controller_stop; }
sleep 1
common=(--target "$target" --ofp 1.3 --switches "$switches" --trials 1 --no-live)
# 1. Interleaved: each trial of each arm in turn, the controller fresh each time.
for t in $(seq "$trials"); do
  for arm in one ns w1 w2 w3; do
    controller
    case $arm in
      one) "$bin" bench ctl "${common[@]}" --out "$out/$arm-$t" > /dev/null ;;
      ns) ip netns exec "$tag-m1" "$bin" bench ctl "${common[@]}" --out "$out/$arm-$t" > /dev/null ;;
      w*) "$bin" bench ctl "${common[@]}" --workers "$(inventory "${arm#w}")" --out "$out/$arm-$t" > /dev/null ;;
    esac
    stop_controller
  done
done
[ "$trials" -gt 0 ] && python3 - "$out" "$trials" <<'PY'
import json, sys, statistics as st
out, trials = sys.argv[1], int(sys.argv[2])
print("| driven by | responses/s (mean of trials) | min..max | matched/s | rtt p50 (us) | rtt p99 (us) |")
print("|---|---:|---|---:|---:|---:|")
arms = {"one": "one process", "ns": "one process in a worker's namespace", "w1": "1 worker", "w2": "2 workers", "w3": "3 workers"}
figs = {}
for arm, name in arms.items():
    rows = []
    for t in range(1, trials + 1):
        for line in open(f"{out}/{arm}-{t}/samples.jsonl"):
            s = json.loads(line)
            if s["kind"] == "trial":
                rows.append(s["values"])
    r = [v["responses_per_s"] for v in rows]
    figs[arm] = r
    print(f"| {name} | {st.mean(r):,.0f} | {min(r):,.0f}..{max(r):,.0f} | {st.mean(v['matched_per_s'] for v in rows):,.0f} | "
          f"{st.median(v['rtt_p50_us'] for v in rows):.0f} | {st.median(v['rtt_p99_us'] for v in rows):.0f} |")
sys.path.insert(0, "scripts/lib")
from mwu import mwu
for arm in ("ns", "w1", "w2", "w3"):
    u, p = mwu(figs[arm], figs["one"])
    print(f"\n{arms[arm]} against one process: {100 * (st.mean(figs[arm]) / st.mean(figs['one']) - 1):+.1f} %, Mann-Whitney U = {u:.0f}, p = {p:.3f}", end="")
print()
PY
# 2. The largest number of switches held through three workers.
echo
echo "| switches (3 workers) | sessions lost | responses/s | matched/s | time to connect and measure (s) |"
echo "|---:|---:|---:|---:|---:|"
n=${SCALE_FROM:-768}
while [ "$n" -le "$max" ]; do
  controller
  start=$(date +%s.%N)
  "$bin" bench ctl --target "$target" --ofp 1.3 --switches "$n" --macs 100 --trials 1 --loops 2 --warmup 1 \
    --connect-rate "${CONNECT_RATE:-0}" \
    --workers "$(inventory 3)" --no-live --out "$out/scale-$n" > /dev/null 2>&1 || true
  secs=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  stop_controller
  line=$(python3 - "$out/scale-$n" <<'PY'
import json, sys
try:
    t = [json.loads(l) for l in open(sys.argv[1] + "/samples.jsonl") if json.loads(l)["kind"] == "trial"][0]["values"]
    print(f"{t['sessions_lost']:.0f} | {t['responses_per_s']:,.0f} | {t['matched_per_s']:,.0f}")
except Exception as e:
    print(f"failed ({e}) | | ")
PY
)
  echo "| $n | $line | $secs |"
  case "$line" in failed*|0\ \|\ 0*) break ;; esac
  case "$line" in 0\ \|*) ;; *) break ;; esac
  n=$(( n * 2 ))
done
echo
echo "results: $out"
