//! Every experiment command refuses a numeric option out of its range
//! before anything runs: one line on stderr naming the option and what it
//! accepts, exit code 2. A command that does not refuse would start a
//! benchmark; it is killed after a few seconds and the test fails.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn refused(args: &[&str], says: &str) {
    refused_exactly(&[args, &["--out", "/nonexistent/sdnlab-bad-values"]].concat(), says)
}

/// `refused`, for a command that writes no run directory.
fn refused_exactly(args: &[&str], says: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} was not refused: it started running");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

#[test]
fn bench_ctl_refuses_values_out_of_range() {
    for (a, says) in [
        (vec!["--switches", "0"], "--switches 0: must be at least 1"),
        (vec!["--macs", "0"], "--macs 0"),
        (vec!["--loop-ms", "0"], "--loop-ms 0"),
        (vec!["--trials", "0"], "--trials 0"),
        (vec!["--cooldown-ms", "-1"], "invalid value '-1'"),
        (vec!["--rate-tolerance", "0"], "--rate-tolerance 0"),
        (vec!["--flood-pps", "-10"], "--flood-pps -10"),
        (vec!["--max-sessions", "0"], "--max-sessions 0"),
        (
            vec!["--vlan", "5000"],
            "--vlan 5000: must be at least 1 and at most 4094",
        ),
        (
            vec!["--driver-threads", "2000"],
            "--driver-threads 2000: must be at least 0 and at most 1024",
        ),
        (vec!["--driver-threads", "-1"], "invalid value '-1'"),
        (vec!["--match-by", "new-source"], "add --ofp 1.3"),
        (
            vec!["--failure", "cable"],
            "invalid value 'cable' for '--failure <FAILURES>'",
        ),
        (
            vec!["--suite", "rfc2544"],
            "invalid value 'rfc2544' for '--suite <SUITE>'",
        ),
        (vec!["--peer", "faucet"], "Faucet speaks OpenFlow 1.3 only"),
        (
            vec!["--peer", "faucet", "--ofp", "1.3", "--test", "discovery"],
            "cannot take the discovery test",
        ),
        (vec!["--cluster", "10"], "--cluster 10"),
        (
            vec!["--kill-after-loop", "1"],
            "--kill-after-loop 1: it kills a member of a cluster",
        ),
        (
            vec!["--cluster", "2", "--loops", "3", "--kill-after-loop", "3"],
            "--kill-after-loop 3 --loops 3: must be at least 1 and under the loops",
        ),
        (
            vec!["--cluster", "1", "--test", "failover"],
            "a failover needs a member to take over",
        ),
        (
            vec![
                "--peer",
                "faucet",
                "--ofp",
                "1.3",
                "--cluster",
                "2",
                "--suite",
                "rfc8456",
            ],
            "Faucet's cluster takes cbench's load only",
        ),
        (vec!["--target", "127.0.0.1:6653,nonsense"], "invalid value 'nonsense'"),
        (
            vec!["--kill", "non-master", "--test", "failover"],
            "--kill non-master: the control of a cluster's failover",
        ),
        (
            vec!["--target", "127.0.0.1:6653,127.0.0.1:6654", "--cluster", "2"],
            "--cluster N starts sdnlab's own: give one of them",
        ),
        (
            vec!["--cluster", "3", "--etcd-members", "2"],
            "--etcd-members 2: give 1, 3 or 5",
        ),
        (
            vec!["--etcd-members", "3"],
            "--etcd-members 3: an option of sdnlab's cluster",
        ),
        (
            vec!["--test", "discovery", "--sweep", "macs=2,4"],
            "--sweep 'macs=2,4' --test discovery: this test sweeps cluster sizes only",
        ),
        (
            vec!["--test", "dos", "--sweep", "switches=1,2"],
            "--sweep 'switches=1,2' --test dos: this test takes no sweep",
        ),
        (
            vec!["--test", "failover", "--sweep", "cluster=1,2"],
            "a cluster of 1 has no member to take over",
        ),
    ] {
        refused(&[&["bench", "ctl"], a.as_slice()].concat(), says);
    }
}

#[test]
fn the_controller_refuses_worker_counts_out_of_range() {
    for (a, says) in [
        (vec!["--workers", "0"], "invalid value '0' for '--workers"),
        (vec!["--local-workers", "0"], "invalid value '0' for '--local-workers"),
        (
            vec!["--workers", "2", "--local-workers", "3"],
            "--local-workers 3 is more than the 2 workers",
        ),
    ] {
        refused_exactly(
            &[&["controller", "--listen", "127.0.0.1:0"], a.as_slice()].concat(),
            says,
        );
    }
}

#[test]
fn bench_dp_refuses_values_out_of_range() {
    for (a, says) in [
        (vec!["--repetitions", "0"], "--repetitions 0: must be at least 1"),
        (vec!["--recovery-repetitions", "0"], "--recovery-repetitions 0"),
        (vec!["--scenario-repetitions", "0"], "--scenario-repetitions 0"),
        (vec!["--capacity-max", "0"], "--capacity-max 0"),
        (
            vec!["--trial-seconds", "0"],
            "--trial-seconds 0: must be a number at least 0.2",
        ),
        (vec!["--trial-seconds", "NaN"], "--trial-seconds NaN"),
        (vec!["--scenario-rate", "-5"], "--scenario-rate -5"),
        (vec!["--resolution", "0"], "--resolution 0"),
        (
            vec!["--tests", "throughput,lantency"],
            "invalid value 'lantency' for '--tests <TESTS>'",
        ),
    ] {
        refused(&[&["bench", "dp", "--dut", "veth"], a.as_slice()].concat(), says);
    }
    // A switch it does not know: the parser says which it does, external
    // among them.
    refused(
        &["bench", "dp", "--dut", "veth,nonesuch"],
        "invalid value 'nonesuch' for '--dut <DUTS>'",
    );
    refused(
        &["bench", "dp", "--dut", "nonesuch"],
        "bridge, xdp-patch, veth, external",
    );
}

