//! A benchmark stopped by SIGINT in the middle of its trials removes its
//! test bed (namespaces and veths prefixed `sbsw` + the bench's pid) and
//! says so in one line; the samples measured so far stay on disk.

mod common;
use common::interrupt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn leftovers(tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    for args in [&["netns", "list"][..], &["-o", "link", "show"][..]] {
        let o = Command::new("ip").args(args).output().unwrap();
        found.extend(
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains(tag))
                .map(str::to_string),
        );
    }
    found
}

/// `bench switch --quick` on `dut`, 5 rounds into `out` (its stderr
/// piped), and the tag of its test bed.
fn start_bench(dut: &str, out: &std::path::Path) -> (std::process::Child, String) {
    let _ = std::fs::remove_dir_all(out);
    let child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args([
            "bench", "switch", "--quick", "--dut", dut, "--no-tcp", "--rounds", "5", "--out",
        ])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tag = format!("sbsw{:04x}", child.id() & 0xffff);
    (child, tag)
}

/// Waits (120 s at most) until `n` samples are in `samples`, the bench
/// still running.
fn wait_for_samples(child: &mut std::process::Child, samples: &std::path::Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read_to_string(samples).map_or(0, |s| s.lines().count()) < n {
        assert!(Instant::now() < deadline, "no trial within 120 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the bench ended before it was stopped"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_bench_interrupted_mid_run_removes_its_test_bed() {
    // Its run directory is a new temporary entry: not while another test
    // here counts them (CI, 2026-11-29: the cluster test found it).
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-bench-stop-{}", std::process::id()));
    let (mut child, tag) = start_bench("veth", &out);
    // Interrupted once the first trials are on disk, with more to come.
    let samples = out.join("trials.jsonl");
    wait_for_samples(&mut child, &samples, 2);
    assert!(!leftovers(&tag).is_empty(), "the test bed {tag} is not up");
    let (status, err) = interrupt(&mut child, Duration::from_secs(60), "bench switch");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!("interrupted; partial results in {}", out.display())),
        "{err}"
    );
    assert_eq!(leftovers(&tag), Vec::<String>::new(), "left behind after SIGINT");
    assert!(std::fs::read_to_string(&samples).unwrap().lines().count() >= 2);
    let _ = std::fs::remove_dir_all(&out);
}

/// Processes whose command line names one of `tag`'s interfaces.
fn processes_naming(tag: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(tag))
                .unwrap_or(false)
        })
        .collect()
}

/// `sdnlab net clean`, which must succeed and say it removed the bed `tag`.
fn net_clean_removes_bed(tag: &str) {
    let clean = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "clean"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&clean.stdout);
    assert!(clean.status.success(), "{said}");
    assert!(said.contains(&format!("bench bed {tag}")), "{said}");
}

