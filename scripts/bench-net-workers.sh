#!/usr/bin/env bash
# The network experiment spread over workers, on this one machine: three
# network namespaces on a bridge are three "machines", each running
# `sdnlab worker`. One leaf-spine (2 spines, 3 leaves, a host each) with
# Linux bridges, three arms interleaved, RUNS runs each:
#   local  the experiment on this machine alone (netlab, no workers);
#   udp    over the three workers, clocks measured by the workers' UDP
#          probes (the default);
#   tls    over the three workers with UDP to the workers' ephemeral
#          ports dropped (nft, in each worker's namespace; VXLAN's port
#          4789 stays open), so clocks are measured over the TLS session.
# Each run: a 2-second test-frame flow h1>h3 at PPS frames/s and, at once,
# h3>h2 (over workers each crosses two machines), then an open-loop HTTP
# load h1>h3 at 50 requests/s for 2 s. The table gives, per arm, the
# median over runs of: the flows' one-way latency p50 and p99, the clock
# uncertainty of the flow's two ends, the frames lost, the HTTP p50.
# Usage: scripts/bench-net-workers.sh [RUNS] [PPS]   (defaults 5, 2000).
# Results under results/bench-net-workers-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5} pps=${2:-2000}
. scripts/lib/bench.sh net-workers
tag=bn$(( $$ % 1000 )) net=10.198.0
. scripts/lib/workers-lab.sh
trap workers_lab_down EXIT
workers_lab_up "$bin" "$out" "$tag" "$net"
printf 'credentials = "creds"\nworkers = ["%s.1:7700", "%s.2:7700", "%s.3:7700"]\n' $net $net $net > "$out/inventory.toml"
cat > "$out/net.toml" <<EOF
experiment = "net"
topology = "leaf-spine,2,3,1"
switch = "bridge"
ping_count = 1
http = ["h1>h3"]
http_rate = 50
http_s = 2
flows = ["h1>h3", "h3>h2"]
flow_pps = $pps
flow_s = 2
interval_ms = 500
EOF
udp_probes() { # on|off: UDP to the workers' ephemeral ports dropped or not
  for i in 1 2 3; do
    ip netns exec "$tag-m$i" nft delete table inet benchnet 2>/dev/null || true
    if [ "$1" = off ]; then
      ip netns exec "$tag-m$i" nft -f - <<'NFT'
table inet benchnet {
  chain input {
    type filter hook input priority 0;
    udp dport 32768-60999 drop
  }
}
NFT
    fi
  done
}
sleep 1
for r in $(seq "$runs"); do
  for arm in local udp tls; do
    case $arm in
      local) "$bin" run "$out/net.toml" --no-live --out "$out/$arm-$r" > /dev/null ;;
      udp) udp_probes on; "$bin" run "$out/net.toml" --workers "$out/inventory.toml" --no-live --out "$out/$arm-$r" > /dev/null ;;
      tls) udp_probes off; "$bin" run "$out/net.toml" --workers "$out/inventory.toml" --no-live --out "$out/$arm-$r" > /dev/null ;;
    esac
  done
done
udp_probes on
python3 - "$out" "$runs" <<'PY'
import json, sys, statistics as st
out, runs = sys.argv[1], int(sys.argv[2])
print("| arm | clocks by | flow latency p50 (us) | p99 (us) | clock uncertainty (us) | frames lost | HTTP p50 (ms) | clock moved over the run (us) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for arm, name in (("local", "one machine"), ("udp", "3 workers"), ("tls", "3 workers")):
    p50, p99, unc, lost, http, moved, via = [], [], [], [], [], [], set()
    for r in range(1, runs + 1):
        d = f"{out}/{arm}-{r}"
        meta = json.load(open(d + "/meta.json"))
        for w in meta["parameters"].get("workers") or []:
            via.add(w["clock_via"])
        for m in meta["parameters"].get("clock_drift") or []:
            moved.append(abs(m["moved_us"]))
        for line in open(d + "/samples.jsonl"):
            s = json.loads(line)
            v = s["values"]
            if s["kind"] == "trial" and s["scenario"].startswith("flow "):
                p50.append(v["latency_us_p50"]); p99.append(v["latency_us_p99"])
                unc.append(v["clock_uncertainty_us"]); lost.append(v["lost"])
            if s["kind"] == "trial" and s["scenario"].startswith("http "):
                http.append(v["http_latency_ms_p50"])
    med = lambda x: f"{st.median(x):.1f}" if x else "-"
    print(f"| {name} | {', '.join(sorted(via)) or 'one clock'} | {med(p50)} | {med(p99)} | {med(unc)} | {sum(lost):.0f} | {med(http)} | {med(moved)} |")
PY
echo
echo "results: $out"
