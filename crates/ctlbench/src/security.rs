//! RFC 8456's exception handling, as a security suite: each known malformed
//! case is sent to the controller on a session of its own, and the suite
//! reports what the controller did with it (an OFPT_ERROR with its type and
//! code, a closed session, silence, or acting on it as if it were valid)
//! and whether a well-behaved "witness" switch connected all along kept
//! being served. A controller that dies is a result, not a crash.
//!
//! A controller that learns each new source once and answers with flows
//! (`Answers::NewSource`, Faucet) is met in its own form: each session
//! first waits for the pipeline the controller installs (so those flows are
//! not taken for an answer to a case), its PACKET_INs come as from the
//! controller's send-to-controller rule, tagged with the ports' VLAN, and
//! the witness is served when a flow names the new source it sent.
//!
//! Against a cluster (`SuiteConfig::members`), the suite runs once per
//! member: each case's session goes to that member alone (a malformed
//! peer does not connect to every member), while the witness is connected
//! to every member, as the cluster's switches are, and is served when any
//! member (its master) answers; the controller is alive when every member
//! still accepts connections.

use crate::switch::{self, Identity};
use crate::Answers;
use ofwire::{v10, v13, Body, Framer, Message, OFP10_VERSION, OFP13_VERSION};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What the controller did with a malformed case.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Observation {
    /// OFPT_ERRORs received, as "TYPE/CODE".
    pub errors: Vec<String>,
    /// FLOW_MODs and PACKET_OUTs received: it acted on the input.
    pub acted: usize,
    /// The controller closed the session.
    pub closed: bool,
    /// How long until the first error or the close, ms.
    pub reaction_ms: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub case: &'static str,
    /// What a careful controller does.
    pub expected: &'static str,
    /// "error TYPE/CODE", "closed", "error ..., closed", "acted on it", "ignored", "waited", "controller died".
    pub outcome: String,
    pub observation: Observation,
    /// The witness switch got an answer after this case.
    pub others_served: bool,
    pub controller_alive: bool,
    /// Against a cluster: the member the case was sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member: Option<SocketAddr>,
}

/// The datapath id of the witness switch.
pub const WITNESS_DPID: u64 = 0x5d1a_0000_0000_0001;
/// The datapath id of the first case's session (the others follow).
pub const FIRST_CASE_DPID: u64 = 0x5d1a_0000_0000_0100;
/// How many cases the suite has.
pub const CASES: usize = 11;
/// Ports each of the suite's switches reports.
pub const PORTS: u32 = 4;

struct Peer {
    s: TcpStream,
    framer: Framer,
    id: Identity,
    version: u8,
    /// `Answers::NewSource`: the table and cookie of the controller's
    /// send-to-controller rule, once installed.
    stamp: Option<(u8, u64)>,
    /// A ROLE_REQUEST came (a cluster member decided this switch's role).
    roled: bool,
}

/// What a session watches for besides errors and closing.
#[derive(Clone, Copy, PartialEq)]
enum Until {
    /// The whole wait.
    Waited,
    /// Any FLOW_MOD or PACKET_OUT.
    Acted,
    /// A FLOW_MOD whose match names this source MAC.
    Learnt([u8; 6]),
}

async fn connect(target: SocketAddr) -> std::io::Result<TcpStream> {
    let s = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(target))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
    let _ = s.set_nodelay(true);
    Ok(s)
}

impl Peer {
    async fn raw(cfg: &SuiteConfig, dpid: u64) -> std::io::Result<Peer> {
        Ok(Peer {
            s: connect(cfg.target).await?,
            framer: Framer::default(),
            id: Identity {
                datapath_id: dpid,
                ports: PORTS,
            },
            version: cfg.version,
            stamp: None,
            roled: false,
        })
    }

