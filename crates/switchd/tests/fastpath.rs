//! The whole switch with AF_XDP ports and the in-kernel fast path, on real
//! veth pairs (root namespace, names prefixed `oft` and the test's pid;
//! removed even when the test fails), driven over OpenFlow: a flow whose
//! rule only outputs it is forwarded by the kernel, and still counted in
//! the rule's and the ports' statistics; a rule deleted before a
//! BARRIER_REPLY forwards nothing after it, also for a flow the kernel
//! held; a flow the rule rewrites stays in user space; many flows are
//! counted and leave the kernel when the tables change;
//! a port whose peer cannot take redirected frames (GRO off) gets its
//! flows from user space, and the kernel's again once GRO is back; such a
//! port leaves the DEVMAP when the kernel announces the change, not at
//! the next recheck; a flow with an 802.1Q tag is held under its VLAN
//! rule and leaves with its tag; so is an IPv6 flow; a
//! frame whose VLAN tag the kernel holds outside it keeps the tag.

mod common;

use common::Client;
use ofwire::oxm::{Match, Oxm};
use ofwire::v13::{self, Action, Body as B, FlowMod, Instruction, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofwire::Body;
use packetio::fastpath::{FastPath, FlowKey};
use packetio::port::PortIo;
use packetio::port_xdp::XdpPort;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Two veth pairs: host end and switch end each.
struct Links(Vec<(String, String)>);

impl Links {
    fn new(test: &str) -> Links {
        let tag = format!("oft{}{test}", std::process::id() % 100_000);
        let links = Links((1..=2).map(|i| (format!("{tag}h{i}"), format!("{tag}s{i}"))).collect());
        for (h, s) in &links.0 {
            let _ = Command::new("ip")
                .args(["link", "del", h])
                .stderr(std::process::Stdio::null())
                .status();
            let st = Command::new("ip")
                .args(["link", "add", h, "type", "veth", "peer", "name", s])
                .status()
                .unwrap();
            assert!(st.success());
            for n in [h, s] {
                let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{n}/disable_ipv6"), "1");
                assert!(Command::new("ip")
                    .args(["link", "set", n, "up"])
                    .status()
                    .unwrap()
                    .success());
            }
            // The host end takes the frames the fast path redirects to it.
            packetio::live::enable_gro(h).unwrap();
        }
        links
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        for (h, _) in &self.0 {
            let _ = Command::new("ip").args(["link", "del", h]).status();
        }
    }
}

/// A raw socket on a host end, for IPv4 frames (or every frame).
struct Host(i32);

impl Host {
    fn open(ifname: &str) -> Host {
        Host::open_for(ifname, libc::ETH_P_IP as u16)
    }

    /// A socket for frames of EtherType `ethertype` (ETH_P_ALL: every
    /// frame, seen before the kernel drops a VLAN tag no VLAN device
    /// claims).
    fn open_for(ifname: &str, ethertype: u16) -> Host {
        let proto = ethertype.to_be();
        // SAFETY: plain syscalls, results checked.
        unsafe {
            // Protocol 0 until bound: a socket made with a protocol takes
            // matching frames from every interface until bind narrows it,
            // and other tests' frames would wait in its queue.
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, 0);
            assert!(fd >= 0);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = packetio::ifindex(ifname).unwrap() as i32;
            let r = libc::bind(
                fd,
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(r, 0);
            // Room for a whole test burst (root may exceed rmem_max).
            let buf: libc::c_int = 16 << 20;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &buf as *const _ as *const libc::c_void,
                4,
            );
            Host(fd)
        }
    }

    fn send(&self, f: &[u8]) {
        // SAFETY: sends from a live buffer.
        let r = unsafe { libc::send(self.0, f.as_ptr() as *const libc::c_void, f.len(), 0) };
        assert_eq!(r as usize, f.len());
    }

    /// Frames received within `within` (stops early at `want`).
    fn recv(&self, want: usize, within: Duration) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        let end = Instant::now() + within;
        while got.len() < want && Instant::now() < end {
            // SAFETY: receives into a live buffer of its length.
            let r = unsafe { libc::recv(self.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
            if r > 0 {
                got.push(buf[..r as usize].to_vec());
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        got
    }
}

impl Host {
    /// Frames received within `within` (stops early at `want`), each with
    /// the VLAN id the kernel took off it on receive (PACKET_AUXDATA).
    fn recv_with_vlan(&self, want: usize, within: Duration) -> Vec<(Vec<u8>, Option<u16>)> {
        const SOL_PACKET: i32 = 263;
        const PACKET_AUXDATA: i32 = 8;
        const TP_STATUS_VLAN_VALID: u32 = 0x10;
        #[repr(C)]
        #[derive(Default)]
        struct Aux {
            status: u32,
            len: u32,
            snaplen: u32,
            mac: u16,
            net: u16,
            vlan_tci: u16,
            vlan_tpid: u16,
        }
        let on: libc::c_int = 1;
        // SAFETY: sets an option from a live int.
        unsafe {
            libc::setsockopt(
                self.0,
                SOL_PACKET,
                PACKET_AUXDATA,
                &on as *const _ as *const libc::c_void,
                4,
            )
        };
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        let mut control = [0u64; 16];
        let end = Instant::now() + within;
        while got.len() < want && Instant::now() < end {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            };
            // SAFETY: a zeroed msghdr pointing at live buffers of their lengths.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&control);
            // SAFETY: receives into the buffers msg points at.
            let r = unsafe { libc::recvmsg(self.0, &mut msg, 0) };
            if r <= 0 {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let mut vlan = None;
            // SAFETY: walks the control messages the kernel wrote into `control`.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&msg);
                while !c.is_null() {
                    if (*c).cmsg_level == SOL_PACKET && (*c).cmsg_type == PACKET_AUXDATA {
                        let aux = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const Aux);
                        if aux.status & TP_STATUS_VLAN_VALID != 0 {
                            vlan = Some(aux.vlan_tci & 0x0fff);
                        }
                    }
                    c = libc::CMSG_NXTHDR(&msg, c);
                }
            }
            got.push((buf[..r as usize].to_vec(), vlan));
        }
        got
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // SAFETY: closes our own descriptor once.
        unsafe { libc::close(self.0) };
    }
}

/// UDP from 10.0.0.1:`sport` to 10.0.0.2:5001, 100 bytes.
fn udp(sport: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x08, 0x00];
    f.extend([0x45, 0, 0, 86, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend(sport.to_be_bytes());
    f.extend([0x13, 0x89, 0, 66, 0, 0]);
    f.resize(100, 0x5a);
    f
}

fn rule(instructions: Vec<Instruction>) -> FlowMod {
    FlowMod {
        match_: Match::new(vec![Oxm::InPort(1)]),
        instructions,
        ..FlowMod::add(10)
    }
}

fn output(port: u32) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::Output { port, max_len: 0 }])]
}

