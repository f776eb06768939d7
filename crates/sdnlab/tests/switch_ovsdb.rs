//! `sdnlab switch --ovsdb` managed by Debian's own ovsdb-server and
//! ovs-vsctl, as ovs-vswitchd is (as root; namespaces and interfaces of
//! this test's own, prefix `svd`): a bridge with two veth ports and
//! sdnlab's learning controller; hosts ping once the controller installs
//! flows; `list Interface` shows the statistics growing; `del-port` takes
//! the port away (ovs-ofctl, through the bridge's management socket, no
//! longer lists it); the switch restarted against the same database comes
//! back with the same ports, numbers and datapath id; columns and interface
//! types it does not implement are reported, not fatal. Malformed updates,
//! which a real server never sends, are in `crates/switchd/tests/ovsdb_peer.rs`.

mod common;
use common::{free_port, sh, text, Hosts};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Lab {
    dir: PathBuf,
    bridge: String,
    ovsdb: Child,
    controller: Child,
    switch: Option<Child>,
}

impl Lab {
    fn db(&self) -> String {
        format!("--db=unix:{}", self.dir.join("db.sock").display())
    }

    /// ovs-vsctl against the test's database; its output, or the failure.
    fn vsctl(&self, args: &[&str]) -> Result<String, String> {
        let o = Command::new("ovs-vsctl")
            .arg(self.db())
            .arg("--timeout=20")
            .args(args)
            .output()
            .unwrap();
        match o.status.success() {
            true => Ok(text(&o.stdout).trim().to_string()),
            false => Err(text(&o.stderr)),
        }
    }

    fn get(&self, args: &[&str]) -> String {
        let mut v = vec!["get"];
        v.extend(args);
        self.vsctl(&v).unwrap_or_else(|e| panic!("ovs-vsctl get {args:?}: {e}"))
    }