    /// Connects and completes the handshake; with `settle`, also takes what
    /// the controller sends a new switch (a table-miss rule, a pipeline),
    /// so it is not taken for an answer to what the session sends next.
    async fn open(cfg: &SuiteConfig, dpid: u64, settle: bool) -> std::io::Result<Peer> {
        let mut p = Peer::raw(cfg, dpid).await?;
        let id = p.id;
        tokio::time::timeout(
            Duration::from_secs(5),
            crate::handshake(&mut p.s, &mut p.framer, cfg.version, id),
        )
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "handshake timed out"))??;
        if settle {
            // (OpenFlow 1.0 has no roles: its member writes once elected,
            // and nothing says when.)
            let roled = !cfg.members.is_empty() && cfg.version == OFP13_VERSION;
            p.settle(cfg.answers == Answers::NewSource, roled).await?;
        }
        Ok(p)
    }

    /// Takes what the controller sends a new switch until it has been
    /// quiet for a moment (and, with `stamped`, has installed a
    /// send-to-controller rule; with `roled`, a cluster member has sent its
    /// ROLE_REQUEST: a member holds its apps' first rules back until the
    /// switch's election, up to a second, and they are not an answer to
    /// what the session sends next).
    async fn settle(&mut self, stamped: bool, roled: bool) -> std::io::Result<()> {
        let start = Instant::now();
        let quiet = Duration::from_millis(300);
        loop {
            // (Ends once nothing came for `quiet`, or after 5 s.)
            let (o, _) = self.observe(quiet, Until::Waited, true).await;
            if o.closed {
                return Err(std::io::Error::other("the controller closed the session"));
            }
            let decided = !roled || self.roled;
            if decided && (!stamped || self.stamp.is_some()) {
                return Ok(());
            }
            if roled && !self.roled && start.elapsed() > Duration::from_secs(5) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no cluster member sent a ROLE_REQUEST within 5 s",
                ));
            }
            if start.elapsed() > Duration::from_secs(10) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the controller installed no send-to-controller rule within 10 s",
                ));
            }
        }
    }

    /// A PACKET_IN of `data` in this session's form: as from the
    /// controller's send-to-controller rule once one is known.
    fn packet_in(&self, xid: u32, buffer_id: u32, data: Vec<u8>) -> Message {
        let mut m = packet_in(self.version, xid, buffer_id, data);
        if let (Some((table, cookie)), Body::V13(v13::Body::PacketIn(pi))) = (self.stamp, &mut m.body) {
            pi.reason = ofwire::PacketInReason::Action;
            pi.table_id = table;
            pi.cookie = cookie;
        }
        m
    }

    async fn send(&mut self, bytes: &[u8]) -> bool {
        self.s.write_all(bytes).await.is_ok()
    }

    async fn send_msg(&mut self, m: &Message) -> bool {
        let bytes = m.to_bytes().expect("well-formed");
        self.send(&bytes).await
    }

    /// Watches the session for `wait` (less if it closes, or once `until`
    /// is met, which the second value says; with `quiet`, once `wait`
    /// passes with nothing received).
    async fn observe(&mut self, wait: Duration, until: Until, quiet: bool) -> (Observation, bool) {
        let mut start = Instant::now();
        let mut o = Observation::default();
        let mut met = false;
        let give_up = Instant::now() + Duration::from_secs(5).max(wait);
        let mut buf = vec![0u8; 65536];
        loop {
            // What the framer holds first (the handshake may have left some).
            let mut replies = Vec::new();
            while let Ok(Some(raw)) = self.framer.next_message() {
                let Ok(m) = ofwire::decode(raw) else { continue };
                match &m.body {
                    Body::V10(v10::Body::Error(e)) | Body::V13(v13::Body::Error(e)) => {
                        o.errors.push(e.code.to_string());
                        o.reaction_ms.get_or_insert(start.elapsed().as_secs_f64() * 1e3);
                    }
                    Body::V10(v10::Body::FlowMod(_) | v10::Body::PacketOut(_))
                    | Body::V13(v13::Body::FlowMod(_) | v13::Body::PacketOut(_)) => {
                        o.acted += 1;
                        if let Some(rule) = crate::to_controller_rule(&m) {
                            self.stamp = Some(rule);
                        }
                        met |= match until {
                            Until::Waited => false,
                            Until::Acted => true,
                            Until::Learnt(src) => crate::learnt_source(&m) == Some(src),
                        };
                    }
                    _ => {
                        self.roled |= matches!(m.body, Body::V13(v13::Body::RoleRequest(_)));
                        replies.extend(switch::replies(self.id, &m));
                    }
                }
            }
            for r in replies {
                let _ = self.send_msg(&r).await;
            }
            if met || start.elapsed() >= wait || Instant::now() >= give_up {
                break;
            }
            let left = (wait - start.elapsed()).min(give_up - Instant::now());
            let n = match tokio::time::timeout(left, self.s.read(&mut buf)).await {
                Err(_) => break,
                Ok(Ok(0)) | Ok(Err(_)) => {
                    o.closed = true;
                    o.reaction_ms.get_or_insert(start.elapsed().as_secs_f64() * 1e3);
                    break;
                }
                Ok(Ok(n)) => n,
            };
            if quiet {
                start = Instant::now();
            }
            self.framer.push(&buf[..n]);
        }
        (o, met)
    }
}

