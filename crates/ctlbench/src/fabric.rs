//! An emulated network for the RFC 8456 tests that need a topology: every
//! switch is sdnlab's switch model (`ofswitch::emulated`: the pipeline and
//! agent of the real switch, without I/O) with its own OpenFlow session (TCP) to
//! the controller under test, and switch ports are wired to each other, so
//! an LLDP frame the controller sends out of a port arrives as a PACKET_IN
//! on the peer switch's port, as in a real network; hosts (the RFC's test
//! ports) sit on edge ports and record what reaches them and when. Frames
//! move between switches over in-process channels.
//!
//! A fabric too big for one machine runs in parts (a [`Shard`] each, one
//! per worker): a part runs its own switches, and a frame out of a port
//! whose link leads to another part's switch goes to that part as a UDP
//! datagram (the emulated link crosses the machines' network; what is
//! lost on the way is counted, sent against taken).

use ofswitch::emulated::{Effect, Emulated};
use ofwire::{v10, Body, Framer, Message};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// A switch port: (datapath id, port number).
pub type Attach = (u64, u32);

/// What each host received, with arrival times.
type Received = Arc<Mutex<Vec<Vec<(Instant, Vec<u8>)>>>>;

/// A fabric whose links and hosts do not fit its switches.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("a datapath id appears twice among the switches")]
    DuplicateDpid,
    #[error("switch {0} is used but not listed")]
    UnknownSwitch(u64),
    #[error("switch {dpid} has ports 1..={ports}, not {port}")]
    NoSuchPort { dpid: u64, ports: u32, port: u32 },
    #[error("port {port} of switch {dpid} is wired twice")]
    WiredTwice { dpid: u64, port: u32 },
}

/// The shape of an emulated network. As JSON (`--fabric file:PATH`):
/// `{"switches": [[DPID, PORTS], ...], "links": [[[DPID, PORT], [DPID, PORT]], ...],
/// "hosts": [[DPID, PORT], ...]}`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// (datapath id, number of ports).
    pub switches: Vec<(u64, u32)>,
    pub links: Vec<(Attach, Attach)>,
    /// Where each host attaches.
    pub hosts: Vec<Attach>,
}

impl Spec {
    /// `spines` x `leaves`, every leaf wired to every spine (ports 1..=spines
    /// on a leaf, 1..=leaves on a spine), `hosts_per_leaf` hosts per leaf.
    pub fn leaf_spine(spines: u32, leaves: u32, hosts_per_leaf: u32) -> Spec {
        let mut s = Spec::default();
        for sp in 1..=spines {
            s.switches.push((sp as u64, leaves));
        }
        for l in 1..=leaves {
            let dpid = 0x1000 + l as u64;
            s.switches.push((dpid, spines + hosts_per_leaf));
            for sp in 1..=spines {
                s.links.push(((dpid, sp), (sp as u64, l)));
            }
            for h in 1..=hosts_per_leaf {
                s.hosts.push((dpid, spines + h));
            }
        }
        s
    }

    /// A tree shaped as Mininet's: `depth` levels of switches (numbered level
    /// by level from 1 at the root), each with
    /// `fanout` children (port 1 towards the parent, 2.. towards the
    /// children), `fanout` hosts on each bottom switch.
    pub fn tree(depth: u32, fanout: u32) -> Spec {
        let mut s = Spec::default();
        let mut next = 1u64;
        let mut level = vec![next];
        s.switches.push((next, fanout + 1));
        for _ in 1..depth {
            let mut below = Vec::new();
            for &parent in &level {
                for c in 0..fanout {
                    next += 1;
                    s.switches.push((next, fanout + 1));
                    s.links.push(((parent, c + 2), (next, 1)));
                    below.push(next);
                }
            }
            level = below;
        }
        for &leaf in &level {
            for h in 0..fanout {
                s.hosts.push((leaf, h + 2));
            }
        }
        s
    }

