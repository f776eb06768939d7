//! `sdnlab net` end to end, as root: every built-in shape with Linux
//! bridges, with Open vSwitch driven by ovs-testcontroller and with sdnlab's
//! own switch (alone, under sdnlab's controller and under os-ken), pingall,
//! iperf3, a link going down and up, teardown, and nothing left behind,
//! also when the `up` process is killed part-way.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn sdnlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdnlab")).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

mod common;
use common::leftovers;

/// A running `sdnlab net up`; torn down (and checked) on drop.
struct Up {
    child: Child,
    id: String,
    summary: String,
}

impl Up {
    fn start(args: &[&str]) -> Up {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["net", "up"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (summary, id, _) = common::until_up(&mut child);
        Up { child, id, summary }
    }

    fn net(&self, args: &[&str]) -> Output {
        let mut all = vec!["net", args[0], "--id", &self.id];
        all.extend_from_slice(&args[1..]);
        sdnlab(&all)
    }

    fn down(mut self) {
        let out = sdnlab(&["net", "down", "--id", &self.id]);
        assert!(out.status.success(), "down: {}", text(&out.stderr));
        let _ = self.child.wait();
        assert_eq!(
            leftovers(&self.id),
            Vec::<String>::new(),
            "run {} left things behind",
            self.id
        );
        self.id.clear();
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if !self.id.is_empty() {
            let _ = sdnlab(&["net", "down", "--id", &self.id]);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// ovs-testcontroller (a C learning switch) on a loopback port of its own.
struct TestController {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl TestController {
    fn start() -> TestController {
        let port = common::free_port();
        let dir = std::env::temp_dir().join(format!("sdnlab-t-tc-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new("ovs-testcontroller")
            .arg(format!("--unixctl={}", dir.join("tc.ctl").display()))
            .arg(format!("ptcp:{port}:127.0.0.1"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ovs-testcontroller missing: run scripts/install-deps.sh");
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "ovs-testcontroller did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        TestController { child, port, dir }
    }
    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for TestController {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Flows, ports and logs of a run's sdnlab switches, to tell why a test failed.
fn sdnlab_switch_state(id: &str) -> String {
    let dir = format!("/run/sdnlab/net/{id}");
    let Ok(state) = std::fs::read_to_string(format!("{dir}/state.json")) else {
        return String::new();
    };
    let state: serde_json::Value = serde_json::from_str(&state).unwrap_or_default();
    let mut out = String::new();
    for sw in state["sdnlab"].as_array().into_iter().flatten() {
        let (name, ofp) = (sw["name"].as_str().unwrap_or(""), sw["ofp"].as_str().unwrap_or(""));
        for what in ["dump-flows", "dump-ports"] {
            let o = Command::new("ovs-ofctl").args(["-O", "OpenFlow13", what, ofp]).output();
            if let Ok(o) = o {
                out.push_str(&format!("--- {name} {what}\n{}{}", text(&o.stdout), text(&o.stderr)));
            }
        }
        let log = std::fs::read_to_string(format!("{dir}/{name}.log")).unwrap_or_default();
        out.push_str(&format!("--- {name} log\n{log}"));
    }
    out
}

const SHAPES: [&str; 4] = ["single,3", "linear,4", "tree,2,2", "leaf-spine,2,2,2"];

/// Pings until every pair answers (learning controllers need a moment), at most `within`.
fn pingall_until_complete(up: &Up, within: Duration) -> String {
    let t = Instant::now();
    loop {
        let out = up.net(&["pingall", "--count", "1"]);
        let s = text(&out.stdout);
        if out.status.success() {
            return s;
        }
        assert!(
            t.elapsed() < within,
            "pingall never complete on\n{}\n{s}{}\n{}",
            up.summary,
            text(&out.stderr),
            sdnlab_switch_state(&up.id)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn every_shape_with_linux_bridges() {
    for shape in SHAPES {
        let up = Up::start(&[shape, "--switch", "bridge"]);
        let s = pingall_until_complete(&up, Duration::from_secs(5));
        assert!(s.contains("pairs answered every ping"), "{s}");
        up.down();
    }
}

#[test]
fn every_shape_with_open_vswitch_and_ovs_testcontroller() {
    let tc = TestController::start();
    for shape in SHAPES {
        let up = Up::start(&[shape, "--switch", "ovs", "--controller", &tc.addr()]);
        assert!(up.summary.contains("ovs-vswitchd pid"), "{}", up.summary);
        pingall_until_complete(&up, Duration::from_secs(20));
        up.down();
    }
}

#[test]
fn sdnlab_switches_under_ovs_testcontroller_in_openflow_10() {
    let tc = TestController::start();
    for shape in ["linear,4", "tree,2,2"] {
        let up = Up::start(&[shape, "--switch", "sdnlab", "--controller", &tc.addr()]);
        pingall_until_complete(&up, Duration::from_secs(20));
        up.down();
    }
}

#[test]
fn every_shape_with_the_sdnlab_switch_alone_and_under_the_built_in_controller() {
    for shape in SHAPES {
        // Without a controller the switch floods on a miss (netlab leaves
        // loop links down); with one, the controller's rules decide.
        let up = Up::start(&[shape, "--switch", "sdnlab"]);
        assert!(up.summary.contains("(Sdnlab)"), "{}", up.summary);
        pingall_until_complete(&up, Duration::from_secs(10));
        up.down();
        let up = Up::start(&[shape, "--switch", "sdnlab", "--app", "l2-learning"]);
        pingall_until_complete(&up, Duration::from_secs(20));
        up.down();
    }
}

/// An emulated sdnlab switch listens for tools on a Unix socket in the
/// run directory, root's only: another local user cannot reprogram it
/// (it listened on a loopback TCP port, open to every user).
#[test]
fn an_unprivileged_user_cannot_reach_an_emulated_switchs_listener() {
    let up = Up::start(&["linear,2", "--switch", "sdnlab"]);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("/run/sdnlab/net/{}/state.json", up.id)).unwrap())
            .unwrap();
    let switches = state["sdnlab"].as_array().unwrap();
    assert_eq!(switches.len(), 2);
    for sw in switches {
        let ofp = sw["ofp"].as_str().unwrap();
        assert!(ofp.starts_with("unix:"), "{ofp}");
        // root's tools get in...
        let o = Command::new("ovs-ofctl").args(["show", ofp]).output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        // ...nobody's do not, nor can they add a flow.
        let o = Command::new("setpriv")
            .args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "ovs-ofctl",
                "add-flow",
                ofp,
                "actions=drop",
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "nobody reprogrammed {ofp}");
        assert!(text(&o.stderr).contains("Permission denied"), "{}", text(&o.stderr));
        let o = Command::new("ovs-ofctl").args(["dump-flows", ofp]).output().unwrap();
        assert!(!text(&o.stdout).contains("actions=drop"), "{}", text(&o.stdout));
    }
    up.down();
}

/// `--ovsdb`: one sdnlab switch process runs every switch, configured
/// through the run's own ovsdb-server by ovs-vsctl as the `ovs` kind is;
/// what ovs-vsctl reads back says each bridge reached its controller.
#[test]
fn sdnlab_switches_managed_through_the_runs_ovsdb_server() {
    let up = Up::start(&["tree,2,2", "--switch", "sdnlab", "--ovsdb", "--app", "l2-learning"]);
    assert!(up.summary.contains("sdnlab switch --ovsdb pid"), "{}", up.summary);
    pingall_until_complete(&up, Duration::from_secs(20));
    let db = format!("--db=unix:/run/sdnlab/net/{}/ovs/db.sock", up.id);
    let out = Command::new("ovs-vsctl")
        .args([&db, "--bare", "--columns=is_connected", "list", "Controller"])
        .output()
        .unwrap();
    let states: Vec<String> = text(&out.stdout).split_whitespace().map(str::to_string).collect();
    assert_eq!(states, vec!["true"; 3], "{}", text(&out.stderr));
    let out = Command::new("ovs-vsctl")
        .args([&db, "--bare", "--columns=ofport", "list", "Interface"])
        .output()
        .unwrap();
    assert!(
        !text(&out.stdout).contains("-1"),
        "a port failed:\n{}",
        text(&out.stdout)
    );
    up.down();
}

/// The python of os-ken 1.4.1, the last release with its apps (the
/// project's script creates the venv if absent).
fn osken_python() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/install-osken-1.4.1.sh"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// A second of iperf3 TCP from the chain's first host to its last gets
/// through at Gbit/s.
fn iperf_crosses(up: &Up) {
    let out = up.net(&["iperf", "h1", "h4", "--seconds", "1"]);
    assert!(
        out.status.success() && text(&out.stdout).contains("Gbit/s received"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_chain_of_four_sdnlab_switches_under_os_ken_simple_switch_13_and_under_sdnlab() {
    let port = common::free_port();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut osken = Command::new(osken_python())
        .arg(format!("{root}/scripts/peers/osken_rest_run.py"))
        .args([
            "--ofp-tcp-listen-port",
            &port.to_string(),
            "--ofp-listen-host",
            "127.0.0.1",
        ])
        .arg("os_ken.app.simple_switch_13")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed() < Duration::from_secs(60), "os-ken did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    let up = Up::start(&[
        "linear,4",
        "--switch",
        "sdnlab",
        "--controller",
        &format!("127.0.0.1:{port}"),
    ]);
    pingall_until_complete(&up, Duration::from_secs(30));
    iperf_crosses(&up);
    up.down();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(osken.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = osken.wait();
    let up = Up::start(&["linear,4", "--switch", "sdnlab", "--app", "l2-learning"]);
    pingall_until_complete(&up, Duration::from_secs(20));
    iperf_crosses(&up);
    up.down();
}

#[test]
fn iperf_and_a_link_that_goes_down_and_comes_back() {
    for kind in ["bridge", "ovs", "sdnlab"] {
        let up = Up::start(&["linear,2", "--switch", kind]);
        pingall_until_complete(&up, Duration::from_secs(10));
        let out = up.net(&["iperf", "h1", "h2", "--seconds", "1"]);
        let s = text(&out.stdout);
        assert!(
            out.status.success() && s.contains("Gbit/s received"),
            "{kind}: {s}{}",
            text(&out.stderr)
        );
        let gbps: f64 = s
            .split(": ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(gbps > 0.01, "{kind}: {s}");

        assert!(up.net(&["link", "s1", "s2", "down"]).status.success());
        let out = up.net(&["pingall", "--count", "1"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{kind}: pings crossed a link that is down:\n{}",
            text(&out.stdout)
        );
        assert!(text(&out.stdout).contains("X"));
        let ping = up.net(&["exec", "h1", "--", "ping", "-c", "1", "-W", "1", "10.0.0.2"]);
        assert!(!ping.status.success());
        assert!(up.net(&["link", "s1", "s2", "up"]).status.success());
        pingall_until_complete(&up, Duration::from_secs(10));
        // A host's name is its address, as at the prompt.
        let ping = up.net(&["exec", "h1", "--", "ping", "-c", "1", "-W", "2", "h2"]);
        assert!(
            ping.status.success() && text(&ping.stdout).contains("PING 10.0.0.2"),
            "{kind}: {}",
            text(&ping.stdout)
        );
        up.down();
    }
}

fn run_of_pid(pid: u32, within: Duration) -> Option<String> {
    let t = Instant::now();
    while t.elapsed() < within {
        for e in std::fs::read_dir("/run/sdnlab/net").into_iter().flatten().flatten() {
            if let Ok(b) = std::fs::read(e.path().join("state.json")) {
                let v: serde_json::Value = serde_json::from_slice(&b).unwrap_or_default();
                if v["pid"].as_u64() == Some(pid as u64) {
                    return v["id"].as_str().map(String::from);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

#[test]
fn killing_up_part_way_leaves_nothing_behind() {
    // SIGTERM while the network is still being built: `up` finishes, then tears down.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up", "leaf-spine,2,4,6", "--switch", "ovs"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = run_of_pid(child.id(), Duration::from_secs(10)).expect("run state never appeared");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "up did not exit cleanly on SIGTERM: {status}");
    assert_eq!(leftovers(&id), Vec::<String>::new());

    // SIGKILL: nothing can run in `up`, so `down --id` removes it from the state file.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["net", "up", "leaf-spine,2,4,6", "--switch", "ovs"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = run_of_pid(child.id(), Duration::from_secs(10)).expect("run state never appeared");
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = sdnlab(&["net", "down", "--id", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(leftovers(&id), Vec::<String>::new());
}

#[test]
fn bad_topologies_get_one_line_per_problem() {
    let dir = std::env::temp_dir().join(format!("sdnlab-t-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(
        &f,
        "[[host]]\nname = \"h1\"\nip = \"10.0.0.1/24\"\n[[host]]\nname = \"h2\"\nip = \"10.0.0.1/24\"\n[[switch]]\nname = \"s1\"\n[[link]]\na = \"h1\"\nb = \"s1\"\ndelay = \"5ms\"\n[[link]]\na = \"h2\"\nb = \"s7\"\n",
    )
    .unwrap();
    let out = sdnlab(&["net", "up", f.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.lines().count() >= 3, "{err}");
    assert!(err.lines().all(|l| l.starts_with("sdnlab: ")), "{err}");
    for want in ["given to both 'h1' and 'h2'", "unknown node 's7'", "no netem"] {
        assert!(err.contains(want), "missing {want}: {err}");
    }
    let out = sdnlab(&["net", "up", "ring,4"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).lines().count(), 1);
    let out = sdnlab(&[
        "net",
        "up",
        "linear,2",
        "--switch",
        "bridge",
        "--controller",
        "127.0.0.1:6653",
    ]);
    assert!(text(&out.stderr).contains("--switch ovs"));
}

#[test]
fn ovs_switches_with_the_built_in_controller() {
    for app in ["l2-learning", "hub"] {
        let up = Up::start(&["linear,3", "--switch", "ovs", "--app", app]);
        pingall_until_complete(&up, Duration::from_secs(15));
        up.down();
    }
    let out = sdnlab(&["net", "up", "single,2", "--app", "l2-learning"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--switch ovs"));
    let out = sdnlab(&["net", "up", "single,2", "--switch", "ovs", "--app", "nonesuch"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown app 'nonesuch'"));
}