    /// ovs-ofctl BRIDGE, which finds the bridge's socket in $OVS_RUNDIR.
    fn ofctl(&self, args: &[&str]) -> String {
        let o = Command::new("ovs-ofctl")
            .env("OVS_RUNDIR", &self.dir)
            .args(["-O", "OpenFlow13", args[0], &self.bridge])
            .args(&args[1..])
            .output()
            .unwrap();
        assert!(o.status.success(), "ovs-ofctl {args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    }

    fn start_switch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("switch.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args([
                "switch",
                "--ovsdb",
                &format!("unix:{}", self.dir.join("db.sock").display()),
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.switch = Some(child);
    }

    fn stop_switch(&mut self) {
        if let Some(mut c) = self.switch.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            assert!(
                c.wait().unwrap().success(),
                "the switch did not stop cleanly:\n{}",
                self.log()
            );
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("switch.log")).unwrap_or_default()
    }

    fn wait_for(&self, what: &str, mut f: impl FnMut() -> bool) {
        let t = Instant::now();
        while !f() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{what}: not in 20 s; switch log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in [self.switch.as_mut(), Some(&mut self.controller), Some(&mut self.ovsdb)]
            .into_iter()
            .flatten()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = sh(&["ip", "link", "del", &self.bridge]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lab() -> Lab {
    let dir = std::env::temp_dir().join(format!("sdnlab-svd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ovsdb = netlab::ovs::start_ovsdb(&dir)
        .unwrap_or_else(|e| panic!("{e} (scripts/install-deps.sh installs openvswitch-switch)"));
    let cport = free_port();
    let controller = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args([
            "controller",
            "--listen",
            &format!("127.0.0.1:{cport}"),
            "--app",
            "l2-learning",
        ])
        .args(["--no-rest", "--no-live"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lab = Lab {
        dir,
        bridge: format!("svdbr{}", std::process::id() % 1000),
        ovsdb,
        controller,
        switch: None,
    };
    lab.vsctl(&[
        "--no-wait",
        "set",
        "Open_vSwitch",
        ".",
        "other_config:stats-update-interval=1000",
    ])
    .unwrap();
    lab.wait_for("the controller", || {
        std::net::TcpStream::connect(("127.0.0.1", cport)).is_ok()
    });
    // Kept for the test: the controller's address.
    std::fs::write(lab.dir.join("controller"), format!("tcp:127.0.0.1:{cport}")).unwrap();
    lab
}

/// The (one) Controller row's is_connected.
fn connected(lab: &Lab) -> bool {
    lab.vsctl(&["--bare", "--columns=is_connected", "list", "Controller"])
        .ok()
        .as_deref()
        == Some("true")
}

fn ofport(lab: &Lab, iface: &str) -> i64 {
    lab.get(&["Interface", iface, "ofport"]).parse().unwrap()
}

fn rx_packets(lab: &Lab, iface: &str) -> u64 {
    lab.vsctl(&["get", "Interface", iface, "statistics:rx_packets"])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn ovs_vsctl_manages_the_switch_as_it_manages_open_vswitch() {
    let hosts = Hosts::new("svd", "a");
    let mut lab = lab();
    let (p1, p2) = (hosts.port(1), hosts.port(2));
    let br = lab.bridge.clone();
    let controller = std::fs::read_to_string(lab.dir.join("controller")).unwrap();
    lab.start_switch();
    lab.vsctl(&[
        "add-br",
        &br,
        "--",
        "set-fail-mode",
        &br,
        "secure",
        "--",
        "set",
        "Bridge",
        &br,
        "other_config:datapath-id=00000000000000d1",
        "--",
        "add-port",
        &br,
        &p1,
        "--",
        "add-port",
        &br,
        &p2,
        "--",
        "set-controller",
        &br,
        &controller,
    ])
    .unwrap_or_else(|e| panic!("add-br: {e}\n{}", lab.log()));
    lab.wait_for("Controller.is_connected", || connected(&lab));
    assert_eq!(lab.get(&["Bridge", &br, "datapath_id"]), "\"00000000000000d1\"");
    let (n1, n2) = (ofport(&lab, &p1), ofport(&lab, &p2));
    assert!(n1 > 0 && n2 > 0 && n1 != n2, "ofports {n1} {n2}");
    assert_eq!(lab.get(&["Interface", &p1, "link_state"]), "up");
    assert_eq!(lab.get(&["Interface", &p1, "error"]), "[]");

    // The controller learns the hosts and installs flows; they ping.
    lab.wait_for("a ping through the switch", || hosts.ping(1));
    let flows = lab.ofctl(&["dump-flows"]);
    assert!(flows.contains("actions=output:"), "no learned flow:\n{flows}");
    let desc = lab.ofctl(&["dump-ports-desc"]);
    assert!(
        desc.contains(&format!("{n1}({p1})")) && desc.contains(&format!("{n2}({p2})")),
        "{desc}"
    );

    // Statistics, written every second here, grow with traffic.
    let before = rx_packets(&lab, &p1);
    assert!(hosts.ping(5));
    lab.wait_for("rx_packets growing", || rx_packets(&lab, &p1) >= before + 5);

    // What the switch does not implement is said once, and is not fatal.
    lab.vsctl(&["set", "Port", &p1, "tag=10"]).unwrap();
    lab.vsctl(&["set", "Port", &p1, "tag=11"]).unwrap();
    let err = lab
        .vsctl(&[
            "add-port",
            &br,
            "svdvx0",
            "--",
            "set",
            "Interface",
            "svdvx0",
            "type=vxlan",
        ])
        .err()
        .unwrap_or_default();
    // ovs-vsctl reports the interface's error (exit status aside, as with OVS).
    let vx_err = lab.get(&["Interface", "svdvx0", "error"]);
    assert!(vx_err.contains("\\\"vxlan\\\" is not implemented"), "{vx_err} {err}");
    assert_eq!(ofport(&lab, "svdvx0"), -1);
    lab.vsctl(&["del-port", &br, "svdvx0"]).unwrap();
    assert!(hosts.ping(1), "the switch stopped forwarding");

    // del-port takes the port off the switch.
    lab.vsctl(&["del-port", &br, &p2]).unwrap();
    let desc = lab.ofctl(&["dump-ports-desc"]);
    assert!(!desc.contains(&p2), "{p2} still on the switch:\n{desc}");
    assert!(desc.contains(&p1));
    assert!(!hosts.ping(1), "pinged through a port that was removed");
    lab.vsctl(&["add-port", &br, &p2]).unwrap();
    assert_eq!(ofport(&lab, &p2), n2, "the port came back under another number");
    lab.wait_for("a ping after add-port", || hosts.ping(1));

    // Restarted against the same database: the same bridge, numbers, id.
    lab.stop_switch();
    assert!(
        !lab.dir.join(format!("{br}.mgmt")).exists(),
        "management socket left behind"
    );
    lab.start_switch();
    lab.wait_for("Controller.is_connected after a restart", || {
        lab.dir.join(format!("{br}.mgmt")).exists() && connected(&lab)
    });
    let desc = lab.ofctl(&["dump-ports-desc"]);
    assert!(
        desc.contains(&format!("{n1}({p1})")) && desc.contains(&format!("{n2}({p2})")),
        "{desc}"
    );
    assert!(lab.ofctl(&["dump-desc"]).contains("00000000000000d1"));
    lab.wait_for("a ping after the restart", || hosts.ping(1));

    // del-br: the bridge, its internal port and its socket go.
    lab.vsctl(&["del-br", &br]).unwrap();
    assert!(!lab.dir.join(format!("{br}.mgmt")).exists());
    assert!(
        !Path::new(&format!("/sys/class/net/{br}")).exists(),
        "internal port left"
    );
    lab.stop_switch();
    let log = lab.log();
    assert_eq!(
        log.matches(&format!("Port.tag (row {p1}) is not implemented")).count(),
        2,
        "once per run:\n{log}"
    );
    assert!(log.contains("interface type \"vxlan\" is not implemented"), "{log}");
}