/// The frames' sources: `n` at the end of a locally administered address;
/// with `Answers::NewSource`, one this run has never sent (the prefix
/// differs from run to run, as the driver's do).
struct Sources {
    new: Option<[u8; 3]>,
    vlan: Option<u16>,
}

impl Sources {
    fn of(cfg: &SuiteConfig) -> Sources {
        Sources {
            new: (cfg.answers == Answers::NewSource).then(|| crate::source_prefix(0xd1a)),
            vlan: cfg.vlan,
        }
    }

    fn mac(&self, n: u32) -> [u8; 6] {
        match self.new {
            Some(prefix) => crate::new_source(prefix, n),
            None => [0x02, 0, 0, 0x5e, 0xc0, n as u8],
        }
    }

    /// A frame from source `n`, tagged with the ports' VLAN if they have one.
    fn frame(&self, n: u32, dst: [u8; 6], ethertype: [u8; 2], payload: &[u8]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&self.mac(n));
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(payload);
        f.resize(f.len().max(60), 0);
        crate::tagged(f, self.vlan)
    }
}

/// An IPv4/UDP header and a few bytes of payload.
const IPV4: [u8; 28] = [
    0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80, 0, 8, 0, 0,
];

fn packet_in(version: u8, xid: u32, buffer_id: u32, data: Vec<u8>) -> Message {
    let body = if version == OFP10_VERSION {
        Body::V10(v10::Body::PacketIn(v10::PacketIn {
            buffer_id,
            total_len: data.len() as u16,
            in_port: 1,
            reason: ofwire::PacketInReason::NoMatch,
            data: ofwire::Bytes(data),
        }))
    } else {
        Body::V13(v13::Body::PacketIn(v13::PacketIn {
            buffer_id,
            total_len: data.len() as u16,
            reason: ofwire::PacketInReason::NoMatch,
            table_id: 0,
            cookie: 0,
            match_: ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::InPort(1)]),
            data: ofwire::Bytes(data),
        }))
    };
    Message { version, xid, body }
}

/// A PORT_STATUS whose port name fills its 16 bytes with no NUL.
fn port_status_without_nul(version: u8) -> Vec<u8> {
    let mut dp = ofswitch::emulated::Emulated::new(1, 1, 1, 1, crate::switch::desc());
    dp.connect(version);
    let mut effects = Vec::new();
    dp.set_link(1, false, &mut effects);
    let Some(ofswitch::emulated::Effect::ToController { msg: m, .. }) = effects.pop() else {
        unreachable!("a link going down is announced to the controller connected")
    };
    let mut b = m.to_bytes().expect("port status");
    // The name follows reason (1), pad (7), then port_no and hw_addr (and pads in 1.3).
    let at = if version == OFP10_VERSION {
        8 + 8 + 2 + 6
    } else {
        8 + 8 + 4 + 4 + 6 + 2
    };
    b[at..at + 16].copy_from_slice(b"ABCDEFGHIJKLMNOP");
    b
}

