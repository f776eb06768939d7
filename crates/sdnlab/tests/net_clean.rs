//! `sdnlab net clean` removes every run on the machine, so it has a test
//! binary of its own (cargo runs test binaries one at a time, so no other
//! test's network is up meanwhile). Needs root.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sdnlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sdnlab")).args(args).output().unwrap()
}

fn ours_left() -> Vec<String> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/run/netns").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("sdnlab-") {
            left.push(n);
        }
    }
    for e in std::fs::read_dir("/sys/class/net").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.len() > 6 && n.starts_with("sl") && n[2..6].chars().all(|c| c.is_ascii_hexdigit()) {
            left.push(n);
        }
    }
    for e in std::fs::read_dir("/run/sdnlab/net").into_iter().flatten().flatten() {
        left.push(e.path().display().to_string());
    }
    left
}

/// `net clean` removes everything of every run: the tests take turns.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn clean_removes_a_live_run_and_a_killed_one() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // One run whose `up` process is alive, one whose `up` was SIGKILLed.
    let mut alive = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up", "linear,3", "--switch", "ovs"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut killed = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up", "tree,2,2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while sdnlab(&["net", "show"])
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| l.starts_with(b"run "))
        .count()
        < 2
    {
        assert!(t.elapsed() < Duration::from_secs(20), "runs never came up");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(!ours_left().is_empty());
    let out = sdnlab(&["net", "clean"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed run"));
    let status = alive.wait().unwrap();
    assert!(
        status.success(),
        "the live `up` should have torn down on SIGTERM: {status}"
    );
    assert_eq!(ours_left(), Vec::<String>::new());
    let again = sdnlab(&["net", "clean"]);
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), "nothing to clean");
}

/// A bench bed's objects whose record is gone (seen after a SIGINT during
/// `bench switch`'s XDP patch: two `sbsw*` namespaces stayed while `net
/// clean` said "nothing to clean"): `net clean` finds them by their
/// names. Runs after the test above or before it, never beside it (it
/// holds the same lock).
#[test]
fn clean_removes_bed_objects_with_no_record() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    // Tags no live process owns (pid & 0xffff is never 0xfffe here: the
    // record would name us, and there is none): a switch bench's bed, and
    // `bench gen`'s pair of namespaces.
    let (ns, link, peer) = ("sbswfffeg", "sbswfffe1a", "sbswfffe1b");
    let gen_ns = "sbgnfffes";
    let ip = |args: &[&str]| Command::new("ip").args(args).status().unwrap().success();
    // Whatever the assertions, nothing stays.
    struct Gone;
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", "sbswfffeg"]).status();
            let _ = Command::new("ip").args(["netns", "del", "sbgnfffes"]).status();
            let _ = Command::new("ip").args(["link", "del", "sbswfffe1a"]).status();
        }
    }
    let _gone = Gone;
    assert!(ip(&["netns", "add", ns]));
    assert!(ip(&["netns", "add", gen_ns]));
    assert!(ip(&["link", "add", link, "type", "veth", "peer", "name", peer]));
    let out = sdnlab(&["net", "clean"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let gone = !std::path::Path::new("/run/netns").join(ns).exists()
        && !std::path::Path::new("/run/netns").join(gen_ns).exists()
        && !std::path::Path::new("/sys/class/net").join(link).exists()
        && !std::path::Path::new("/sys/class/net").join(peer).exists();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(gone, "left behind: {text}");
    assert!(
        text.contains(&format!("namespace {ns} (no bed on record)"))
            && text.contains(&format!("namespace {gen_ns} (no bed on record)"))
            && [link, peer]
                .iter()
                .any(|l| text.contains(&format!("interface {l} (no bed on record)"))),
        "{text}"
    );
}
