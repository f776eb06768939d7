//! `sdnlab bench fidelity --quick`: sdnlab's emulation and Mininet's (its
//! Python API, Linux bridges) on the same linear topologies in one run,
//! every trial with its host load and operational bound, the results in
//! the run directory, and nothing of either emulator left afterwards:
//! namespaces, interfaces (sdnlab's `sl...`, Mininet's `sN-ethM`/`hN-ethM`),
//! processes. As root, with Debian's `mininet` package.

mod common;
use std::process::{Command, Stdio};

/// What either emulator could leave: namespaces, interfaces, processes
/// naming the run directory or Mininet's helpers.
fn emulators_left(dir: &std::path::Path) -> Vec<String> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/sys/class/net").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        // Mininet's: its bridges `sN`, their ports `sN-ethM`, hosts' `hN-ethM`.
        let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
        let mininet = match n.split_once("-eth") {
            Some((node, port)) => {
                (node.starts_with('s') || node.starts_with('h')) && digits(&node[1..]) && digits(port)
            }
            None => n.starts_with('s') && digits(&n[1..]),
        };
        if mininet {
            left.push(format!("interface {n}"));
        }
    }
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&dir.display().to_string()) || cmd.starts_with("mnexec") {
                left.push(format!("process {cmd}"));
            }
        }
    }
    left
}

/// sdnlab's runs and namespaces, as they are now.
fn ours() -> Vec<String> {
    let mut v: Vec<String> = common::net_runs().into_iter().map(|n| format!("run {n}")).collect();
    v.extend(
        std::fs::read_dir("/run/netns")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("sdnlab-"))
            .map(|n| format!("namespace {n}")),
    );
    v.sort();
    v
}

/// One run at a time: both tests bring up emulations and look for what
/// either left.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn sdnlab_and_mininet_side_by_side_and_nothing_left() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-test-fidelity-{}", std::process::id()));
    let before = ours();
    let (ok, text) = common::sdnlab_says([
        "bench",
        "fidelity",
        "--quick",
        "--seconds",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    for row in ["| sdnlab | 1 |", "| mininet | 1 |", "| sdnlab | 2 |", "| mininet | 2 |"] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // Every trial on disk with its host load and bound, and the report.
    let trials = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = trials.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4, "{trials}");
    for l in &lines {
        let f = &l["figures"];
        assert!(f["tcp"]["mbit"].as_f64().unwrap() > 10.0, "{l}");
        assert!(
            f["tcp"]["host"]["cores"].as_array().is_some_and(|c| !c.is_empty()),
            "{l}"
        );
        assert!(
            f["tcp"]["bound"]["bound"].as_f64().is_some(),
            "the operational bound: {l}"
        );
        assert!(f["tcp"]["host"]["host_bound"].is_boolean(), "{l}");
        assert_eq!(f["udp"].as_array().unwrap().len(), 2, "{l}");
        assert!(f["ping"]["rtt_ms"].as_f64().unwrap() > 0.0, "{l}");
    }
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    assert!(
        samples.contains("\"system\":\"mininet\"") && samples.contains("\"system\":\"sdnlab\""),
        "{samples}"
    );
    assert!(out.join("report.html").is_file());
    assert_eq!(before, ours(), "no sdnlab run or namespace left");
    assert_eq!(emulators_left(&out), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&out);
}

/// Stopped by Ctrl-C (SIGINT) at three random moments (printed, so a failure
/// can be replayed), while either emulation is up or between them: exit
/// code 130, "interrupted" said, nothing of either emulator left, and
/// `sdnlab report` reads what was measured, marked interrupted.
#[test]
fn stopped_at_a_random_moment_it_leaves_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-test-fidelity-stop-{}", std::process::id()));
    let mut moments = common::Moments::new();
    // A moment in each third of a quick run (about 9 s): while sdnlab's
    // emulation runs, between the two, while Mininet's runs.
    for third in 0..3 {
        let _ = std::fs::remove_dir_all(&out);
        let before = ours();
        let at = moments.next(300 + third * 3000, 3000);
        let moment = format!("bench fidelity stopped after {at:?}");
        eprintln!("{moment}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
        cmd.args(["bench", "fidelity", "--quick", "--seconds", "1", "--no-live", "--out"])
            .arg(&out)
            .stdout(Stdio::null());
        if let Some((_, status, err)) = common::stop_after(&mut cmd, at, &moment) {
            assert_eq!(status.code(), Some(130), "{moment}: {err}");
            assert!(err.contains("interrupted"), "{moment}: {err}");
            common::assert_reads_interrupted(&out, "interrupted", &moment);
        }
        assert_eq!(before, ours(), "{moment}: an sdnlab run or namespace left");
        assert_eq!(emulators_left(&out), Vec::<String>::new(), "{moment}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
