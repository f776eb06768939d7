//! `sdnlab bench dp --quick` end to end, as root, on its own test beds
//! (namespaces and veths prefixed `sbsw` + the bench's pid, removed by the
//! bench): the RFC 2544 tests on the direct veth pair and on a Linux
//! bridge limited to a known rate, and every OpenFlow scenario against
//! sdnlab, Open vSwitch and the bridge. Sanity, not speed: a direct pair
//! loses nothing at low rates, a known bottleneck is found, rewrites are
//! seen in the frames that arrive, capacity covers what was verified.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One bench at a time: they pin the same cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn bench(args: &[&str], out: &Path) -> String {
    let dir = out.to_str().unwrap();
    let (ok, text) = common::sdnlab_says(["bench", "dp", "--quick", "--out", dir].iter().chain(args));
    assert!(ok, "bench dp {args:?}: {text}");
    std::fs::read_to_string(out.join("summary.md")).unwrap()
}

fn trials(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn out_dir(name: &str) -> PathBuf {
    common::scratch("dp-test", name)
}

/// The number in column `col` of the summary row that starts with `prefix`.
fn cell(summary: &str, prefix: &str, col: usize) -> f64 {
    let row = summary
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no row {prefix}: {summary}"));
    // The column's first word ("3.77 (mean of 2)" reads 3.77).
    row.split('|')
        .nth(col)
        .unwrap()
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(f64::NAN)
}

#[test]
fn rfc2544_tests_find_no_loss_on_a_direct_pair_and_the_limit_of_a_shaped_bridge() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = out_dir("veth");
    let summary = bench(
        &[
            "--dut",
            "veth",
            "--frames",
            "64,9000",
            "--tests",
            "throughput,latency,loss,b2b,recovery",
        ],
        &out,
    );
    let tput = cell(&summary, "| veth | 64 |", 3);
    assert!(tput > 20_000.0, "a veth pair forwards far more: {summary}");
    // Jumbo frames: the links' MTU raised, sent by AF_PACKET, measured whole.
    let jumbo = cell(&summary, "| veth | 9000 |", 3);
    assert!(jumbo > 1000.0, "9000-byte frames cross: {summary}");
    let all = trials(&out);
    let loss: Vec<&serde_json::Value> = all.iter().filter(|t| t["test"] == "loss" && t["frame"] == 64).collect();
    assert!(loss.len() >= 2, "a loss curve: {loss:?}");
    for t in &loss[loss.len() - 2..] {
        assert_eq!(t["lost"], 0, "the curve ends with two loss-free trials: {t}");
    }
    for test in ["throughput_confirm", "latency", "b2b", "recovery"] {
        assert!(all.iter().any(|t| t["test"] == test), "no {test} trial");
    }
    // Every trial records the switch core's time shares (none here: no switch process,
    // but the core is still sampled) and what the generator did.
    assert!(all.iter().all(|t| t["generator"]["sent"].as_u64().is_some()));
    // The last confirmation of each size is the one that held.
    for frame in [64, 9000] {
        let confirm = all
            .iter()
            .rev()
            .find(|t| t["test"] == "throughput_confirm" && t["frame"] == frame)
            .expect("a confirmed rate");
        assert_eq!(confirm["lost"], 0, "the confirmed rate lost nothing: {confirm}");
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("throughput_fps") && report.contains("b2b_frames"));
    let _ = std::fs::remove_dir_all(&out);

    // 5 Mbit/s through a tbf qdisc: 60-byte frames at most ~10,400/s.
    let out = out_dir("shaped");
    let summary = bench(
        &[
            "--dut",
            "bridge",
            "--frames",
            "64",
            "--tests",
            "throughput,loss",
            "--limit-mbit",
            "5",
        ],
        &out,
    );
    let tput = cell(&summary, "| bridge | 64 |", 3);
    assert!(
        tput < 15_000.0,
        "the shaped bridge forwards at most the limit: {summary}"
    );
    let first_loss = trials(&out)
        .into_iter()
        .find(|t| t["test"] == "loss")
        .expect("a loss trial");
    let (sent, lost) = (
        first_loss["sent"].as_f64().unwrap(),
        first_loss["lost"].as_f64().unwrap(),
    );
    assert!(
        lost / sent > 0.5,
        "flat out, most frames are lost at the limit: {first_loss}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The rows of the summary table whose header starts with `header`.
fn section<'a>(summary: &'a str, header: &str) -> Vec<&'a str> {
    summary
        .split("\n\n")
        .find(|t| t.trim_start().starts_with(header))
        .map(|t| t.trim().lines().skip(2).collect())
        .unwrap_or_default()
}

fn row<'a>(rows: &[&'a str], dut: &str) -> &'a str {
    rows.iter()
        .find(|r| r.starts_with(&format!("| {dut} |")))
        .copied()
        .unwrap_or_else(|| panic!("no row for {dut} in {rows:?}"))
}

