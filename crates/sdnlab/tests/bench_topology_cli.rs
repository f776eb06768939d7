//! The RFC 8456 topology tests of `sdnlab bench ctl` end to end, at small
//! scale, against sdnlab's controller (`paths`/`paths-proactive` with its
//! REST API, run as its own process) and against os-ken 1.4.1 with
//! `--observe-links`, `rest_topology`, `ofctl_rest` and the project's
//! shortest-path app: every figure is checked for sanity, every trial's
//! samples are on disk, and a controller that never installs a path gets
//! a "did not arrive within Td" result and exit status 1, not a hang.

mod common;
use common::chromium;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sdnlab-topo-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn bench(test: &str, out: &Path, extra: &[&str]) -> Output {
    let defaults = [
        ("--ofp", "1.3"),
        ("--trials", "2"),
        ("--cooldown-ms", "0"),
        ("--td-s", "15"),
        ("--host-macs", "3"),
        ("--table-step", "60"),
        ("--table-max", "120"),
        ("--reprov-ms", "1500"),
    ];
    let mut c = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
    c.args(["bench", "ctl", "--test", test, "--out", out.to_str().unwrap()]);
    for (k, v) in defaults {
        if !extra.contains(&k) {
            c.args([k, v]);
        }
    }
    c.args(extra).output().unwrap()
}

/// Every trial's values in `dir`/samples.jsonl.
fn trials(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let all: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    all.into_iter().filter(|s| s["kind"] == "trial").collect()
}

