//! AF_XDP sockets on a real veth pair (root namespace, names prefixed
//! `axt` and the test's pid; removed even when a test fails): frames sent
//! into one end arrive whole in the socket, frames the socket sends arrive
//! at the other end, and frames longer than a chunk go to the stack. The
//! live-frame generator keeps its rate, numbers its frames without a gap
//! and stamps them with the time they left. The fast path forwards a flow
//! it holds in the kernel, counts it, and lets it go back to the socket
//! when invalidated or when its output port leaves the DEVMAP. The
//! kernel's netdev family says a veth takes redirected frames exactly
//! while its peer has GRO on.

use packetio::fastpath::{FastPath, FlowKey};
use packetio::{XdpInterface, XdpMode, XskConfig};
use std::process::Command;
use std::time::{Duration, Instant};

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental

struct Veth {
    a: String,
    b: String,
}

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().expect("ip");
    assert!(st.success(), "ip {args:?}");
}

impl Veth {
    fn new(tag: &str, mtu: u32) -> Veth {
        let a = format!("axt{}{tag}a", std::process::id() % 100_000);
        let b = format!("axt{}{tag}b", std::process::id() % 100_000);
        let _ = Command::new("ip")
            .args(["link", "del", &a])
            .stderr(std::process::Stdio::null())
            .status();
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
        let v = Veth { a, b };
        for n in [&v.a, &v.b] {
            let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{n}/disable_ipv6"), "1");
            ip(&["link", "set", n, "mtu", &mtu.to_string(), "up"]);
        }
        v
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.a]).status();
    }
}

/// A raw AF_PACKET socket on one interface, for our ethertype only.
struct Raw(i32);

impl Raw {
    fn open(ifname: &str) -> Raw {
        Raw::open_proto(ifname, ETHERTYPE)
    }

    fn open_proto(ifname: &str, ethertype: u16) -> Raw {
        let ifindex = packetio::ifindex(ifname).unwrap() as i32;
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
            sll.sll_ifindex = ifindex;
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
            Raw(fd)
        }
    }
    fn send(&self, f: &[u8]) {
        // SAFETY: sends from a live buffer.
        let r = unsafe { libc::send(self.0, f.as_ptr() as *const libc::c_void, f.len(), 0) };
        assert_eq!(r as usize, f.len(), "send: {}", std::io::Error::last_os_error());
    }
    fn recv_all(&self, want: usize, within: Duration) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 16384];
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

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: closes our own descriptor once.
        unsafe { libc::close(self.0) };
    }
}

fn frame(seq: u32, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xbb]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[18..].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(31).wrapping_add(seq) as u8;
    }
    f
}

fn receive(xdp: &XdpInterface, want: usize, within: Duration) -> Vec<Vec<u8>> {
    receive_type(xdp, want, within, ETHERTYPE)
}

