#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs dependencies, checks format
# and lints, runs every test (unit, property, real-peer oracles: ovs-ofctl,
# tshark, a real Open vSwitch), then short smoke runs of the fuzzer, the
# micro-benchmarks and the main command. Needs root (network namespaces).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# Every build here starts from a fresh target directory and is never
# edited: rustc's incremental caches would only cost time to write.
export CARGO_INCREMENTAL=0
# Each step says the disk space left too: etcd, the reports and the builds
# fail in ways that do not always say "no space left" (CI, 2026-11-29).
step() { printf '\n== %s (%s, %d s in, %s free on the disk)\n' "$*" "$(date +%T)" "$SECONDS" "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }

step "dependencies"; scripts/install-deps.sh test
# Every build the checks need, each profile once, before anything is
# timed: two lanes side by side (a lane's serial stretches, such as a
# router build's single codegen unit, leave a core free for the other).
# This tree's target/: the tests (dev profile), the release binary (which
# the smokes, the main command and the container image share) and the
# examples and benches the smokes run, then the lint. Other directories: a
# real kube-apiserver (Go module proxy) and kubernetes-validate (PyPI), the
# two router builds, the fuzz targets.
step "builds, two lanes: tests, release, benches, lint | kube-apiserver, router builds, fuzz targets"
lane2_log=$(mktemp /tmp/sdnlab-test-lane2.XXXXXX)
(
  set -e
  scripts/install-kube-apiserver.sh > /dev/null
  scripts/install-kubevalidate.sh > /dev/null
  scripts/build-router.sh aarch64 > /dev/null
  scripts/build-router.sh armv7 > /dev/null
  scripts/fuzz.sh --build
) > "$lane2_log" 2>&1 &
lane2=$!
trap 'kill "$lane2" 2>/dev/null || true; rm -f "$lane2_log"' EXIT
cargo test --workspace --features system-tests --no-run --quiet
cargo build --release --quiet -p sdnlab
cargo build --release --quiet -p netlab --example updown
cargo bench --quiet -p ofwire --bench hotpath --no-run
cargo bench --quiet -p ofswitch --bench datapath --no-run
step "format";       cargo fmt --all --check
step "lint";         cargo clippy --workspace --all-targets --features system-tests --quiet -- -D warnings
scripts/check-libs.sh
step "the other lane's builds"
if ! wait "$lane2"; then cat "$lane2_log" >&2; echo "test.sh: a build of the second lane failed (above)" >&2; exit 1; fi
rm -f "$lane2_log"; trap - EXIT
# Test binaries side by side, those that measure alone (scripts/run-tests.py);
# each binary's time in target/test-times.tsv.
step "tests";        scripts/run-tests.py -- --workspace --features system-tests
step "fuzz (60 s)";  scripts/fuzz.sh 60
step "bench smoke: codec vs os-ken"; scripts/bench-codec.sh --quick
step "bench smoke: net up/down";    scripts/bench-net.sh 1
step "bench smoke: controller vs peers"; scripts/bench-ctl.sh 1 300
step "bench smoke: RFC 8456 tests, sdnlab vs peers"
scripts/bench-peers.sh security --case-wait-ms 500
# (short rounds are noisy on 2 shared cores: a looser agreement for the smoke)
scripts/bench-peers.sh rate --trials 1 --loops 2 --loop-ms 300 --switches 4 --rate-tolerance 0.1
scripts/bench-peers.sh sessions --trials 1 --max-sessions 300
scripts/bench-peers.sh dos --trials 1 --loops 1 --loop-ms 300 --switches 2 --attackers 1 --syn-flood-pps 10000
step "bench smoke: Faucet (OpenFlow 1.3; new sources learnt per second)"
smoke_fc=$(mktemp -d /tmp/sdnlab-faucet-smoke.XXXXXX)
target/release/sdnlab bench ctl --peer faucet --ofp 1.3 --switches 4 --loops 2 --loop-ms 1000 --trials 1 \
  --out "$smoke_fc/run" --json > "$smoke_fc/run.json"
# Every measured loop learnt sources, and the report names Faucet.
python3 - "$smoke_fc/run.json" <<'PY'
import json, sys
def loops(v):
    if isinstance(v, dict):
        if "matched_per_s" in v: yield v
        for x in v.values(): yield from loops(x)
    elif isinstance(v, list):
        for x in v: yield from loops(x)
ls = list(loops(json.load(open(sys.argv[1]))))
assert len(ls) == 2 and all(l["matched_per_s"] > 0 for l in ls), ls
print("faucet: new sources learnt per second:", [round(l["matched_per_s"]) for l in ls])
PY
grep -q "faucet 1.10.12" "$smoke_fc/run/faucet/meta.json"
# Exception handling: the witness (learnt as a new source) kept being
# served after every case, and Faucet lived; session capacity: every one
# of the sessions asked for held (Faucet declares each datapath).
target/release/sdnlab bench ctl --peer faucet --ofp 1.3 --test security --case-wait-ms 500 --hello-wait-s 1 \
  --out "$smoke_fc/security" --json > "$smoke_fc/security.json"
target/release/sdnlab bench ctl --peer faucet --ofp 1.3 --test sessions --max-sessions 100 --trials 1 \
  --out "$smoke_fc/sessions" --json > "$smoke_fc/sessions.json"
python3 - "$smoke_fc/security.json" "$smoke_fc/sessions.json" <<'PY'
import json, sys
def find(v, key):
    if isinstance(v, dict):
        if key in v: yield v[key]
        for x in v.values(): yield from find(x, key)
    elif isinstance(v, list):
        for x in v: yield from find(x, key)
cases = next(find(json.load(open(sys.argv[1])), "cases"))
assert len(cases) == 11 and all(c["others_served"] and c["controller_alive"] for c in cases), cases
trials = next(find(json.load(open(sys.argv[2])), "trials"))
assert [t["held"] for t in trials] == [100], trials
print("faucet: witness served after all 11 cases; 100 of 100 sessions held")
PY
rm -rf "$smoke_fc"
step "bench smoke: generators (sdnlab's XDP and AF_PACKET, trafgen, tcpreplay)"
smoke_gen=$(mktemp -d /tmp/sdnlab-gen-smoke.XXXXXX)
target/release/sdnlab bench gen --seconds 1 --rounds 1 --out "$smoke_gen/run"
test -s "$smoke_gen/run/summary.md" && test "$(wc -l < "$smoke_gen/run/samples.jsonl")" = 4
rm -rf "$smoke_gen"
step "bench smoke: switch (sdnlab AF_PACKET, AF_XDP and its fast path vs XDP patch and veth pair, 1,000 extra rules)"
smoke_sw=$(mktemp -d /tmp/sdnlab-switch-smoke.XXXXXX)
scripts/bench-switch.sh --quick --dut sdnlab,sdnlab-afxdp,sdnlab-fastpath,xdp-patch,veth --rules 0,1000 --flow-mods 2000 --out "$smoke_sw/run"
test -s "$smoke_sw/run/summary.md" && grep -q '"test":"flat_out"' "$smoke_sw/run/trials.jsonl" && test -s "$smoke_sw/run/report.html"
# The default receiver took the frames through XDP, not the AF_PACKET fallback.
grep -q '"received_via":"xdp"' "$smoke_sw/run/trials.jsonl"
grep -q '^| sdnlab-fastpath |' "$smoke_sw/run/summary.md"
# Every zero-loss rate as a share of both references: numbers, not "-".
grep -qE '^\| sdnlab-fastpath \| 0 \|( [^|]+ \|){4} [0-9.]+ \| [0-9.]+ \|' "$smoke_sw/run/summary.md"
grep -q '^| xdp-patch | 0 |' "$smoke_sw/run/summary.md"
rm -rf "$smoke_sw"
step "bench smoke: load balancing (lb app, four nginx replicas, open-loop client and httperf)"
smoke_lb=$(mktemp -d /tmp/sdnlab-lb-smoke.XXXXXX)
target/release/sdnlab bench lb --quick --out "$smoke_lb/run"
test -s "$smoke_lb/run/report.html" && test -s "$smoke_lb/run/summary.md"
# Every point answered: no row without a response time, no errors.
if grep -q "no answer" "$smoke_lb/run/summary.md"; then echo "bench lb: a point got no answer" >&2; exit 1; fi
# 4 policies x 2 loads x 2 clients x 2 levels (32 rows), and each policy's decision time alone.
test "$(grep -cE '^\| [^|]+ \| (homogeneous|heterogeneous) \|' "$smoke_lb/run/summary.md")" = 32
grep -q "^| load-prev-delta | 5000 |" "$smoke_lb/run/summary.md"
rm -rf "$smoke_lb"
step "main command (3 trials, with its report)"
smoke=$(mktemp -d /tmp/sdnlab-main-smoke.XXXXXX); trap 'rm -rf "$smoke"' EXIT
scripts/main.sh --trials 3 --loops 1 --loop-ms 500 --out "$smoke/run"
test -s "$smoke/run/report.html" && test -s "$smoke/run/summary.csv"
target/release/sdnlab report "$smoke/run" > /dev/null
step "decode the bundled capture"; cargo run --release --quiet -p sdnlab -- ofp decode --pcap captures/ovs-learning-switch.pcapng > /dev/null
step "all passed"
