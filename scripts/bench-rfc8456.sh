#!/usr/bin/env bash
# The RFC 8456 suite for sdnlab's controller and os-ken in one run (the
# figures in docs/BENCHMARKS.md), then topology discovery on a leaf-spine
# of 1,008 switches emulated by one process. Usage: scripts/bench-rfc8456.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/rfc8456-$(date +%Y%m%d-%H%M%S)}
cargo build -q --release -p sdnlab
bin=target/release/sdnlab
"$bin" bench ctl --suite rfc8456 --peer sdnlab --peer os-ken --ofp 1.3 --trials 10 --loops 3 \
  --max-sessions 2000 --fabric leaf-spine,4,16,1 --max-switches 1026 --td-s 60 --out "$out/suite" || true
# os-ken does not converge on 1,008 switches within two minutes: 3 trials, not 10, are enough to show it.
"$bin" bench ctl --test discovery --peer sdnlab --peer os-ken --ofp 1.3 --trials 3 \
  --fabric leaf-spine,8,1000,1 --td-s 120 --out "$out/discovery-1008" || true
echo "bench-rfc8456: results in $out (suite.md, report.html)"
