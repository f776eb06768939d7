//! `sdnlab switch` on real interfaces, as root: two hosts in namespaces of
//! this test's own (prefix `swc`), joined by veths to the switch. Driven by
//! the real `ovs-ofctl` (flows, groups, meters, statistics), with traffic
//! following what was installed; malformed OpenFlow gets an error and the
//! switch keeps serving; bad command lines get one line. A linear chain of
//! four switches under os-ken's simple_switch_13 is in `net_cli.rs`'s
//! company here too.

mod common;
use common::{ok, sh, text, Hosts};
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Switch {
    child: Child,
    target: String,
}

impl Switch {
    fn start(hosts: &Hosts, extra: &[&str]) -> Switch {
        Switch::start_on(hosts, "", extra)
    }

    /// With ports of a type (`afxdp:`; "" for the default).
    fn start_on(hosts: &Hosts, port_type: &str, extra: &[&str]) -> Switch {
        // The switch takes a free port itself and says which in a file: a
        // port picked here and freed could be taken by another test's
        // process before the switch binds it.
        let dir = common::scratch("switch", &hosts.tag);
        std::fs::create_dir_all(&dir).unwrap();
        let listen_file = dir.join("listen");
        let mut c = Command::new(env!("CARGO_BIN_EXE_sdnlab"));
        let (p1, p2) = (
            format!("{port_type}{}", hosts.port(1)),
            format!("{port_type}{}", hosts.port(2)),
        );
        c.args(["switch", "--port", &p1, "--port", &p2])
            .args(["--listen", "ptcp:0", "--listen-file"])
            .arg(&listen_file)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let target = listening(&mut child, &listen_file).trim().to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(target.starts_with("tcp:127.0.0.1:"), "listen file says {target:?}");
        Switch { child, target }
    }

    /// Stops the switch; what it wrote on standard error.
    fn stop(mut self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }

    fn ofctl(&self, args: &[&str]) -> String {
        let mut v = vec!["ovs-ofctl", "-O", "OpenFlow13", args[0], &self.target];
        v.extend(&args[1..]);
        ok(&v)
    }