/// Every test and scenario, one frame size, against the three switches
/// the issue names.
#[test]
fn every_test_and_scenario_runs_against_sdnlab_ovs_and_the_bridge() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = out_dir("all");
    let summary = bench(&["--dut", "sdnlab,ovs,bridge", "--frames", "64"], &out);
    assert!(!summary.contains("FAILED"), "{summary}");
    let all = trials(&out);
    let rfc = section(&summary, "| switch | frame (B) |");
    let iperf = section(&summary, "| switch | iperf3 TCP");
    let paths = section(&summary, "| switch | throughput, 64 B, 1 switch");
    let parallel = section(&summary, "| switch | bridges |");
    for dut in ["sdnlab", "ovs", "bridge"] {
        let r = row(&rfc, dut);
        assert!(cell(r, &format!("| {dut} |"), 3) > 0.0, "a throughput: {summary}");
        for test in [
            "throughput_confirm",
            "latency",
            "loss",
            "b2b",
            "recovery",
            "tcp",
            "udp",
            "parallel",
        ] {
            assert!(
                all.iter().any(|t| t["dut"] == dut && t["test"] == test),
                "{dut}: no {test} trial"
            );
        }
        let i = row(&iperf, dut);
        assert!(cell(i, &format!("| {dut} |"), 2) > 0.05, "TCP crosses: {summary}");
        assert!(i.contains("100→") && i.contains("400→"), "two UDP steps: {summary}");
        // "1 switch / 3 switches" flat-out forwarding rates, both forwarding
        // (a zero-loss rate may not exist: Open vSwitch drops sporadically).
        let through: Vec<f64> = row(&paths, dut)
            .split('|')
            .nth(3)
            .unwrap()
            .split('/')
            .map(|v| v.trim().parse().unwrap())
            .collect();
        assert!(through.len() == 2 && through.iter().all(|r| *r > 0.0), "{summary}");
        // Beside them, each flat-out trial's operational bound and its bottleneck.
        let bounds: Vec<&str> = row(&paths, dut).split('|').nth(4).unwrap().split(" / ").collect();
        assert_eq!(bounds.len(), 2, "{summary}");
        for b in bounds {
            let (n, why) = b.trim().split_once(" (").unwrap();
            assert!(n.parse::<f64>().unwrap() > 0.0 && why.starts_with("cpu"), "{summary}");
        }
        let flat: Vec<_> = all
            .iter()
            .filter(|t| t["dut"] == dut && t["test"] == "path_max")
            .collect();
        assert!(!flat.is_empty());
        for t in flat {
            assert!(
                t["bound"]["bottleneck"].is_string() && t["bound"]["bound"].as_f64() > Some(0.0),
                "{t}"
            );
            assert!(
                t["host_bound"].is_boolean() && t["host"]["cores"].as_array().is_some_and(|c| !c.is_empty()),
                "{t}"
            );
        }
        let p = row(&parallel, dut);
        assert_eq!(cell(p, &format!("| {dut} |"), 2), 3.0, "three bridges: {summary}");
        assert!(cell(p, &format!("| {dut} |"), 4) > 0.0, "{summary}");
    }
    let udp: Vec<_> = all.iter().filter(|t| t["test"] == "udp").collect();
    assert_eq!(udp.len(), 6, "two steps per switch");
    assert!(udp
        .iter()
        .all(|t| t["lost_percent"].as_f64().is_some() && t["cpu"]["trial"]["user"].as_f64().is_some()));
    // The switch's own port counters, read over each trial, agree with
    // the generator: every frame the receiver counted, the switch sent.
    let confirm = all
        .iter()
        .find(|t| t["dut"] == "sdnlab" && t["test"] == "throughput_confirm")
        .unwrap();
    assert!(
        confirm["switch_ports"]["2"]["tx"].as_u64().unwrap() >= confirm["received"].as_u64().unwrap(),
        "{confirm}"
    );

    let scenarios = section(&summary, "| switch | scenario |");
    for dut in ["sdnlab", "ovs"] {
        let rows = |scenario: &str| {
            scenarios
                .iter()
                .filter(|l| l.starts_with(&format!("| {dut} | {scenario} |")))
                .collect::<Vec<_>>()
        };
        let matches = rows("match");
        assert_eq!(matches.len(), 5, "{summary}");
        assert!(matches.iter().all(|r| r.ends_with("| forwarded |")), "{summary}");
        let rewrites = rows("rewrite");
        assert_eq!(
            rewrites
                .iter()
                .filter(|r| r.contains("rewrite seen in received frames"))
                .count(),
            5,
            "MAC, IPv4, VLAN priority, DSCP and UDP port rewrites all seen: {summary}"
        );
        assert_eq!(rows("table").len(), 2, "{summary}");
        let capacity = rows("capacity");
        let row = capacity.first().unwrap_or_else(|| panic!("{summary}"));
        let rules: u64 = row
            .split("| ")
            .nth(4)
            .and_then(|c| c.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(row.contains("8 of 8 sampled rules forward"), "{row}");
        assert!(rules >= 5000, "capacity covers the rules verified: {row}");
        let insertion = rows("insertion");
        assert!(
            insertion.iter().any(|r| r.contains("FLOW_MODs/s"))
                && insertion.iter().any(|r| r.contains("BARRIER_REPLY")),
            "{summary}"
        );
        if dut == "sdnlab" {
            // Frames numbered from the generator's count at the reply on
            // must all come through: the reply means the rule is live.
            assert!(
                insertion.iter().any(|r| r.contains("BARRIER_REPLY honest in")),
                "{summary}"
            );
        }
    }
    assert!(summary.contains("| bridge | legacy | Linux bridge |"), "{summary}");
    assert!(summary.contains("| ovs | NORMAL action |"), "{summary}");
    assert!(summary.contains("| sdnlab | Linux bridge |"), "{summary}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("sdnlab rewrite vlan-pcp"),
        "latency figures per variant in the report"
    );
    // The switches compared pairwise in each condition, never across
    // conditions: 3 pairs at 64 B, written out in the report.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let verdicts = json["verdicts"].as_array().expect("verdicts in summary.json");
    let duts = ["sdnlab", "ovs", "bridge"];
    for v in verdicts {
        let (a, b, at) = (
            v["a"].as_str().unwrap(),
            v["b"].as_str().unwrap(),
            v["scenario"].as_str().unwrap(),
        );
        assert!(duts.contains(&a) && duts.contains(&b) && a != b, "{v}");
        assert!(
            !at.split(' ').any(|w| duts.contains(&w)),
            "the condition names no switch: {v}"
        );
    }
    let at_64 = verdicts
        .iter()
        .filter(|v| v["metric"] == "throughput_fps" && v["scenario"] == "64B")
        .count();
    assert_eq!(at_64, 3, "{verdicts:?}");
    assert!(
        report.contains("<h3>Verdicts</h3>") && report.contains("class=\"verdict\">64B: sdnlab vs ovs"),
        "verdicts written out in the report"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Removes the test's veths even when an assertion fails.
struct Links(Vec<String>);

impl Drop for Links {
    fn drop(&mut self) {
        for l in &self.0 {
            let _ = Command::new("ip").args(["link", "del", l]).output();
        }
    }
}

/// A switch the bench does not start, reached through two interfaces
/// named on the command line: here an sdnlab switch on veths of this
/// test's own (prefix `xt`), listening for OpenFlow.
#[test]
fn an_external_switch_is_measured_through_the_interfaces_named() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tag = format!("xt{}", std::process::id() % 10000);
    let (g, a, b, r) = (
        format!("{tag}g"),
        format!("{tag}a"),
        format!("{tag}b"),
        format!("{tag}r"),
    );
    let _links = Links(vec![a.clone(), b.clone()]);
    for (x, y) in [(&g, &a), (&b, &r)] {
        let ok = Command::new("ip")
            .args(["link", "add", x, "type", "veth", "peer", "name", y])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    for i in [&g, &a, &b, &r] {
        assert!(Command::new("ip")
            .args(["link", "set", i, "up"])
            .status()
            .unwrap()
            .success());
    }
    let port = common::free_port();
    let mut switch = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["switch", "--port", &a, "--port", &b])
        .args(["--listen", &format!("ptcp:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut std::process::Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _switch = Kill(&mut switch);
    let out = out_dir("external");
    let summary = bench(
        &[
            "--dut",
            "external",
            "--external-ports",
            &format!("{g},{r}"),
            "--external-openflow",
            &format!("127.0.0.1:{port}"),
            "--generator",
            "afpacket",
            "--frames",
            "64",
            "--tests",
            "throughput,match,rewrite",
        ],
        &out,
    );
    assert!(cell(&summary, "| external | 64 |", 3) > 0.0, "{summary}");
    assert_eq!(summary.matches("| external | match |").count(), 5, "{summary}");
    assert_eq!(
        summary.matches("rewrite seen in received frames").count(),
        5,
        "{summary}"
    );
    assert!(!summary.contains("FAILED"), "{summary}");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    let version = meta["targets"][0]["version"].as_str().unwrap();
    assert!(
        version.starts_with("sdnlab / "),
        "the switch's own OpenFlow description: {version}"
    );
    // The interfaces are back where they were.
    for i in [&g, &r] {
        assert!(
            Command::new("ip")
                .args(["link", "show", i])
                .output()
                .unwrap()
                .status
                .success(),
            "{i} is back in the root namespace"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
