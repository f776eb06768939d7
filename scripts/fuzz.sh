#!/usr/bin/env bash
# Runs the ofwire decoder fuzz target for SECONDS (default 60), seeded with
# the message corpus. Needs cargo-fuzz (installed by scripts/install-deps.sh).
# cargo-fuzz builds with sanitizers on nightly; on stable it runs without
# them (-s none), which still catches panics and byte-exactness failures.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
seeds=crates/ofwire/fuzz/corpus/decode
cargo run -q -p ofwire --example corpus -- --seeds "$seeds"
if rustup run nightly rustc --version >/dev/null 2>&1; then
  toolchain=(+nightly); sanitizer=address
else
  toolchain=(); sanitizer=none
fi
cd crates/ofwire
log=$(mktemp)
if cargo "${toolchain[@]}" fuzz run -s "$sanitizer" decode "fuzz/corpus/decode" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1; then
  grep -E "^Done" "$log" || tail -n 3 "$log"
  rm -f "$log"
else
  cat "$log"; rm -f "$log"
  echo "fuzz: the decode target failed (reproducer under crates/ofwire/fuzz/artifacts/decode/)" >&2
  exit 1
fi
