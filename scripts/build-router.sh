#!/bin/bash
# Static builds of the switch alone (`sdnlab-switch`, crate switchd) for
# routers, from this x86-64 Debian machine:
#   aarch64: aarch64-unknown-linux-gnu, glibc linked statically by
#            Debian's aarch64-linux-gnu-gcc
#   armv7:   armv7-unknown-linux-gnueabihf, the same with arm-linux-gnueabihf-gcc
# (see README: why glibc). libbpf and its libelf and zlib are compiled for
# the target from libbpf-sys's sources by the same C compiler.
# Prints the binary's path and size. Usage: scripts/build-router.sh aarch64|armv7
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: scripts/build-router.sh aarch64|armv7}
# The target's triple, and the prefix of its Debian cross compiler.
case "$arch" in
  aarch64) triple=aarch64-unknown-linux-gnu cross=aarch64-linux-gnu ;;
  armv7) triple=armv7-unknown-linux-gnueabihf cross=arm-linux-gnueabihf ;;
  *) echo "build-router: unknown architecture '$arch': give aarch64 or armv7" >&2; exit 2 ;;
esac
command -v "$cross-gcc" > /dev/null ||
  { echo "build-router: $cross-gcc missing: run scripts/install-deps.sh" >&2; exit 2; }
# Cargo's and the cc crate's settings for the triple, glibc linked statically.
upper=$(echo "$triple" | tr 'a-z-' 'A-Z_') lower=${triple//-/_}
export "CARGO_TARGET_${upper}_LINKER=$cross-gcc"
export "CARGO_TARGET_${upper}_RUSTFLAGS=-C target-feature=+crt-static"
export "CC_$lower=$cross-gcc" "AR_$lower=$cross-ar"
rustup target list --installed | grep -qx "$triple" || rustup target add "$triple" >&2
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target-cross}
cargo build --quiet --profile router --target "$triple" -p switchd >&2
bin="$CARGO_TARGET_DIR/$triple/router/sdnlab-switch"
echo "$bin $(stat -c %s "$bin")"