/// Each rule's (priority, packet count).
fn flow_counts(c: &mut Client, xid: u32) -> Vec<(u16, u64)> {
    let req = v13::MultipartRequest {
        flags: 0,
        body: Q::Flow(v13::FlowStatsRequest {
            table_id: 0xff,
            out_port: v13::port::ANY,
            out_group: 0xffff_ffff,
            cookie: 0,
            cookie_mask: 0,
            match_: Match::new(vec![]),
        }),
    };
    c.send(xid, B::MultipartRequest(req));
    c.wait(|m| match &m.body {
        Body::V13(B::MultipartReply(r)) if m.xid == xid => match &r.body {
            R::Flow(flows) => Some(flows.iter().map(|f| (f.priority, f.packet_count)).collect()),
            _ => None,
        },
        _ => None,
    })
}

fn flow_packets(c: &mut Client, xid: u32) -> u64 {
    flow_counts(c, xid).iter().map(|f| f.1).sum()
}

/// From port 1, VLAN `vid`, to port 2, above the untagged rule.
fn vlan_rule(vid: u16) -> FlowMod {
    FlowMod {
        match_: Match::new(vec![
            Oxm::InPort(1),
            Oxm::VlanVid(ofwire::oxm::OFPVID_PRESENT | vid, None),
        ]),
        instructions: output(2),
        ..FlowMod::add(20)
    }
}

fn port_counts(c: &mut Client, xid: u32, port_no: u32) -> (u64, u64) {
    let req = v13::MultipartRequest {
        flags: 0,
        body: Q::PortStats { port_no },
    };
    c.send(xid, B::MultipartRequest(req));
    c.wait(|m| match &m.body {
        Body::V13(B::MultipartReply(r)) if m.xid == xid => match &r.body {
            R::PortStats(p) => p.first().map(|p| (p.counters.rx_packets, p.counters.tx_packets)),
            _ => None,
        },
        _ => None,
    })
}

