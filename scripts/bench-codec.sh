#!/usr/bin/env bash
# Codec micro-benchmark, side by side in one run: ofwire's hot paths
# (criterion) and os-ken's codec on the same messages. Prints a markdown
# table in ns per message. Usage: scripts/bench-codec.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
crit_args=(--warm-up-time 2 --measurement-time 5)
[ "${1:-}" = "--quick" ] && crit_args=(--quick)
log=$(mktemp); peer=$(mktemp); trap 'rm -f "$log" "$peer"' EXIT
cargo bench -q -p ofwire --bench hotpath -- "${crit_args[@]}" > "$log" 2>&1 \
  || { echo "cargo bench failed; its last lines:" >&2; tail -n 30 "$log" >&2; exit 1; }
cargo build -q -p ofwire --example corpus
hexof() { target/debug/examples/corpus | awk -v n="$1" '$1 == n {print $2}'; }
pi10=$(hexof v10_packet_in); pi13=$(hexof v13_packet_in)
frame=${pi10:36}   # a 1.0 PACKET_IN's data starts after its 18-byte header
python=$(scripts/install-osken.sh)
"$python" scripts/bench_codec_osken.py "$pi10" "$pi13" "$frame" > "$peer"
to_ns() { awk '{v=$1; u=$2; if (u=="ps") v/=1000; else if (u=="µs"||u=="us") v*=1000; else if (u=="ms") v*=1e6; printf "%.1f", v}'; }
echo "| path | ofwire (ns) | os-ken $("$python" -c 'import importlib.metadata as m; print(m.version("os-ken"))') (ns) | os-ken / ofwire |"
echo "|---|---:|---:|---:|"
while read -r name mid unit; do
  ours=$(echo "$mid $unit" | to_ns)
  theirs=$(awk -v n="$name" '$1 == n {print $2}' "$peer")
  peername=${name/packet_in_view/packet_in_decode}
  [ -z "$theirs" ] && theirs=$(awk -v n="$peername" '$1 == n {print $2}' "$peer")
  if [ -n "$theirs" ]; then ratio=$(awk -v a="$theirs" -v b="$ours" 'BEGIN{printf "%.0fx", a/b}'); else theirs="-"; ratio="-"; fi
  echo "| $name | $ours | $theirs | $ratio |"
done < <(awk '/^hotpath\//{name=substr($1,9)} /time:/ && name != "" {gsub(/\[/,""); for (i=1;i<=NF;i++) if ($i=="time:") print name, $(i+3), $(i+4); name=""}' "$log")