fn header(version: u8, msg_type: u8, length: u16, xid: u32) -> Vec<u8> {
    let mut h = vec![version, msg_type];
    h.extend_from_slice(&length.to_be_bytes());
    h.extend_from_slice(&xid.to_be_bytes());
    h
}

fn describe(o: &Observation) -> String {
    let mut parts = Vec::new();
    if !o.errors.is_empty() {
        parts.push(format!("error {}", o.errors.join(", ")));
    }
    if o.acted > 0 {
        parts.push("acted on it".into());
    }
    if o.closed {
        parts.push("closed".into());
    }
    if parts.is_empty() {
        "ignored".into()
    } else {
        parts.join(", ")
    }
}

/// Settings of the suite.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteConfig {
    pub target: SocketAddr,
    pub version: u8,
    /// How long to watch each case.
    pub wait: Duration,
    /// How long to wait for a controller to give up on a silent connection.
    pub hello_wait: Duration,
    /// How an answer is told apart (`Answers::NewSource`: a controller that
    /// learns sources and answers with flows, met in its own form).
    #[serde(default)]
    pub answers: Answers,
    /// The VLAN the switches' frames carry (the ports' native VLAN).
    #[serde(default)]
    pub vlan: Option<u16>,
    /// A cluster's members (empty: `target` alone): the suite runs against
    /// each in turn, the witness connected to all.
    #[serde(default)]
    pub members: Vec<SocketAddr>,
}

/// Against a cluster: the witness holds a session to every member and is
/// served when any answers; alive when every member accepts connections.
async fn witness_group_served(ws: &mut [Option<Peer>], cfg: &SuiteConfig, src: &Sources, seq: &mut u8) -> (bool, bool) {
    let mut checks = Vec::new();
    for (w, &member) in ws.iter_mut().zip(&cfg.members) {
        let c = SuiteConfig {
            target: member,
            ..cfg.clone()
        };
        let mut s = *seq;
        checks.push(async move { witness_served(w, &c, src, &mut s).await });
    }
    *seq = seq.wrapping_add(1);
    // Side by side: only the master answers, the others are waited for at once.
    let got = futures::future::join_all(checks).await;
    (got.iter().any(|g| g.0), got.iter().all(|g| g.1))
}

/// Checks the witness gets an answer; reconnects it if the session is gone.
async fn witness_served(w: &mut Option<Peer>, cfg: &SuiteConfig, src: &Sources, seq: &mut u8) -> (bool, bool) {
    for attempt in 0..2 {
        if w.is_none() {
            match Peer::open(cfg, WITNESS_DPID, true).await {
                Ok(p) => *w = Some(p),
                Err(_) => return (false, attempt == 0 && connect(cfg.target).await.is_ok()),
            }
        }
        let p = w.as_mut().expect("witness");
        *seq = seq.wrapping_add(1);
        let n = *seq as u32;
        let pi = p.packet_in(0x1000 + n, 0x1000 + n, src.frame(n, [0xff; 6], [0x08, 0x00], &IPV4));
        let until = match cfg.answers {
            Answers::NewSource => Until::Learnt(src.mac(n)),
            Answers::Buffer => Until::Acted,
        };
        if p.send_msg(&pi).await {
            let (o, served) = p.observe(cfg.wait.max(Duration::from_secs(2)), until, false).await;
            if served {
                return (true, true);
            }
            if !o.closed {
                return (false, true);
            }
        }
        *w = None;
    }
    (false, connect(cfg.target).await.is_ok())
}