    /// What ovs-ofctl printed on stderr for a command the switch refused.
    fn ofctl_refused(&self, args: &[&str]) -> String {
        let o = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", args[0], &self.target])
            .args(&args[1..])
            .output()
            .unwrap();
        assert!(!o.status.success(), "ovs-ofctl {args:?} was accepted");
        String::from_utf8_lossy(&o.stderr).into_owned()
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

/// What a switch started with `--listen-file file` wrote there once it
/// listened (within 10 s); its standard error if it ended first.
fn listening(child: &mut Child, file: &std::path::Path) -> String {
    let t = Instant::now();
    while !file.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("the switch ended ({status}) before listening: {err}");
        }
        assert!(t.elapsed() < Duration::from_secs(10), "switch did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::read_to_string(file).unwrap()
}

/// Whether the switch has closed (or reset) `s`: looked at without
/// waiting, what it sent before (its HELLO) read and dropped.
fn closed(s: &std::net::TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 64];
    let mut s = s;
    loop {
        match std::io::Read::read(&mut s, &mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// `n_packets=N` of the first flow line containing `needle`.
fn packets_of(dump: &str, needle: &str) -> u64 {
    let line = dump
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no {needle} in {dump}"));
    line.split("n_packets=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The switch process's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Connections that never finish: one that sends half a message after its
/// HELLO is closed by the deadline (3 s here) while an idle session stays;
/// 300 that never send a HELLO, against a limit of 64 connections, are
/// held at most 64 at a time, oldest first out, and ovs-ofctl is served
/// all along; once they are gone the switch's memory is back within 8 MiB
/// of where it was.
#[test]
fn connections_that_never_finish_are_closed_and_do_not_lock_out_ovs_ofctl() {
    use std::io::{Read, Write};
    let hosts = Hosts::new("swc", "h");
    let sw = Switch::start(&hosts, &["--session-deadline", "3", "--max-connections", "64"]);
    let pid = sw.child.id();
    let addr = sw.target.strip_prefix("tcp:").unwrap().to_string();
    let hello = [4u8, 0, 0, 8, 0, 0, 0, 1];
    // A header announcing 65,535 bytes, and nothing after it.
    let half = [4u8, 14, 0xff, 0xff, 0, 0, 0, 2];
    sw.ofctl(&["dump-flows"]);
    let before = rss_kib(pid);

    let mut idle = std::net::TcpStream::connect(&addr).unwrap();
    idle.write_all(&hello).unwrap();
    let mut stuck = std::net::TcpStream::connect(&addr).unwrap();
    stuck.write_all(&hello).unwrap();
    stuck.write_all(&half).unwrap();
    let t = Instant::now();
    stuck.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stuck.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue, // the switch's HELLO
            // A signal to this process (another test's child ending) is not the switch.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("still open after {:?}: {e}", t.elapsed()),
        }
    }
    let closed_after = t.elapsed();
    assert!(
        closed_after >= Duration::from_millis(2900) && closed_after < Duration::from_secs(8),
        "closed after {closed_after:?}, the deadline is 3 s"
    );
    // The idle session (HELLO done, nothing begun) is still served.
    idle.write_all(&[4u8, 2, 0, 8, 0, 0, 0, 9]).unwrap(); // ECHO_REQUEST
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    while !got.windows(2).any(|w| w == [4, 3]) {
        let n = idle.read(&mut buf).expect("the idle session answers its echo");
        assert!(n > 0, "the idle session was closed");
        got.extend_from_slice(&buf[..n]);
    }

    // A flood of connections that never say HELLO.
    let flood: Vec<std::net::TcpStream> = (0..300)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            let _ = s.write_all(&half[..4]);
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // ovs-ofctl still gets in (taking a half-open connection's place).
    sw.ofctl(&["dump-flows"]);
    // The switch holds at most 64 of them: the rest were closed (looked
    // at without waiting, well within the 3 s deadline).
    let open = flood.iter().filter(|s| !closed(s)).count();
    assert!(open <= 64, "{open} of 300 still open against a limit of 64");
    drop(flood);
    drop(idle);
    std::thread::sleep(Duration::from_secs(2));
    let after = rss_kib(pid);
    assert!(
        after <= before + 8 * 1024,
        "resident memory {before} KiB before, {after} KiB after the connections closed"
    );
}

/// A listener full of established sessions that only keep alive (here:
/// say nothing, with no inactivity probe to close them) still lets an
/// operator's tool in: it takes the place of the one idle longest.
#[test]
fn a_crowd_of_idle_sessions_does_not_keep_ovs_ofctl_out() {
    use std::io::Write;
    let hosts = Hosts::new("swi", "h");
    let sw = Switch::start(&hosts, &["--max-connections", "100", "--inactivity-probe", "0"]);
    let addr = sw.target.strip_prefix("tcp:").unwrap().to_string();
    let hello = [4u8, 0, 0, 8, 0, 0, 0, 1];
    let crowd: Vec<std::net::TcpStream> = (0..100)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.write_all(&hello).unwrap();
            s
        })
        .collect();
    // Past the time a session must have been idle to give its place.
    std::thread::sleep(Duration::from_millis(2500));
    sw.ofctl(&["show"]);
    // One of the crowd was closed for it.
    assert!(crowd.iter().any(closed), "none of the crowd gave its place");
}

/// Open vSwitch's inactivity probe (1 s here): a session that says nothing
/// is sent an ECHO_REQUEST after 1 s and closed when it does not answer
/// within 1 s more; one that answers its echoes stays.
#[test]
fn a_silent_session_is_probed_and_closed_one_that_answers_stays() {
    use std::io::{Read, Write};
    let hosts = Hosts::new("swc", "p");
    let sw = Switch::start(&hosts, &["--inactivity-probe", "1"]);
    let addr = sw.target.strip_prefix("tcp:").unwrap().to_string();
    let hello = [4u8, 0, 0, 8, 0, 0, 0, 1];
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    let mut answers = std::net::TcpStream::connect(&addr).unwrap();
    silent.write_all(&hello).unwrap();
    answers.write_all(&hello).unwrap();
    let t = Instant::now();
    // The other one answers each probe, in its own thread (its bytes are
    // framed by hand: the HELLO, then 8-byte ECHO_REQUESTs), for 5 s.
    let answering = std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        let mut pending = Vec::new();
        let mut answered = 0;
        answers.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        while t.elapsed() < Duration::from_secs(5) {
            match answers.read(&mut buf) {
                Ok(0) => panic!("the session that answers was closed after {:?}", t.elapsed()),
                Ok(n) => pending.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
            while pending.len() >= 8 {
                let len = u16::from_be_bytes([pending[2], pending[3]]) as usize;
                if pending.len() < len {
                    break;
                }
                let m: Vec<u8> = pending.drain(..len).collect();
                if m[1] == 2 {
                    let mut reply = m.clone();
                    reply[1] = 3;
                    answers.write_all(&reply).unwrap();
                    answered += 1;
                }
            }
        }
        answered
    });
    // The silent one: its HELLO back, an ECHO_REQUEST, then the end.
    silent.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut got, mut buf, mut echo_at) = (Vec::new(), [0u8; 1024], None);
    loop {
        match silent.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("still open after {:?}: {e}", t.elapsed()),
        }
        // After the switch's HELLO (its length in its header).
        let hello_len = if got.len() >= 4 {
            u16::from_be_bytes([got[2], got[3]]) as usize
        } else {
            usize::MAX
        };
        if echo_at.is_none() && got.len() >= hello_len + 2 && got[hello_len + 1] == 2 {
            echo_at = Some(t.elapsed());
        }
    }
    let closed = t.elapsed();
    let echo_at = echo_at.unwrap_or_else(|| panic!("no ECHO_REQUEST in {got:?}"));
    assert!(
        echo_at >= Duration::from_millis(900) && echo_at < Duration::from_secs(3),
        "probed after {echo_at:?}"
    );
    assert!(
        closed >= echo_at + Duration::from_millis(900) && closed < Duration::from_secs(6),
        "closed after {closed:?}"
    );
    let answered = answering.join().unwrap();
    assert!(answered >= 1, "no probe came to the session that answers");
}

