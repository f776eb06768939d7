#!/usr/bin/env bash
# Times `up` and `down` of linear,16 and a 100-host leaf-spine with Linux
# bridges and with Open vSwitch (netlab over netlink), and, in the same run,
# the same bridge networks built by one `ip` process per object (the
# approach netlab replaces). Samples go to results/bench-net-<time>/ first;
# the table (medians, seconds) is printed after. Needs root.
# Usage: scripts/bench-net.sh [REPS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
reps=${1:-5}
out=results/bench-net-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
samples=$out/samples.jsonl
cargo build -q --release -p netlab --example updown
bin=target/release/examples/updown
specs=("linear,16" "leaf-spine,4,4,25")
for spec in "${specs[@]}"; do
  for kind in bridge ovs; do
    "$bin" time "$spec" "$kind" "$reps" "$samples"
  done
  # Baseline: one `ip` process per object, same objects as netlab's bridge kind.
  prefix=sb$(printf '%04x' $((RANDOM)))
  script=$("$bin" ip-script "$spec" "$prefix")
  for rep in $(seq 0 $((reps - 1))); do
    t0=$(date +%s.%N)
    while read -r line; do [ "$line" = "#down" ] && break; ip $line; done <<< "$script"
    t1=$(date +%s.%N)
    sed -n '/^#down$/,$p' <<< "$script" | tail -n +2 | while read -r line; do ip $line; done
    t2=$(date +%s.%N)
    printf '{"tool":"ip-per-object","spec":"%s","kind":"bridge","rep":%d,"up_s":%s,"down_s":%s}\n' \
      "$spec" "$rep" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", b-a}')" "$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.6f", b-a}')" >> "$samples"
  done
done
python3 - "$samples" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r["spec"], r["kind"], r["tool"]) for r in rows})
print("| topology | switch | tool | up median (s) | down median (s) | reps |")
print("|---|---|---|---:|---:|---:|")
for spec, kind, tool in keys:
    rs = [r for r in rows if (r["spec"], r["kind"], r["tool"]) == (spec, kind, tool)]
    print(f"| {spec} | {kind} | {tool} | {statistics.median(r['up_s'] for r in rs):.3f} | {statistics.median(r['down_s'] for r in rs):.3f} | {len(rs)} |")
PY
echo "samples: $samples"