    /// Checks that every link and host names a switch port that exists, once.
    pub fn validate(&self) -> Result<(), SpecError> {
        let ports: HashMap<u64, u32> = self.switches.iter().copied().collect();
        if ports.len() != self.switches.len() {
            return Err(SpecError::DuplicateDpid);
        }
        let mut used = std::collections::HashSet::new();
        let ends = self
            .links
            .iter()
            .flat_map(|(a, b)| [*a, *b])
            .chain(self.hosts.iter().copied());
        for (dpid, port) in ends {
            match ports.get(&dpid) {
                None => return Err(SpecError::UnknownSwitch(dpid)),
                Some(&n) if port == 0 || port > n => return Err(SpecError::NoSuchPort { dpid, ports: n, port }),
                _ => {}
            }
            if !used.insert((dpid, port)) {
                return Err(SpecError::WiredTwice { dpid, port });
            }
        }
        Ok(())
    }

    /// `n` switches in a chain (port 1 towards the previous, 2 towards the
    /// next), a host on port 3 of the first and of the last.
    pub fn linear(n: u32) -> Spec {
        let mut s = Spec::default();
        for i in 1..=n as u64 {
            s.switches.push((i, 3));
            if i > 1 {
                s.links.push(((i - 1, 2), (i, 1)));
            }
        }
        s.hosts = vec![(1, 3), (n as u64, 3)];
        s
    }
}

enum Input {
    Frame {
        port: u32,
        frame: Vec<u8>,
    },
    Port {
        port: u32,
        up: bool,
    },
    Controller {
        conn: usize,
        msg: Message,
    },
    Closed {
        conn: usize,
    },
    /// A controller that had closed the connection accepts one again
    /// (`Options::reconnect`): `targets[target]`.
    Reconnected {
        target: usize,
        stream: TcpStream,
    },
}

/// Where a port leads.
#[derive(Clone, Copy)]
enum Far {
    Switch(u64, u32),
    Host(usize),
    /// A switch port of another part, and where that part takes frames.
    Remote(SocketAddr, u64, u32),
}

/// One part of a fabric run over several machines.
#[derive(Clone, Debug)]
pub struct Shard {
    /// The switches this part runs (the rest of the spec runs elsewhere).
    pub here: Vec<u64>,
    /// Where this part takes frames from the others.
    pub socket: Arc<tokio::net::UdpSocket>,
    /// Every switch of the other parts: where its part takes frames.
    pub elsewhere: HashMap<u64, SocketAddr>,
}

/// A frame between parts: magic, the receiving switch's datapath id and
/// port, then the frame.
const SHARD_MAGIC: [u8; 2] = [0x5d, 0x1b];
const SHARD_HEADER: usize = 2 + 8 + 4;

/// The datagram carrying `frame` to port `port` of switch `dpid`.
fn shard_datagram(dpid: u64, port: u32, frame: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(SHARD_HEADER + frame.len());
    d.extend_from_slice(&SHARD_MAGIC);
    d.extend_from_slice(&dpid.to_be_bytes());
    d.extend_from_slice(&port.to_be_bytes());
    d.extend_from_slice(frame);
    d
}

/// The switch, port and frame of a datagram from another part.
fn parse_shard_datagram(d: &[u8]) -> Option<(u64, u32, &[u8])> {
    if d.len() < SHARD_HEADER || d[..2] != SHARD_MAGIC {
        return None;
    }
    let dpid = u64::from_be_bytes(d[2..10].try_into().ok()?);
    let port = u32::from_be_bytes(d[10..14].try_into().ok()?);
    Some((dpid, port, &d[SHARD_HEADER..]))
}

/// What the fabric counts (all switches together).
#[derive(Default, Debug)]
pub struct FabricStats {
    pub connected: AtomicU64,
    pub lost: AtomicU64,
    /// PACKET_INs other than LLDP.
    pub packet_ins: AtomicU64,
    pub lldp_packet_ins: AtomicU64,
    pub frames_between_switches: AtomicU64,
    /// The first message from the controller after any switch's handshake, unix ns.
    pub first_message_ns: AtomicU64,
    /// The latest LLDP frame any switch sent out of a port (a controller's probe), unix ns.
    pub last_lldp_out_ns: AtomicU64,
    /// Data frames (not LLDP) each switch port sent to another switch.
    pub link_frames: Mutex<HashMap<Attach, u64>>,
    /// Flow entries each switch holds now.
    pub flows: HashMap<u64, AtomicU64>,
    /// Malformed messages sent (`Options::malformed_per_mille`).
    pub malformed_sent: AtomicU64,
    /// Frames this part's switches sent to other parts' and took from
    /// them (a fabric in parts): what one part sent and the others did not
    /// take was lost between the machines.
    pub frames_to_other_parts: AtomicU64,
    pub frames_from_other_parts: AtomicU64,
    /// Datagrams refused: not from another part, or not a frame for a switch here.
    pub refused_datagrams: AtomicU64,
}

