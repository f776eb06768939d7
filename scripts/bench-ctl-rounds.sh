#!/usr/bin/env bash
# The controller benchmark's contested cells, in alternated rounds: where
# bench-ctl.sh gives one figure per cell, this gives ROUNDS of them, in an
# order rotated every round, so the machine's drift (±20 % between runs on
# these VMs) hits every cell alike and a ratio comes with its spread and a
# Mann-Whitney p. Cells, for OpenFlow 1.0 and 1.3, latency and throughput
# modes (16 switches, 1,000 MACs, LOOPS loops of 1 s after a warm-up):
#   - the reference generator (crates/ofref, C) against the reference null
#     responder, sdnlab's controller (own process, its defaults, l2-learning)
#     and ovs-testcontroller;
#   - sdnlab's driver (`bench ctl`) against the reference null responder
#     (the driver held to the reference generator).
# Prints one markdown table of medians and the ratios issue 25 asks about;
# every run's JSON is kept under OUT (rows.jsonl holds one line a run).
# Usage: scripts/bench-ctl-rounds.sh [ROUNDS] [LOOPS] [OUT]   (default 5, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
loops=${2:-3}
out=${3:-results/ctl-rounds-$(date -u +%Y%m%dT%H%M%SZ)}
for n in "$rounds" "$loops"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ctl-rounds: ROUNDS and LOOPS are positive integers (got '$n')" >&2; exit 2; }
done
no_osken=1 source scripts/peers/start-all.sh
mkdir -p "$out"
out=$(cd "$out" && pwd)
ref_port=$(port)
"$bin" bench ref respond --listen 127.0.0.1:"$ref_port" --threads 1 >/dev/null 2>&1 & pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$ref_port") 2>/dev/null && break; sleep 0.1; done
: > "$out/rows.jsonl"
# cell = NAME|GENERATOR|ARGS
cells=(
  "reference null responder|reference|--target 127.0.0.1:$ref_port"
  "sdnlab l2-learning (own process)|reference|--target 127.0.0.1:$own_port"
  "ovs-testcontroller|reference|--target 127.0.0.1:$tc_port"
  "reference null responder|driver|--target 127.0.0.1:$ref_port"
)
echo "bench-ctl-rounds: $rounds rounds of ${#cells[@]} cells x 2 versions x 2 modes, $loops loops each; runs under $out" >&2
for r in $(seq 1 "$rounds"); do
  for ofp in 1.0 1.3; do
    for mode in latency throughput; do
      for k in $(seq 0 $((${#cells[@]} - 1))); do
        cell=${cells[$(((k + r) % ${#cells[@]}))]}
        IFS='|' read -r name gen args <<<"$cell"
        f="$out/run-$r-$ofp-$mode-$gen-${name//[^a-z0-9]/_}.json"
        # shellcheck disable=SC2086
        if [ "$gen" = reference ]; then
          "$bin" bench ref generate $args --ofp "$ofp" --mode "$mode" --loops "$loops" --threads 1 --json > "$f" 2>/dev/null || true
        else
          "$bin" bench ctl $args --ofp "$ofp" --mode "$mode" --loops "$loops" --trials 1 --out "${f%.json}" --json > "$f" 2>/dev/null || true
        fi
        python3 - "$r" "$ofp" "$mode" "$gen" "$name" "$f" >> "$out/rows.jsonl" <<'PY'
import json, sys
r, ofp, mode, gen, name, path = sys.argv[1:7]
try:
    rep = json.load(open(path))
except ValueError:
    print(json.dumps({"round": int(r), "ofp": ofp, "mode": mode, "gen": gen, "target": name, "failed": True}))
    sys.exit(0)
if "trials" in rep:
    rep = rep["trials"][0]["report"]
ls = rep["loops"]
print(json.dumps({"round": int(r), "ofp": ofp, "mode": mode, "gen": gen, "target": name,
                  "value": sum(l["responses_per_s"] for l in ls) / len(ls)}))
PY
      done
    done
  done
  echo "bench-ctl-rounds: round $r of $rounds done" >&2
done
PYTHONPATH=scripts/lib python3 - "$out/rows.jsonl" <<'PY'
import json, statistics, sys
from mwu import mwu
rows = [json.loads(l) for l in open(sys.argv[1])]
failed = [r for r in rows if r.get("failed")]
by = {}
for r in rows:
    if not r.get("failed"):
        by.setdefault((r["ofp"], r["mode"], r["gen"], r["target"]), {})[r["round"]] = r["value"]
# A cell's share is taken round by round against the cell it is held to
# (the machine drifts between rounds more than within one), then the
# median of those ratios is given with their range.
print("| OpenFlow | mode | generator | target | responses/s (median) | runs | share, median of the rounds' (range) | Mann-Whitney p |")
print("|---|---|---|---|---:|---|---:|---:|")
base = ("reference", "reference null responder")
for ofp in ("1.0", "1.3"):
    for mode in ("latency", "throughput"):
        for (gen, target) in (base, ("reference", "sdnlab l2-learning (own process)"),
                              ("reference", "ovs-testcontroller"), ("driver", "reference null responder")):
            got = by.get((ofp, mode, gen, target), {})
            vals = [got[r] for r in sorted(got)]
            runs = ", ".join(f"{v / 1e3:,.0f} k" if v < 1e6 else f"{v / 1e6:.2f} M" for v in vals)
            med = statistics.median(vals) if vals else float("nan")
            share = p = ""
            if (gen, target) != base:
                # The driver against the responder is held to the reference
                # generator against it; a controller to the responder.
                ref = by.get((ofp, mode) + base, {})
                ratios = sorted(got[r] / ref[r] for r in got if r in ref)
                if ratios:
                    share = f"{100 * statistics.median(ratios):.0f} % ({100 * ratios[0]:.0f}..{100 * ratios[-1]:.0f})"
                    p = f"{mwu(vals, list(ref.values()))[1]:.3f}"
            name = "reference (C)" if gen == "reference" else "sdnlab driver"
            print(f"| {ofp} | {mode} | {name} | {target} | {med:,.0f} | {runs} | {share} | {p} |")
if failed:
    print(f"\n{len(failed)} runs failed: " + ", ".join(f"{r['target']} by {r['gen']} ({r['ofp']} {r['mode']}, round {r['round']})" for r in failed))
    sys.exit(1)
PY
