//! The router builds of the switch alone (`scripts/build-router.sh`:
//! aarch64 and armv7, static glibc) run under Debian's qemu-user on this
//! machine: each forwards between two veths of this test's own (prefix
//! `rtb`) so the hosts ping through it, and ovs-ofctl installs and dumps
//! its flows. Sizes are printed, and the aarch64 binary is held to the
//! 4 MB budget. (qemu-user refuses the AF_PACKET ring's socket options, so
//! the switch says so and uses plain sockets there; on a router's own
//! kernel it takes the ring.)

mod common;
use common::{text, Hosts};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn build(arch: &str) -> (String, u64) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/build-router.sh"))
        .arg(arch)
        .output()
        .unwrap();
    assert!(out.status.success(), "build-router.sh {arch}: {}", text(&out.stderr));
    let line = text(&out.stdout);
    let (path, size) = line.trim().rsplit_once(' ').expect("PATH SIZE");
    (path.to_string(), size.parse().unwrap())
}

fn check_under_qemu(arch: &str, qemu: &str, budget: Option<u64>) {
    let (bin, size) = build(arch);
    println!("sdnlab-switch for {arch}: {size} bytes ({:.2} MB)", size as f64 / 1e6);
    if let Some(b) = budget {
        assert!(size < b, "{arch}: {size} bytes, over the {b}-byte budget");
    }
    let hosts = Hosts::new("rtb", &arch[..2]);
    let port = common::free_port();
    let log = std::env::temp_dir().join(format!("sdnlab-rtb-{arch}-{}.log", std::process::id()));
    let mut sw = Command::new(qemu)
        .arg(&bin)
        .args(["--port", &hosts.port(1), "--port", &hosts.port(2)])
        .args(["--listen", &format!("ptcp:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{qemu}: {e} (scripts/install-deps.sh installs qemu-user-static)"));
    let target = format!("tcp:127.0.0.1:{port}");
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t.elapsed() > Duration::from_secs(30) || sw.try_wait().unwrap().is_some() {
            let _ = sw.kill();
            panic!(
                "{arch}: the switch did not listen: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ofctl = |args: &[&str]| {
        let o = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", args[0], &target])
            .args(&args[1..])
            .output()
            .unwrap();
        assert!(o.status.success(), "ovs-ofctl {args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    };
    // Secure by default: nothing crosses until rules are installed.
    assert!(!hosts.ping(1), "{arch}: a ping crossed a switch without rules");
    ofctl(&["add-flow", "in_port=1,actions=output:2"]);
    ofctl(&["add-flow", "in_port=2,actions=output:1"]);
    assert!(hosts.ping(3), "{arch}: no ping through the switch");
    let flows = ofctl(&["dump-flows"]);
    let counted: u64 = flows
        .lines()
        .filter_map(|l| l.split("n_packets=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum();
    assert!(counted >= 6, "{arch}: the rules counted {counted} packets:\n{flows}");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(sw.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let status = sw.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(status.success(), "{arch}: {said}");
    assert!(said.contains("stopped"), "{arch}: {said}");
}

#[test]
fn the_aarch64_build_forwards_under_qemu_within_its_size_budget() {
    check_under_qemu("aarch64", "qemu-aarch64-static", Some(4_000_000));
}

#[test]
fn the_armv7_build_forwards_under_qemu() {
    check_under_qemu("armv7", "qemu-arm-static", None);
}