impl FabricStats {
    /// Flow entries switch `dpid` holds now.
    pub fn flows_of(&self, dpid: u64) -> u64 {
        self.flows.get(&dpid).map(|n| n.load(Ordering::Relaxed)).unwrap_or(0)
    }

    /// Data frames sent out of switch port `at` towards another switch so far.
    pub fn frames_out_of(&self, at: Attach) -> u64 {
        let m = self.link_frames.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&at).copied().unwrap_or(0)
    }
}

/// How a fabric connects.
#[derive(Clone, Debug)]
pub struct Options {
    /// Controllers: every switch connects to each (OpenFlow 1.3 roles decide).
    pub targets: Vec<SocketAddr>,
    pub version: u8,
    /// How long `start` waits for every switch's handshake.
    pub timeout: Duration,
    /// RFC 8456 exception handling: this many of every 1000 messages a
    /// switch sends are followed by a malformed one (alternately an unknown
    /// message type and a PACKET_IN too short for its header), which the
    /// controller should answer with an error and otherwise ignore.
    pub malformed_per_mille: u32,
    /// Run only one part of the fabric here (None: all of it).
    pub shard: Option<Shard>,
    /// A connection the controller closed is tried again this often, as a
    /// real switch does (None: never; a cluster member restarted under
    /// its name gets its switches back).
    pub reconnect: Option<Duration>,
}

pub struct Fabric {
    pub spec: Spec,
    /// The switches running here, in the order of `tasks`.
    running: Vec<u64>,
    pub stats: Arc<FabricStats>,
    inboxes: Arc<HashMap<u64, mpsc::UnboundedSender<Input>>>,
    wiring: Arc<HashMap<Attach, Far>>,
    received: Received,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Takes frames from other parts (a fabric in parts).
    relay: Option<tokio::task::JoinHandle<()>>,
}

impl Fabric {
    /// Connects every switch to `target` (OpenFlow `version`); returns once
    /// all completed their handshake or `timeout` passed.
    pub async fn start(spec: Spec, target: SocketAddr, version: u8, timeout: Duration) -> Fabric {
        Self::start_multi(spec, vec![target], version, timeout).await
    }

    /// Connects every switch to each of `targets` (one connection each, with
    /// OpenFlow 1.3 roles: `roles`); a switch counts as connected once every
    /// connection completed its handshake.
    pub async fn start_multi(spec: Spec, targets: Vec<SocketAddr>, version: u8, timeout: Duration) -> Fabric {
        Self::start_with(
            spec,
            Options {
                targets,
                version,
                timeout,
                malformed_per_mille: 0,
                shard: None,
                reconnect: None,
            },
        )
        .await
    }

