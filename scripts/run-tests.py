#!/usr/bin/env python3
"""Runs the workspace's test binaries side by side, those that measure alone.

Usage: scripts/run-tests.py [--jobs N] [--only NAME,...] [-- CARGO_TEST_ARGS...]
  e.g. scripts/run-tests.py -- --workspace --features system-tests

`cargo test` runs its test binaries one after another: most of the suite's
time is tests waiting on namespaces, peers and timeouts, with the cores
idle. This builds every test binary once (`cargo test --no-run`), then runs
them N at a time (default 3), longest first, and the binaries that measure
time, rates or the machine's load (ALONE below) one at a time with nothing
else running. Each binary runs as cargo would run it (in its package's
directory, with CARGO_MANIFEST_DIR and CARGO_PKG_* set); its output goes to
target/test-logs/NAME.log and is printed when it fails. Then the doctests
(`cargo test --doc`). The wall and CPU time of every binary are written to
target/test-times.tsv, which also orders the next run.

Why not cargo-nextest: it is not packaged for Debian 12 and building it
from source costs minutes of the 2-core CI machine on every fresh run;
what the suite needs from it (binaries side by side, some alone, a time
per binary) is this file.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

# Test binaries that must run with nothing else on the machine: they assert
# on rates, on the host's load or on the whole machine's state.
ALONE = {
    # `sdnlab net clean` removes every sdnlab network on the machine, live
    # ones included (it asks their `net up` to stop).
    "sdnlab/net_clean",
    # Runs `sdnlab net clean` too: beside it, cluster_cli's network was
    # torn down under its feet (CI, 2026-11-28).
    "sdnlab/bench_stop_cli",
    # A CPU hog must be the only load it sees.
    "sdnlab/host_bound",
    # RFC 2544 searches on pinned cores, rates asserted.
    "sdnlab/bench_dp_cli",
    # sdnlab's emulation against Mininet's, with host load recorded.
    "sdnlab/fidelity_cli",
    # The live-frame generator keeps its rate.
    "packetio/veth",
    # Paced flows between workers must send every frame in their time
    # (1,854 of 2,000 sent with four binaries beside it).
    "sdnlab/workers_cli",
    # Three-member clusters and etcd on 2 cores: beside it, the short 1.3
    # controller tests lost switches' answers in their 200 ms loops, and
    # beside the suite and the README test a member's free port was taken
    # before it bound it (CI, 2026-11-29).
    "sdnlab/cluster_cli",
    # Seven networks of Open vSwitch's userspace datapath at once, each
    # with its own ovs-vswitchd: beside it, the console's first pingall (one
    # ping, 5 s) found nothing answering, twice in a row (2026-11-30).
    "controller/real_ovs",
    # A paced generator must send rate x length frames in its time (1,810
    # of 2,500 beside the suite's busiest binaries, 2026-11-30).
    "traffic/receiver",
}

# Expected seconds, for the order of the first run (later runs read
# target/test-times.tsv): measured on the 2-core CI VM, 2026-11-28.
PRIOR = {
    "sdnlab/bench_suite_cli": 215,
    "sdnlab/readme_cli": 175,
    "sdnlab/bench_ctl_cli": 90,
    "sdnlab/bench_topology_cli": 55,
    "sdnlab/bench_dp_cli": 254,
    "sdnlab/workers_cli": 37,
    "controller/real_ovs": 28,
    "sdnlab/switch_cli": 28,
    "sdnlab/fidelity_cli": 20,
    "sdnlab/console_cli": 20,
    "sdnlab/net_cli": 18,
    "ctlbench/topology": 13,
    "ofswitch/agent_multipart": 11,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3, help="binaries run side by side (default 3)")
    ap.add_argument("--only", default="", help="run only these binaries (PACKAGE/NAME or NAME, comma-separated)")
    ap.add_argument("cargo_args", nargs="*", help="arguments for cargo test (after --)")
    a = ap.parse_args()
    if a.jobs < 1:
        sys.exit(f"run-tests: --jobs {a.jobs}: give 1 or more")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    logs = os.path.join(target, "test-logs")
    os.makedirs(logs, exist_ok=True)
    times_path = os.path.join(target, "test-times.tsv")

    t0 = time.monotonic()
    build = subprocess.run(
        ["cargo", "test", "--no-run", "--quiet", "--message-format=json-render-diagnostics", *a.cargo_args],
        stdout=subprocess.PIPE,
        text=True,
    )
    if build.returncode != 0:
        sys.exit("run-tests: the test build failed (above)")
    tests = []
    for line in build.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
            pkg_dir = os.path.dirname(m["manifest_path"])
            # "path+file:///DIR#0.1.0", or "...#NAME@0.1.0" when NAME is not DIR's.
            frag = m["package_id"].rpartition("#")[2]
            pkg = frag.partition("@")[0] if "@" in frag else os.path.basename(pkg_dir)
            name = f"{os.path.basename(pkg_dir)}/{m['target']['name']}"
            tests.append({"name": name, "exe": m["executable"], "dir": pkg_dir, "pkg": pkg})
    print(f"run-tests: {len(tests)} test binaries built in {time.monotonic() - t0:.0f} s", flush=True)
    if a.only:
        want = set(a.only.split(","))
        tests = [t for t in tests if t["name"] in want or t["name"].split("/")[1] in want]
        if not tests:
            sys.exit(f"run-tests: --only {a.only}: no test binary has that name")

    previous = {}
    try:
        for row in open(times_path):
            f = row.rstrip("\n").split("\t")
            if len(f) >= 2 and f[0] != "binary":
                previous[f[0]] = float(f[1])
    except OSError:
        pass
    known = {**PRIOR, **previous}
    est = lambda t: known.get(t["name"], 1.0)
    pool = sorted((t for t in tests if t["name"] not in ALONE), key=est, reverse=True)
    alone = sorted((t for t in tests if t["name"] in ALONE), key=est, reverse=True)

    running = {}  # pid -> (test, start, log file)
    results = []

    def start(t):
        env = dict(os.environ, CARGO_MANIFEST_DIR=t["dir"], CARGO_PKG_NAME=t["pkg"])
        log = open(os.path.join(logs, t["name"].replace("/", "-") + ".log"), "w")
        p = subprocess.Popen([t["exe"]], cwd=t["dir"], env=env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        running[p.pid] = (t, time.monotonic(), log, p)

    def reap():
        pid, status, ru = os.wait4(-1, 0)
        if pid not in running:
            return
        t, began, log, p = running.pop(pid)
        p.returncode = os.waitstatus_to_exitcode(status)
        log.close()
        wall = time.monotonic() - began
        cpu = ru.ru_utime + ru.ru_stime
        ok = p.returncode == 0
        results.append((t, wall, cpu, ok))
        print(f"{'ok  ' if ok else 'FAIL'} {wall:7.1f} s wall {cpu:7.1f} s cpu  {t['name']}", flush=True)
        if not ok:
            with open(log.name) as f:
                sys.stdout.write(f.read())
            print(f"---- {t['name']} failed (exit {p.returncode}); its log: {log.name}", flush=True)

    def stop_all(signum, frame):
        for pid in list(running):
            try:
                os.killpg(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while running and time.monotonic() < deadline:
            try:
                reap()
            except ChildProcessError:
                break
        for pid in list(running):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        sys.exit(130)

    signal.signal(signal.SIGINT, stop_all)
    signal.signal(signal.SIGTERM, stop_all)

    # The binaries that measure first, one at a time, while the machine is
    # quiet; then the rest side by side.
    for t in alone:
        start(t)
        reap()
    for t in pool:
        while len(running) >= a.jobs:
            reap()
        start(t)
    while running:
        reap()

    # Doctests: cargo builds and runs them itself (not with --only).
    if not a.only:
        t1 = time.monotonic()
        log = os.path.join(logs, "doctests.log")
        with open(log, "w") as f:
            doc = subprocess.run(["cargo", "test", "--doc", "--quiet", *a.cargo_args], stdout=f, stderr=subprocess.STDOUT)
        wall = time.monotonic() - t1
        results.append(({"name": "(doctests)"}, wall, 0.0, doc.returncode == 0))
        print(f"{'ok  ' if doc.returncode == 0 else 'FAIL'} {wall:7.1f} s wall          (doctests)", flush=True)
        if doc.returncode != 0:
            with open(log) as f:
                sys.stdout.write(f.read())

    # This run's times, and the earlier ones of binaries it did not run.
    rows = {t["name"]: (wall, cpu, ok) for t, wall, cpu, ok in results}
    for name, secs in previous.items():
        if name not in rows:
            rows[name] = (secs, None, None)
    with open(times_path, "w") as f:
        f.write("binary\twall_s\tcpu_s\tpassed\talone\n")
        for name, (wall, cpu, ok) in sorted(rows.items(), key=lambda r: -r[1][0]):
            cpu = "" if cpu is None else f"{cpu:.1f}"
            ok = "" if ok is None else ok
            f.write(f"{name}\t{wall:.1f}\t{cpu}\t{ok}\t{name in ALONE}\n")
    failed = [t["name"] for t, _, _, ok in results if not ok]
    total = time.monotonic() - t0
    if failed:
        print(f"run-tests: {len(failed)} of {len(results)} failed in {total:.0f} s: {', '.join(failed)}")
        sys.exit(1)
    print(f"run-tests: all {len(results)} passed in {total:.0f} s (times in {times_path})")


if __name__ == "__main__":
    main()
