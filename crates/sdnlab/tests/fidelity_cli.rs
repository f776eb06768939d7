//! `sdnlab bench fidelity --quick`: sdnlab's emulation and Mininet's (its
//! Python API, Linux bridges) on the same linear topologies in one run,
//! every trial with its host load and operational bound, the results in
//! the run directory, and nothing of either emulator left afterwards:
//! namespaces, interfaces (sdnlab's `sl...`, Mininet's `sN-ethM`/`hN-ethM`),
//! processes. As root, with Debian's `mininet` package.

use std::process::Command;

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

#[test]
fn sdnlab_and_mininet_side_by_side_and_nothing_left() {
    let out = std::env::temp_dir().join(format!("sdnlab-test-fidelity-{}", std::process::id()));
    let ours = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir("/run/sdnlab/net")
            .into_iter()
            .chain(std::fs::read_dir("/run/netns"))
            .flatten()
            .flatten()
            .map(|e| e.path().display().to_string())
            .filter(|p| p.starts_with("/run/sdnlab/net/") || p.starts_with("/run/netns/sdnlab-"))
            .collect();
        v.sort();
        v
    };
    let before = ours();
    let o = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["bench", "fidelity", "--quick", "--seconds", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{text}");
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