fn receive_type(xdp: &XdpInterface, want: usize, within: Duration, ethertype: u16) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let end = Instant::now() + within;
    while got.len() < want && Instant::now() < end {
        let mut n = 0;
        for s in xdp.sockets.iter() {
            n += s.recv(64, &mut |f| {
                if f.len() >= 14 && f[12..14] == ethertype.to_be_bytes() {
                    got.push(f.to_vec());
                }
            });
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    got
}

fn both_ways(mode: XdpMode, tag: &str) {
    let veth = Veth::new(tag, 1500);
    let xdp = XdpInterface::open(&veth.a, Some(mode), XskConfig::default(), 8).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(xdp.mode(), mode);
    let peer = Raw::open(&veth.b);
    let sent: Vec<Vec<u8>> = (0..200u32).map(|i| frame(i, 60 + (i as usize * 7) % 1455)).collect();
    for f in &sent {
        peer.send(f);
    }
    let got = receive(&xdp, sent.len(), Duration::from_secs(5));
    assert_eq!(got.len(), sent.len(), "frames into the AF_XDP socket ({mode})");
    assert_eq!(got, sent, "received frames differ from those sent");

    let out: Vec<Vec<u8>> = (1000..1300u32)
        .map(|i| frame(i, 60 + (i as usize * 13) % 1455))
        .collect();
    let queued = xdp.sockets[0].send(out.iter().map(|f| f.as_slice()));
    assert_eq!(queued as usize, out.len());
    let arrived = peer.recv_all(out.len(), Duration::from_secs(5));
    assert_eq!(arrived.len(), out.len(), "frames sent by the AF_XDP socket ({mode})");
    assert_eq!(arrived, out);
    // Sending again reuses the chunks the kernel completed.
    for round in 0..20 {
        let q = xdp.sockets[0].send(out.iter().map(|f| f.as_slice()));
        assert_eq!(q as usize, out.len(), "round {round}");
        assert_eq!(peer.recv_all(out.len(), Duration::from_secs(5)).len(), out.len());
    }
}

#[test]
fn generic_mode_passes_frames_both_ways() {
    both_ways(XdpMode::Generic, "g");
}

#[test]
fn native_mode_passes_frames_both_ways() {
    both_ways(XdpMode::Native, "n");
}

#[test]
fn frames_longer_than_a_chunk_go_to_the_stack() {
    let veth = Veth::new("l", 4000);
    let cfg = XskConfig::default();
    let xdp = XdpInterface::open(&veth.a, Some(XdpMode::Generic), cfg, 8).unwrap_or_else(|e| panic!("{e}"));
    let stack = Raw::open(&veth.a);
    let peer = Raw::open(&veth.b);
    let longest = cfg.max_frame() as usize;
    let small = frame(1, longest);
    let big = frame(2, longest + 1);
    peer.send(&small);
    peer.send(&big);
    let got = receive(&xdp, 1, Duration::from_secs(5));
    assert_eq!(got, vec![small], "the frame that fits goes to the socket");
    let seen = stack.recv_all(1, Duration::from_secs(5));
    assert_eq!(seen, vec![big], "the longer one goes to the stack, not the socket");
    assert!(receive(&xdp, 1, Duration::from_millis(300)).is_empty());
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn the_live_generator_keeps_its_rate_and_numbers_and_stamps_every_frame() {
    let veth = Veth::new("r", 1500);
    packetio::live::enable_gro(&veth.b).unwrap();
    let peer = Raw::open(&veth.b);
    // Read while it sends: frames made from XDP pages are big in the
    // socket's accounting, and a burst would overflow its buffer.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            got.extend(peer.recv_all(usize::MAX, Duration::from_millis(50)));
        }
        got.extend(peer.recv_all(usize::MAX, Duration::from_millis(200)));
        got
    });
    let template = frame(0, 60);
    let gen = packetio::live::LiveGenerator::new(packetio::ifindex(&veth.a).unwrap(), &template, 4, 0).unwrap();
    let (rate, secs) = (20_000.0, 0.5);
    let before = realtime_ns();
    let sending = gen.run_for(Duration::from_secs_f64(secs), Some(rate), 8).unwrap();
    let after = realtime_ns();
    // The run's clock starts at its first frame, after the kernel call's
    // set-up, and the call ends with it.
    assert!(
        (sending.as_secs_f64() - secs).abs() < 0.005,
        "sent for {sending:?}, asked {secs} s"
    );
    let sent = gen.next_seq().unwrap();
    // Slots missed while the thread was preempted (tests run side by side)
    // are skipped, so a few percent may be missing, never extra.
    let want = rate * secs;
    assert!(
        sent as f64 <= want * 1.01 && sent as f64 > want * 0.9,
        "{sent} frames stamped at {rate}/s for {secs} s"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let got = reader.join().unwrap();
    assert_eq!(got.len() as u64, sent, "every frame reached the peer");
    let mut last_time = 0;
    for (i, f) in got.iter().enumerate() {
        let seq = u64::from_be_bytes([0, 0, f[46], f[47], f[48], f[49], f[50], f[51]]);
        let time = u64::from_be_bytes(f[52..60].try_into().unwrap());
        let sport = u16::from_be_bytes([f[34], f[35]]);
        assert_eq!(seq, i as u64, "in order, without a gap");
        assert!(time >= before && time <= after, "stamped with the real time of sending");
        assert!(time >= last_time);
        last_time = time;
        assert_eq!(sport, 10_000 + (i % 4) as u16, "source port rotates over 4 streams");
        assert_eq!(f[..34], template[..34], "the rest of the frame is the template's");
    }
    let times: Vec<u64> = got
        .iter()
        .map(|f| u64::from_be_bytes(f[52..60].try_into().unwrap()))
        .collect();
    let mut gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2] as f64;
    assert!(
        (median - 1e9 / rate).abs() < 1e9 / rate * 0.05,
        "frames {median:.0} ns apart (median), asked {:.0}",
        1e9 / rate
    );
    // As fast as it can: many more, all numbered on from where it stopped.
    gen.run_for(Duration::from_millis(100), None, 8).unwrap();
    assert!(gen.next_seq().unwrap() > sent + 10_000, "{}", gen.next_seq().unwrap());
}

