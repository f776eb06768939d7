#!/usr/bin/env bash
# Installs what sdnlab needs on a fresh Debian 12 machine, by profile, and
# nothing more: the Debian packages, the Rust toolchain pinned by
# rust-toolchain.toml (through rustup), and what a profile adds.
# Idempotent.
#
# Usage: scripts/install-deps.sh [PROFILE...]   (default: test)
#   main     building sdnlab and its main job (`scripts/main.sh`): the C and
#            BPF compilers, libelf and zlib, iproute2
#   test     everything any test or benchmark uses (what CI runs): every
#            profile below
#   peers    the real peers and oracles: Open vSwitch, ovs-testcontroller,
#            tshark, nftables, trafgen and tcpreplay, iperf3, nginx and
#            httperf, Python venvs for os-ken and Faucet (installed on first
#            use), Chromium and tmux for the page and console tests, graphviz
#   mininet  Mininet's Python API (`bench fidelity`)
#   router   the router builds (`scripts/build-router.sh`): cross C
#            compilers and libcs, autotools for libelf, qemu-user, the
#            targets' Rust standard libraries
#   kube     the Kubernetes tests and image: etcd, kubectl, buildah
#   fuzz     cargo-fuzz (`scripts/fuzz.sh`)
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

profiles=("$@")
[ ${#profiles[@]} -gt 0 ] || profiles=(test)
want() { local p; for p in "${profiles[@]}"; do [ "$p" = "$1" ] || [ "$p" = test ] && return 0; done; return 1; }
for p in "${profiles[@]}"; do
  case $p in
    main|test|peers|mininet|router|kube|fuzz) ;;
    *) echo "install-deps: unknown profile '$p': choose main, test, peers, mininet, router, kube or fuzz" >&2; exit 2 ;;
  esac
done

debs=(
  iproute2            # ip netns exec, tc
  clang                  # compiles the XDP and tc programs (crates/packetio/bpf/*.bpf.c)
  libelf-dev zlib1g-dev  # libbpf's static libelf and zlib (x86-64 builds)
  ca-certificates curl build-essential pkg-config
  protobuf-compiler      # protoc: the etcd client's gRPC code is generated at build time (crates/cluster)
)
if want peers; then
  debs+=(
    iputils-ping iperf3 # reachability and throughput inside emulated hosts
    openvswitch-common  # ovs-ofctl: real OpenFlow client and ofp-print oracle
    openvswitch-switch  # ovsdb-server, ovs-vswitchd: the real switch peer
    openvswitch-testcontroller  # C learning-switch controller peer
    tshark              # Wireshark's OpenFlow dissector: oracle for our encoder
    nftables            # bench ctl --test dos: drops SYN-ACKs to the SYN flood's fake source (loopback)
    netsniff-ng tcpreplay  # trafgen and tcpreplay: the generators `sdnlab bench gen` compares ours with
    python3 python3-venv   # os-ken and Faucet peer venvs (made on first use)
    python3-dev            # Python.h: Faucet's pytricia has no wheel and builds from source
    nginx httperf          # bench lb: the replica servers and the paper's HTTP client
    chromium               # headless: the tests load reports as a reader would and check the page
    tmux                   # the console's tests drive the sdnlab> prompt as a person would (send-keys, capture-pane)
    graphviz               # the console's `graph FILE.svg` (dot -Tsvg)
    etcd-server            # the controller's cluster mode: a private etcd per test or run (crates/cluster)
  )
fi
if want mininet; then
  debs+=(mininet bridge-utils)   # bench fidelity: Mininet's Python API only (never `mn`, never its cleanup)
fi
if want router; then
  debs+=(
    qemu-user-static       # the router builds of the switch run under it in the tests
    gcc-arm-linux-gnueabihf libc6-dev-armhf-cross  # links the armv7 router build (static glibc)
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross    # links the aarch64 router build (static glibc)
    autoconf automake autopoint libtool flex bison gawk gettext  # libbpf-sys builds libelf for the router builds
  )
fi
if want kube; then
  debs+=(
    buildah                # deploy/container/build.sh: the container image, FROM scratch, no registry
    etcd-server unzip openssl  # a real Kubernetes API server's store (scripts/install-kube-apiserver.sh builds it)
  )
  # `kubectl kustomize` renders deploy/kubernetes (the tests); any kubectl
  # will do, Debian's (1.20, kustomize v2) when there is none.
  command -v kubectl > /dev/null 2>&1 || debs+=(kubernetes-client)
fi
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts nginx's own service on install; the lab runs its replicas'
  # nginx inside namespaces and needs no server in the root namespace.
  if [[ " ${missing[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null 2>&1; then
    as_root systemctl disable --now nginx >/dev/null 2>&1 || true
  fi
  # Likewise etcd: the tests start their own, on ports of their own.
  if [[ " ${missing[*]} " == *" etcd-server "* ]] && command -v systemctl >/dev/null 2>&1; then
    as_root systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] || { echo "install-deps: rustup is needed (https://rustup.rs); it was not found" >&2; exit 1; }
  export PATH="$HOME/.cargo/bin:$PATH"
fi
# rust-toolchain.toml pins a release with rustfmt and clippy; `rustup show`
# installs it if absent, and where it does not (it refused on this VM for
# a toolchain it lacked), `rustup toolchain install` with no name does.
if ! rustup show active-toolchain >/dev/null 2>&1; then
  echo "install-deps: rustup toolchain install (rust-toolchain.toml's)"
  rustup toolchain install >/dev/null 2>&1 || rustup show active-toolchain >/dev/null
fi
if want test; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
if want router; then
  # The router builds' standard libraries (scripts/build-router.sh).
  for t in aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf; do
    rustup target list --installed | grep -qx "$t" || rustup target add "$t" >/dev/null
  done
fi

if want fuzz && ! cargo fuzz --version >/dev/null 2>&1; then
  echo "install-deps: cargo install cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi
echo "install-deps: ok (${profiles[*]})"
