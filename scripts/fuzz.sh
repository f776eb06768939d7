#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/, built by cargo-fuzz) for SECONDS in all
# (default 60): three sevenths to the OpenFlow decoder, two to the switch's
# agent fed whole sessions, one each to the REST API's write bodies and to
# the worker's channel (a coordinator's lines); each seeded (the message
# corpus, JSON flows, a coordinator's first calls). Needs cargo-fuzz (installed by
# scripts/install-deps.sh). cargo-fuzz builds with sanitizers on nightly;
# on stable it runs without them (-s none), which still catches panics and
# the targets' own checks (byte-exactness, replies that fit a message).
# Built in the dev profile: a third of the release build's time in CI, and
# arithmetic overflow checked (a panic), for fewer runs per second.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if rustup run nightly rustc --version >/dev/null 2>&1; then
  toolchain=(+nightly); sanitizer=address
else
  toolchain=(); sanitizer=none
fi
# --build: build the targets only (scripts/test.sh builds them beside its
# other builds, so the run that follows starts fuzzing at once).
if [ "$seconds" = --build ]; then
  exec cargo "${toolchain[@]}" fuzz build --dev -s "$sanitizer"
fi
corpus=fuzz/corpus
mkdir -p "$corpus/decode" "$corpus/switch_session" "$corpus/rest_bodies" "$corpus/worker_frames"
cargo run -q -p ofwire --example corpus -- --seeds "$corpus/decode"
# A session: the version byte (0: OpenFlow 1.3), then messages one after another.
for f in "$corpus"/decode/*; do
  { printf '\0'; cat "$f"; } > "$corpus/switch_session/$(basename "$f")"
done
cat "$corpus"/decode/* | { printf '\0'; cat; } > "$corpus/switch_session/all-in-one"
printf '%s' '{"table_id": 0, "priority": 700, "match": {"in_port": 1, "eth_type": 2048, "ipv4_dst": "10.0.0.0/24", "ip_proto": 6, "tp_dst": 80}, "actions": [{"output": 2}, {"set_eth_dst": "02:00:00:00:00:01"}, {"output": "controller"}]}' > "$corpus/rest_bodies/flow"
printf '%s' '{"match": {"eth_dst": "02:00:00:00:00:02"}, "strict": true, "priority": 5, "cookie": 4660}' > "$corpus/rest_bodies/filter"
# A coordinator's first calls, one per line.
printf '%s\n' '{"id":1,"call":"hello","version":1,"lease_ms":5000}' '{"id":0,"call":"heartbeat"}' '{"id":2,"call":"clock"}' > "$corpus/worker_frames/hello"
share() { echo $(( seconds * $1 / 7 > 1 ? seconds * $1 / 7 : 1 )); }
failed=0
for spec in "decode:3" "switch_session:2" "rest_bodies:1" "worker_frames:1"; do
  target=${spec%%:*}; t=$(share "${spec##*:}")
  log=$(mktemp)
  if cargo "${toolchain[@]}" fuzz run --dev -s "$sanitizer" "$target" "$corpus/$target" -- -max_total_time="$t" -rss_limit_mb=2048 >"$log" 2>&1; then
    echo "$target ($t s): $(grep -E "^Done" "$log" || tail -n 1 "$log")"
  else
    cat "$log"
    echo "fuzz: the $target target failed (reproducer under fuzz/artifacts/$target/)" >&2
    failed=1
  fi
  rm -f "$log"
done
exit $failed