/// Runs every case in turn (against a cluster, every case against each
/// member in turn).
pub async fn run_suite(cfg: SuiteConfig, mut on_case: impl FnMut(&CaseResult)) -> Vec<CaseResult> {
    if cfg.members.is_empty() {
        return run_cases(&cfg, None, &mut on_case).await;
    }
    let mut witnesses = Vec::new();
    for &member in &cfg.members {
        let c = SuiteConfig {
            target: member,
            ..cfg.clone()
        };
        witnesses.push(Peer::open(&c, WITNESS_DPID, true).await.ok());
    }
    let mut all = Vec::new();
    for (m, &member) in cfg.members.iter().enumerate() {
        let c = SuiteConfig {
            target: member,
            ..cfg.clone()
        };
        all.extend(run_cases(&c, Some((m, &mut witnesses)), &mut on_case).await);
    }
    all
}

/// The cases against `cfg.target`; `cluster`: the member's index and the
/// witness's sessions to every member.
async fn run_cases(
    cfg: &SuiteConfig,
    mut cluster: Option<(usize, &mut Vec<Option<Peer>>)>,
    on_case: &mut impl FnMut(&CaseResult),
) -> Vec<CaseResult> {
    let cfg = cfg.clone();
    let src = Sources::of(&cfg);
    let mut witness = match cluster {
        Some(_) => None,
        None => Peer::open(&cfg, WITNESS_DPID, true).await.ok(),
    };
    // Each member's cases have datapath ids of their own.
    let first = FIRST_CASE_DPID + cluster.as_ref().map_or(0, |(m, _)| *m as u64 * 0x100);
    let mut seq = 0u8;
    let mut results = Vec::new();
    let cases: [(&'static str, &'static str); CASES] = [
        (
            "bad length field",
            "close (the stream cannot be re-framed) or BAD_REQUEST/BAD_LEN",
        ),
        ("bad version in HELLO", "HELLO_FAILED/INCOMPATIBLE, close"),
        ("header type not matching the body", "BAD_REQUEST/BAD_LEN"),
        ("ARP ethertype carrying IPv4", "ignored (no flow installed for it)"),
        ("port name without NUL", "BAD_REQUEST (or ignored)"),
        ("message before HELLO", "an error, close"),
        ("no HELLO", "close after a timeout"),
        ("un-negotiated version", "BAD_REQUEST/BAD_VERSION"),
        ("unknown message type", "BAD_REQUEST/BAD_TYPE"),
        ("corrupted buffer id", "ignored, or an error from the switch side later"),
        (
            "duplicate datapath id",
            "one session kept (the newer), the other closed",
        ),
    ];
    for (i, (case, expected)) in cases.into_iter().enumerate() {
        let dpid = first + i as u64;
        // Each case's frame comes from a source of its own.
        let n = 0x100 + i as u32;
        let (obs, note) = observe_case(&cfg, i, dpid, n, &src).await;
        let (others_served, alive) = match &mut cluster {
            Some((_, ws)) => witness_group_served(ws, &cfg, &src, &mut seq).await,
            None => witness_served(&mut witness, &cfg, &src, &mut seq).await,
        };
        let mut outcome = if !alive {
            "controller died".to_string()
        } else if i == 6 && !obs.closed {
            format!("waited {:.0} s without closing", cfg.hello_wait.as_secs_f64())
        } else {
            describe(&obs)
        };
        if let Some(n) = note {
            outcome = format!("{outcome} ({n})");
        }
        let r = CaseResult {
            case,
            expected,
            outcome,
            observation: obs,
            others_served,
            controller_alive: alive,
            member: cluster.as_ref().map(|_| cfg.target),
        };
        on_case(&r);
        results.push(r);
    }
    results
}

/// One case's observation, and a note on what could not be done.
async fn observe_case(cfg: &SuiteConfig, i: usize, dpid: u64, n: u32, src: &Sources) -> (Observation, Option<String>) {
    match i {
        0 | 2 | 3 | 4 | 7 | 8 | 9 => malformed_in_session(cfg, i, dpid, n, src).await,
        1 | 5 | 6 => before_hello(cfg, i, dpid, n, src).await,
        _ => duplicate_dpid(cfg, dpid).await,
    }
}

