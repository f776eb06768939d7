#!/usr/bin/env bash
# Two builds of sdnlab side by side in one run, driven alternately (A, B,
# A, B, ...), so the machine's drift hits both alike: the controller
# benchmark against the null responder (throughput and latency modes, the
# driver's own ceiling) and the switch benchmark's fast path against the
# XDP patch (the least any hop between two veths costs), with the switch's
# FLOW_MOD rate (1,000 rules to their BARRIER_REPLY). Prints one
# markdown table of medians; every run's samples stay under the output
# directory. Needs root (namespaces) for the switch part.
# Usage: scripts/bench-ab.sh BIN_A BIN_B [ROUNDS] [OUT]
#   e.g. git worktree add /tmp/before HEAD~1 && (cd /tmp/before && cargo build --release -p sdnlab)
#        scripts/bench-ab.sh /tmp/before/target/release/sdnlab target/release/sdnlab 3
set -euo pipefail
a=${1:?usage: bench-ab.sh BIN_A BIN_B [ROUNDS] [OUT]}; b=${2:?usage: bench-ab.sh BIN_A BIN_B [ROUNDS] [OUT]}
rounds=${3:-3}
out=${4:-results/ab-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "bench-ab: $bin is not an executable" >&2; exit 2; }; done
: > "$out/rows.jsonl"
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    for mode in throughput latency; do
      d="$out/ctl-$mode-$side-$r"
      json=$("$bin" bench ctl --app null --mode "$mode" --loops 3 --trials 1 --out "$d" --json 2>/dev/null)
      python3 - "$side" "$mode" "$json" >> "$out/rows.jsonl" <<'PY'
import json, sys
side, mode, raw = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.loads(raw)["trials"][0]["report"]
ls = r["loops"]
print(json.dumps({"what": f"bench ctl, null responder, {mode} (responses/s)", "side": side,
                  "value": sum(l["matched_per_s"] for l in ls) / len(ls)}))
PY
    done
    d="$out/switch-$side-$r"
    "$bin" bench switch --dut sdnlab-fastpath,xdp-patch --rules 0 --rounds 1 --no-tcp --flow-mods 1000 --out "$d" > /dev/null 2> "$d.log"
    # Each switch's row is a JSON line on stderr.
    python3 - "$side" "$d.log" >> "$out/rows.jsonl" <<'PY'
import json, sys
side, path = sys.argv[1], sys.argv[2]
for line in open(path):
    if not line.startswith("{") or "zero_loss_pps" not in line:
        continue
    r = json.loads(line)
    print(json.dumps({"what": f"bench switch, {r['dut']}, zero-loss pps (64 B)", "side": side, "value": r["zero_loss_pps"]}))
    if r.get("flow_mods_per_s"):
        print(json.dumps({"what": f"bench switch, {r['dut']}, FLOW_MODs/s (1,000, to BARRIER_REPLY)", "side": side, "value": r["flow_mods_per_s"]}))
PY
  done
done
python3 - "$out/rows.jsonl" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
whats = list(dict.fromkeys(r["what"] for r in rows))
print(f"| measurement ({sys.argv[2]} rounds, medians) | A | B | B / A | A per round | B per round |")
print("|---|---:|---:|---:|---|---|")
for w in whats:
    va = [r["value"] for r in rows if r["what"] == w and r["side"] == "A"]
    vb = [r["value"] for r in rows if r["what"] == w and r["side"] == "B"]
    ma, mb = statistics.median(va), statistics.median(vb)
    f = lambda v: " / ".join(f"{x:,.0f}" for x in v)
    print(f"| {w} | {ma:,.0f} | {mb:,.0f} | {mb / ma:.3f} | {f(va)} | {f(vb)} |")
PY
