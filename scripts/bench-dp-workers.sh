#!/usr/bin/env bash
# `bench dp` on an external switch whose ports are on two machines, against
# the same switch with both ports on this one: three network namespaces on
# a bridge are three "machines", each running `sdnlab worker`; the switch
# under test is sdnlab's own (`sdnlab switch`, AF_PACKET ports, in the root
# namespace), two veth pairs leading to it. In the "one machine" arm both
# far ends are in the root namespace (`--external-ports P1,P2`: the bench
# lends them to its host namespaces); in the "workers" arm they are moved
# into workers 1 and 2's namespaces (`--external-ports W1:P1,W2:P2
# --workers`): the generator runs on one worker, the receiver on the other,
# latencies corrected by their clocks. Arms alternate, the switch the same
# process throughout. RFC 2544 throughput (zero loss) and latency at that
# rate, 64 and 1518-byte frames, AF_PACKET generator and receiver.
# Usage: scripts/bench-dp-workers.sh [ROUNDS] (default 3). Results under
#        results/bench-dp-workers-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
. scripts/lib/bench.sh dp-workers
tag=bp$(( $$ % 1000 )) net=10.197.0
switch_pid=
. scripts/lib/workers-lab.sh
cleanup() {
  [ -n "$switch_pid" ] && kill "$switch_pid" 2>/dev/null && wait "$switch_pid" 2>/dev/null
  for i in 1 2; do ip link del "${tag}x$i" 2>/dev/null || true; done
  workers_lab_down
}
trap cleanup EXIT
workers_lab_up "$bin" "$out" "$tag" "$net"
printf 'credentials = "creds"\nworkers = ["%s.1:7700", "%s.2:7700"]\n' "$net" "$net" > "$out/inventory.toml"
for i in 1 2; do
  ip link add "${tag}x$i" type veth peer name "${tag}p$i"
  ip link set "${tag}x$i" up
done
of=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" switch --port "${tag}x1" --port "${tag}x2" --listen "ptcp:$of" --threads 1 2> "$out/switch.log" &
switch_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$of") 2>/dev/null && break; sleep 0.1; done
common=(--dut external --external-openflow "127.0.0.1:$of" --tests throughput,latency --frames 64,1518
        --generator afpacket --receiver afpacket --trial-seconds 5 --search-seconds 2 --latency-seconds 5
        --repetitions 3 --no-live)
ends() { # where the far ends go: root or workers
  for i in 1 2; do
    if [ "$1" = workers ]; then
      ip link set "${tag}p$i" netns "$tag-m$i"
      ip -n "$tag-m$i" link set "${tag}p$i" up
    else
      ip -n "$tag-m$i" link set "${tag}p$i" netns 1 2>/dev/null || true
    fi
  done
}
sleep 1
for r in $(seq "$rounds"); do
  for arm in one workers; do
    ends "$arm"
    case $arm in
      one) "$bin" bench dp "${common[@]}" --external-ports "${tag}p1,${tag}p2" --out "$out/$arm-$r" > /dev/null ;;
      workers) "$bin" bench dp "${common[@]}" --external-ports "$net.1:7700:${tag}p1,$net.2:7700:${tag}p2" \
                 --workers "$out/inventory.toml" --out "$out/$arm-$r" > /dev/null ;;
    esac
    ends one
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, sys, statistics as st
out, rounds = sys.argv[1], int(sys.argv[2])
print("| ports on | frame (B) | throughput (frames/s), median | min..max | latency p50 (us), median | clock uncertainty (us) |")
print("|---|---:|---:|---|---:|---:|")
for arm, name in (("one", "this machine"), ("workers", "two workers")):
    for frame in (64, 1518):
        tput, lat, unc = [], [], []
        for r in range(1, rounds + 1):
            for line in open(f"{out}/{arm}-{r}/samples.jsonl"):
                v = json.loads(line).get("values", {})
                if v.get("frame_bytes") != frame:
                    continue
                if "throughput_fps" in v:
                    tput.append(v["throughput_fps"])
                if "latency_p50_us" in v:
                    lat.append(v["latency_p50_us"])
            for line in open(f"{out}/{arm}-{r}/trials.jsonl"):
                t = json.loads(line)
                if t.get("frame") == frame and t["test"] == "latency":
                    unc.append(t.get("clock_uncertainty_us", 0.0))
        span = f"{min(tput):,.0f}..{max(tput):,.0f}" if tput else "-"
        print(f"| {name} | {frame} | {st.median(tput) if tput else float('nan'):,.0f} | {span} | "
              f"{st.median(lat) if lat else float('nan'):.0f} | {st.median(unc) if unc else 0:.1f} |")
PY
echo
echo "results: $out"
