//! The controller's listeners under a flood of connections that never say
//! HELLO: with a limit of 8 connections, at most 8 are held, the oldest
//! half-open ones make room, and a real switch handshake still gets in.

use ctlbench::switch::{replies, Identity};
use ofwire::{Body, Framer, Message};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A switch's side of the handshake over `s` (OpenFlow 1.3), answering
/// whatever the controller asks the way the benchmark's emulated switches do.
fn handshake(s: &mut std::net::TcpStream, dpid: u64) {
    let hello = Message::new(
        ofwire::OFP13_VERSION,
        1,
        Body::Hello(ofwire::header::Hello::with_versions(&[4])),
    );
    s.write_all(&hello.to_bytes().unwrap()).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut framer = Framer::default();
    let mut buf = [0u8; 4096];
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        if let Ok(n) = s.read(&mut buf) {
            assert!(n > 0, "the controller closed the switch's connection");
            framer.push(&buf[..n]);
        }
        while let Ok(Some(raw)) = framer.next_message() {
            let Ok(m) = ofwire::decode(raw) else { continue };
            for r in replies(
                Identity {
                    datapath_id: dpid,
                    ports: 2,
                },
                &m,
            ) {
                s.write_all(&r.to_bytes().unwrap()).unwrap();
            }
        }
    }
}

#[test]
fn half_open_connections_go_first_and_a_switch_still_gets_in() {
    let set = controller::catalog::build(&["l2-learning"]).unwrap();
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 1,
        apps: set.factories,
        limits: Some(ofconn::admission::Limits {
            total: 8,
            per_source: 8,
        }),
        ..Default::default()
    })
    .unwrap();
    let addr = ctl.local_addrs[0];
    let flood: Vec<std::net::TcpStream> = (0..50).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let open = flood
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).unwrap();
            let mut b = [0u8; 256];
            let mut s = *s;
            loop {
                match s.read(&mut b) {
                    Ok(0) => return false,
                    Ok(_) => continue, // the controller's HELLO
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                    Err(_) => return false,
                }
            }
        })
        .count();
    assert!(
        open <= 8,
        "{open} of 50 half-open connections held against a limit of 8"
    );
    // A switch that does its handshake is taken, in a half-open one's place.
    let mut sw = std::net::TcpStream::connect(addr).unwrap();
    handshake(&mut sw, 0x5eed);
    assert!(
        ctl.switch_infos().iter().any(|i| i.datapath_id == 0x5eed),
        "the switch is not among {:?}",
        ctl.switch_infos().iter().map(|i| i.datapath_id).collect::<Vec<_>>()
    );
    drop(flood);
    ctl.stop();
}

/// The listeners queue as many connections as the system allows (std's
/// listen takes 128: a network of thousands of switches connecting at once
/// had SYNs dropped and retried a second later). The kernel shows a
/// listener's backlog as its Send-Q.
#[test]
fn listeners_take_the_systems_largest_backlog() {
    let set = controller::catalog::build(&["l2-learning"]).unwrap();
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 1,
        apps: set.factories,
        ..Default::default()
    })
    .unwrap();
    let port = ctl.local_addrs[0].port();
    let ss = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&ss.stdout);
    let backlog: u32 = text
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no listener on {port} in `ss`: {text:?}"));
    let max: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The controller asks for SOMAXCONN (4096 in the C library's headers
    // since Linux 5.4); the kernel caps it at the sysctl.
    assert_eq!(backlog, max.min(4096), "{text}");
    ctl.stop();
}

/// `stop` ends every session at once: a switch sees its connection closed.
#[test]
fn stop_closes_every_session() {
    let set = controller::catalog::build(&["l2-learning"]).unwrap();
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 2,
        apps: set.factories,
        ..Default::default()
    })
    .unwrap();
    let addr = ctl.local_addrs[0];
    let mut switches = Vec::new();
    for dpid in [0x51, 0x52] {
        let mut sw = std::net::TcpStream::connect(addr).unwrap();
        handshake(&mut sw, dpid);
        switches.push(sw);
    }
    assert_eq!(ctl.switches(), vec![0x51, 0x52]);
    ctl.stop();
    for mut sw in switches {
        sw.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut buf = [0u8; 4096];
        let closed = loop {
            match sw.read(&mut buf) {
                Ok(0) => break true,
                Ok(_) => continue,
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                    break false
                }
                Err(_) => break true,
            }
        };
        assert!(closed, "a session was still open 3 s after stop");
    }
    assert!(ctl.switches().is_empty(), "{:?}", ctl.switches());
}