/// A malformed message in an open session (cases 0, 2, 3, 4, 7, 8, 9).
async fn malformed_in_session(
    cfg: &SuiteConfig,
    i: usize,
    dpid: u64,
    n: u32,
    src: &Sources,
) -> (Observation, Option<String>) {
    let v = cfg.version;
    let other = if v == OFP10_VERSION {
        OFP13_VERSION
    } else {
        OFP10_VERSION
    };
    let mut note = None;
    let obs = match Peer::open(cfg, dpid, true).await {
        Ok(mut p) => {
            let bytes = match i {
                0 => header(v, 10, 4, 9),
                2 => {
                    // A PACKET_IN body under the PORT_STATUS type.
                    let mut b = p
                        .packet_in(9, 9, src.frame(n, [0xff; 6], [0x08, 0x00], &IPV4))
                        .to_bytes()
                        .expect("pi");
                    b[1] = 12;
                    b
                }
                3 => p
                    .packet_in(9, 9, src.frame(n, src.mac(n + 0x100), [0x08, 0x06], &IPV4))
                    .to_bytes()
                    .expect("pi"),
                4 => port_status_without_nul(v),
                7 => header(other, 2, 8, 9),
                8 => header(v, 0x63, 8, 9),
                _ => p.packet_in(9, 0xdead_beef, Vec::new()).to_bytes().expect("pi"),
            };
            p.send(&bytes).await;
            p.observe(cfg.wait, Until::Waited, false).await.0
        }
        Err(e) => {
            note = Some(format!("could not open a session: {e}"));
            Observation::default()
        }
    };
    (obs, note)
}

/// A session that goes wrong around its HELLO (cases 1, 5, 6).
async fn before_hello(cfg: &SuiteConfig, i: usize, dpid: u64, n: u32, src: &Sources) -> (Observation, Option<String>) {
    let mut note = None;
    let obs = match Peer::raw(cfg, dpid).await {
        Ok(mut p) => match i {
            1 => {
                // A HELLO of version 0, which no OpenFlow version is.
                p.send(&header(0x00, 0, 8, 1)).await;
                p.observe(cfg.wait, Until::Waited, false).await.0
            }
            5 => {
                let pi = p.packet_in(9, 9, src.frame(n, [0xff; 6], [0x08, 0x00], &IPV4));
                p.send_msg(&pi).await;
                p.observe(cfg.wait, Until::Waited, false).await.0
            }
            _ => p.observe(cfg.hello_wait, Until::Waited, false).await.0,
        },
        Err(e) => {
            note = Some(format!("could not connect: {e}"));
            Observation::default()
        }
    };
    (obs, note)
}

/// Two sessions announce the same datapath id (case 10). (The second is
/// not waited on for a pipeline: the controller may close it at once.)
async fn duplicate_dpid(cfg: &SuiteConfig, dpid: u64) -> (Observation, Option<String>) {
    let mut first = match Peer::open(cfg, dpid, true).await {
        Ok(p) => p,
        Err(e) => return (Observation::default(), Some(format!("could not open a session: {e}"))),
    };
    let mut second = match Peer::open(cfg, dpid, false).await {
        Ok(p) => p,
        Err(e) => {
            let note = format!("the second session could not open: {e}");
            return (Observation::default(), Some(note));
        }
    };
    let a = first.observe(cfg.wait / 2, Until::Waited, false).await.0;
    let b = second.observe(cfg.wait / 2, Until::Waited, false).await.0;
    let note = format!(
        "first session {}, second session {}",
        if a.closed { "closed" } else { "kept" },
        if b.closed { "closed" } else { "kept" }
    );
    let obs = Observation {
        errors: [a.errors, b.errors].concat(),
        acted: 0,
        closed: a.closed || b.closed,
        reaction_ms: a.reaction_ms.or(b.reaction_ms),
    };
    (obs, Some(note))
}
