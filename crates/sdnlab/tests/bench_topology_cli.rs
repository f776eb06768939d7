//! The RFC 8456 topology tests of `sdnlab bench ctl` end to end, at small
//! scale, against sdnlab's controller (`paths`/`paths-proactive` with its
//! REST API, run as its own process) and against os-ken 1.4.1 with
//! `--observe-links`, `rest_topology`, `ofctl_rest` and the project's
//! shortest-path app: every figure is checked for sanity, every trial's
//! samples are on disk, and a controller that never installs a path gets
//! a "did not arrive within Td" result and exit status 1, not a hang.

mod common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

fn tmp(name: &str) -> PathBuf {
    common::scratch("topo-cli", name)
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