/// An untagged IPv4/UDP frame from 10.0.0.1:`sport` to 10.0.0.2:5001.
fn udp(sport: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x08, 0x00];
    let ip_len = (len - 14) as u16;
    f.extend([0x45, 0, (ip_len >> 8) as u8, ip_len as u8, 0, 1, 0x40, 0, 64, 17, 0, 0]);
    f.extend([10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend(sport.to_be_bytes());
    f.extend(5001u16.to_be_bytes());
    f.extend((ip_len - 20).to_be_bytes());
    f.extend([0, 0]);
    f.resize(len, 0x5a);
    f
}

/// Two AF_XDP ports with the fast path's program, each with a host at
/// the other end of its veth: port 1 is a.a (host A behind a.b), port 2
/// is b.a (host B behind b.b). Port 2 is not in the DEVMAP yet. Dropped in
/// field order: the veths last.
struct FastBed {
    fp: FastPath,
    p1: XdpInterface,
    p2: XdpInterface,
    host_a: Raw,
    host_b: Raw,
    _link_a: Veth,
    link_b: Veth,
}

impl FastBed {
    fn new(tag: &str) -> FastBed {
        let a = Veth::new(&format!("{tag}a"), 1500);
        let b = Veth::new(&format!("{tag}b"), 1500);
        // A frame redirected out of b.a lands in b.b's queue, which takes
        // XDP frames only with NAPI on.
        packetio::live::enable_gro(&b.b).unwrap();
        let fp = FastPath::new(1024, 16).unwrap();
        let cfg = XskConfig::default();
        let open = |ifname: &str, port: u32| {
            XdpInterface::open_with(ifname, Some(XdpMode::Native), cfg, 8, Some((&fp, port)), false)
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (p1, p2) = (open(&a.a, 1), open(&b.a, 2));
        FastBed {
            host_a: Raw::open_proto(&a.b, 0x0800),
            host_b: Raw::open_proto(&b.b, 0x0800),
            fp,
            p1,
            p2,
            _link_a: a,
            link_b: b,
        }
    }
}

#[test]
fn the_fast_path_forwards_a_flow_in_the_kernel_until_invalidated() {
    let bed = FastBed::new("f");
    let (fp, p1, p2, host_a, host_b) = (&bed.fp, &bed.p1, &bed.p2, &bed.host_a, &bed.host_b);
    fp.set_port(2, p2.ifindex).unwrap();
    let quiet = Duration::from_millis(300);
    let f = udp(1000, 100);
    let key = FlowKey::of(1, &f).unwrap();

    // No entry: the slow path, port 1's socket.
    host_a.send(&f);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![f.clone()]);
    assert!(host_b.recv_all(1, quiet).is_empty());

    // In the fast path: out of port 2 inside the kernel, counted, and
    // nothing for the socket.
    fp.insert(&key, 2).unwrap();
    for _ in 0..10 {
        host_a.send(&f);
    }
    assert_eq!(host_b.recv_all(10, Duration::from_secs(5)), vec![f.clone(); 10]);
    assert!(receive_type(p1, 1, quiet, 0x0800).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((10, 10 * f.len() as u64)));

    // Another flow (another source port) is not held: slow path.
    let g = udp(1001, 100);
    host_a.send(&g);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![g]);

    // Invalidated: the slow path again at once; the entry keeps its counts.
    fp.invalidate().unwrap();
    host_a.send(&f);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![f.clone()]);
    assert!(host_b.recv_all(1, quiet).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((10, 10 * f.len() as u64)));

    // Installed again under the new generation: fast again, counted afresh.
    fp.insert(&key, 2).unwrap();
    host_a.send(&f);
    assert_eq!(host_b.recv_all(1, Duration::from_secs(5)), vec![f.clone()]);
    assert_eq!(fp.counts(&key).unwrap(), Some((1, f.len() as u64)));
    fp.remove(&key).unwrap();
    assert_eq!(fp.counts(&key).unwrap(), None);
    fp.remove(&key).unwrap();
}