    /// `start_multi` with every option.
    pub async fn start_with(spec: Spec, o: Options) -> Fabric {
        let Options {
            targets,
            version,
            timeout,
            malformed_per_mille,
            shard,
            reconnect,
        } = o;
        let here: Option<std::collections::HashSet<u64>> = shard.as_ref().map(|s| s.here.iter().copied().collect());
        let runs_here = |d: u64| here.as_ref().is_none_or(|h| h.contains(&d));
        let switches: Vec<(u64, u32)> = spec.switches.iter().copied().filter(|&(d, _)| runs_here(d)).collect();
        let stats = Arc::new(FabricStats {
            flows: switches.iter().map(|&(d, _)| (d, AtomicU64::new(0))).collect(),
            ..Default::default()
        });
        let far = |(d, p): Attach| match shard.as_ref().and_then(|s| s.elsewhere.get(&d)) {
            Some(addr) if !runs_here(d) => Far::Remote(*addr, d, p),
            _ => Far::Switch(d, p),
        };
        let mut wiring = HashMap::new();
        for &(a, b) in &spec.links {
            wiring.insert(a, far(b));
            wiring.insert(b, far(a));
        }
        for (i, &h) in spec.hosts.iter().enumerate() {
            wiring.insert(h, Far::Host(i));
        }
        let wiring = Arc::new(wiring);
        let received = Arc::new(Mutex::new(vec![Vec::new(); spec.hosts.len()]));
        let mut senders = HashMap::new();
        let mut receivers = Vec::new();
        for &(dpid, _) in &switches {
            let (tx, rx) = mpsc::unbounded_channel();
            senders.insert(dpid, tx);
            receivers.push(rx);
        }
        let inboxes = Arc::new(senders);
        let mut tasks = Vec::new();
        let socket = shard.as_ref().map(|s| s.socket.clone());
        for (&(dpid, ports), rx) in switches.iter().zip(receivers) {
            let dp = Emulated::new(dpid, ports, N_TABLES, MAX_RULES, crate::switch::desc());
            let net = Net {
                malformed_per_mille,
                reconnect,
                stats: stats.clone(),
                inboxes: inboxes.clone(),
                wiring: wiring.clone(),
                received: received.clone(),
                socket: socket.clone(),
            };
            tasks.push(tokio::spawn(run_switch(dp, version, targets.clone(), rx, net)));
            // Some controllers want a moment per new switch.
            if spec.switches.len() <= 64 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        let relay = shard
            .as_ref()
            .map(|s| tokio::spawn(take_from_other_parts(s.clone(), inboxes.clone(), stats.clone())));
        let t = Instant::now();
        let n = switches.len() as u64;
        while stats.connected.load(Ordering::Relaxed) + stats.lost.load(Ordering::Relaxed) < n && t.elapsed() < timeout
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Fabric {
            spec,
            running: switches.iter().map(|&(d, _)| d).collect(),
            stats,
            inboxes,
            wiring,
            received,
            tasks,
            relay,
        }
    }

    /// Host `i` sends `frame`.
    pub fn send_from_host(&self, i: usize, frame: Vec<u8>) {
        let (dpid, port) = self.spec.hosts[i];
        if let Some(tx) = self.inboxes.get(&dpid) {
            let _ = tx.send(Input::Frame { port, frame });
        }
    }

    /// Frames host `i` received, with their arrival times (taken).
    pub fn take_received(&self, i: usize) -> Vec<(Instant, Vec<u8>)> {
        let mut r = self.received.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut r[i])
    }