/// What a daemon printed on stderr in its first second.
fn first_words(args: &[&str]) -> String {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    err
}

/// A plain-text listener beyond loopback gets one warning line naming it;
/// one on loopback gets none (the switch's and the controller's).
#[test]
fn plain_listeners_beyond_loopback_are_warned_about() {
    let hosts = Hosts::new("swc", "w");
    let port = hosts.port(1);
    let open = first_words(&["switch", "--port", &port, "--listen", "ptcp:0:0.0.0.0"]);
    let warnings: Vec<&str> = open.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{open}");
    assert!(
        warnings[0].contains("OpenFlow on 0.0.0.0:") && warnings[0].contains("ptcp:PORT"),
        "{open}"
    );
    let closed = first_words(&["switch", "--port", &port, "--listen", "ptcp:0"]);
    assert!(!closed.contains("warning"), "{closed}");

    let (of, rest) = (common::free_port(), common::free_port());
    let open = first_words(&[
        "controller",
        "--listen",
        &format!("0.0.0.0:{of}"),
        "--rest",
        &format!("127.0.0.1:{rest}"),
    ]);
    let warnings: Vec<&str> = open.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{open}");
    assert!(
        warnings[0].contains(&format!("OpenFlow on 0.0.0.0:{of}")) && !warnings[0].contains("REST"),
        "{open}"
    );
    let closed = first_words(&[
        "controller",
        "--listen",
        &format!("127.0.0.1:{of}"),
        "--rest",
        &format!("127.0.0.1:{rest}"),
    ]);
    assert!(!closed.contains("warning"), "{closed}");
}

