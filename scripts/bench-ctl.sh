#!/usr/bin/env bash
# Controller benchmark, side by side in one run, OpenFlow 1.0 and 1.3, 16
# switches, 1000 MACs each, throughput and latency modes. Two load generators:
#   - sdnlab's driver (`sdnlab bench ctl`, responses matched to requests);
#   - the reference generator (`sdnlab bench ref generate`, crates/ofref:
#     minimal C, the yardstick the driver is held to);
# against: the reference null responder (`sdnlab bench ref respond`: the
# least any controller can do, so the generators' own ceiling), sdnlab's
# controller with l2-learning (embedded and own process), sdnlab's null
# app, ovs-testcontroller (C), os-ken with the project's learning-switch
# app (Python, eventlet hub). Prints a markdown table; every sdnlab driver
# run's samples are under a temporary directory.
# Both reference programs run on one event loop each: on two cores, a second
# thread of either measured slower (they share the machine with each other).
# Every controller runs with its defaults (sdnlab's driver: half the cores'
# event loops; sdnlab's controller: switches from this machine on half its
# workers).
# Usage: scripts/bench-ctl.sh [LOOPS [LOOP_MS]]   (default 5 loops of 1000 ms
# after 1 warm-up; scripts/test.sh's smoke runs 1 of 300 ms: every cell
# filled, not figures to quote)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
loops=${1:-5}
loop_ms=${2:-1000}
source scripts/peers/start-all.sh
ref_port=$(port)
"$bin" bench ref respond --listen 127.0.0.1:"$ref_port" --threads 1 >/dev/null 2>&1 & pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$ref_port") 2>/dev/null && break; sleep 0.1; done
failed=0
# One table row from either generator's --json: NAME GENERATOR OFP MODE JSON.
# The driver's report also has matched answers and round trips.
row() {
  python3 - "$@" <<'PY'
import json, sys
name, gen, ofp, mode, raw = sys.argv[1:6]
try:
    r = json.loads(raw)
except ValueError:
    print(f"| {name} | {gen} | {ofp} | {mode} | failed | | | | |"); sys.exit(1)
if "trials" in r:
    r = r["trials"][0]["report"]
ls = r["loops"]
avg = lambda k: sum(l[k] for l in ls) / len(ls)
rates = [l["responses_per_s"] for l in ls]
matched = f"{avg('matched_per_s'):,.0f}" if "matched_per_s" in ls[0] else ""
rtt = f"{r['rtt_us_p50']:.1f} | {r['rtt_us_p99']:.1f}" if "rtt_us_p50" in r else " | "
print(f"| {name} | {gen} | {ofp} | {mode} | {avg('responses_per_s'):,.0f} | {matched} | {min(rates):,.0f}..{max(rates):,.0f} | {rtt} |")
PY
}
echo "| controller | generator | OpenFlow | mode | responses/s (avg) | matched/s (avg) | min..max per loop | rtt p50 (us) | rtt p99 (us) |"
echo "|---|---|---|---|---:|---:|---|---:|---:|"
for ofp in 1.0 1.3; do
for mode in throughput latency; do
  for target in "reference null responder (C)|--target 127.0.0.1:$ref_port" "sdnlab l2-learning (embedded)|--app l2-learning" "sdnlab l2-learning (own process)|--target 127.0.0.1:$own_port" "sdnlab null app|--app null" "ovs-testcontroller 3.1|--target 127.0.0.1:$tc_port" "os-ken 4.2.2 (eventlet)|--target 127.0.0.1:$osken_port"; do
    name=${target%%|*}; args=${target#*|}
    # The reference generator first, against every controller in its own process.
    case "$args" in
      --target*)
        # shellcheck disable=SC2086
        json=$("$bin" bench ref generate $args --ofp "$ofp" --mode "$mode" --loops "$loops" --loop-ms "$loop_ms" --threads 1 --json 2>/dev/null || true)
        row "$name" "reference (C)" "$ofp" "$mode" "$json" || failed=1
        ;;
    esac
    # shellcheck disable=SC2086
    json=$("$bin" bench ctl $args --ofp "$ofp" --mode "$mode" --loops "$loops" --loop-ms "$loop_ms" --trials 1 --out "$dir/run-$RANDOM$RANDOM" --json 2>/dev/null || true)
    row "$name" "sdnlab driver" "$ofp" "$mode" "$json" || failed=1
  done
done
done
[ "$failed" = 0 ] || { echo "bench-ctl: a run failed (see the table)" >&2; exit 1; }
