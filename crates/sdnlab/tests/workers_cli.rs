//! Experiments spread over workers, as root: three "machines" are three
//! network namespaces on an underlay bridge, each running `sdnlab worker`
//! on its own address. A leaf-spine topology is split over them (links
//! between them as VXLAN): every host pings every other and iperf3 runs
//! between two workers; a coordinator with another lab's credentials is
//! refused and nothing is made; the workers are found through one name
//! that resolves to all three (a hosts file, as `ip netns exec` mounts
//! it); a worker killed mid-run is named, the others tear down, and its
//! restart removes what it left; the controller benchmark spreads its
//! switches over them, against a controller here or against sdnlab's
//! cluster started on the workers themselves (etcd on one, a member on
//! each). Nothing of a run is left in any namespace afterwards.

mod common;
use common::{chromium, leftovers, ok, sh, text};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_sdnlab");

/// The underlay: a bridge in the test's namespace, three worker
/// namespaces on it, their workers; all removed on drop.
struct Lab {
    tag: String,
    subnet: u8,
    dir: PathBuf,
    workers: Vec<Option<Child>>,
}

impl Lab {
    fn new(test: &str) -> Lab {
        let tag = format!("fw{test}{}", std::process::id() % 1000);
        // Each test its own underlay subnet (they run side by side).
        let which = match test {
            "a" => 0,
            "k" => 1,
            "c" => 2,
            "s" => 3,
            _ => 4,
        };
        // (100..249 for these; "t" below them.)
        let subnet = if test == "t" {
            70 + (std::process::id() % 30) as u8
        } else {
            100 + (std::process::id() % 30) as u8 + 30 * which
        };
        let dir = std::env::temp_dir().join(format!("sdnlab-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lab = Lab {
            tag,
            subnet,
            dir,
            workers: Vec::new(),
        };
        lab.remove_kernel_objects();
        let br = lab.bridge();
        ok(&["ip", "link", "add", &br, "type", "bridge"]);
        ok(&["ip", "addr", "add", &format!("10.{subnet}.0.254/24"), "dev", &br]);
        ok(&["ip", "link", "set", &br, "up"]);
        for i in 1..=3 {
            let (ns, port) = (lab.ns(i), format!("{}v{i}", lab.tag));
            ok(&["ip", "netns", "add", &ns]);
            ok(&[
                "ip", "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            ok(&["ip", "link", "set", &port, "master", &br, "up"]);
            ok(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", lab.addr(i)),
                "dev",
                "eth0",
            ]);
            ok(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
            ok(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        }
        let out = Command::new(BIN)
            .args(["credentials", lab.dir.join("creds").to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        lab
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }
    fn ns(&self, i: usize) -> String {
        format!("{}-m{i}", self.tag)
    }
    fn addr(&self, i: usize) -> String {
        format!("10.{}.0.{i}", self.subnet)
    }

    fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("worker{i}.log"))
    }

    fn start_worker(&mut self, i: usize) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(i))
            .unwrap();
        let before = self.worker_log(i).matches("listening").count();
        let child = Command::new(BIN)
            .args([
                "worker",
                "--netns",
                &self.ns(i),
                "--listen",
                &format!("{}:7700", self.addr(i)),
                "--credentials",
                self.dir.join("creds").to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        if self.workers.len() < i {
            self.workers.resize_with(i, || None);
        }
        self.workers[i - 1] = Some(child);
        let start = Instant::now();
        while self.worker_log(i).matches("listening").count() == before {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "worker {i} did not start: {}",
                self.worker_log(i)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn worker_log(&self, i: usize) -> String {
        std::fs::read_to_string(self.log(i)).unwrap_or_default()
    }

    fn inventory(&self, creds: &str, workers: &str) -> PathBuf {
        let p = self.dir.join(format!("inventory-{creds}.toml"));
        std::fs::write(&p, format!("credentials = \"{creds}\"\n{workers}\nlease_s = 3\n")).unwrap();
        p
    }

    fn listed(&self) -> String {
        let list: Vec<String> = (1..=3).map(|i| format!("\"{}:7700\"", self.addr(i))).collect();
        format!("workers = [{}]", list.join(", "))
    }

    /// Interfaces of netlab runs, or VXLAN devices, in worker `i`'s namespace.
    fn made_in(&self, i: usize) -> Vec<String> {
        let out = ok(&["ip", "-n", &self.ns(i), "-o", "-d", "link", "show"]);
        out.lines()
            .filter(|l| {
                let name = l.split(": ").nth(1).unwrap_or("");
                (name.starts_with("sl") && name.len() > 6) || l.contains(" vxlan ")
            })
            .map(|l| l.split(": ").nth(1).unwrap_or("").to_string())
            .collect()
    }

    /// The netlab runs worker `i` says it tore down (for a coordinator,
    /// or left by a worker that died).
    fn runs_of(&self, i: usize) -> Vec<String> {
        self.worker_log(i)
            .lines()
            .filter(|l| l.contains("torn down") || l.contains("left by a worker that died"))
            .filter_map(|l| l.split("netlab run ").nth(1))
            .filter_map(|r| r.split(|c: char| !c.is_ascii_hexdigit()).next())
            .filter(|r| r.len() == 4)
            .map(str::to_string)
            .collect()
    }

    /// `sdnlab run` of `experiment` over the inventory's workers, results
    /// in `out` (the experiment file beside them).
    fn run_command(&self, experiment: &str, inventory: &Path, out: &str) -> Command {
        let file = self.dir.join(format!("{out}.toml"));
        std::fs::write(&file, experiment).unwrap();
        let mut c = Command::new(BIN);
        c.args([
            "run",
            file.to_str().unwrap(),
            "--workers",
            inventory.to_str().unwrap(),
            "--no-live",
        ])
        .args(["--out", self.dir.join(out).to_str().unwrap()]);
        c
    }

    /// The run, left running (its output piped).
    fn start_run(&self, experiment: &str, inventory: &Path, out: &str) -> Child {
        self.run_command(experiment, inventory, out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The run to its end, with `--json`: success, stdout, stderr.
    fn run(&self, experiment: &str, inventory: &Path, out: &str) -> (bool, String, String) {
        let o = self
            .run_command(experiment, inventory, out)
            .arg("--json")
            .output()
            .unwrap();
        (o.status.success(), text(&o.stdout), text(&o.stderr))
    }

    fn remove_kernel_objects(&self) {
        for i in 1..=3 {
            let _ = sh(&["ip", "netns", "del", &self.ns(i)]);
        }
        let _ = sh(&["ip", "link", "del", &self.bridge()]);
        for i in 1..=3 {
            let _ = sh(&["ip", "link", "del", &format!("{}x{i}", self.tag)]);
        }
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}-c", self.tag));
        let _ = sh(&["ip", "netns", "del", &format!("{}-c", self.tag)]);
    }

    /// Nothing of any run a worker made is left anywhere.
    fn assert_nothing_left(&self) {
        for i in 1..=3 {
            let made = self.made_in(i);
            assert!(made.is_empty(), "worker {i} left {made:?}\n{}", self.worker_log(i));
            for run in self.runs_of(i) {
                let left = leftovers(&run);
                assert!(left.is_empty(), "run {run} of worker {i} left {left:?}");
            }
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in self.workers.iter_mut().flatten() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        for c in self.workers.iter_mut().flatten() {
            let _ = c.wait();
        }
        self.remove_kernel_objects();
        // The workers' logs and runs stay for a test that failed.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

const LEAF_SPINE: &str = "experiment = \"net\"\ntopology = \"leaf-spine,2,3,1\"\nping_count = 1\n\
     iperf = [\"h1>h3\"]\niperf_s = 2\n\
     http = [\"h3>h1\"]\nhttp_rate = 40\nhttp_s = 1.5\n\
     flows = [\"h1>h3\", \"h3>h2\"]\nflow_pps = 1000\nflow_s = 2\ninterval_ms = 500\n";

#[test]
fn a_leaf_spine_spread_over_three_workers_pings_and_carries_iperf_between_them() {
    let mut lab = Lab::new("a");
    for i in 1..=3 {
        lab.start_worker(i);
    }
    // Another lab's credentials: refused by every worker, nothing made.
    let other = lab.dir.join("other");
    assert!(Command::new(BIN)
        .args(["credentials", other.to_str().unwrap()])
        .status()
        .unwrap()
        .success());
    let (okay, _, err) = lab.run(LEAF_SPINE, &lab.inventory("other", &lab.listed()), "refused");
    assert!(!okay, "a coordinator of another lab ran: {err}");
    assert!(
        err.contains("TLS") || err.contains("refused") || err.contains("lost"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    for i in 1..=3 {
        assert!(
            lab.worker_log(i).contains("refused"),
            "worker {i}: {}",
            lab.worker_log(i)
        );
        let log = lab.worker_log(i);
        assert!(
            !log.contains("torn down"),
            "worker {i} made a network for a stranger: {log}"
        );
        assert!(lab.made_in(i).is_empty());
    }

    let (okay, out, err) = lab.run(LEAF_SPINE, &lab.inventory("creds", &lab.listed()), "spread");
    assert!(
        okay,
        "{out}{err}\n{}\n{}\n{}",
        lab.worker_log(1),
        lab.worker_log(2),
        lab.worker_log(3)
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Three hosts: six ordered pairs, all reached.
    assert_eq!(v["pairs"], 6, "{v}");
    assert_eq!(v["reached"], 6, "{v}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.dir.join("spread/meta.json")).unwrap()).unwrap();
    let workers = meta["parameters"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "{meta}");
    for w in workers {
        // Three namespaces share one clock: the offset is within its own bound.
        let (off, unc) = (
            w["clock_offset_us"].as_f64().unwrap(),
            w["clock_uncertainty_us"].as_f64().unwrap(),
        );
        assert!(off.abs() <= unc + 1.0, "{w}");
        // Measured by the worker's clock probes, not over the session.
        assert_eq!(w["clock_via"], "udp", "{w}");
    }
    // Measured again at the end: one clock did not move, beyond what the
    // two measurements leave open.
    let drift = meta["parameters"]["clock_drift"].as_array().unwrap();
    assert_eq!(drift.len(), 3, "{meta}");
    for d in drift {
        let (moved, within) = (d["moved_us"].as_f64().unwrap(), d["within_us"].as_f64().unwrap());
        assert!(moved.abs() <= within + 1.0 && within > 0.0, "{d}");
    }
    assert!(
        meta["parameters"]["links_between_workers"].as_u64().unwrap() >= 2,
        "{meta}"
    );
    // iperf3 between hosts on two different workers, through a tunnel.
    let samples = std::fs::read_to_string(lab.dir.join("spread/samples.jsonl")).unwrap();
    let iperf: serde_json::Value = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["scenario"].as_str().unwrap().starts_with("iperf h1>h3"))
        .unwrap_or_else(|| panic!("no iperf sample: {samples}"));
    let scenario = iperf["scenario"].as_str().unwrap();
    let (from, to) = scenario
        .split_once('(')
        .unwrap()
        .1
        .trim_end_matches(')')
        .split_once(" -> ")
        .unwrap();
    assert_ne!(from, to, "{scenario}: both hosts on one worker");
    assert!(iperf["values"]["iperf_mbit_s"].as_f64().unwrap() > 1.0, "{iperf}");
    // Test-frame flows between workers: every frame arrives, the latency
    // is the clocks' offset corrected and bounded by their uncertainty,
    // and each receiver's intervals came back as it counted them.
    let samples: Vec<serde_json::Value> = samples.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for name in ["h1>h3", "h3>h2"] {
        let ends = &meta["parameters"]["flow_workers"][name];
        assert_ne!(ends[0], ends[1], "{name}: both ends on one worker: {meta}");
        let flow = samples
            .iter()
            .find(|s| s["scenario"] == format!("flow {name}"))
            .unwrap_or_else(|| panic!("no flow {name}: {samples:?}"));
        let v = &flow["values"];
        assert_eq!(v["sent"].as_f64(), Some(2000.0), "{flow}");
        assert_eq!(v["received"], v["sent"], "{flow}");
        assert_eq!(v["flow_loss_ratio"].as_f64(), Some(0.0), "{flow}");
        assert_eq!(v["duplicates"].as_f64(), Some(0.0), "{flow}");
        let (p50, unc) = (
            v["latency_us_p50"].as_f64().unwrap(),
            v["clock_uncertainty_us"].as_f64().unwrap(),
        );
        assert!(unc > 0.0, "two workers' clocks are known only so well: {flow}");
        assert!((1.0..50_000.0).contains(&p50), "{flow}");
        let intervals: Vec<&serde_json::Value> = samples
            .iter()
            .filter(|s| s["kind"] == "flow-interval" && s["scenario"] == name)
            .collect();
        assert!(intervals.len() >= 4, "{name}: {intervals:?}");
        let frames: f64 = intervals.iter().map(|s| s["values"]["frames"].as_f64().unwrap()).sum();
        assert_eq!(frames, 2000.0, "{name}: the intervals add up to the flow");
        let ends: Vec<f64> = intervals
            .iter()
            .map(|s| s["values"]["end_unix_ns"].as_f64().unwrap())
            .collect();
        // Every 500 ms; the last one is what was left when the flow
        // ended, so it may be shorter.
        for (k, w) in ends.windows(2).enumerate() {
            let gap_ms = (w[1] - w[0]) / 1e6;
            let least = if k + 2 == ends.len() { 1.0 } else { 400.0 };
            assert!(
                (least..800.0).contains(&gap_ms),
                "{name}: intervals {gap_ms} ms apart: {ends:?}"
            );
        }
    }
    // HTTP between workers: nginx on h1's worker, the client on h3's, the
    // requests back as they ended, each on disk.
    let ends = &meta["parameters"]["http_workers"]["h3>h1"];
    assert_ne!(ends[0], ends[1], "both ends on one worker: {meta}");
    let http = samples
        .iter()
        .find(|s| s["scenario"] == "http h3>h1")
        .unwrap_or_else(|| panic!("no http sample: {samples:?}"));
    assert_eq!(http["values"]["requests"].as_f64(), Some(60.0), "{http}");
    assert_eq!(http["values"]["errors"].as_f64(), Some(0.0), "{http}");
    assert!(http["values"]["http_latency_ms_p50"].as_f64().unwrap() > 0.0, "{http}");
    let batches: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "http-interval").collect();
    assert!(batches.len() >= 3, "{batches:?}");
    let done: f64 = batches.iter().map(|s| s["values"]["requests"].as_f64().unwrap()).sum();
    assert_eq!(done, 60.0, "the batches add up to the load");
    let csv = std::fs::read_to_string(lab.dir.join("spread/requests.csv")).unwrap();
    assert_eq!(csv.lines().filter(|l| l.starts_with("h3>h1,")).count(), 60, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",102400,")), "{csv}");
    // Every worker made its part and tore it down.
    for i in 1..=3 {
        assert_eq!(
            lab.worker_log(i).matches("torn down").count(),
            1,
            "worker {i}: {}",
            lab.worker_log(i)
        );
    }
    lab.assert_nothing_left();

    // Found through one name with three addresses (the coordinator's own
    // hosts file, mounted by `ip netns exec`).
    let c = format!("{}-c", lab.tag);
    ok(&["ip", "netns", "add", &c]);
    let port = format!("{}vc", lab.tag);
    ok(&[
        "ip", "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &c,
    ]);
    ok(&["ip", "link", "set", &port, "master", &lab.bridge(), "up"]);
    ok(&[
        "ip",
        "-n",
        &c,
        "addr",
        "add",
        &format!("10.{}.0.10/24", lab.subnet),
        "dev",
        "eth0",
    ]);
    ok(&["ip", "-n", &c, "link", "set", "eth0", "up"]);
    std::fs::create_dir_all(format!("/etc/netns/{c}")).unwrap();
    let hosts: String = (1..=3).map(|i| format!("{} sdnlab-workers\n", lab.addr(i))).collect();
    std::fs::write(format!("/etc/netns/{c}/hosts"), format!("127.0.0.1 localhost\n{hosts}")).unwrap();
    let inv = lab.inventory("creds", "discover = \"sdnlab-workers:7700\"");
    let file = lab.dir.join("discover.toml");
    std::fs::write(&file, "experiment = \"net\"\ntopology = \"linear,3\"\nping_count = 1\n").unwrap();
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &c,
            BIN,
            "run",
            file.to_str().unwrap(),
            "--workers",
            inv.to_str().unwrap(),
        ])
        .args([
            "--json",
            "--no-live",
            "--out",
            lab.dir.join("discovered").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.dir.join("discovered/meta.json")).unwrap()).unwrap();
    let found: Vec<&str> = meta["parameters"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["address"].as_str().unwrap())
        .collect();
    assert_eq!(found.len(), 3, "{meta}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reached"], v["pairs"], "{v}");
    lab.assert_nothing_left();
}

#[test]
fn a_worker_killed_mid_run_is_named_and_nothing_of_the_run_is_left() {
    let mut lab = Lab::new("k");
    for i in 1..=3 {
        lab.start_worker(i);
    }
    let inv = lab.inventory("creds", &lab.listed());
    // h1 and h3 sit on different workers (the first test checks how
    // leaf-spine,2,3,1 splits); a long iperf3 keeps the run going.
    let mut coordinator = lab.start_run(
        "experiment = \"net\"\ntopology = \"leaf-spine,2,3,1\"\nping_count = 1\niperf = [\"h1>h3\"]\niperf_s = 30\n",
        &inv,
        "killed",
    );
    // Once every worker has its part up, kill the third outright.
    let start = Instant::now();
    while (1..=3).any(|i| lab.made_in(i).is_empty()) {
        assert!(start.elapsed() < Duration::from_secs(60), "the parts did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(4));
    let victim = lab.workers[2].take().unwrap();
    let pid = victim.id();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let mut victim = victim;
    let _ = victim.wait();
    let t_killed = Instant::now();
    let status = coordinator.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(coordinator.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "the run passed without a worker: {err}");
    let killed = format!("{}:7700", lab.addr(3));
    assert!(err.contains(&format!("worker {killed} lost")), "{err}");
    assert!(
        t_killed.elapsed() < Duration::from_secs(30),
        "the coordinator took {:?} to notice",
        t_killed.elapsed()
    );
    let meta = std::fs::read_to_string(lab.dir.join("killed/meta.json")).unwrap();
    assert!(
        meta.contains(&killed),
        "meta.json does not name the lost worker: {meta}"
    );
    // The other two tear down at once.
    let start = Instant::now();
    while (1..=2).any(|i| !lab.made_in(i).is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{}\n{}",
            lab.worker_log(1),
            lab.worker_log(2)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The killed one's part is there until a worker starts again on its
    // machine and removes it.
    assert!(!lab.made_in(3).is_empty());
    lab.start_worker(3);
    assert!(
        lab.worker_log(3).contains("left by a worker that died"),
        "{}",
        lab.worker_log(3)
    );
    lab.assert_nothing_left();
}

/// The processes whose parent is `pid`, by name.
fn children_of(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(head.split_once(" (").map(|(_, c)| c.to_string()).unwrap_or_default());
        }
    }
    out
}

#[test]
fn a_coordinator_killed_mid_call_leaves_the_worker_alive_and_nothing_running() {
    let mut lab = Lab::new("t");
    lab.start_worker(1);
    let inv = lab.inventory("creds", &format!("workers = [\"{}:7700\"]", lab.addr(1)));
    // 100 pings at 0.2 s from each host: a call of 20 s.
    let mut coordinator = lab.start_run(
        "experiment = \"net\"\ntopology = \"linear,2\"\nping_count = 100\n",
        &inv,
        "pings",
    );
    let worker = lab.workers[0].as_ref().unwrap().id();
    let start = Instant::now();
    while !children_of(worker).iter().any(|c| c == "ping") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no ping started: {}",
            lab.worker_log(1)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The coordinator dies with the call in flight and its replies unread.
    let _ = coordinator.kill();
    let _ = coordinator.wait();
    let killed = Instant::now();
    while !children_of(worker).is_empty() || !lab.made_in(1).is_empty() || !lab.worker_log(1).contains("torn down") {
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "2 s after the coordinator died: children {:?}, made {:?}\n{}",
            children_of(worker),
            lab.made_in(1),
            lab.worker_log(1)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        lab.workers[0].as_mut().unwrap().try_wait().unwrap().is_none(),
        "the worker died: {}",
        lab.worker_log(1)
    );
    lab.assert_nothing_left();
}

/// sdnlab's controller on the underlay (the test's own namespace), killed on drop.
struct Controller(Child);

impl Controller {
    fn start(addr: &str) -> Controller {
        Controller::start_with(addr, &["--no-rest"])
    }

    /// With `args` of `sdnlab controller` besides its listening address.
    fn start_with(addr: &str, args: &[&str]) -> Controller {
        let mut c = Command::new(BIN);
        c.args(["controller", "--listen", addr])
            .args(args)
            .stderr(Stdio::null());
        Controller::listening(c, addr)
    }

    /// `cmd` started, once something listens on `addr` (an OpenFlow
    /// listener: the controller's, or a switch's).
    fn listening(mut cmd: Command, addr: &str) -> Controller {
        let c = Controller(cmd.stdout(Stdio::null()).spawn().unwrap());
        let start = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(start.elapsed() < Duration::from_secs(20), "nothing listened on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_controller_benchmark_spreads_its_switches_and_the_shards_add_up() {
    let mut lab = Lab::new("c");
    for i in 1..=3 {
        lab.start_worker(i);
    }
    let target = format!("10.{}.0.254:16653", lab.subnet);
    let _ctl = Controller::start(&target);
    let inv = lab.inventory("creds", &lab.listed());
    let out = lab.dir.join("ctl");
    let cbench = format!("--target {target} --ofp 1.3 --switches 7 --macs 100 --trials 2 --loops 2 --loop-ms 300 --warmup 1 --cooldown-ms 100");
    let (_, samples) = bench_ctl_ok(&lab, &cbench, "ctl");
    for trial in 0..2 {
        let shards: Vec<&serde_json::Value> = samples
            .iter()
            .filter(|s| s["kind"] == "shard" && s["trial"] == trial)
            .collect();
        assert_eq!(shards.len(), 3, "trial {trial}: {samples:?}");
        // Seven switches: 3, 2 and 2, datapath ids 1-3, 4-5, 6-7.
        let layout: Vec<(f64, f64)> = shards
            .iter()
            .map(|s| {
                (
                    s["values"]["switches"].as_f64().unwrap(),
                    s["values"]["first_dpid"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(layout, [(3.0, 1.0), (2.0, 4.0), (2.0, 6.0)]);
        let t = samples
            .iter()
            .find(|s| s["kind"] == "trial" && s["trial"] == trial)
            .unwrap();
        let matched = t["values"]["matched_per_s"].as_f64().unwrap();
        let sum: f64 = shards
            .iter()
            .map(|s| s["values"]["matched_per_s"].as_f64().unwrap())
            .sum();
        assert!(matched > 0.0, "{t}");
        assert!(
            (matched - sum).abs() <= 1e-6 * matched,
            "trial {trial}: {matched} merged, {sum} over the shards"
        );
        // Every response matched to its request, none lost.
        assert_eq!(t["values"]["unmatched"].as_f64().unwrap(), 0.0, "{t}");
        assert_eq!(t["values"]["sessions_lost"].as_f64().unwrap(), 0.0, "{t}");
        for s in &shards {
            assert!(
                s["values"]["matched_per_s"].as_f64().unwrap() > 0.0,
                "a shard answered nothing: {s}"
            );
        }
    }
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["parameters"]["workers"].as_array().unwrap().len(), 3, "{meta}");
    // The instrument's own ceiling, taken on the workers with their shards
    // of the load, is on disk and in the run's events.
    let ceiling = samples
        .iter()
        .find(|s| s["kind"] == "ceiling")
        .unwrap_or_else(|| panic!("no ceiling sample: {samples:?}"));
    assert!(
        ceiling["values"]["responses_per_s"].as_f64().unwrap() > 0.0,
        "{ceiling}"
    );
    assert!(
        meta["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("ceiling over 3 worker(s)")),
        "{meta}"
    );
    // The loss-free rate search, each round's load shared out over the
    // workers: rounds on disk, a rate found, the ceiling taken there too.
    let rate = format!(
        "--test rate --target {target} --ofp 1.3 --switches 6 --macs 100 --trials 1 --loops 1 --loop-ms 300 --warmup 0"
    );
    let (_, samples) = bench_ctl_ok(&lab, &rate, "rate");
    let out = lab.dir.join("rate");
    let rounds: Vec<&serde_json::Value> = samples.iter().filter(|s| s["kind"] == "round").collect();
    assert!(rounds.len() >= 2, "{samples:?}");
    assert!(
        rounds.iter().all(|r| r["values"]["sent_per_s"].as_f64().unwrap() > 0.0),
        "{rounds:?}"
    );
    let found = samples
        .iter()
        .find(|s| s["kind"] == "trial")
        .unwrap_or_else(|| panic!("no trial: {samples:?}"));
    assert!(found["values"]["loss_free_per_s"].as_f64().unwrap() > 0.0, "{found}");
    assert!(samples.iter().any(|s| s["kind"] == "ceiling"), "{samples:?}");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["parameters"]["workers"].as_array().unwrap().len(), 3, "{meta}");
    // A flood from the workers against the controller while two
    // well-behaved switches on this machine measure it.
    let dos = format!("--test dos --target {target} --ofp 1.3 --switches 2 --attackers 6 --macs 100 --trials 1 --loops 2 --loop-ms 300 --warmup 1");
    let (_, samples) = bench_ctl_ok(&lab, &dos, "dos");
    let phase = |name: &str| {
        samples
            .iter()
            .find(|s| s["scenario"] == name)
            .unwrap_or_else(|| panic!("no {name}: {samples:?}"))
    };
    assert!(phase("alone")["values"]["matched_per_s"].as_f64().unwrap() > 0.0);
    let under = phase("under attack");
    assert!(under["values"]["matched_per_s"].as_f64().unwrap() > 0.0, "{under}");
    assert!(
        under["values"]["attackers_answered_per_s"].as_f64().unwrap() > 0.0,
        "{under}"
    );
    let log: String = (1..=3).map(|i| lab.worker_log(i)).collect();
    assert!(!log.contains("failed"), "{log}");
    let o = bench_ctl(&lab, &format!("{dos} --syn-flood-pps 100"), "dos-syn");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--syn-flood-pps"), "{}", text(&o.stderr));
    // RFC 8456's topology discovery on a fabric spread over the workers:
    // each runs its part of the leaf-spine, the links between parts carried
    // between the workers' addresses, and the controller (topology app, its
    // view read through its REST API from here) sees every link.
    let topo_target = format!("10.{}.0.254:16654", lab.subnet);
    let rest = std::net::SocketAddr::from(([127, 0, 0, 1], common::free_port()));
    let _topo = Controller::start_with(
        &topo_target,
        &["--app", "topology", "--rest", &rest.to_string(), "--workers", "1"],
    );
    let discovery = format!(
        "--test discovery --target {topo_target} --northbound sdnlab:{rest} --fabric leaf-spine,2,4,1 --trials 2 --td-s 15 --ofp 1.3"
    );
    let (_, samples) = bench_ctl_ok(&lab, &discovery, "discovery");
    let trials = of_kind(&samples, "trial");
    assert_eq!(trials.len(), 2, "{samples:?}");
    for t in &trials {
        let v = &t["values"];
        assert!(v["discovery_s"].as_f64().unwrap() > 0.0, "{t}");
        assert_eq!(v["links_seen"], v["links"], "{t}");
        assert_eq!(v["connected"].as_f64(), Some(6.0), "{t}");
        // What one part sent another took: nothing lost between them.
        assert_eq!(v["frames_lost_between_parts"].as_f64(), Some(0.0), "{t}");
    }
    let parts = of_kind(&samples, "shard");
    assert_eq!(parts.len(), 6, "two trials of three parts: {samples:?}");
    for p in &parts {
        let v = &p["values"];
        // Two switches each; every part has links to another, and took
        // frames over them; nothing came from elsewhere.
        assert_eq!(v["switches"].as_f64(), Some(2.0), "{p}");
        assert!(v["frames_from_other_parts"].as_f64().unwrap() > 0.0, "{p}");
        assert!(v["lldp_packet_ins"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(v["refused_datagrams"].as_f64(), Some(0.0), "{p}");
    }
    // RFC 8456's topology change detection on the same spread fabric: the
    // first spine's link, then the whole spine, fail (its neighbours on
    // the other workers told so); the view loses just those links, and
    // the controller's next probe is seen on a worker's clock.
    let change = format!(
        "--test change-detection --target {topo_target} --northbound sdnlab:{rest} --fabric leaf-spine,2,4,1 --trials 1 --td-s 15 --ofp 1.3"
    );
    let (_, samples) = bench_ctl_ok(&lab, &change, "change");
    let trials = of_kind(&samples, "trial");
    assert_eq!(trials.len(), 2, "{samples:?}");
    for t in &trials {
        let v = &t["values"];
        let lost = if t["scenario"].as_str().unwrap().contains("link down") {
            2.0
        } else {
            8.0
        };
        assert_eq!(v["links_after"].as_f64(), Some(16.0 - lost), "{t}");
        assert!(v["detect_view_s"].as_f64().unwrap() > 0.0, "{t}");
        assert!(v["detect_probe_s"].as_f64().unwrap() > 0.0, "{t}");
    }
    // sdnlab's own cluster on the workers: its etcd on the first, one
    // member on each (on the worker's address), the switches spread over
    // the workers connecting to every member. Mastership settles before
    // the loops, every member masters switches and answers, and nothing
    // of the cluster is left on the workers afterwards.
    let clustered =
        "--cluster 3 --ofp 1.3 --switches 6 --macs 100 --trials 1 --loops 2 --loop-ms 300 --warmup 1 --cooldown-ms 100";
    let (_, samples) = bench_ctl_ok(&lab, clustered, "cluster");
    let trials = of_kind(&samples, "trial");
    assert_eq!(trials.len(), 1, "{samples:?}");
    let v = &trials[0]["values"];
    assert_eq!(v["cluster_size"].as_f64(), Some(3.0), "{v}");
    assert_eq!(v["unsettled"].as_f64(), Some(0.0), "{v}");
    assert_eq!(v["without_master"].as_f64(), Some(0.0), "{v}");
    assert_eq!(v["sessions_lost"].as_f64(), Some(0.0), "{v}");
    assert!(v["matched_per_s"].as_f64().unwrap() > 0.0, "{v}");
    let members = of_kind(&samples, "member");
    assert_eq!(members.len(), 3, "{samples:?}");
    let masters: Vec<f64> = members
        .iter()
        .map(|m| m["values"]["masters"].as_f64().unwrap())
        .collect();
    assert_eq!(
        masters.iter().sum::<f64>(),
        6.0,
        "six switches, one master each: {members:?}"
    );
    for m in &members {
        assert!(m["values"]["masters"].as_f64().unwrap() >= 1.0, "{m}");
        assert!(m["values"]["first_answers"].as_f64().unwrap() > 0.0, "{m}");
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.dir.join("cluster").join("meta.json")).unwrap()).unwrap();
    let placed = &meta["parameters"]["cluster_placement"];
    let placed_members = placed["members"].as_array().unwrap();
    assert_eq!(placed_members.len(), 3, "{placed}");
    let mut addresses = Vec::new();
    for (i, m) in placed_members.iter().enumerate() {
        // Member cI on worker I, listening on that worker's address.
        let openflow: std::net::SocketAddr = m["openflow"].as_str().unwrap().parse().unwrap();
        assert_eq!(openflow.ip().to_string(), lab.addr(i + 1), "{placed}");
        assert_eq!(m["name"], format!("c{}", i + 1), "{placed}");
        addresses.push(openflow);
    }
    assert!(
        placed["endpoints"][0]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://{}:", lab.addr(1))),
        "{placed}"
    );
    assert!(
        meta["targets"][0]["command"].as_str().unwrap().contains("etcd"),
        "{meta}"
    );
    for a in &addresses {
        assert!(
            std::net::TcpStream::connect_timeout(a, Duration::from_millis(500)).is_err(),
            "member at {a} still listens after the run"
        );
    }
    for (i, w) in lab.workers.iter().enumerate() {
        let left = children_of(w.as_ref().unwrap().id());
        assert!(!left.iter().any(|c| c == "etcd"), "worker {} left {left:?}", i + 1);
    }
    // The session capacity test against the cluster on the workers: a
    // switch is held while its session to each of the three members is.
    let (_, samples) = bench_ctl_ok(
        &lab,
        "--cluster 3 --test sessions --ofp 1.3 --max-sessions 60 --trials 1",
        "cluster-sessions",
    );
    let trials = of_kind(&samples, "trial");
    assert_eq!(trials.len(), 1, "{samples:?}");
    assert_eq!(trials[0]["values"]["sessions_held"].as_f64(), Some(60.0), "{samples:?}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.dir.join("cluster-sessions").join("meta.json")).unwrap()).unwrap();
    assert_eq!(
        meta["parameters"]["cluster_placement"]["members"]
            .as_array()
            .map(Vec::len),
        Some(3),
        "{meta}"
    );
    // RFC 8456's topology discovery on a fabric spread over the workers,
    // against the cluster on them: every switch connects to each member,
    // and the first member's view (read through its REST API from here)
    // holds every link.
    let (_, samples) = bench_ctl_ok(
        &lab,
        "--cluster 3 --test discovery --fabric leaf-spine,2,4,1 --trials 1 --td-s 15 --ofp 1.3",
        "cluster-discovery",
    );
    let trials = of_kind(&samples, "trial");
    assert_eq!(trials.len(), 1, "{samples:?}");
    let v = &trials[0]["values"];
    assert!(v["discovery_s"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["links_seen"], v["links"], "{v}");
    assert!(v["connected"].as_f64().unwrap() >= 6.0, "{v}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.dir.join("cluster-discovery").join("meta.json")).unwrap()).unwrap();
    assert!(
        meta["targets"][0]["command"].as_str().unwrap().contains("app topology"),
        "{meta}"
    );
    // What is not spread yet is refused in one line.
    let o = bench_ctl(&lab, "--cluster 3 --test reactive-paths --ofp 1.3", "cluster-paths");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("without --workers"), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
    // Without a target the workers could not reach: one line, nothing run.
    let o = Command::new(BIN)
        .args(["bench", "ctl", "--workers", inv.to_str().unwrap(), "--no-live"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--target"), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
}

/// The same experiment runs on one machine without workers: netlab alone,
/// every pair reached, iperf3 measured, the HTTP load answered, both flows
/// counted, nothing of the run left.
#[test]
fn the_network_experiment_runs_on_one_machine_too() {
    let dir = std::env::temp_dir().join(format!("sdnlab-net-local-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/experiments/net-leaf-spine.toml");
    let o = Command::new(BIN)
        .args([
            "run",
            example.to_str().unwrap(),
            "--json",
            "--no-live",
            "--out",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["pairs"].as_u64(), v["reached"].as_u64()), (Some(6), Some(6)), "{v}");
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let iperf: serde_json::Value = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["scenario"] == "iperf h1>h3")
        .unwrap_or_else(|| panic!("no iperf sample: {samples}"));
    assert!(iperf["values"]["iperf_mbit_s"].as_f64().unwrap() > 1.0, "{iperf}");
    // Both flows, at once, one clock: every frame, no clock uncertainty,
    // and the intervals add up to the flow.
    for name in ["h1>h3", "h2>h3"] {
        let flow: serde_json::Value = samples
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|s| s["scenario"] == format!("flow {name}"))
            .unwrap_or_else(|| panic!("no flow {name}: {samples}"));
        let v = &flow["values"];
        assert_eq!(
            (v["sent"].as_f64(), v["received"].as_f64()),
            (Some(4000.0), Some(4000.0)),
            "{flow}"
        );
        assert_eq!(v["clock_uncertainty_us"].as_f64(), Some(0.0), "{flow}");
        let frames: f64 = samples
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|s| s["kind"] == "flow-interval" && s["scenario"] == name)
            .map(|s| s["values"]["frames"].as_f64().unwrap())
            .sum();
        assert_eq!(frames, 4000.0, "{name}");
    }
    let http: serde_json::Value = samples
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|s| s["scenario"] == "http h1>h3")
        .unwrap_or_else(|| panic!("no http sample: {samples}"));
    assert_eq!(http["values"]["requests"].as_f64(), Some(40.0), "{http}");
    assert_eq!(http["values"]["errors"].as_f64(), Some(0.0), "{http}");
    // The report shows the intervals as they were measured: a chart per
    // figure, a line per flow.
    let (dom, _) = chromium(&dir.join("report.html"), &dir.join("report.png"));
    let over = dom.split("id=\"over-time\"").nth(1).expect("no 'over time' section");
    let frames = over
        .split("<h3>flow-interval: frames</h3>")
        .nth(1)
        .expect("no chart of the flows' frames")
        .split("</svg>")
        .next()
        .unwrap();
    assert_eq!(frames.matches("<polyline").count(), 2, "{frames}");
    assert!(frames.contains("h1&gt;h3") && frames.contains("h2&gt;h3"), "{frames}");
    assert!(over.contains("<h3>http-interval: p50_ms</h3>"), "{over}");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert!(meta["parameters"]["workers"].is_null(), "{meta}");
    let run = text(&o.stderr);
    assert!(run.contains("on this machine"), "{run}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An OpenFlow switch between two machines, as a hardware switch between a
/// rack's servers: sdnlab's own switch in the test's namespace, its two
/// ports veths whose other ends (`xp`) are in workers 1 and 2's
/// namespaces. `bench dp --dut external --workers` drives it: frames from
/// worker 1's `xp` come back on worker 2's, every RFC 2544 trial and
/// OpenFlow scenario runs there, latencies corrected by the two clocks.
#[test]
fn bench_dp_tests_a_switch_whose_ports_are_on_two_workers() {
    let mut lab = Lab::new("d");
    for i in 1..=2 {
        lab.start_worker(i);
        let end = format!("{}x{i}", lab.tag);
        ok(&[
            "ip",
            "link",
            "add",
            &end,
            "type",
            "veth",
            "peer",
            "name",
            "xp",
            "netns",
            &lab.ns(i),
        ]);
        ok(&["ip", "link", "set", &end, "up"]);
        ok(&["ip", "-n", &lab.ns(i), "link", "set", "xp", "up"]);
    }
    // Worker 3's xp is there but down.
    ok(&[
        "ip",
        "link",
        "add",
        &format!("{}x3", lab.tag),
        "type",
        "veth",
        "peer",
        "name",
        "xp",
        "netns",
        &lab.ns(3),
    ]);
    lab.start_worker(3);
    let of_port = common::free_port();
    let log = std::fs::File::create(lab.dir.join("switch.log")).unwrap();
    let openflow = format!("127.0.0.1:{of_port}");
    let mut switch = Command::new(BIN);
    switch
        .args([
            "switch",
            "--port",
            &format!("{}x1", lab.tag),
            "--port",
            &format!("{}x2", lab.tag),
        ])
        .args(["--listen", &format!("ptcp:{of_port}"), "--threads", "1"])
        .stderr(log);
    let _switch = Controller::listening(switch, &openflow);
    let inv = lab.inventory("creds", &lab.listed());
    let w = |i: usize| format!("{}:7700", lab.addr(i));
    let dp = |ports: &str, extra: &[&str], out: &str| {
        Command::new(BIN)
            .args(["bench", "dp", "--dut", "external", "--external-ports", ports])
            .args(["--external-openflow", &openflow, "--workers", inv.to_str().unwrap()])
            .args("--quick --frames 64 --generator afpacket --receiver afpacket".split_whitespace())
            .args(extra)
            .args(["--json", "--no-live", "--out", lab.dir.join(out).to_str().unwrap()])
            .output()
            .unwrap()
    };
    let ports = format!("{}:xp,{}:xp", w(1), w(2));
    let o = dp(
        &ports,
        &["--tests", "throughput,latency,recovery,tcp,match,insertion"],
        "dp",
    );
    assert!(
        o.status.success(),
        "{}{}\n{}\n{}",
        text(&o.stdout),
        text(&o.stderr),
        lab.worker_log(1),
        lab.worker_log(2)
    );
    let dir = lab.dir.join("dp");
    let trials: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let frame_trials: Vec<&serde_json::Value> = trials.iter().filter(|t| t["sent"].is_u64()).collect();
    assert!(frame_trials.len() >= 5, "{trials:?}");
    for t in &frame_trials {
        // Two workers: their clocks' offset came off, known this well.
        let u = t["clock_uncertainty_us"].as_f64().unwrap();
        assert!(u > 0.0 && u < 1000.0, "{t}");
        // The frames crossed the switch: its port 1 took in what was
        // sent and port 2 gave out what arrived (a test frame nobody
        // else sends).
        let sp = &t["switch_ports"];
        assert!(
            sp["1"]["rx"].as_u64().unwrap() >= t["received"].as_u64().unwrap(),
            "{t}"
        );
        assert!(
            sp["2"]["tx"].as_u64().unwrap() >= t["received"].as_u64().unwrap(),
            "{t}"
        );
    }
    let latency: Vec<&&serde_json::Value> = frame_trials.iter().filter(|t| t["test"] == "latency").collect();
    assert!(!latency.is_empty(), "{trials:?}");
    for t in &latency {
        assert!(t["received"].as_u64().unwrap() > 0, "{t}");
        // (At the throughput rate on a loaded machine, queues hold frames
        // for tens of milliseconds; a clock offset gone wrong would be
        // far out of this.)
        let p50 = t["latency_us"]["p50"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 < 1e6, "{t}");
    }
    // RFC 2544's recovery needs the receiver's index of the frames that
    // arrived: it came back from worker 2 whole.
    let recovery = frame_trials
        .iter()
        .find(|t| t["test"] == "recovery")
        .expect("a recovery trial");
    assert!(recovery["generator"]["second_phase"].is_array(), "{recovery}");
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let figure = |name: &str| {
        samples
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|s| s["values"][name].is_number())
            .unwrap_or_else(|| panic!("no {name}: {samples}"))
    };
    assert!(figure("throughput_fps")["values"]["throughput_fps"].as_f64().unwrap() > 0.0);
    // Without the index every frame would read as lost and the recovery
    // time as the whole reduced phase (500 ms with --quick).
    let recovery_ms = figure("recovery_ms")["values"]["recovery_ms"].as_f64().unwrap();
    assert!((0.0..500.0).contains(&recovery_ms), "{recovery_ms}");
    assert!(
        trials
            .iter()
            .any(|t| t["test"].as_str().unwrap_or("").starts_with("match:")),
        "{trials:?}"
    );
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["parameters"]["workers"].as_array().unwrap().len(), 3, "{meta}");
    let seen = meta["parameters"]["external_ports_seen"].as_array().unwrap();
    assert_eq!(seen.len(), 2, "{meta}");
    assert!(seen.iter().all(|p| p["name"] == "xp" && p["up"] == true), "{meta}");
    let events = meta["events"].to_string();
    for said in ["known within", "tcp, udp left out", "insertion: the delay"] {
        assert!(events.contains(said), "{said}: {events}");
    }
    // Wrong ends, in one line each, nothing run: a port without its
    // worker, a worker not in the inventory, an interface missing or
    // down there; a switch of ours with --workers; a worker's port
    // without --workers.
    let refused = |o: std::process::Output, says: &str| {
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{says}: {}", text(&o.stdout));
        assert!(err.contains(says), "{says}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    };
    refused(dp("xp,xp", &[], "bad1"), "WORKER:IF");
    refused(
        dp(&format!("10.9.9.9:7700:xp,{}:xp", w(2)), &[], "bad2"),
        "no worker '10.9.9.9:7700'",
    );
    refused(dp(&format!("{}:nosuch,{}:xp", w(1), w(2)), &[], "bad3"), "nosuch");
    refused(dp(&format!("{}:xp,{}:xp", w(1), w(3)), &[], "bad4"), "xp is down");
    let o = Command::new(BIN)
        .args([
            "bench",
            "dp",
            "--dut",
            "sdnlab",
            "--workers",
            inv.to_str().unwrap(),
            "--no-live",
        ])
        .output()
        .unwrap();
    refused(o, "--dut external");
    let o = Command::new(BIN)
        .args([
            "bench",
            "dp",
            "--dut",
            "external",
            "--external-ports",
            &ports,
            "--no-live",
        ])
        .output()
        .unwrap();
    refused(o, "--workers FILE");
    let log: String = (1..=3).map(|i| lab.worker_log(i)).collect();
    assert!(!log.contains("panicked"), "{log}");
}

/// The samples of one kind.
fn of_kind<'a>(samples: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    samples.iter().filter(|s| s["kind"] == kind).collect()
}

/// `bench ctl ARGS` (a line of them) over the lab's three workers into
/// `out`: its output.
fn bench_ctl(lab: &Lab, args: &str, out: &str) -> std::process::Output {
    let inv = lab.inventory("creds", &lab.listed());
    let out = lab.dir.join(out);
    Command::new(BIN)
        .args(["bench", "ctl"])
        .args(args.split_whitespace())
        .args(["--workers", inv.to_str().unwrap()])
        .args(["--json", "--no-live", "--out", out.to_str().unwrap()])
        .output()
        .unwrap()
}

/// `bench_ctl` that must succeed: its JSON and its samples.
fn bench_ctl_ok(lab: &Lab, args: &str, out: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let o = bench_ctl(lab, args, out);
    assert!(
        o.status.success(),
        "{}{}\n{}",
        text(&o.stdout),
        text(&o.stderr),
        lab.worker_log(1)
    );
    let samples = std::fs::read_to_string(lab.dir.join(out).join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (serde_json::from_slice(&o.stdout).unwrap(), samples)
}

/// `bench ctl --test sessions` against `target` with `--max-sessions`.
fn sessions_over(lab: &Lab, target: &str, max: &str, out: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let args = format!("--test sessions --target {target} --ofp 1.3 --max-sessions {max} --trials 1");
    bench_ctl_ok(lab, &args, out)
}

/// The control session capacity test spread over three workers: each opens
/// its share of the sessions, and the total is what the controller held
/// at once. A shard that meets a failure (its worker's own limit here)
/// stops the others; against a controller that runs out of descriptors,
/// every shard fails where it stands, and the shards' counts add up to
/// what it held.
#[test]
fn the_session_capacity_test_counts_what_all_workers_hold_at_once() {
    let mut lab = Lab::new("s");
    for i in 1..=3 {
        lab.start_worker(i);
    }
    let shards_of = |samples: &[serde_json::Value]| -> Vec<(f64, String)> {
        samples
            .iter()
            .filter(|s| s["kind"] == "shard")
            .map(|s| {
                (
                    s["values"]["sessions_held"].as_f64().unwrap(),
                    s["note"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let target = format!("10.{}.0.254:16653", lab.subnet);
    let _ctl = Controller::start(&target);
    let (v, samples) = sessions_over(&lab, &target, "300", "plenty");
    let t = &v["trials"][0];
    assert_eq!(
        (t["held"].as_u64(), t["ended_by"].as_str()),
        (Some(300), Some("limit")),
        "{v}"
    );
    let shards = shards_of(&samples);
    assert_eq!(shards.iter().map(|s| s.0).collect::<Vec<_>>(), [100.0; 3], "{shards:?}");

    // A controller that can open 150 files: fewer sessions than asked for,
    // every shard failing where it stands.
    {
        let target = format!("10.{}.0.254:16654", lab.subnet);
        let c = Command::new("prlimit")
            .args(["--nofile=150:150", BIN, "controller", "--no-rest", "--listen", &target])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _ctl = Controller(c);
        let start = Instant::now();
        while std::net::TcpStream::connect(&target).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the controller did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let (v, samples) = sessions_over(&lab, &target, "600", "few");
        let t = &v["trials"][0];
        let held = t["held"].as_u64().unwrap();
        assert_ne!(t["ended_by"], "limit", "{v}");
        assert!((30..150).contains(&held), "{v}");
        let shards = shards_of(&samples);
        assert_eq!(shards.len(), 3, "{shards:?}");
        assert_eq!(shards.iter().map(|s| s.0).sum::<f64>(), held as f64, "{shards:?}");
        assert!(
            shards.iter().all(|s| s.0 < 200.0),
            "no shard reached its share: {shards:?}"
        );
        assert!(t["detail"].as_str().unwrap().starts_with("worker "), "{v}");
    }

    // One worker that runs out of descriptors ends the test: the others
    // are told to stop, short of their share.
    let pid = lab.workers[2].as_ref().unwrap().id().to_string();
    assert!(Command::new("prlimit")
        .args(["--pid", &pid, "--nofile=60:60"])
        .status()
        .unwrap()
        .success());
    let (v, samples) = sessions_over(&lab, &target, "900", "one-short");
    let t = &v["trials"][0];
    assert_eq!(t["ended_by"], "our open-file limit", "{v}");
    let shards = shards_of(&samples);
    assert!(shards[2].0 < 60.0, "{shards:?}");
    for s in &shards[..2] {
        assert!(s.1.contains("ended by stopped") && s.0 < 300.0, "{shards:?}");
    }
    assert_eq!(
        shards.iter().map(|s| s.0).sum::<f64>(),
        t["held"].as_f64().unwrap(),
        "{shards:?}"
    );
    lab.assert_nothing_left();
}