/// The switch on `links`' switch ends, both AF_XDP ports in the fast path.
fn switch_on(links: &Links, fast_egress_recheck: Duration) -> (switchd::switch::Handle, Arc<FastPath>) {
    let fp = Arc::new(FastPath::new(1024, 8).unwrap());
    let mut ports: Vec<Arc<dyn PortIo>> = Vec::new();
    for (i, (_, s)) in links.0.iter().enumerate() {
        let port_no = i as u32 + 1;
        let p = XdpPort::open(s, Some(packetio::XdpMode::Native), 1024, Some((&fp, port_no)))
            .unwrap_or_else(|e| panic!("{e}"));
        ports.push(Arc::new(p));
    }
    let h = switchd::switch::start(switchd::switch::Config {
        ports,
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        fast_path: Some(fp.clone()),
        fast_ports: vec![1, 2],
        fast_egress_recheck,
        ..Default::default()
    })
    .unwrap();
    (h, fp)
}

/// Within a few folds (5 s at most, for a loaded machine): `n` packets in
/// the rules' counters, received on port 1 and sent on port 2.
fn assert_counted(c: &mut Client, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut xid = 1000;
    loop {
        xid += 1;
        let got = flow_packets(c, xid);
        if got == n {
            break;
        }
        assert!(got < n && Instant::now() < deadline, "the rules counted {got} of {n}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(port_counts(c, xid + 1, 1).0, n);
    assert_eq!(port_counts(c, xid + 2, 2).1, n);
}

/// Sends each of `flows` once per pass, every frame arriving before the
/// next pass, until the kernel has forwarded frames of every flow: the
/// first pass goes through user space, which hands the flows over (and
/// hands them over again if a change at start-up sent them back). The
/// frames sent.
fn send_until_held(h1: &Host, h2: &Host, fp: &FastPath, flows: &[Vec<u8>]) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut sent = 0u64;
    let mut held = Vec::new();
    loop {
        for f in flows {
            h1.send(f);
        }
        sent += flows.len() as u64;
        assert_eq!(
            h2.recv(flows.len(), Duration::from_secs(5)).len(),
            flows.len(),
            "every frame forwarded"
        );
        fp.counts_all(&mut held).unwrap();
        let in_kernel = held.iter().filter(|(_, c)| c.0 > 0).count();
        if in_kernel == flows.len() && sent >= 4 * flows.len() as u64 {
            return sent;
        }
        assert!(
            Instant::now() < deadline,
            "after {sent} frames the kernel forwards {in_kernel} of {} flows",
            flows.len()
        );
    }
}

/// The switch on two fresh links (`test` tells their names apart) with a
/// rule from port 1 to port 2, its hosts, and a controller connection.
/// Dropped field by field in this order: the links last, after everything
/// on their interfaces.
struct Setup {
    h: switchd::switch::Handle,
    fp: Arc<FastPath>,
    h1: Host,
    h2: Host,
    c: Client,
    links: Links,
}

impl Setup {
    fn new(test: &str) -> Setup {
        Setup::with_recheck(test, switchd::switch::Config::default().fast_egress_recheck)
    }

    /// With the fast path's ports checked every `recheck` besides when the
    /// kernel announces a change.
    fn with_recheck(test: &str, recheck: Duration) -> Setup {
        let links = Links::new(test);
        let (h, fp) = switch_on(&links, recheck);
        let h1 = Host::open(&links.0[0].0);
        let h2 = Host::open(&links.0[1].0);
        let mut c = Client::connect(h.listening[0]);
        c.send(2, B::FlowMod(rule(output(2))));
        c.barrier(3);
        Setup {
            h,
            fp,
            h1,
            h2,
            c,
            links,
        }
    }
}

#[test]
fn flows_forwarded_in_the_kernel_are_counted_and_stop_at_a_barrier() {
    let mut s = Setup::new("a");

    let f = udp(1000);
    let key = FlowKey::of(1, &f).unwrap();
    let sent = send_until_held(&s.h1, &s.h2, &s.fp, std::slice::from_ref(&f));
    // Folded into the rule's and the ports' counters every 100 ms.
    assert_counted(&mut s.c, sent);

    // The rule goes: after the BARRIER_REPLY nothing more comes out, the
    // kernel's copy of the flow included.
    let delete = FlowMod {
        table_id: v13::TABLE_ALL,
        command: v13::FlowModCommand::Delete,
        ..FlowMod::add(0)
    };
    s.c.send(7, B::FlowMod(delete));
    s.c.barrier(8);
    for _ in 0..20 {
        s.h1.send(&f);
    }
    assert!(
        s.h2.recv(1, Duration::from_millis(500)).is_empty(),
        "forwarded after the rule was deleted"
    );

    // A rule that rewrites: the flow stays in user space (still forwarded).
    let rewrite = vec![Instruction::ApplyActions(vec![
        Action::SetField(Oxm::EthDst(ofwire::MacAddr([2, 0, 0, 0, 0, 0xcc]), None)),
        Action::Output { port: 2, max_len: 0 },
    ])];
    s.c.send(9, B::FlowMod(rule(rewrite)));
    s.c.barrier(10);
    for _ in 0..20 {
        s.h1.send(&f);
    }
    let got = s.h2.recv(20, Duration::from_secs(3));
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|g| g[..6] == [2, 0, 0, 0, 0, 0xcc]));
    assert_eq!(
        s.fp.counts(&key).unwrap(),
        None,
        "a rewriting flow is not in the fast path"
    );
    s.h.stop();
}