/// Killed outright (SIGKILL: no handler runs), a bench leaves its bed and
/// the switch it started; `sdnlab net clean` finds them by the bed's
/// record and removes all of it.
#[test]
fn what_a_killed_bench_leaves_is_removed_by_net_clean() {
    // `net clean` removes every orphan, and the random-moment test counts
    // every bed's objects: one of these at a time.
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-bench-kill-{}", std::process::id()));
    let (mut child, tag) = start_bench("sdnlab", &out);
    wait_for_samples(&mut child, &out.join("trials.jsonl"), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!leftovers(&tag).is_empty(), "nothing of {tag} left to clean");
    assert!(
        !processes_naming(&tag).is_empty(),
        "the bench's switch did not outlive it"
    );
    assert!(std::path::Path::new(netlab::beds::BEDS_ROOT).join(&tag).exists());

    net_clean_removes_bed(&tag);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_naming(&tag).is_empty() {
        assert!(Instant::now() < deadline, "the switch still runs after clean");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(leftovers(&tag), Vec::<String>::new(), "left behind after clean");
    assert!(!std::path::Path::new(netlab::beds::BEDS_ROOT).join(&tag).exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// The same for `bench gen`: killed outright, its pair of namespaces
/// (`sbgn` + its pid) stays, on record; `sdnlab net clean` removes both.
#[test]
fn what_a_killed_bench_gen_leaves_is_removed_by_net_clean() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-gen-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["bench", "gen", "--seconds", "1", "--rounds", "20", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let tag = format!("sbgn{:04x}", child.id() & 0xffff);
    wait_for_samples(&mut child, &out.join("samples.jsonl"), 1);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        leftovers(&tag).len(),
        2,
        "the pair's two namespaces: {:?}",
        leftovers(&tag)
    );
    assert!(std::path::Path::new(netlab::beds::BEDS_ROOT).join(&tag).exists());

    net_clean_removes_bed(&tag);
    assert_eq!(leftovers(&tag), Vec::<String>::new(), "left behind after clean");
    assert!(!std::path::Path::new(netlab::beds::BEDS_ROOT).join(&tag).exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// The `sdnlab-` entries of the temporary directory.
fn temp_entries() -> std::collections::BTreeSet<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("sdnlab-"))
        .collect()
}

/// `bench ctl --cluster 3` (5 trials of 20 loops: long enough to stop
/// anywhere) into `out`, its stderr to `stderr`.
fn spawn_cluster_bench(out: &std::path::Path, stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args("bench ctl --cluster 3 --ofp 1.3 --trials 5 --loops 20".split_whitespace())
        .args(["--no-live", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// `bench ctl --cluster 3` into `out` (its stderr to `stderr`), once its
/// three members run (found by the run's cluster name on their command
/// lines); the bench and that name.
fn cluster_bench(out: &std::path::Path, stderr: Stdio, moment: &str) -> (std::process::Child, String) {
    let mut child = spawn_cluster_bench(out, stderr);
    let cluster_name = format!("bench-{}", child.id());
    let deadline = Instant::now() + Duration::from_secs(60);
    while processes_naming(&cluster_name).len() < 3 {
        assert!(Instant::now() < deadline, "{moment}: no three members within 60 s");
        assert!(child.try_wait().unwrap().is_none(), "{moment}: the bench ended first");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, cluster_name)
}

/// The cluster tests compare the temporary directory before and after,
/// the random-moment test counts every bed's objects and the killed ones
/// run `net clean`: one at a time.
static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `bench ctl --cluster 3` (three controller processes and an etcd per
/// trial) stopped by SIGINT at three points: in the driver's ceiling run
/// before any member, while its members start, and in the middle of its
/// loops: it says "interrupted; partial results in DIR" (exit code 130),
/// no process it started is left (the members carry the run's cluster
/// name on their command lines; etcd its data directory), no temporary
/// directory, and `sdnlab report` reads what it measured.
#[test]
fn bench_ctl_against_a_cluster_interrupted_leaves_nothing() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    // The first of three points: in the driver's ceiling run, taken before
    // the first trial starts its etcd and members.
    {
        let moment = "in its ceiling run, before its members";
        let out = std::env::temp_dir().join(format!("sdnlab-stop-ctl-{}-early", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let before = temp_entries();
        let mut child = spawn_cluster_bench(&out, Stdio::piped());
        std::thread::sleep(Duration::from_millis(1500));
        assert!(child.try_wait().unwrap().is_none(), "{moment}: it ended by itself");
        let (status, err) = interrupt(&mut child, Duration::from_secs(20), moment);
        assert_eq!(status.code(), Some(130), "{moment}: {err}");
        assert!(err.contains("interrupted"), "{moment}: {err}");
        assert_eq!(
            processes_naming(&format!("bench-{}", child.id())),
            Vec::<u32>::new(),
            "{moment}: members left"
        );
        let left: Vec<String> = temp_entries()
            .difference(&before)
            .filter(|n| !out.ends_with(n.as_str()))
            .cloned()
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{moment}: temporary files left");
        common::assert_reads_interrupted(&out, "interrupted; partial results", moment);
        let _ = std::fs::remove_dir_all(&out);
    }
    for (moment, after_samples) in [("while its members start", 0), ("in its loops", 1)] {
        let out = std::env::temp_dir().join(format!("sdnlab-stop-ctl-{}-{after_samples}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let before = temp_entries();
        // Its members are up before it is stopped (so the check below
        // could see them).
        let (mut child, cluster_name) = cluster_bench(&out, Stdio::piped(), moment);
        if after_samples > 0 {
            wait_for_samples(&mut child, &out.join("samples.jsonl"), after_samples);
        }
        let etcd: Vec<u32> = processes_naming("sdnlab-bench-etcd-");
        assert!(!etcd.is_empty(), "{moment}: its etcd is not running");
        let (status, err) = interrupt(&mut child, Duration::from_secs(20), moment);
        assert_eq!(status.code(), Some(130), "{moment}: {err}");
        assert!(
            err.contains(&format!("interrupted; partial results in {}", out.display())),
            "{moment}: {err}"
        );
        assert_eq!(
            processes_naming(&cluster_name),
            Vec::<u32>::new(),
            "{moment}: members left"
        );
        let etcd_left: Vec<u32> = etcd
            .into_iter()
            .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            .collect();
        assert_eq!(etcd_left, Vec::<u32>::new(), "{moment}: etcd left");
        let left: Vec<String> = temp_entries()
            .difference(&before)
            .filter(|n| !out.ends_with(n.as_str()))
            .cloned()
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{moment}: temporary files left");
        let report = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .arg("report")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            report.status.success(),
            "{moment}: {}",
            String::from_utf8_lossy(&report.stderr)
        );
        let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
        assert!(meta.contains("interrupted; partial results"), "{moment}: {meta}");
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `bench ctl --cluster 3` killed outright (SIGKILL: no handler runs): its
/// members and its etcd go with it (each asked the kernel for SIGTERM when
/// the bench dies), within seconds (checked to fail without that: the
/// members and etcd stayed, orphaned).
#[test]
fn bench_ctl_against_a_cluster_killed_takes_its_members_along() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::env::temp_dir().join(format!("sdnlab-kill-ctl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let before = temp_entries();
    let (mut child, cluster_name) = cluster_bench(&out, Stdio::null(), "killed");
    let etcd: Vec<u32> = processes_naming("sdnlab-bench-etcd-");
    assert!(!etcd.is_empty(), "its etcd is not running");
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let members = processes_naming(&cluster_name);
        let etcd_left: Vec<u32> = etcd
            .iter()
            .copied()
            .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
            .collect();
        if members.is_empty() && etcd_left.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            // Not left for the next test either.
            for p in members.iter().chain(&etcd_left) {
                let _ =
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::Signal::SIGKILL);
            }
            panic!("left after the bench was killed: members {members:?}, etcd {etcd_left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // What no handler could remove (the peers' and etcd's temporary
    // directories), removed here.
    for n in temp_entries().difference(&before) {
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(n));
    }
}

/// What any sdnlab experiment may leave: namespaces and root interfaces
/// of a bench bed (`sbsw`), `bench gen`'s pair (`sbgn`) or a network
/// (`sdnlab-`, `sl<4 hex>`), and processes whose command line names `out`.
fn anything_left(out: &std::path::Path) -> Vec<String> {
    let mut left = leftovers("sbsw");
    left.extend(leftovers("sbgn"));
    for e in std::fs::read_dir("/run/netns").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("sdnlab-") {
            left.push(format!("namespace {n}"));
        }
    }
    for e in std::fs::read_dir("/sys/class/net").into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.len() > 6 && n.starts_with("sl") && n[2..6].chars().all(|c| c.is_ascii_hexdigit()) {
            left.push(format!("interface {n}"));
        }
    }
    left.extend(
        processes_naming(&out.display().to_string())
            .into_iter()
            .map(|p| format!("process {p}")),
    );
    left
}

/// Each experiment stopped by SIGINT at three random moments, one in each
/// third of its run (the moments printed, so a failure can be replayed): exit code 130, "interrupted;
/// partial results in DIR", nothing of it left (namespaces, interfaces,
/// processes, temporary files), and `sdnlab report DIR` reads the run,
/// which says it was interrupted.
#[test]
fn experiments_stopped_at_random_moments_leave_nothing() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let mut moments = common::Moments::new();
    let runs: [(&str, &[&str], u64); 4] = [
        // (The XDP patch: seen leaving two namespaces behind.)
        (
            "bench switch",
            &["bench", "switch", "--quick", "--dut", "xdp-patch", "--no-tcp"],
            6000,
        ),
        (
            "bench dp",
            &["bench", "dp", "--quick", "--dut", "sdnlab", "--frames", "64"],
            8000,
        ),
        ("bench gen", &["bench", "gen", "--seconds", "2", "--rounds", "3"], 4000),
        ("bench lb", &["bench", "lb", "--quick"], 8000),
    ];
    // Three points of each: a random moment in each third of its window
    // (setting up, measuring, finishing).
    for (what, args, within_ms, third) in runs
        .iter()
        .flat_map(|&(w, a, ms)| (0..3u64).map(move |t| (w, a, ms, t)))
    {
        let at = moments.next(300 + third * within_ms / 3, within_ms / 3);
        let moment = format!("{what} stopped after {at:?}");
        eprintln!("{moment}");
        let out = std::env::temp_dir().join(format!("sdnlab-stop-any-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let before = temp_entries();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
        cmd.args(args)
            .args(["--no-live", "--out"])
            .arg(&out)
            .stdout(Stdio::null());
        let Some((_, status, err)) = common::stop_after(&mut cmd, at, &moment) else {
            // Done before the moment came: nothing to interrupt.
            let _ = std::fs::remove_dir_all(&out);
            continue;
        };
        // Stopped before it wrote a run: exit 130 all the same.
        assert_eq!(status.code(), Some(130), "{moment}: {err}");
        assert!(err.contains("interrupted"), "{moment}: {err}");
        assert_eq!(anything_left(&out), Vec::<String>::new(), "{moment}: left behind");
        let left: Vec<String> = temp_entries()
            .difference(&before)
            .filter(|n| !out.ends_with(n.as_str()))
            .cloned()
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{moment}: temporary files left");
        common::assert_reads_interrupted(&out, "interrupted; partial results", &moment);
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `net up` over Open vSwitch with a three-member cluster of sdnlab's
/// controller on an etcd of the run's own, stopped by Ctrl-C (SIGINT) at
/// random moments from its controller's start to after the network is
/// up (the moments printed, so a failure can be replayed): it takes
/// everything down and exits 0, and nothing of any run is left: no
/// namespace, no interface, no state directory, no process naming one
/// (etcd's data directory is under the run's).
#[test]
fn net_up_stopped_at_random_moments_leaves_nothing() {
    let _one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::net_runs();
    let mut moments = common::Moments::new();
    // Early (while etcd and the members start), then anywhere up to a few
    // seconds (the switches coming up, then up and idle).
    for within_ms in [600, 4000, 8000] {
        let at = moments.next(100, within_ms);
        let moment = format!("net up stopped after {at:?}");
        eprintln!("{moment}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
        cmd.args("net up linear,3 --switch ovs --app l2-learning --cluster 3".split_whitespace())
            .stdout(Stdio::piped());
        let (mut child, status, err) =
            common::stop_after(&mut cmd, at, &moment).unwrap_or_else(|| panic!("{moment}: net up ended by itself"));
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        assert!(status.success(), "{moment}: {status}\n{out}{err}");
        assert!(out.contains(" down in "), "{moment}: {out}{err}");
        let new: Vec<String> = common::net_runs().difference(&before).cloned().collect();
        assert!(new.is_empty(), "{moment}: run directories left: {new:?}");
        assert_eq!(
            anything_left(std::path::Path::new("/run/sdnlab/net/")),
            Vec::<String>::new(),
            "{moment}: left behind\n{out}{err}"
        );
    }
}