/// A peer that asks for flow statistics over and over and reads none of
/// the replies (200 MB of them if all were made): the switch stops reading
/// it once 4 MiB wait, keeps its memory, closes it after 10 s without
/// progress, and serves ovs-ofctl meanwhile.
#[test]
fn a_peer_that_reads_nothing_cannot_make_the_switch_hoard_replies() {
    use std::io::{Read, Write};
    let hosts = Hosts::new("swc", "r");
    let sw = Switch::start(&hosts, &[]);
    let pid = sw.child.id();
    let flows: String = (0..2000)
        .map(|i| format!("priority=5,ip,nw_dst=10.9.{}.{},actions=output:2\n", i / 250, i % 250))
        .collect();
    let file = std::env::temp_dir().join(format!("sdnlab-hoard-{}.flows", std::process::id()));
    std::fs::write(&file, flows).unwrap();
    sw.ofctl(&["add-flows", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    let before = rss_kib(pid);
    let addr = sw.target.strip_prefix("tcp:").unwrap().to_string();
    let mut greedy = std::net::TcpStream::connect(&addr).unwrap();
    greedy.write_all(&[4u8, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    // OFPMP_FLOW, all tables, any port and group, no match.
    let mut req = vec![4u8, 18, 0, 56, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0];
    req.extend_from_slice(&[
        0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    req.extend_from_slice(&[0; 16]);
    req.extend_from_slice(&[0, 1, 0, 4, 0, 0, 0, 0]);
    assert_eq!(req.len(), 56);
    let burst: Vec<u8> = req.iter().copied().cycle().take(56 * 1000).collect();
    greedy.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let t = Instant::now();
    let _ = greedy.write_all(&burst);
    std::thread::sleep(Duration::from_secs(2));
    sw.ofctl(&["dump-flows", "table=1"]);
    let during = rss_kib(pid);
    assert!(
        during <= before + 48 * 1024,
        "{before} KiB before, {during} KiB with the replies unread"
    );
    // Closed once it has read nothing for 10 s: reading now drains what
    // was queued, then the end.
    greedy.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    std::thread::sleep(Duration::from_secs(12).saturating_sub(t.elapsed()));
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0usize;
    loop {
        match greedy.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            // Closed with some of our requests still unread on its side:
            // the kernel ends the connection with a reset, not a FIN.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("still open after {:?} ({total} bytes read): {e}", t.elapsed()),
        }
    }
    assert!(total < 64 << 20, "{total} bytes were queued for it");
}

/// With 254 tables every multipart reply fits a message: table features
/// (about 225 KB in all) and table statistics come in parts with
/// REPLY_MORE, and ovs-ofctl reads them whole (it waited forever on a
/// reply the switch could not encode); a dump of the last table answers.
#[test]
fn large_multipart_replies_come_in_parts() {
    let hosts = Hosts::new("swc", "m");
    let sw = Switch::start(&hosts, &["--tables", "254"]);
    let ofctl = |args: &[&str]| {
        let mut v = vec!["timeout", "30", "ovs-ofctl", "-O", "OpenFlow13", args[0], &sw.target];
        v.extend(&args[1..]);
        ok(&v)
    };
    let features = ofctl(&["dump-table-features"]);
    for t in [0, 100, 253] {
        assert!(features.contains(&format!("  table {t}")), "table {t}: {features}");
    }
    let tables = ofctl(&["dump-tables"]);
    // The last table listed, or in the range ovs-ofctl folds ("tables
    // 2...253: ditto" when table 1 differs from table 0).
    assert!(
        tables.contains("...253: ditto") || tables.contains("  table 253:"),
        "254 tables: {tables}"
    );
    ofctl(&["add-flow", "table=253,priority=5,in_port=1,actions=output:2"]);
    let flows = ofctl(&["dump-flows", "table=253"]);
    assert!(flows.contains("table=253") && flows.contains("in_port=1"), "{flows}");
}

#[test]
fn ovs_ofctl_drives_flows_groups_meters_and_statistics() {
    let hosts = Hosts::new("swc", "a");
    let sw = Switch::start(&hosts, &[]);
    let show = sw.ofctl(&["show"]);
    assert!(show.contains(&format!("1({})", hosts.port(1))), "{show}");
    assert!(show.contains(&format!("2({})", hosts.port(2))), "{show}");
    assert!(!hosts.ping(1), "secure mode: nothing forwards without rules");

    sw.ofctl(&["add-flow", "in_port=1,actions=output:2"]);
    sw.ofctl(&["add-flow", "in_port=2,actions=output:1"]);
    assert!(hosts.ping(3));
    let dump = sw.ofctl(&["dump-flows"]);
    assert!(packets_of(&dump, "in_port=1") >= 3, "{dump}");

    // Modify: port 1's traffic dropped; then back.
    sw.ofctl(&["mod-flows", "in_port=1,actions=drop"]);
    assert!(!hosts.ping(1));
    sw.ofctl(&["mod-flows", "in_port=1,actions=output:2"]);
    assert!(hosts.ping(1));
    sw.ofctl(&["del-flows"]);
    assert!(!sw.ofctl(&["dump-flows"]).contains("in_port"));
    assert!(!hosts.ping(1));

    // A group of type all, and a fast-failover group watching port 1.
    sw.ofctl(&["add-group", "group_id=1,type=all,bucket=output:2"]);
    sw.ofctl(&["add-group", "group_id=2,type=ff,bucket=watch_port:1,output:1"]);
    sw.ofctl(&["add-flow", "in_port=1,actions=group:1"]);
    sw.ofctl(&["add-flow", "in_port=2,actions=group:2"]);
    assert!(hosts.ping(3));
    let groups = sw.ofctl(&["dump-groups"]);
    assert!(
        groups.contains("group_id=1,type=all") && groups.contains("group_id=2,type=ff"),
        "{groups}"
    );
    let gstats = sw.ofctl(&["dump-group-stats"]);
    let g1 = gstats.lines().find(|l| l.contains("group_id=1")).unwrap();
    assert!(!g1.contains("packet_count=0,"), "{gstats}");
    // A loop made in two steps is refused with the error the spec names,
    // as ovs-ofctl decodes it; the groups forward as before.
    sw.ofctl(&["add-group", "group_id=3,type=indirect,bucket=group:1"]);
    let refused = sw.ofctl_refused(&["mod-group", "group_id=1,type=all,bucket=group:3"]);
    assert!(refused.contains("OFPGMFC_LOOP"), "{refused}");
    // A group another forwards to cannot go alone.
    let refused = sw.ofctl_refused(&["del-groups", "group_id=1"]);
    assert!(refused.contains("OFPGMFC_CHAINED_GROUP"), "{refused}");
    assert!(hosts.ping(1));
    let features = sw.ofctl(&["dump-group-features"]);
    assert!(
        features.contains("Capabilities:  0xf"),
        "chaining with checks: {features}"
    );

    // A meter of 1 packet/s with a drop band: a fast ping loses most.
    sw.ofctl(&["del-flows"]);
    sw.ofctl(&["add-meter", "meter=1,pktps,burst,band=type=drop,rate=1,burst_size=1"]);
    sw.ofctl(&["add-flow", "in_port=1,actions=meter:1,output:2"]);
    sw.ofctl(&["add-flow", "in_port=2,actions=output:1"]);
    let out = hosts.exec(1, &["ping", "-c", "10", "-i", "0.05", "-W", "1", "10.77.0.2"]);
    let s = text(&out.stdout);
    let received: u32 = s
        .split(" received")
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=4).contains(&received), "metered at 1 pps: {s}");
    let meters = sw.ofctl(&["dump-meters"]);
    assert!(
        meters.contains("meter=1") && meters.contains("type=drop rate=1"),
        "{meters}"
    );
    let mstats = sw.ofctl(&["meter-stats"]);
    assert!(mstats.contains("meter:1"), "{mstats}");

    // Port and table statistics count what crossed.
    let ports = sw.ofctl(&["dump-ports"]);
    assert!(
        ports.contains("port  1: rx pkts=") && !ports.contains("port  1: rx pkts=0,"),
        "{ports}"
    );
    let tables = sw.ofctl(&["dump-tables"]);
    assert!(tables.contains("table 0") || tables.contains("  0:"), "{tables}");

    // A hard timeout removes the rule by itself.
    sw.ofctl(&["add-flow", "priority=5,hard_timeout=1,udp,actions=drop"]);
    assert!(sw.ofctl(&["dump-flows"]).contains("hard_timeout=1"));
    std::thread::sleep(Duration::from_millis(1600));
    assert!(!sw.ofctl(&["dump-flows"]).contains("hard_timeout=1"));
}

#[test]
fn ovs_ofctl_in_openflow_10_sees_the_same_switch() {
    let hosts = Hosts::new("swc", "d");
    let sw = Switch::start(&hosts, &[]);
    let of10 = |args: &[&str]| {
        let mut v = vec!["ovs-ofctl", "-O", "OpenFlow10", args[0], &sw.target];
        v.extend(&args[1..]);
        ok(&v)
    };
    let show = of10(&["show"]);
    assert!(show.contains("OFPT_FEATURES_REPLY (xid="), "{show}");
    assert!(show.contains(&format!("1({})", hosts.port(1))), "{show}");
    // Open vSwitch's 1.0 extension (stats type 13), as ovs-ofctl sends it.
    let desc = of10(&["dump-ports-desc"]);
    assert!(desc.contains("OFPST_PORT_DESC reply"), "{desc}");
    assert!(
        desc.contains(&format!("1({})", hosts.port(1))) && desc.contains(&format!("2({})", hosts.port(2))),
        "{desc}"
    );
    of10(&["add-flow", "in_port=1,actions=output:2"]);
    of10(&["add-flow", "in_port=2,actions=output:1"]);
    // A 1.0 rule with an IP prefix and a rewrite, seen back in 1.0 and 1.3.
    of10(&[
        "add-flow",
        "priority=5,ip,nw_dst=10.99.0.0/16,actions=mod_nw_tos:32,output:2",
    ]);
    assert!(hosts.ping(2));
    let dump = of10(&["dump-flows"]);
    assert!(packets_of(&dump, "in_port=1") >= 2, "{dump}");
    assert!(
        dump.contains("nw_dst=10.99.0.0/16") && dump.contains("mod_nw_tos:32"),
        "{dump}"
    );
    let dump13 = sw.ofctl(&["dump-flows"]);
    assert!(dump13.contains("nw_dst=10.99.0.0/16"), "{dump13}");
    let ports = of10(&["dump-ports"]);
    assert!(
        ports.contains("port  1: rx pkts=") && !ports.contains("port  1: rx pkts=0,"),
        "{ports}"
    );
    of10(&["del-flows"]);
    assert!(!of10(&["dump-flows"]).contains("in_port"));
    assert!(!hosts.ping(1));
}

#[test]
fn the_local_port_is_a_tap_the_host_reaches_the_network_through() {
    let hosts = Hosts::new("swc", "e");
    let tap = format!("{}l", hosts.tag);
    let sw = Switch::start(&hosts, &["--local", &tap]);
    ok(&["ip", "addr", "add", "10.77.0.254/24", "dev", &tap]);
    ok(&["ip", "link", "set", &tap, "up"]);
    sw.ofctl(&["add-flow", "in_port=LOCAL,actions=output:1"]);
    sw.ofctl(&["add-flow", "in_port=1,actions=LOCAL"]);
    let out = sh(&["ping", "-c", "2", "-i", "0.2", "-W", "1", "-I", &tap, "10.77.0.1"]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let show = sw.ofctl(&["show"]);
    assert!(show.contains(&format!("LOCAL({tap})")), "{show}");
    let ports = sw.ofctl(&["dump-ports", "LOCAL"]);
    assert!(
        ports.contains("LOCAL: rx pkts=") && !ports.contains("LOCAL: rx pkts=0,"),
        "{ports}"
    );
    drop(sw);
    assert!(
        sh(&["ip", "link", "show", &tap]).status.code() != Some(0),
        "the tap goes with the switch"
    );
}

#[test]
fn tcp_crosses_with_the_hosts_offloads_left_on() {
    let hosts = Hosts::new("swc", "b");
    let sw = Switch::start(&hosts, &["--fail-mode", "standalone"]);
    ping_and_tcp(&hosts);
    drop(sw);
}

/// AF_XDP ports, with the program in the driver and in the generic path:
/// ping, and TCP with the hosts' offloads on (checksum-partial segments
/// come through AF_XDP and are finished by the kernel on the way out; GSO
/// super-frames take the AF_PACKET side), and the port counters see it;
/// in generic mode the switch warns that VLAN tags held outside frames
/// are lost.
#[test]
fn afxdp_ports_forward_ping_and_tcp_with_offloads_on() {
    for (mode, tag) in [("native", "xn"), ("generic", "xg")] {
        let hosts = Hosts::new("swc", tag);
        let sw = Switch::start_on(&hosts, "afxdp:", &["--fail-mode", "standalone", "--xdp-mode", mode]);
        ping_and_tcp(&hosts);
        let ports = sw.ofctl(&["dump-ports"]);
        let rx: u64 = ports
            .split("rx pkts=")
            .skip(1)
            .map(|s| s.split(',').next().unwrap().trim().parse::<u64>().unwrap())
            .sum();
        assert!(rx > 1000, "{mode}: port counters saw {rx} frames: {ports}");
        // Only the driver can tell XDP of a VLAN tag held beside a frame.
        let said = sw.stop();
        assert_eq!(
            said.contains("lose the tag here: generic XDP cannot see them"),
            mode == "generic",
            "{mode}: {said}"
        );
    }
}

fn ping_and_tcp(hosts: &Hosts) {
    assert!(hosts.ping(2));
    let mut server = Command::new("ip")
        .args(["netns", "exec", &hosts.ns(2), "iperf3", "-s", "-1", "-p", "5399"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let out = hosts.exec(1, &["iperf3", "-c", "10.77.0.2", "-p", "5399", "-t", "2", "-J"]);
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bps = v["end"]["sum_received"]["bits_per_second"].as_f64().unwrap();
    assert!(bps > 1e8, "TCP through the switch: {bps} bit/s");
}

#[test]
fn malformed_openflow_gets_an_error_and_other_sessions_keep_working() {
    let hosts = Hosts::new("swc", "c");
    let sw = Switch::start(&hosts, &[]);
    let addr = sw.target.trim_start_matches("tcp:").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = ofwire::Message {
        version: ofwire::OFP13_VERSION,
        xid: 1,
        body: ofwire::Body::Hello(ofwire::header::Hello::with_versions(&[ofwire::OFP13_VERSION])),
    };
    s.write_all(&hello.to_bytes().unwrap()).unwrap();
    // A FLOW_MOD whose match claims more bytes than the message has.
    let mut bad = vec![0x04, 14, 0, 0, 0, 0, 0, 42];
    bad.extend([0u8; 40]);
    bad.extend([0, 1, 0, 200, 0, 0, 0, 0]);
    let len = bad.len() as u16;
    bad[2..4].copy_from_slice(&len.to_be_bytes());
    s.write_all(&bad).unwrap();
    let mut framer = ofwire::header::Framer::default();
    let mut buf = [0u8; 4096];
    let t = Instant::now();
    let error = loop {
        assert!(t.elapsed() < Duration::from_secs(5), "no OFPT_ERROR");
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed without an error");
        framer.push(&buf[..n]);
        let mut found = None;
        while let Ok(Some(m)) = framer.next_message() {
            if let Ok(ofwire::Message {
                xid: 42,
                body: ofwire::Body::V13(ofwire::v13::Body::Error(e)),
                ..
            }) = ofwire::decode(m)
            {
                found = Some(e);
            }
        }
        if let Some(e) = found {
            break e;
        }
    };
    assert!(
        matches!(
            error.code,
            ofwire::ErrorCode::BadMatch(_) | ofwire::ErrorCode::BadRequest(_)
        ),
        "{error:?}"
    );
    // The same session still answers, and ovs-ofctl still works.
    let echo = ofwire::Message::v13(43, ofwire::v13::Body::EchoRequest(ofwire::Bytes(vec![1, 2, 3])));
    s.write_all(&echo.to_bytes().unwrap()).unwrap();
    let n = s.read(&mut buf).unwrap();
    framer.push(&buf[..n]);
    let m = framer.next_message().unwrap().expect("echo reply");
    assert_eq!(ofwire::decode(m).unwrap().xid, 43);
    sw.ofctl(&["add-flow", "in_port=1,actions=output:2"]);
    assert!(sw.ofctl(&["dump-flows"]).contains("in_port=1"));
}

#[test]
fn bad_command_lines_get_one_line() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sdnlab")).args(args).output().unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let (code, err) = run(&["switch", "--port", "swcnonesuch0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("swcnonesuch0: no such network interface"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = run(&["switch", "--port", "bogus:lo"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown port type \"bogus\""), "{err}");
    let (code, err) = run(&["switch", "--port", "afxdp:swcnonesuch0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("swcnonesuch0: no such network interface"), "{err}");
    let (code, err) = run(&["switch", "--port", "lo", "--xdp-fast-path"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--xdp-fast-path works between AF_XDP ports"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = run(&["switch", "--port", "lo", "--controller", "not-an-address"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a controller address"), "{err}");
    let (code, err) = run(&["switch", "--port", "lo", "--listen", "ptcp:notaport"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a listen address"), "{err}");
    let (code, err) = run(&["bench", "switch", "--dut", "sdnlab,nonesuch"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("invalid value 'nonesuch' for '--dut <DUT>'") && err.contains("one of: sdnlab, sdnlab-afxdp"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = run(&["bench", "gen", "--generator", "sdnlab-xdp,pktgen"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("invalid value 'pktgen' for '--generator <GENERATOR>'") && err.contains("trafgen"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = run(&["bench", "gen", "--seconds", "0.2"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--seconds 0.2: must be a number at least 1 "), "{err}");
    let (code, err) = run(&["bench", "switch", "--generator", "pktgen"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown generator \"pktgen\""), "{err}");
    let (code, err) = run(&["bench", "dp", "--frames", "64,9600"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--frames 9600: must be at least 64 and at most 9000"),
        "{err}"
    );
    let (code, err) = run(&["bench", "dp", "--tests", "throughput,jitter"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'jitter' for '--tests <TESTS>'"), "{err}");
    let (code, err) = run(&["bench", "dp", "--scenario-frame", "40"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--scenario-frame 40: must be at least 64 and at most 1518"),
        "{err}"
    );
    let (code, err) = run(&["bench", "dp", "--limit-mbit", "0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--limit-mbit 0: must be a number at least 0.1"), "{err}");
    let (code, err) = run(&["bench", "dp", "--dut", "cisco"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'cisco' for '--dut <DUTS>'"), "{err}");
    let (code, err) = run(&["bench", "switch", "--frame", "20"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--frame 20: must be at least 64"), "{err}");
}

/// `--config`: two bridges in one process, one on AF_PACKET ports and one on
/// AF_XDP ports, each with its own listener; each forwards between its own
/// hosts and ovs-ofctl sees each one's own rules.
#[test]
fn a_config_file_runs_several_bridges_in_one_process() {
    let (h1, h2) = (Hosts::new("swc", "c1"), Hosts::new("swc", "c2"));
    let dir = std::env::temp_dir().join(format!("swcconf{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("bridges.toml");
    std::fs::write(
        &conf,
        format!(
            r#"
[[bridge]]
name = "left"
ports = ["{}", "{}"]
listen = ["ptcp:0"]
fail_mode = "standalone"
dpid = "0xa1"

[[bridge]]
name = "right"
ports = ["afxdp:{}", "afxdp:{}"]
listen = ["ptcp:0"]
fail_mode = "secure"
threads = 1
"#,
            h1.port(1),
            h1.port(2),
            h2.port(1),
            h2.port(2)
        ),
    )
    .unwrap();
    let listen_file = dir.join("listen");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
        .args(["switch", "--config", conf.to_str().unwrap(), "--listen-file"])
        .arg(&listen_file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = listening(&mut child, &listen_file);
    let target = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_string()
    };
    let (left, right) = (target("left"), target("right"));
    assert!(h1.ping(2), "left bridge floods (standalone)");
    assert!(!h2.ping(1), "right bridge forwards nothing without rules (secure)");
    for (a, b) in [(1, 2), (2, 1)] {
        ok(&[
            "ovs-ofctl",
            "-O",
            "OpenFlow13",
            "add-flow",
            &right,
            &format!("in_port={a},actions=output:{b}"),
        ]);
    }
    assert!(h2.ping(2), "right bridge forwards once rules are in");
    let right_flows = ok(&["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", &right]);
    let left_flows = ok(&["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", &left]);
    assert!(
        right_flows.contains("in_port=1") && right_flows.contains("in_port=2"),
        "{right_flows}"
    );
    assert!(
        !left_flows.contains("in_port=1"),
        "rules stay on their bridge: {left_flows}"
    );
    let features = ok(&["ovs-ofctl", "-O", "OpenFlow13", "show", &left]);
    assert!(features.contains("dpid:00000000000000a1"), "{features}");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_config_files_get_one_line() {
    let dir = std::env::temp_dir().join(format!("swcbad{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |body: &str| {
        let f = dir.join("c.toml");
        std::fs::write(&f, body).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sdnlab"))
            .args(["switch", "--config", f.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{body}");
        let err = text(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        err
    };
    let err = run("[[bridge]]\nname = \"a\"\nports = [\"lo\"]\nportz = 1\n");
    assert!(err.contains("line 4") && err.contains("portz"), "{err}");
    let err = run("[[bridge]]\nname = \"a\"\nports = [\"lo\"]\nlisten = [\"ptcp:0\"]\n[[bridge]]\nname = \"a\"\nports = [\"lo\"]\nlisten = [\"ptcp:0\"]\n");
    assert!(err.contains("two bridges named \"a\""), "{err}");
    let err = run("[[bridge]]\nname = \"a\"\nports = [\"lo\"]\n[[bridge]]\nname = \"b\"\nports = [\"lo\"]\n");
    assert!(err.contains("needs `controllers` or `listen`"), "{err}");
    let err = run("[[bridge]]\nports = [\"swcnonesuch1\"]\n");
    assert!(err.contains("swcnonesuch1: no such network interface"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
