#!/usr/bin/env bash
# Issue 28's benchmark: does the switch forward as fast managed through
# OVSDB (`net up --switch sdnlab --ovsdb`: one process, bridges made by
# ovs-vsctl) as configured on its command line (`--switch sdnlab`: one
# process per switch)? linear,2 under sdnlab's l2-learning controller (so
# frames follow learnt flows, never the flood), `net iperf h1 h2` TCP for
# SECONDS; the two set-ups alternated REPS times (order alternating too),
# every figure to results/bench-ovsdb-<time>/ab.jsonl first. Needs root.
# Usage: scripts/bench-ovsdb.sh [REPS] [SECONDS]   (default 5 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
secs=${2:-5}
. scripts/lib/bench.sh ovsdb
one() { # $1: cli|ovsdb, $2: rep
  local extra=""; [ "$1" = ovsdb ] && extra="--ovsdb"
  # shellcheck disable=SC2086
  "$bin" net up linear,2 --switch sdnlab $extra --app l2-learning --no-live > "$out/up-$1-$2.log" 2>&1 &
  local up=$!
  for _ in $(seq 100); do grep -q '^up;' "$out/up-$1-$2.log" && break; sleep 0.1; done
  local id; id=$(awk '/^run /{print $2; exit}' "$out/up-$1-$2.log" | tr -d :)
  # The controller learns both hosts first.
  "$bin" net pingall --id "$id" --count 1 > /dev/null 2>&1 || true
  "$bin" net iperf --id "$id" h1 h2 --seconds "$secs" --json \
    | python3 -c "import json,sys; v=json.load(sys.stdin); print(json.dumps({'setup': '$1', 'rep': $2, 'mbit': v['iperf']['received_bps']/1e6, 'host_bound': v['host']['host_bound']}))" \
    >> "$out/ab.jsonl"
  "$bin" net down --id "$id" > /dev/null
  wait "$up" 2>/dev/null || true
}
for rep in $(seq "$reps"); do
  if [ $((rep % 2)) = 1 ]; then order="cli ovsdb"; else order="ovsdb cli"; fi
  for s in $order; do one "$s" "$rep"; done
done
python3 - "$out/ab.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| set-up | n | median Mbit/s | min..max | host-bound trials |")
print("|---|---:|---:|---|---:|")
for s in ("cli", "ovsdb"):
    v = [r["mbit"] for r in rows if r["setup"] == s]
    hb = sum(1 for r in rows if r["setup"] == s and r["host_bound"])
    print(f"| {s} | {len(v)} | {statistics.median(v):,.0f} | {min(v):,.0f}..{max(v):,.0f} | {hb} |")
PY
echo "samples: $out/ab.jsonl"