fn value(t: &serde_json::Value, k: &str) -> f64 {
    t["values"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {t}"))
}

/// Checks the figures of one test's trials.
fn sane(test: &str, who: &str, trials: &[serde_json::Value]) {
    assert!(!trials.is_empty(), "{who} {test}: no trials");
    for t in trials {
        let ctx = format!("{who} {test}: {t}");
        let positive = |k: &str| assert!(value(t, k) > 0.0, "{k} not positive: {ctx}");
        match test {
            "discovery" => {
                positive("discovery_s");
                assert_eq!(value(t, "links_seen"), value(t, "links"), "{ctx}");
            }
            "reactive-paths" => {
                positive("reactive_path_s");
                positive("reactive_rate_per_s");
                assert_eq!(value(t, "rate_reached"), value(t, "rate_paths"), "{ctx}");
                assert_eq!(value(t, "rate_paths"), 4.0 * 3.0 * 3.0, "{ctx}");
            }
            "proactive-paths" => {
                positive("proactive_path_s");
                positive("proactive_rate_per_s");
                assert_eq!(value(t, "rate_reached"), value(t, "rate_paths"), "{ctx}");
            }
            "change-detection" => {
                positive("detect_view_s");
                positive("detect_probe_s");
                let lost = if t["scenario"].as_str().unwrap().ends_with("link down") {
                    2.0
                } else {
                    8.0
                };
                assert_eq!(value(t, "links_after"), value(t, "links") - lost, "{ctx}");
            }
            "reprovisioning" => {
                positive("reprovision_s");
                assert!(value(t, "sent_each_way") > 500.0, "{ctx}");
                assert!(value(t, "lost_frames") < value(t, "sent_each_way") / 2.0, "{ctx}");
            }
            "table-capacity" => {
                assert_eq!(value(t, "destinations"), 120.0, "{ctx}");
                assert!(value(t, "table_flows") >= 120.0, "{ctx}");
            }
            "table-capacity-proactive" => {
                // A path both ways per destination: two flows each at host 0's switch.
                assert_eq!(value(t, "destinations"), 120.0, "{ctx}");
                assert!(value(t, "table_flows") >= 240.0, "{ctx}");
            }
            _ => unreachable!(),
        }
    }
}

/// Each topology test against both peers, one run per peer and a comparison.
#[test]
fn every_topology_test_runs_against_sdnlab_and_os_ken() {
    let _serial = serial();
    for test in [
        "discovery",
        "reactive-paths",
        "proactive-paths",
        "change-detection",
        "reprovisioning",
        "table-capacity",
        "table-capacity-proactive",
    ] {
        let out = tmp(test);
        let r = bench(
            test,
            &out,
            // One trial each: several trials per peer are the suite's and
            // bench_ctl_cli's to check; this test is about every test
            // against both controllers.
            &[
                "--fabric",
                "leaf-spine,2,4,1",
                "--peer",
                "sdnlab",
                "--peer",
                "os-ken",
                "--trials",
                "1",
            ],
        );
        assert!(r.status.success(), "{test}: {}", String::from_utf8_lossy(&r.stderr));
        for peer in ["sdnlab", "os-ken"] {
            let dir = out.join(peer);
            sane(test, peer, &trials(&dir));
            let meta: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
            assert_eq!(meta["targets"][0]["name"], peer, "{meta}");
        }
        assert!(out.join("report.html").exists(), "{test}: no comparison report");
        let _ = std::fs::remove_dir_all(out);
    }
}

/// A controller that discovers links but never installs paths: the first
/// frames "did not arrive within" Td, the run says so and exits 1.
#[test]
fn a_controller_without_paths_gets_a_did_not_arrive_result() {
    let _serial = serial();
    let out = tmp("no-paths");
    let r = bench(
        "reactive-paths",
        &out,
        &[
            "--fabric", "linear,2", "--app", "topology", "--td-s", "2", "--trials", "1",
        ],
    );
    assert_eq!(r.status.code(), Some(1), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("did not arrive within 2.0 s"), "{err}");
    let t = trials(&out);
    assert!(t[0]["values"].get("reactive_path_s").is_none(), "{t:?}");
    let _ = std::fs::remove_dir_all(out);
}

/// discovery-size grows leaf-spines (leaves doubling) up to --max-switches
/// and reports the largest that converged; the times grow with the size.
#[test]
fn discovery_size_grows_the_fabric() {
    let _serial = serial();
    let out = tmp("size");
    let r = bench("discovery-size", &out, &["--max-switches", "34", "--json"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("network discovery size: 34 switches converged"), "{err}");
    let t = trials(&out);
    let sizes: Vec<f64> = t.iter().map(|t| value(t, "switches")).collect();
    assert_eq!(sizes, vec![4.0, 4.0, 6.0, 6.0, 10.0, 10.0, 18.0, 18.0, 34.0, 34.0]);
    let mean = |n: f64| {
        let v: Vec<f64> = t
            .iter()
            .filter(|t| value(t, "switches") == n)
            .map(|t| value(t, "discovery_s"))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(mean(34.0) > mean(4.0), "{t:?}");
    let _ = std::fs::remove_dir_all(out);
}

/// Wrong shapes and adapters are refused in one line.
#[test]
fn bad_topology_arguments_get_one_line() {
    for (args, says) in [
        (vec!["--fabric", "linear,3"], "reprovisioning needs redundant paths"),
        (
            vec!["--northbound", "odl:1.2.3.4:8181"],
            "sdnlab:HOST:PORT, osken:HOST:PORT or none",
        ),
        (vec!["--target", "127.0.0.1:6653"], "needs --northbound"),
    ] {
        let out = tmp("bad");
        let r = bench("reprovisioning", &out, &args);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Controller failover: sdnlab starts an active/standby pair per trial and
/// kills the active one; the standby takes over, says so on its REST API,
/// and no frame arrives twice. os-ken has no standby mode: one line, exit 2.
#[test]
fn failover_kills_the_active_controller_and_the_standby_takes_over() {
    let _serial = serial();
    let out = tmp("failover");
    let r = bench("failover", &out, &["--fabric", "leaf-spine,2,3,1", "--peer", "sdnlab"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let t = trials(&out.join("sdnlab"));
    assert_eq!(t.len(), 2);
    for t in &t {
        let takeover = value(t, "takeover_s");
        assert!(takeover > 0.0 && takeover < 1.0, "{t}");
        assert!(value(t, "failover_s") >= takeover, "{t}");
        assert_eq!(value(t, "standby_took_over"), 1.0, "{t}");
        assert_eq!(value(t, "duplicates"), 0.0, "{t}");
        assert!(value(t, "lost_frames") < value(t, "sent") / 2.0, "{t}");
    }
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sdnlab").join("meta.json")).unwrap()).unwrap();
    assert!(
        meta["targets"][0]["command"]
            .as_str()
            .unwrap()
            .contains("--standby-for"),
        "{meta}"
    );
    let _ = std::fs::remove_dir_all(&out);

    let r = bench("failover", &out, &["--fabric", "leaf-spine,2,3,1", "--peer", "os-ken"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("has no standby mode"), "{err}");
    assert!(!r.status.success());
    let _ = std::fs::remove_dir_all(out);
}

/// `--suite rfc8456 --quick` against sdnlab and os-ken: every test once,
/// the exception and DoS variants of the topology tests included, one
/// table (suite.md) and one report organised by RFC 8456 section, loaded
/// in headless Chromium as a reader would: every section of the RFC there,
/// both controllers in each results table (but where a test cannot run
/// against one, which the page says), no error in the console, and a
/// screenshot.
#[test]
fn the_rfc8456_suite_runs_every_test_and_reports_them_together() {
    let _serial = serial();
    let out = tmp("suite");
    let r = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args([
            "bench",
            "ctl",
            "--suite",
            "rfc8456",
            "--quick",
            "--trials",
            "1",
            "--peer",
            "sdnlab",
            "--peer",
            "os-ken",
            // The suite's plumbing, not a DoS measurement: a flood a debug
            // build on 2 shared cores serves (the default 20,000/s left some
            // of leaf-spine 2,6,1's paths unprovisioned within Td in CI).
            "--flood-pps",
            "5000",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    // os-ken may fail a robustness variant (seen: no discovery within Td
    // under 2 % malformed messages): that is a result, and the suite exits
    // 1 for it. sdnlab must complete every test.
    assert!(
        matches!(r.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let md = std::fs::read_to_string(out.join("suite.md")).unwrap();
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("suite.json")).unwrap()).unwrap();
    let incomplete: Vec<String> = index["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["runs"].as_array().unwrap().iter().map(move |r| (s, r)))
        .filter(|(_, r)| r["complete"] == false)
        .map(|(s, r)| format!("{} {} {}: {}", s["number"], s["name"], s["variant"], r["target"]))
        .collect();
    assert!(
        incomplete.iter().all(|l| l.ends_with("\"os-ken\"")),
        "sdnlab did not complete: {incomplete:?}"
    );
    assert_eq!(r.status.success(), incomplete.is_empty(), "{md}");
    for test in [
        "Asynchronous Message Processing Time",
        "Asynchronous Message Processing Rate",
        "Control Session Capacity",
        "Exception Handling (malformed messages, case by case)",
        "Denial of Service Handling",
        "Network Topology Discovery Time",
        "Network Discovery Size",
        "Reactive Path Provisioning Time and Rate",
        "Proactive Path Provisioning Time and Rate",
        "Network Topology Change Detection Time",
        "Forwarding Table Capacity (reactive)",
        "Forwarding Table Capacity (proactive)",
        "Network Re-Provisioning Time",
        "Controller Failover Time",
        "Exception Handling: Network Topology Discovery Time, 2 % malformed",
        "Denial of Service Handling: Reactive Path Provisioning Time and Rate under a 5000 PACKET_IN/s flood",
    ] {
        assert!(md.contains(&format!("| {test} |")), "{test} missing from:\n{md}");
    }
    assert!(!md.contains("did not run"), "{md}");
    let failover = md
        .lines()
        .find(|l| l.contains("| failover |") && l.contains("takeover_s"))
        .unwrap();
    assert!(failover.contains("| 1 |"), "{failover}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("every trial ("), "no per-trial rows");
    assert!(html.contains("switches (mean discovery_s per size"), "no size plot");

    // The page as Chromium builds it.
    let (dom, console) = chromium(&out.join("report.html"), &out.join("report.png"));
    assert!(
        !console.lines().any(|l| l.contains("CONSOLE") || l.contains("Uncaught")),
        "script errors: {console}"
    );
    let png = std::fs::read(out.join("report.png")).unwrap();
    assert!(png.len() > 10_000 && png.starts_with(b"\x89PNG"), "no screenshot");
    assert!(dom.contains("<h1>RFC 8456 controller benchmark</h1>"));
    assert!(dom.contains("id=\"toc\"") && dom.contains("id=\"setup\""));
    // Every RFC 8456 test is a section, numbered and named as in the RFC.
    let sections: Vec<&str> = dom.split("<section class=\"test\"").skip(1).collect();
    for (number, name) in [
        ("5.1.1", "Network Topology Discovery Time"),
        ("5.1.2", "Asynchronous Message Processing Time"),
        ("5.1.3", "Asynchronous Message Processing Rate"),
        ("5.1.4, 5.1.6", "Reactive Path Provisioning Time and Rate"),
        ("5.1.5, 5.1.7", "Proactive Path Provisioning Time and Rate"),
        ("5.1.8", "Network Topology Change Detection Time"),
        ("5.2.1", "Control Session Capacity"),
        ("5.2.2", "Network Discovery Size"),
        ("5.2.3", "Forwarding Table Capacity"),
        ("5.3.1", "Exception Handling"),
        ("5.3.2", "Denial of Service Handling"),
        ("5.4.1", "Controller Failover Time"),
        ("5.4.2", "Network Re-Provisioning Time"),
    ] {
        let heading = format!("<h2>{number} {name}");
        assert!(sections.iter().any(|s| s.contains(&heading)), "no section {heading}");
        assert!(
            dom.contains(&format!(
                "href=\"#t-{}",
                number.replace([',', ' ', '.'], "-").replace("--", "-")
            )),
            "{number} not in the contents"
        );
    }
    // Every system in every results table, but where the section says it did not run.
    let mut tables = 0;
    for s in &sections {
        let heading = &s[s.find("<h2>").unwrap()..s.find("</h2>").unwrap()];
        for t in s.split("<table class=\"results\"").skip(1) {
            let t = &t[..t.find("</table>").unwrap()];
            tables += 1;
            for target in ["sdnlab", "os-ken"] {
                let not_run = s.contains(&format!("Not run against {target}:"))
                    || s.contains(&format!("{target}: some trials did not complete"));
                let in_table =
                    t.contains(&format!("data-target=\"{target}\"")) || t.contains(&format!("<th>{target}</th>"));
                assert!(in_table || not_run, "{target} missing from a table of {heading}");
            }
        }
        assert!(s.contains("class=\"procedure\""), "{heading}: no procedure");
    }
    assert!(tables >= 25, "{tables} results tables");
    // Metrics in plain words, verdicts written out.
    assert!(dom.contains("Topology discovery time") && dom.contains("Control sessions held"));
    assert!(dom.contains("class=\"verdict\""));
    assert!(dom.contains("Not run against os-ken: needs an active/standby pair"));
    // Rebuilt from the directory alone, the same page.
    std::fs::remove_file(out.join("report.html")).unwrap();
    let r = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read_to_string(out.join("report.html")).unwrap(), html);
    let _ = std::fs::remove_dir_all(out);
}

/// A tree and a fabric read from a file are discovered like the built-in
/// shapes; a file that wires a port twice is refused in one line.
#[test]
fn tree_and_file_fabrics_are_discovered() {
    let _serial = serial();
    let out = tmp("tree-file");
    let file = out.with_extension("json");
    std::fs::write(
        &file,
        r#"{"switches": [[1, 3], [2, 3], [3, 3]], "links": [[[1, 1], [2, 1]], [[2, 2], [3, 1]], [[3, 2], [1, 2]]],
            "hosts": [[1, 3], [3, 3]]}"#,
    )
    .unwrap();
    let shape = format!("file:{}", file.display());
    let r = bench("discovery", &out, &["--fabric", "tree,3,2", "--fabric", &shape]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let t = trials(&out);
    assert_eq!(t.len(), 4);
    for t in &t {
        assert!(value(t, "discovery_s") > 0.0);
        assert_eq!(value(t, "links_seen"), value(t, "links"), "{t}");
    }
    assert_eq!(
        value(&t[0], "links"),
        12.0,
        "a tree of depth 3 and fanout 2 has 6 cables"
    );
    assert_eq!(value(&t[2], "links"), 6.0, "the ring in the file has 3 cables");
    std::fs::write(
        &file,
        r#"{"switches": [[1, 2], [2, 2]], "links": [[[1, 1], [2, 1]]], "hosts": [[1, 1]]}"#,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let r = bench("discovery", &out, &["--fabric", &shape]);
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("wired twice") && err.trim().lines().count() == 1, "{err}");
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_dir_all(out);
}