/// `f` with an 802.1Q tag for VLAN `vid`.
fn tagged(f: &[u8], vid: u16) -> Vec<u8> {
    let mut g = f[..12].to_vec();
    g.extend([0x81, 0x00]);
    g.extend(vid.to_be_bytes());
    g.extend(&f[12..]);
    g
}

#[test]
fn the_fast_path_holds_a_tagged_flow_apart_from_its_other_vlans() {
    let bed = FastBed::new("t");
    let (fp, p1, p2, host_a, host_b) = (&bed.fp, &bed.p1, &bed.p2, &bed.host_a, &bed.host_b);
    fp.set_port(2, p2.ifindex).unwrap();
    let quiet = Duration::from_millis(300);
    let plain = udp(1000, 100);
    let f = tagged(&plain, 100);
    let key = FlowKey::of(1, &f).unwrap();
    fp.insert(&key, 2).unwrap();

    // The program builds the key FlowKey::of builds: forwarded in the
    // kernel (host b's kernel takes the tag off on receive), counted
    // with the tag's bytes, nothing for the socket.
    for _ in 0..10 {
        host_a.send(&f);
    }
    assert_eq!(host_b.recv_all(10, Duration::from_secs(5)), vec![plain.clone(); 10]);
    assert!(receive_type(p1, 1, quiet, 0x8100).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((10, 10 * f.len() as u64)));

    // The same frame in another VLAN, and untagged: the slow path.
    let other = tagged(&plain, 101);
    host_a.send(&other);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x8100), vec![other]);
    host_a.send(&plain);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![plain]);
    assert!(host_b.recv_all(1, quiet).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((10, 10 * f.len() as u64)));
}

/// UDP (or `proto`) over IPv6 from 2001:db8::1:`sport` to 2001:db8::2:5001.
fn ipv6(proto: u8, sport: u16, len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa, 0x86, 0xdd];
    let payload = (len - 54) as u16;
    f.extend([0x60, 0, 0, 0]);
    f.extend(payload.to_be_bytes());
    f.extend([proto, 64]);
    for host in [1, 2] {
        f.extend([0x20, 0x01, 0x0d, 0xb8]);
        f.extend([0; 11]);
        f.push(host);
    }
    f.extend(sport.to_be_bytes());
    f.extend(5001u16.to_be_bytes());
    f.resize(len, 0x5a);
    f
}

#[test]
fn the_fast_path_holds_ipv6_flows_with_whole_transport_headers_only() {
    let bed = FastBed::new("6");
    let (fp, p1, p2, host_a) = (&bed.fp, &bed.p1, &bed.p2, &bed.host_a);
    let host_b6 = Raw::open_proto(&bed.link_b.b, 0x86dd);
    fp.set_port(2, p2.ifindex).unwrap();
    let quiet = Duration::from_millis(300);
    let f = ipv6(17, 1000, 100);
    let key = FlowKey::of(1, &f).unwrap();
    fp.insert(&key, 2).unwrap();
    for _ in 0..10 {
        host_a.send(&f);
    }
    assert_eq!(host_b6.recv_all(10, Duration::from_secs(5)), vec![f.clone(); 10]);
    assert!(receive_type(p1, 1, quiet, 0x86dd).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((10, 10 * f.len() as u64)));

    // A TCP flow held, then a frame of it whose TCP header is cut short:
    // the program takes the first to the kernel's path, the second to
    // the socket, as the switch's parser reads no ports from it.
    let t = ipv6(6, 1001, 100);
    let tkey = FlowKey::of(1, &t).unwrap();
    fp.insert(&tkey, 2).unwrap();
    host_a.send(&t);
    assert_eq!(host_b6.recv_all(1, Duration::from_secs(5)), vec![t.clone()]);
    let short = t[..54 + 19].to_vec();
    host_a.send(&short);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x86dd), vec![short]);
    assert!(host_b6.recv_all(1, quiet).is_empty());
    assert_eq!(fp.counts(&tkey).unwrap(), Some((1, t.len() as u64)));
}

