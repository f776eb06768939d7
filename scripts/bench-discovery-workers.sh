#!/usr/bin/env bash
# RFC 8456 topology discovery with the emulated fabric spread over workers,
# on this one machine: three network namespaces on a bridge are three
# "machines", each running `sdnlab worker`; sdnlab's controller (app
# topology, its own process with its REST API, started afresh for each
# trial) listens on the bridge in the root namespace. The same fabric is
# discovered with its switches in one process (`bench ctl --target`) and
# spread over the three workers (LLDP between their parts as UDP), trials
# interleaved; Mann-Whitney U of the workers' times against one process's.
# Usage: scripts/bench-discovery-workers.sh [FABRIC] [TRIALS]
#        (defaults leaf-spine,8,1000,1 and 5). Results under
#        results/bench-discovery-workers-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
fabric=${1:-leaf-spine,8,1000,1} trials=${2:-5}
. scripts/lib/bench.sh discovery-workers
tag=bd$(( $$ % 1000 )) net=10.196.0
. scripts/lib/workers-lab.sh
trap workers_lab_down EXIT
workers_lab_up "$bin" "$out" "$tag" "$net"
printf 'credentials = "creds"\nworkers = ["%s.1:7700", "%s.2:7700", "%s.3:7700"]\n' "$net" "$net" "$net" > "$out/inventory.toml"
target=$net.254:6653
rest=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
controller() { workers_lab_controller "$bin" "$net" --app topology --rest "127.0.0.1:$rest"; }
stop_controller() { workers_lab_controller_stop; }
sleep 1
common=(--test discovery --target "$target" --northbound "sdnlab:127.0.0.1:$rest" --fabric "$fabric"
        --ofp 1.3 --trials 1 --td-s 120 --no-live)
for t in $(seq "$trials"); do
  for arm in one w3; do
    controller
    case $arm in
      one) "$bin" bench ctl "${common[@]}" --out "$out/$arm-$t" > /dev/null || true ;;
      w3) "$bin" bench ctl "${common[@]}" --workers "$out/inventory.toml" --out "$out/$arm-$t" > /dev/null || true ;;
    esac
    stop_controller
  done
done
python3 - "$out" "$trials" "$fabric" <<'PY'
import json, sys, math, statistics as st
out, trials, fabric = sys.argv[1], int(sys.argv[2]), sys.argv[3]
arms = {"one": "one process", "w3": "3 workers"}
figs = {}
print(f"| {fabric}: switches from | discovery (s), median | min..max | converged | links |")
print("|---|---:|---|---:|---:|")
for arm, name in arms.items():
    got, links = [], ""
    for t in range(1, trials + 1):
        try:
            for line in open(f"{out}/{arm}-{t}/samples.jsonl"):
                s = json.loads(line)
                if s["kind"] == "trial":
                    v = s["values"]
                    links = f"{v['links_seen']:.0f} of {v['links']:.0f}"
                    if "discovery_s" in v:
                        got.append(v["discovery_s"])
        except FileNotFoundError:
            pass
    figs[arm] = got
    span = f"{min(got):.2f}..{max(got):.2f}" if got else "-"
    med = f"{st.median(got):.2f}" if got else "-"
    print(f"| {name} | {med} | {span} | {len(got)} of {trials} | {links} |")
sys.path.insert(0, "scripts/lib")
from mwu import mwu
if figs["one"] and figs["w3"]:
    u, p = mwu(figs["w3"], figs["one"])
    print(f"\n3 workers against one process: {100 * (st.median(figs['w3']) / st.median(figs['one']) - 1):+.1f} % (medians), Mann-Whitney U = {u:.0f}, p = {p:.3f}")
PY
echo
echo "results: $out"
