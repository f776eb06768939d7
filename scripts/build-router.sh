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
case "$arch" in
  aarch64)
    triple=aarch64-unknown-linux-gnu
    command -v aarch64-linux-gnu-gcc > /dev/null ||
      { echo "build-router: aarch64-linux-gnu-gcc missing: run scripts/install-deps.sh" >&2; exit 2; }
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
    export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
    ;;
  armv7)
    triple=armv7-unknown-linux-gnueabihf
    command -v arm-linux-gnueabihf-gcc > /dev/null ||
      { echo "build-router: arm-linux-gnueabihf-gcc missing: run scripts/install-deps.sh" >&2; exit 2; }
    export CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER=arm-linux-gnueabihf-gcc
    export CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUSTFLAGS="-C target-feature=+crt-static"
    export CC_armv7_unknown_linux_gnueabihf=arm-linux-gnueabihf-gcc AR_armv7_unknown_linux_gnueabihf=arm-linux-gnueabihf-ar
    ;;
  *) echo "build-router: unknown architecture '$arch': give aarch64 or armv7" >&2; exit 2 ;;
esac
rustup target list --installed | grep -qx "$triple" || rustup target add "$triple" >&2
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target-cross}
cargo build --quiet --profile router --target "$triple" -p switchd >&2
bin="$CARGO_TARGET_DIR/$triple/router/sdnlab-switch"
echo "$bin $(stat -c %s "$bin")"
