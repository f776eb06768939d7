//! Was the host, not the network, measured? `sdnlab net iperf` across two
//! sdnlab switches with a 50 Mbit/s (tc tbf) link between them: the
//! operational bound names the link as the bottleneck and agrees with
//! iperf3's figure, and the trial is not host-bound; then a CPU hog pinned
//! to the switches' core saturates it, and the same trial is flagged
//! host-bound, naming the hog. As root; one test in this binary, so no
//! other test of the suite loads the machine while it measures.

mod common;
use common::leftovers;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

const TOPOLOGY: &str = r#"
[[host]]
name = "h1"
ip = "10.0.0.1/24"
[[host]]
name = "h2"
ip = "10.0.0.2/24"
[[switch]]
name = "s1"
[[switch]]
name = "s2"
[[link]]
a = "h1"
b = "s1"
[[link]]
a = "s1"
b = "s2"
rate_mbit = 50
[[link]]
a = "s2"
b = "h2"
"#;

/// Kills and reaps on drop (the hog, the `net up` process).
struct Reap(Child);
impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Takes the run down however the test ends.
struct Down(String);
impl Drop for Down {
    fn drop(&mut self) {
        if std::path::Path::new(&format!("/run/sdnlab/net/{}", self.0)).exists() {
            let _ = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
                .args(["net", "down", "--id", &self.0])
                .output();
        }
    }
}

fn iperf(id: &str) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "iperf", "--id", id, "h1", "h2", "--seconds", "3", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_pinned_hog_makes_the_trial_host_bound_and_a_shaped_link_is_the_bound() {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let core = (cores - 1).to_string();
    let dir = std::env::temp_dir().join(format!("sdnlab-test-hostbound-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let topo = dir.join("shaped.toml");
    std::fs::write(&topo, TOPOLOGY).unwrap();
    let mut up = Reap(
        Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["net", "up"])
            .arg(&topo)
            .args(["--switch", "sdnlab"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Kept open to the end: `up` prints as it goes down.
    let mut out = std::io::BufReader::new(up.0.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let id = first
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let _down = Down(id.clone());
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("/run/sdnlab/net/{id}/state.json")).unwrap()).unwrap();
    // The switches on the last core, every thread.
    for p in state["sdnlab"].as_array().unwrap() {
        let pid = p["pid"].as_u64().unwrap().to_string();
        let ok = Command::new("taskset")
            .args(["-a", "-p", "-c", &core, &pid])
            .output()
            .unwrap();
        assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    }

    let quiet = iperf(&id);
    let got = quiet["iperf"]["received_bps"].as_f64().unwrap();
    let bound = &quiet["bound"];
    assert!(
        bound["bottleneck"]
            .as_str()
            .unwrap()
            .starts_with("link s1-s2 at 50 Mbit/s"),
        "{quiet}"
    );
    let b = bound["bound"].as_f64().unwrap();
    assert!((b - 50e6).abs() < 1.0, "{quiet}");
    // tbf's rate counts the frames' bytes; iperf3 its payload: within 15 %.
    assert!(
        got > 0.85 * b && got <= 1.02 * b,
        "measured {got} against the bound {b}: {quiet}"
    );
    assert_eq!(quiet["host"]["host_bound"], false, "a quiet host: {quiet}");

    // A hog named for this test, pinned where the switches run.
    let hog_path = dir.join("sdnlabtesthog");
    std::os::unix::fs::symlink("/usr/bin/yes", &hog_path).unwrap();
    let hog = Reap(
        Command::new("taskset")
            .args(["-c", &core])
            .arg(&hog_path)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let loaded = iperf(&id);
    drop(hog);
    let host = &loaded["host"];
    assert_eq!(host["host_bound"], true, "{loaded}");
    let reason = host["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("core {core} ")) && reason.contains("held by sdnlabtesthog"),
        "the hog is named: {reason}"
    );

    let down = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "down", "--id", &id])
        .output()
        .unwrap();
    assert!(down.status.success());
    let _ = up.0.wait();
    drop(out);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(leftovers(&id), Vec::<String>::new());
}