#[test]
fn the_fast_path_reads_and_removes_many_flows() {
    let fp = FastPath::new(65_536, 16).unwrap();
    // IPv4 and IPv6 flows mixed (they live in two tables).
    let keys: Vec<FlowKey> = (0..10_000u32)
        .map(|i| {
            let f = if i % 4 == 0 {
                ipv6(17, i as u16, 80)
            } else {
                udp(i as u16, 64)
            };
            FlowKey::of(1 + i % 3, &f).unwrap()
        })
        .collect();
    for (i, k) in keys.iter().enumerate() {
        fp.insert(k, 2 + (i as u32 % 5)).unwrap();
    }
    let mut all = Vec::new();
    fp.counts_all(&mut all).unwrap();
    // Every key once, nothing counted yet.
    assert_eq!(all.len(), keys.len());
    let got: std::collections::HashSet<FlowKey> = all.iter().map(|(k, _)| *k).collect();
    assert_eq!(got, keys.iter().copied().collect());
    assert!(all.iter().all(|(_, c)| *c == (0, 0)));

    fp.remove_many(&keys[..7_000]).unwrap();
    fp.counts_all(&mut all).unwrap();
    assert_eq!(all.len(), 3_000);
    assert_eq!(fp.counts(&keys[0]).unwrap(), None);
    assert_eq!(fp.counts(&keys[7_000]).unwrap(), Some((0, 0)));
    // A key no longer there among them: the rest are removed.
    fp.remove_many(&keys[6_999..]).unwrap();
    fp.counts_all(&mut all).unwrap();
    assert!(all.is_empty(), "{}", all.len());
    fp.remove_many(&[]).unwrap();
}

#[test]
fn a_veth_takes_redirected_frames_only_while_its_peer_has_gro_and_the_kernel_says_so_at_once() {
    use packetio::netdev::{NetdevQuery, XDP_ACT_NDO_XMIT};
    let v = Veth::new("nd", 1500);
    let mut q = NetdevQuery::open().unwrap_or_else(|e| panic!("{e}"));
    let mut watch = q.watch().unwrap_or_else(|e| panic!("{e}"));
    let ifindex = packetio::ifindex(&v.a).unwrap();
    packetio::live::set_gro(&v.b, false).unwrap();
    assert_eq!(q.xdp_features(ifindex).unwrap() & XDP_ACT_NDO_XMIT, 0);
    // Each change is announced by the time the call that made it returns.
    // (Other tests' interfaces may add notifications, never remove ours.)
    watch.drain().unwrap();
    packetio::live::set_gro(&v.b, true).unwrap();
    let heard = watch.drain().unwrap();
    assert!(heard.ifindexes.contains(&ifindex), "GRO on: {heard:?}");
    assert_ne!(q.xdp_features(ifindex).unwrap() & XDP_ACT_NDO_XMIT, 0);
    // Nothing changed: nothing about it.
    assert!(!watch.drain().unwrap().ifindexes.contains(&ifindex));
    packetio::live::set_gro(&v.b, false).unwrap();
    let heard = watch.drain().unwrap();
    assert!(heard.ifindexes.contains(&ifindex), "GRO off: {heard:?}");
    assert_eq!(q.xdp_features(ifindex).unwrap() & XDP_ACT_NDO_XMIT, 0);
    // An interface that does not exist is an error, not "no features".
    assert!(q.xdp_features(u32::MAX - 1).is_err());
}