#[test]
fn bench_switch_gen_and_lb_refuse_values_out_of_range() {
    for (a, says) in [
        (vec!["bench", "switch", "--dut", "veth", "--rounds", "0"], "--rounds 0"),
        (
            vec!["bench", "switch", "--dut", "veth", "--seconds", "0"],
            "--seconds 0",
        ),
        (
            vec!["bench", "switch", "--dut", "veth", "--seconds", "-1"],
            "--seconds -1",
        ),
        (
            vec!["bench", "switch", "--dut", "veth", "--resolution", "0"],
            "--resolution 0",
        ),
        (
            vec!["bench", "switch", "--dut", "veth", "--flow-mods", "0"],
            "--flow-mods 0",
        ),
        (vec!["bench", "gen", "--rounds", "0"], "--rounds 0"),
        (vec!["bench", "gen", "--seconds", "-2"], "-2"),
        (vec!["bench", "lb", "--repetitions", "0"], "--repetitions 0"),
        (vec!["bench", "lb", "--seconds", "0"], "--seconds 0"),
        (vec!["bench", "lb", "--replica-mbit", "0"], "--replica-mbit 0"),
        (vec!["bench", "lb", "--concurrency", "0,20"], "--concurrency 0"),
        (vec!["bench", "lb", "--sessions", "0"], "--sessions 0"),
        (
            vec!["bench", "lb", "--policy", "round-robin,fastest"],
            "invalid value 'fastest' for '--policy <POLICIES>'",
        ),
        (
            vec!["bench", "lb", "--alpha", "1.5"],
            "--alpha 1.5: must be more than 0 and at most 1",
        ),
        (
            vec!["bench", "lb", "--switch", "bridge"],
            "invalid value 'bridge' for '--switch <SWITCH>'",
        ),
        (
            vec!["bench", "lb", "--load", "nonesuch"],
            "'--load <LOADS>' (one of: homogeneous, heterogeneous)",
        ),
        (
            vec!["bench", "lb", "--client", "curl"],
            "invalid value 'curl' for '--client <CLIENTS>' (one of: open-loop, httperf)",
        ),
    ] {
        refused(&a, says);
    }
}

#[test]
fn the_reference_pair_refuses_values_out_of_range() {
    let gen = ["bench", "ref", "generate", "--target", "127.0.0.1:9"];
    for (a, says) in [
        (vec!["--switches", "0"], "--switches 0: must be 1 to 100000"),
        (vec!["--macs", "70000"], "--macs 70000: must be 1 to 65536"),
        (vec!["--loop-ms", "1"], "--loop-ms 1: must be 10 to 3600000"),
        (vec!["--threads", "0"], "--threads 0: must be 1 to 64"),
        (
            vec!["--ofp", "1.1"],
            "invalid value '1.1' for '--ofp <OFP>'; did you mean '1.3'? (one of: 1.0, 1.3)",
        ),
        (
            vec!["--mode", "fast"],
            "invalid value 'fast' for '--mode <MODE>' (one of: throughput, latency)",
        ),
    ] {
        refused_exactly(&[gen.as_slice(), a.as_slice()].concat(), says);
    }
    refused_exactly(
        &["bench", "ref", "respond", "--threads", "65"],
        "--threads 65: must be 1 to 64",
    );
}

/// A misspelt flag, subcommand or value is answered with what it likely
/// meant and, for a value, the choices, still on one line; so is a
/// misspelt key or value in an experiment file, named as the file writes
/// it (key and line), not as a flag.
#[test]
fn a_misspelling_is_answered_with_what_it_likely_meant() {
    for (a, says) in [
        (
            vec!["bench", "ctl", "--peer", "osken"],
            "did you mean 'os-ken'? (one of: sdnlab, ",
        ),
        (
            vec!["bench", "ctl", "--mode", "thruput"],
            "did you mean 'throughput'? (one of: throughput, latency)",
        ),
        (
            vec!["bench", "ctl", "--mdoe", "latency"],
            "unexpected argument '--mdoe' found; did you mean '--mode'?",
        ),
        (vec!["bnech", "ctl"], "did you mean 'bench'?"),
        (
            vec!["bench", "ctl", "--target", "localhost"],
            "'localhost' has no port: write HOST:PORT",
        ),
    ] {
        refused_exactly(&a, says);
    }
    let dir = std::env::temp_dir().join(format!("sdnlab-test-misspelt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (body, says) in [
        (
            "switchs = 4\n",
            "line 3: unknown key `switchs`: did you mean `switches`?",
        ),
        ("switches = 0\n", "line 3: switches = 0: must be at least 1"),
        (
            "mode = \"thruput\"\n",
            "line 3: mode = 'thruput': did you mean 'throughput'? choose one of throughput, latency",
        ),
        (
            "kill = \"mastre\"\n",
            "line 3: kill = 'mastre': did you mean 'master'? choose one of master, non-master",
        ),
        (
            "failures = [\"link\", \"cable\"]\n",
            "line 3: failures[1] = 'cable': choose one of link, switch",
        ),
        (
            "peers = [\"osken\"]\n",
            "line 3: peers[0] = 'osken': did you mean 'os-ken'? choose one of sdnlab, ovs-testcontroller, os-ken, ryu, faucet",
        ),
    ] {
        let file = dir.join("e.toml");
        std::fs::write(&file, format!("experiment = \"ctl\"\n# a comment\n{body}")).unwrap();
        refused_exactly(&["run", file.to_str().unwrap()], says);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
