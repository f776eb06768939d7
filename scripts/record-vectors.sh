#!/usr/bin/env bash
# Re-records crates/ofwire/tests/vectors/ovs.txt: messages sent by real Open
# vSwitch (ovs-ofctl and ovs-vswitchd), at most 4 per (version, type), so
# the byte-array tests run without OVS installed. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
raw=$(mktemp); trap 'rm -f "$raw"' EXIT
SDNLAB_RECORD_VECTORS=$raw cargo test -q -p ofwire --features system-tests --test from_ovs_ofctl --test from_ovs_switch -- --test-threads=1 >/dev/null
{
  echo "# Messages captured from real Open vSwitch 3.1 peers: SOURCE HEX."
  echo "# Recorded by scripts/record-vectors.sh; checked by ofwire's unit tests."
  awk '{k = substr($2, 1, 4); if (++n[k] <= 4) print}' "$raw"
} > crates/ofwire/tests/vectors/ovs.txt
wc -l crates/ofwire/tests/vectors/ovs.txt
