#!/usr/bin/env bash
# The sdnlab binary linked statically (glibc, the `router` profile: release,
# stripped, thin LTO) for x86-64, what the container image holds
# (deploy/container/build.sh). Name lookup needs none of the C library's
# modules (the fleet crate resolves with hickory); libbpf, libelf and zlib
# are linked in. Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target-static}
# Run from a test, cargo's variables for the test (CARGO_MANIFEST_DIR and
# the like) would be inherited, and build scripts that watch them (ring's)
# would see a change and rebuild everything: this build starts clean.
for v in $(compgen -e); do
  case $v in
    CARGO_MANIFEST_*|CARGO_PKG_*|CARGO_CRATE_*|CARGO_BIN_*|CARGO_PRIMARY_PACKAGE|CARGO_TARGET_TMPDIR|OUT_DIR) unset "$v" ;;
  esac
done
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --quiet --profile router --target x86_64-unknown-linux-gnu -p sdnlab >&2
echo "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/router/sdnlab"