#[test]
fn many_flows_are_folded_and_retired_when_the_tables_change() {
    let mut s = Setup::new("b");

    // 300 flows, every one counted at the folds.
    let flows: Vec<Vec<u8>> = (0..300).map(|i| udp(2000 + i)).collect();
    let sent = send_until_held(&s.h1, &s.h2, &s.fp, &flows);
    let mut held = Vec::new();
    s.fp.counts_all(&mut held).unwrap();
    assert_eq!(held.len(), 300, "every flow in the fast path");
    assert_counted(&mut s.c, sent);

    // The tables change (a rule for the other port): every held flow is
    // retired, counted and removed, except one that comes back at once.
    let other = FlowMod {
        match_: Match::new(vec![Oxm::InPort(2)]),
        instructions: output(1),
        ..FlowMod::add(10)
    };
    s.c.send(7, B::FlowMod(other));
    s.c.barrier(8);
    s.h1.send(&flows[0]);
    assert_eq!(s.h2.recv(1, Duration::from_secs(3)).len(), 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        s.fp.counts_all(&mut held).unwrap();
        if held.len() <= 1 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let keys: Vec<FlowKey> = held.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys.len(), 1, "{} flows left in the fast path", keys.len());
    assert_eq!(keys[0], FlowKey::of(1, &flows[0]).unwrap());
    assert_counted(&mut s.c, sent + 1);
    s.h.stop();
}

#[test]
fn a_port_that_cannot_take_redirected_frames_is_left_to_user_space_until_it_can() {
    let mut s = Setup::new("g");
    let host2 = s.links.0[1].0.clone();
    let f = udp(3000);

    // Host 2's end without GRO (and no XDP program): a frame redirected to
    // it would be dropped. The switch sees it within a tick (100 ms) and
    // forwards the flow in user space instead: every frame arrives, none
    // counted by the kernel.
    packetio::live::set_gro(&host2, false).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    for i in 0..50 {
        s.h1.send(&f);
        assert_eq!(s.h2.recv(1, Duration::from_secs(3)).len(), 1, "frame {i} lost");
    }
    let mut held = Vec::new();
    s.fp.counts_all(&mut held).unwrap();
    assert!(
        held.iter().all(|(_, c)| c.0 == 0),
        "the kernel forwarded some: {held:?}"
    );
    assert_counted(&mut s.c, 50);

    // GRO back on: the port returns to the fast path.
    packetio::live::set_gro(&host2, true).unwrap();
    let sent = send_until_held(&s.h1, &s.h2, &s.fp, std::slice::from_ref(&f));
    assert_counted(&mut s.c, 50 + sent);
}

