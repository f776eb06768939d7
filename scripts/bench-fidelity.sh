#!/usr/bin/env bash
# Issue 30's benchmark, in one run: (1) what watching the host costs the
# measured path: `net iperf` across two sdnlab switches (linear,2, no rate
# limit, so the switches' CPU is the limit), the host watch on and off
# (SDNLAB_HOST_WATCH=off) alternated REPS times, every figure to
# results/bench-fidelity-<time>/watch-ab.jsonl first; (2) `bench fidelity`,
# sdnlab's emulation against Mininet's, linear 1, 4 and 8, into the same
# directory. Needs root and Debian's mininet package (install-deps.sh).
# Usage: scripts/bench-fidelity.sh [REPS] [SECONDS] [ab]   (default 5 and 5;
# `ab` runs the watch's A/B only)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
secs=${2:-5}
. scripts/lib/bench.sh fidelity
"$bin" net up linear,2 --switch sdnlab > "$out/net-up.log" 2>&1 &
up=$!
trap 'kill $up 2>/dev/null || true; wait $up 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q '^up;' "$out/net-up.log" && break; sleep 0.1; done
id=$(awk '/^run /{print $2; exit}' "$out/net-up.log" | tr -d :)
for rep in $(seq "$reps"); do
  # The order alternates too (on first in odd repetitions, off first in
  # even ones), so neither side always runs on a freshly idle machine.
  if [ $((rep % 2)) = 1 ]; then order="on off"; else order="off on"; fi
  for watch in $order; do
    SDNLAB_HOST_WATCH=$watch "$bin" net iperf --id "$id" h1 h2 --seconds "$secs" --json \
      | python3 -c "import json,sys; v=json.load(sys.stdin); print(json.dumps({'watch': '$watch', 'rep': $rep, 'mbit': v['iperf']['received_bps']/1e6, 'host_bound': v['host']['host_bound'], 'bound': (v['bound'] or {}).get('bound'), 'bottleneck': (v['bound'] or {}).get('bottleneck')}))" \
      >> "$out/watch-ab.jsonl"
  done
done
"$bin" net down --id "$id" > /dev/null
wait $up 2>/dev/null || true
trap - EXIT
python3 - "$out/watch-ab.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
on = [r["mbit"] for r in rows if r["watch"] == "on"]
off = [r["mbit"] for r in rows if r["watch"] == "off"]
for w, v in (("on", on), ("off", off)):
    print(f"host watch {w}: median {statistics.median(v):.0f} Mbit/s, range {min(v):.0f}-{max(v):.0f} (n={len(v)})")
# Mann-Whitney U (on against off), with its exact two-sided p by enumeration.
from itertools import combinations
u = sum((a > b) + 0.5 * (a == b) for a in on for b in off)
allv = on + off
n = len(on)
us = []
for idx in combinations(range(len(allv)), n):
    a = [allv[i] for i in idx]
    b = [allv[i] for i in range(len(allv)) if i not in idx]
    us.append(sum((x > y) + 0.5 * (x == y) for x in a for y in b))
mean = n * len(off) / 2
p = sum(abs(x - mean) >= abs(u - mean) for x in us) / len(us)
print(f"Mann-Whitney U = {u} (on > off pairs of {n * len(off)}), exact two-sided p = {p:.3f}")
PY
[ "${3:-}" = ab ] && exit 0
"$bin" bench fidelity --switches 1,4,8 --seconds "$secs" --rounds 3 --out "$out/fidelity"