#[test]
fn a_held_flow_for_a_port_out_of_the_devmap_takes_the_slow_path_uncounted() {
    let bed = FastBed::new("c");
    let (fp, p1, p2, host_a, host_b) = (&bed.fp, &bed.p1, &bed.p2, &bed.host_a, &bed.host_b);
    let quiet = Duration::from_millis(300);
    let f = udp(2000, 100);
    let key = FlowKey::of(1, &f).unwrap();
    fp.insert(&key, 2).unwrap();

    // Held, but port 2 never put in the DEVMAP: the socket gets it.
    host_a.send(&f);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![f.clone()]);
    assert!(host_b.recv_all(1, quiet).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((0, 0)));

    fp.set_port(2, p2.ifindex).unwrap();
    for _ in 0..3 {
        host_a.send(&f);
    }
    assert_eq!(host_b.recv_all(3, Duration::from_secs(5)), vec![f.clone(); 3]);
    assert_eq!(fp.counts(&key).unwrap(), Some((3, 3 * f.len() as u64)));

    // Taken out again: the slow path at once, counts kept.
    fp.clear_port(2).unwrap();
    fp.clear_port(2).unwrap();
    host_a.send(&f);
    assert_eq!(receive_type(p1, 1, Duration::from_secs(5), 0x0800), vec![f.clone()]);
    assert!(host_b.recv_all(1, quiet).is_empty());
    assert_eq!(fp.counts(&key).unwrap(), Some((3, 3 * f.len() as u64)));
}

#[test]
fn receive_queues_are_counted_in_the_interfaces_own_namespace() {
    // Inside another namespace, sysfs (mounted for this one) cannot see
    // the interface; the driver's own count must still come back.
    let tag = format!("axq{:04x}", std::process::id() & 0xffff);
    let (ns, a, b) = (format!("{tag}n"), format!("{tag}a"), format!("{tag}b"));
    struct Gone(String, String);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["link", "del", &self.0]).status();
            let _ = Command::new("ip").args(["netns", "del", &self.1]).status();
        }
    }
    let _gone = Gone(a.clone(), ns.clone());
    ip(&["netns", "add", &ns]);
    ip(&[
        "link",
        "add",
        &a,
        "numrxqueues",
        "3",
        "type",
        "veth",
        "peer",
        "name",
        &b,
        "numrxqueues",
        "3",
        "netns",
        &ns,
    ]);
    assert_eq!(packetio::rx_queues(&a), 3, "here");
    let inside = std::thread::spawn(move || {
        let f = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
        // SAFETY: joins a namespace from a file we hold; this thread only.
        assert_eq!(
            unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&f), libc::CLONE_NEWNET) },
            0
        );
        packetio::rx_queues(&b)
    })
    .join()
    .unwrap();
    assert_eq!(inside, 3, "inside the other namespace");
}

#[test]
fn the_patch_carries_every_frame_both_ways_in_the_kernel_until_dropped() {
    // Host A behind a.b, host B behind b.b; a.a and b.a patched together.
    let a = Veth::new("pa", 1500);
    let b = Veth::new("pb", 1500);
    // Frames redirected out of a.a and b.a land in a.b's and b.b's
    // queues, which take XDP frames only with NAPI on.
    packetio::live::enable_gro(&a.b).unwrap();
    packetio::live::enable_gro(&b.b).unwrap();
    let (host_a, host_b) = (Raw::open(&a.b), Raw::open(&b.b));
    let (ia, ib) = (packetio::ifindex(&a.a).unwrap(), packetio::ifindex(&b.a).unwrap());
    let patch = packetio::XdpPatch::attach(ia, ib, XdpMode::Native).unwrap_or_else(|e| panic!("{e}"));
    let quiet = Duration::from_millis(300);
    let there: Vec<Vec<u8>> = (0..20).map(|i| frame(i, 60 + i as usize * 7)).collect();
    for f in &there {
        host_a.send(f);
    }
    assert_eq!(
        host_b.recv_all(20, Duration::from_secs(5)),
        there,
        "A to B, in order and whole"
    );
    let back: Vec<Vec<u8>> = (100..110).map(|i| frame(i, 1500)).collect();
    for f in &back {
        host_b.send(f);
    }
    assert_eq!(host_a.recv_all(10, Duration::from_secs(5)), back, "B to A");
    // Nothing came back on the side that sent it.
    assert!(host_a.recv_all(1, quiet).is_empty());
    // Unpatched: the frames stay at the port they came in by.
    drop(patch);
    host_a.send(&there[0]);
    assert!(host_b.recv_all(1, quiet).is_empty());
}