#[test]
fn a_vlan_tag_the_kernel_holds_outside_the_frame_is_kept() {
    let mut s = Setup::new("v");
    // Host 1 tags what it sends the way a VLAN device on a veth does: the
    // tag rides beside the frame, and an XDP program sees an untagged
    // frame. The ports' programs send such frames to the stack, where the
    // AF_PACKET socket gets the tag with them.
    let host1 = packetio::ifindex(&s.links.0[0].0).unwrap();
    let _tagging = packetio::tc::VlanTagOutOfBand::attach(host1, 10).unwrap();
    s.c.send(4, B::FlowMod(vlan_rule(10)));
    s.c.barrier(5);

    let all_at_h2 = Host::open_for(&s.links.0[1].0, libc::ETH_P_ALL as u16);
    let f = udp(4000);
    for i in 0..20 {
        s.h1.send(&f);
        let got = all_at_h2.recv_with_vlan(1, Duration::from_secs(3));
        assert_eq!(got.len(), 1, "frame {i} lost");
        assert_eq!(got[0].1, Some(10), "frame {i} arrived without its tag");
        assert_eq!(got[0].0, f, "frame {i} changed");
    }
    // Matched as tagged (the untagged rule counts nothing). User space
    // may hand the flow to the kernel under its tagged key, but the
    // program never sees these frames tagged, so it forwards none of them
    // (had it seen them untagged, it would have sent them on untagged).
    let mut held = Vec::new();
    s.fp.counts_all(&mut held).unwrap();
    assert!(
        held.iter().all(|(k, c)| c.0 == 0 && k.0[16..18] == [0x08, 0x00]),
        "the kernel forwarded some: {held:?}"
    );
    let counts = flow_counts(&mut s.c, 6);
    assert!(counts.contains(&(20, 20)) && counts.contains(&(10, 0)), "{counts:?}");
    s.h.stop();
}

#[test]
fn a_port_leaves_and_rejoins_the_devmap_when_the_kernel_announces_it() {
    // Rechecked only every minute: within the test, only the kernel's
    // announcement can move the port.
    let s = Setup::with_recheck("n", Duration::from_secs(60));
    let host2 = s.links.0[1].0.clone();
    let port2 = packetio::ifindex(&s.links.0[1].1).unwrap();
    assert_eq!(s.fp.port(2).unwrap(), Some(port2));
    let within = |want: Option<u32>, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while s.fp.port(2).unwrap() != want {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    packetio::live::set_gro(&host2, false).unwrap();
    within(None, "port 2 still in the DEVMAP 2 s after its peer's GRO went off");
    packetio::live::set_gro(&host2, true).unwrap();
    within(
        Some(port2),
        "port 2 not back in the DEVMAP 2 s after its peer's GRO came on",
    );
}

#[test]
fn a_tagged_flow_is_held_in_the_kernel_under_its_vlan_rule_and_keeps_its_tag() {
    let mut s = Setup::new("t");
    s.c.send(4, B::FlowMod(vlan_rule(10)));
    s.c.barrier(5);
    let all_at_h2 = Host::open_for(&s.links.0[1].0, libc::ETH_P_ALL as u16);
    let plain = udp(5000);
    let mut f = plain[..12].to_vec();
    f.extend([0x81, 0x00, 0x00, 10]);
    f.extend(&plain[12..]);

    // Host 2's kernel takes the tag off on receive: its IPv4 socket sees
    // the frame without it, the ETH_P_ALL one with it beside the frame.
    let sent = send_until_held(&s.h1, &s.h2, &s.fp, std::slice::from_ref(&f));
    assert_counted(&mut s.c, sent);
    let got = all_at_h2.recv_with_vlan(sent as usize, Duration::from_secs(3));
    assert_eq!(got.len() as u64, sent);
    assert!(
        got.iter().all(|(g, vlan)| g == &plain && *vlan == Some(10)),
        "a frame lost its tag or changed"
    );
    // The kernel's flow is the tagged one.
    let mut held = Vec::new();
    s.fp.counts_all(&mut held).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].0, FlowKey::of(1, &f).unwrap());
    s.h.stop();
}

#[test]
fn an_ipv6_flow_is_held_in_the_kernel_and_counted() {
    let mut s = Setup::new("6");
    let h2_v6 = Host::open_for(&s.links.0[1].0, 0x86dd);
    // UDP over IPv6, 2001:db8::1 to 2001:db8::2.
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x86, 0xdd];
    f.extend([0x60, 0, 0, 0, 0, 46, 17, 64]);
    for host in [1, 2] {
        f.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host]);
    }
    f.extend([0x17, 0x70, 0x13, 0x89, 0, 46, 0, 0]);
    f.resize(100, 0x5a);
    let sent = send_until_held(&s.h1, &h2_v6, &s.fp, std::slice::from_ref(&f));
    assert_counted(&mut s.c, sent);
    let mut held = Vec::new();
    s.fp.counts_all(&mut held).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].0, FlowKey::of(1, &f).unwrap());
    s.h.stop();
}