    /// What host `i` received, taken once the traffic has stopped: after
    /// at least `quiet` (room for late duplicates), when `done` says
    /// everything is in or nothing more has come for `quiet`, and at most
    /// after `max`. A fixed wait counted the frame still on its way
    /// through a loaded machine's controller as lost.
    pub async fn take_received_settled(
        &self,
        i: usize,
        done: impl Fn(&[(Instant, Vec<u8>)]) -> bool,
        quiet: Duration,
        max: Duration,
    ) -> Vec<(Instant, Vec<u8>)> {
        let start = Instant::now();
        let mut got = Vec::new();
        let mut last_news = start;
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let more = self.take_received(i);
            if !more.is_empty() {
                last_news = Instant::now();
                got.extend(more);
            }
            let settled = done(&got) || last_news.elapsed() >= quiet;
            if (settled && start.elapsed() >= quiet) || start.elapsed() >= max {
                return got;
            }
        }
    }

    /// Takes the link at `a` down or up on both ends (PORT_STATUS from both switches).
    pub fn set_link(&self, a: Attach, up: bool) {
        let Some(Far::Switch(bd, bp)) = self.wiring.get(&a).copied() else {
            return;
        };
        for (dpid, port) in [a, (bd, bp)] {
            if let Some(tx) = self.inboxes.get(&dpid) {
                let _ = tx.send(Input::Port { port, up });
            }
        }
    }

    /// Port `at` (of a switch here) goes down or up: a PORT_STATUS from
    /// that switch only (a fabric in parts: the link's other end is
    /// another part's to change).
    pub fn set_port(&self, at: Attach, up: bool) {
        if let Some(tx) = self.inboxes.get(&at.0) {
            let _ = tx.send(Input::Port { port: at.1, up });
        }
    }

    /// Switch `dpid` fails as if powered off: its OpenFlow connection
    /// closes and the ports wired to it go down (PORT_STATUS from its neighbours).
    pub fn disconnect(&self, dpid: u64) {
        if let Some(i) = self.running.iter().position(|&d| d == dpid) {
            self.tasks[i].abort();
        }
        for (&(d, _), far) in self.wiring.iter() {
            if let (true, Far::Switch(nd, np)) = (d == dpid, far) {
                if let Some(tx) = self.inboxes.get(nd) {
                    let _ = tx.send(Input::Port { port: *np, up: false });
                }
            }
        }
    }

    /// Disconnects every switch.
    pub fn stop(self) {
        self.stop_switches();
        if let Some(r) = self.relay {
            r.abort();
        }
    }

    /// Stops every switch here, while frames other parts sent are still
    /// taken in (and counted): before reading what crossed between parts.
    pub fn stop_switches(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// What every switch task shares.
struct Net {
    malformed_per_mille: u32,
    reconnect: Option<Duration>,
    stats: Arc<FabricStats>,
    inboxes: Arc<HashMap<u64, mpsc::UnboundedSender<Input>>>,
    wiring: Arc<HashMap<Attach, Far>>,
    received: Received,
    /// Where frames to other parts leave from (a fabric in parts).
    socket: Option<Arc<tokio::net::UdpSocket>>,
}

/// Hands the frames other parts send to this part's switches; datagrams
/// from anywhere else, or for a switch not here, are dropped.
async fn take_from_other_parts(
    shard: Shard,
    inboxes: Arc<HashMap<u64, mpsc::UnboundedSender<Input>>>,
    stats: Arc<FabricStats>,
) {
    let peers: std::collections::HashSet<SocketAddr> = shard.elsewhere.values().copied().collect();
    let mut buf = vec![0u8; 65536];
    loop {
        let Ok((n, from)) = shard.socket.recv_from(&mut buf).await else {
            break;
        };
        let parsed = parse_shard_datagram(&buf[..n]).filter(|_| peers.contains(&from));
        match parsed.and_then(|(dpid, port, frame)| Some((inboxes.get(&dpid)?, port, frame))) {
            Some((tx, port, frame)) => {
                stats.frames_from_other_parts.fetch_add(1, Ordering::Relaxed);
                let _ = tx.send(Input::Frame {
                    port,
                    frame: frame.to_vec(),
                });
            }
            None => {
                stats.refused_datagrams.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Flow tables per emulated switch.
const N_TABLES: usize = 4;
/// Rules per emulated switch, at most (a FLOW_MOD beyond gets TABLE_FULL):
/// as many as the switch's classifier is measured with, well above what
/// the table-capacity test asks (65,535 addresses at most).
const MAX_RULES: usize = 1_000_000;

/// Connects to `target` and completes the handshake, the switch's agent
/// answering as connection `conn`; then a reader task turns what the
/// controller sends into `Input::Controller { conn, .. }` (and
/// `Input::Closed` at the end) and a writer task sends what it is given.
async fn connect(
    target: SocketAddr,
    version: u8,
    dp: &mut Emulated,
    inbox: mpsc::UnboundedSender<Input>,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Option<(usize, mpsc::UnboundedSender<Vec<u8>>)> {
    let s = TcpStream::connect(target).await.ok()?;
    attach(s, version, dp, inbox, tasks).await
}

/// The handshake on a connected stream, then its reader and writer tasks:
/// the agent's connection number and where to write.
async fn attach(
    mut s: TcpStream,
    version: u8,
    dp: &mut Emulated,
    inbox: mpsc::UnboundedSender<Input>,
    tasks: &mut tokio::task::JoinSet<()>,
) -> Option<(usize, mpsc::UnboundedSender<Vec<u8>>)> {
    let _ = s.set_nodelay(true);
    let mut framer = Framer::default();
    let conn = dp.connect(version);
    let answer = |m: &Message| {
        let mut effects = Vec::new();
        dp.on_message(conn, m, &mut effects);
        effects
            .into_iter()
            .filter_map(|e| match e {
                Effect::ToController { conn: c, msg } if c == conn => Some(msg),
                _ => None,
            })
            .collect()
    };
    if crate::handshake_with(&mut s, &mut framer, version, answer)
        .await
        .is_err()
    {
        dp.disconnect(conn);
        return None;
    }
    let (mut rd, mut wr) = s.into_split();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tasks.spawn(async move {
        while let Some(bytes) = out_rx.recv().await {
            if wr.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    tasks.spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        'read: loop {
            while let Ok(Some(raw)) = framer.next_message() {
                if let Ok(msg) = ofwire::decode(raw) {
                    if inbox.send(Input::Controller { conn, msg }).is_err() {
                        break 'read;
                    }
                }
            }
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => framer.push(&buf[..n]),
            }
        }
        let _ = inbox.send(Input::Closed { conn });
    });
    Some((conn, out_tx))
}

/// Where connection `conn` (to `targets[target]`) is written to.
fn keep_writer(
    writers: &mut Vec<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    target_of: &mut HashMap<usize, usize>,
    conn: usize,
    w: mpsc::UnboundedSender<Vec<u8>>,
    target: usize,
) {
    if writers.len() <= conn {
        writers.resize(conn + 1, None);
    }
    writers[conn] = Some(w);
    target_of.insert(conn, target);
}

/// Tries `target` every `every` until it accepts, then hands the stream to
/// the switch.
async fn redial(target: SocketAddr, index: usize, every: Duration, inbox: mpsc::UnboundedSender<Input>) {
    loop {
        tokio::time::sleep(every).await;
        if inbox.is_closed() {
            return;
        }
        if let Ok(stream) = TcpStream::connect(target).await {
            let _ = inbox.send(Input::Reconnected { target: index, stream });
            return;
        }
    }
}

/// What a switch has to write to its controllers: per connection, the
/// bytes waiting for the next write; and the count that spaces the
/// malformed messages out.
struct Outbox {
    pending: Vec<Vec<u8>>,
    out: Vec<u8>,
    sent_total: u64,
    malformed_seq: u32,
}

impl Net {
    /// A message the switch sends a controller: a PACKET_IN counted (LLDP
    /// apart), encoded, followed now and then by a malformed message when
    /// asked for, and appended to its connection's pending bytes.
    fn to_controller(&self, conn: usize, m: &Message, o: &mut Outbox) {
        let data = match &m.body {
            Body::V10(v10::Body::PacketIn(pi)) => Some(&pi.data.0),
            Body::V13(ofwire::v13::Body::PacketIn(pi)) => Some(&pi.data.0),
            _ => None,
        };
        let stats = &self.stats;
        if let Some(d) = data {
            let lldp = d.get(12..14) == Some(&[0x88, 0xcc][..]);
            let counter = if lldp {
                &stats.lldp_packet_ins
            } else {
                &stats.packet_ins
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        o.out.clear();
        if m.encode(&mut o.out).is_err() {
            return;
        }
        let per_mille = self.malformed_per_mille;
        if per_mille > 0 {
            o.sent_total += 1;
            // Spread evenly: one after every 1000/per_mille messages.
            if (o.sent_total * per_mille as u64) % 1000 < per_mille as u64 {
                o.malformed_seq += 1;
                let (kind, len) = if o.malformed_seq.is_multiple_of(2) {
                    (0x63, 8)
                } else {
                    (10, 12)
                };
                o.out.extend_from_slice(&[m.version, kind, 0, len]);
                o.out
                    .extend_from_slice(&(0x8000_0000u32 | o.malformed_seq).to_be_bytes());
                o.out.resize(o.out.len() + len as usize - 8, 0);
                stats.malformed_sent.fetch_add(1, Ordering::Relaxed);
            }
        }
        if o.pending.len() <= conn {
            o.pending.resize(conn + 1, Vec::new());
        }
        o.pending[conn].extend_from_slice(&o.out);
    }

    /// A frame switch `dpid` sends out of `port`: to the switch or host at
    /// the link's other end, or to another part's switch over UDP; frames
    /// between switches counted (LLDP apart, its last time kept).
    async fn transmit(&self, dpid: u64, port: u32, frame: Vec<u8>) {
        let stats = &self.stats;
        let lldp = frame.get(12..14) == Some(&[0x88, 0xcc][..]);
        let between_switches = || {
            stats.frames_between_switches.fetch_add(1, Ordering::Relaxed);
            if lldp {
                stats.last_lldp_out_ns.fetch_max(unix_ns(), Ordering::Relaxed);
            } else {
                let mut m = stats.link_frames.lock().unwrap_or_else(|p| p.into_inner());
                *m.entry((dpid, port)).or_insert(0) += 1;
            }
        };
        match self.wiring.get(&(dpid, port)) {
            Some(Far::Switch(d, p)) => {
                between_switches();
                if let Some(tx) = self.inboxes.get(d) {
                    let _ = tx.send(Input::Frame { port: *p, frame });
                }
            }
            Some(Far::Remote(addr, d, p)) => {
                between_switches();
                if let Some(s) = &self.socket {
                    // A full send buffer holds the switch back (a
                    // burst of the controller's probes is not lost here).
                    if s.send_to(&shard_datagram(*d, *p, &frame), *addr).await.is_ok() {
                        stats.frames_to_other_parts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            // Hosts ignore the controller's LLDP probes (os-ken probes host ports too).
            Some(Far::Host(_)) if lldp => {}
            Some(Far::Host(h)) => {
                let mut r = self.received.lock().unwrap_or_else(|p| p.into_inner());
                r[*h].push((Instant::now(), frame));
            }
            None => {}
        }
    }
}

async fn run_switch(
    mut dp: Emulated,
    version: u8,
    targets: Vec<SocketAddr>,
    mut inbox: mpsc::UnboundedReceiver<Input>,
    net: Net,
) {
    let (reconnect, stats) = (net.reconnect, net.stats.clone());
    let dpid = dp.datapath_id;
    // Dropping the set (the switch stops or is aborted) closes every connection.
    let mut io = tokio::task::JoinSet::new();
    let Some(own_inbox) = net.inboxes.get(&dpid).cloned() else {
        return;
    };
    // By the agent's connection number (0, 1, .. in the order connected;
    // a reconnection takes the next), with the target each is to.
    let mut writers: Vec<Option<mpsc::UnboundedSender<Vec<u8>>>> = Vec::new();
    let mut target_of: HashMap<usize, usize> = HashMap::new();
    for (i, &t) in targets.iter().enumerate() {
        match connect(t, version, &mut dp, own_inbox.clone(), &mut io).await {
            Some((conn, w)) => keep_writer(&mut writers, &mut target_of, conn, w, i),
            None => {
                stats.lost.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
    // Kept only when connections are tried again.
    let own_inbox = reconnect.map(|_| own_inbox);
    stats.connected.fetch_add(1, Ordering::Relaxed);
    let mut outbox = Outbox {
        pending: vec![Vec::new(); writers.len()],
        out: Vec::new(),
        sent_total: 0,
        malformed_seq: 0,
    };
    let mut effects = Vec::new();
    loop {
        for e in effects.drain(..) {
            match e {
                Effect::ToController { conn, msg } => net.to_controller(conn, &msg, &mut outbox),
                Effect::Transmit { port, frame } => net.transmit(dpid, port, frame).await,
            }
        }
        // Writes go out once nothing else is waiting: one write per batch, not per message.
        let input = match inbox.try_recv() {
            Ok(i) => Some(i),
            Err(mpsc::error::TryRecvError::Disconnected) => None,
            Err(mpsc::error::TryRecvError::Empty) => {
                for (p, w) in outbox.pending.iter_mut().zip(&writers) {
                    if !p.is_empty() {
                        match w {
                            Some(w) => {
                                let _ = w.send(std::mem::take(p));
                            }
                            None => p.clear(),
                        }
                    }
                }
                inbox.recv().await
            }
        };
        match input {
            Some(Input::Controller { conn, msg }) => {
                let _ = stats
                    .first_message_ns
                    .compare_exchange(0, unix_ns(), Ordering::Relaxed, Ordering::Relaxed);
                dp.on_message(conn, &msg, &mut effects);
                if let Some(n) = stats.flows.get(&dpid) {
                    n.store(dp.rule_count() as u64, Ordering::Relaxed);
                }
            }
            Some(Input::Closed { conn }) => {
                dp.disconnect(conn);
                if let Some(w) = writers.get_mut(conn) {
                    *w = None;
                }
                if !dp.agent.roles.any_open() {
                    // Fail-secure: the data plane keeps its flows and keeps forwarding.
                    stats.connected.fetch_sub(1, Ordering::Relaxed);
                    stats.lost.fetch_add(1, Ordering::Relaxed);
                }
                if let (Some(every), Some(inbox), Some(&i)) = (reconnect, &own_inbox, target_of.get(&conn)) {
                    io.spawn(redial(targets[i], i, every, inbox.clone()));
                }
            }
            Some(Input::Reconnected { target, stream }) => {
                let Some(inbox) = own_inbox.clone() else { continue };
                let was_open = dp.agent.roles.any_open();
                match attach(stream, version, &mut dp, inbox.clone(), &mut io).await {
                    Some((conn, w)) => {
                        keep_writer(&mut writers, &mut target_of, conn, w, target);
                        if !was_open {
                            stats.connected.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    None => {
                        if let Some(every) = reconnect {
                            io.spawn(redial(targets[target], target, every, inbox));
                        }
                    }
                }
            }
            Some(Input::Frame { port, frame }) => dp.on_frame(port, frame, &mut effects),
            Some(Input::Port { port, up }) => dp.set_link(port, up, &mut effects),
            None => break,
        }
    }
    drop(io);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_built_as_mininet_builds_it() {
        let t = Spec::tree(3, 2);
        assert_eq!(t.switches.len(), 7);
        assert_eq!(t.links.len(), 6);
        assert_eq!(t.hosts.len(), 8);
        assert!(t.validate().is_ok());
        // Numbered level by level; children hang off ports 2.., each child's parent on its port 1.
        assert!(
            t.links.contains(&((1, 2), (2, 1)))
                && t.links.contains(&((1, 3), (3, 1)))
                && t.links.contains(&((3, 2), (6, 1)))
        );
        let one = Spec::tree(1, 3);
        assert_eq!((one.switches.len(), one.links.len(), one.hosts.len()), (1, 0, 3));
    }

    #[test]
    fn a_frame_between_parts_reads_back_and_others_are_refused() {
        let d = shard_datagram(0x1002, 3, &[0xaa; 60]);
        assert_eq!(parse_shard_datagram(&d), Some((0x1002, 3, &[0xaa; 60][..])));
        assert_eq!(parse_shard_datagram(&d[..SHARD_HEADER - 1]), None);
        let mut other = d.clone();
        other[0] = 0;
        assert_eq!(parse_shard_datagram(&other), None);
    }

    #[test]
    fn a_spec_from_a_file_is_checked() {
        let good: Spec = serde_json::from_str(
            r#"{"switches": [[1, 2], [2, 2]], "links": [[[1, 1], [2, 1]]], "hosts": [[1, 2], [2, 2]]}"#,
        )
        .unwrap();
        assert!(good.validate().is_ok());
        for (bad, says) in [
            (
                r#"{"switches": [[1, 2]], "links": [[[1, 1], [2, 1]]], "hosts": []}"#,
                "not listed",
            ),
            (
                r#"{"switches": [[1, 2], [2, 2]], "links": [[[1, 3], [2, 1]]], "hosts": []}"#,
                "not 3",
            ),
            (
                r#"{"switches": [[1, 2], [2, 2]], "links": [[[1, 1], [2, 1]]], "hosts": [[1, 1]]}"#,
                "wired twice",
            ),
            (
                r#"{"switches": [[1, 2], [1, 2]], "links": [], "hosts": []}"#,
                "appears twice",
            ),
        ] {
            let s: Spec = serde_json::from_str(bad).unwrap();
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
