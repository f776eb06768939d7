//! A controller load driver in the manner of cbench, done right on the
//! points cbench gets wrong: every response is matched to the PACKET_IN it
//! answers (by buffer id), duplicates and unmatched replies are counted
//! apart, per-message round trips go into an HDR histogram, and a closed
//! session is reported instead of ending the run.
//!
//! Each emulated switch (OpenFlow 1.0 or 1.3) completes the handshake,
//! teaches the controller its MAC addresses (one broadcast PACKET_IN per
//! MAC, as cbench's learning phase does), then sends PACKET_INs from one of
//! its MACs to another, so a learning controller answers with FLOW_MODs.
//! `throughput` keeps up to `window` requests outstanding per switch;
//! `latency` keeps exactly one.

pub mod capacity;
pub mod datapath;
pub mod fabric;
pub mod method;
pub mod northbound;
pub mod rate;
pub use ofswitch::roles;
pub mod security;
pub mod switch;
pub mod synflood;
pub mod topology_tests;

use hdrhistogram::Histogram;
use ofwire::{v10, v13, Body, Framer, Hello, Message, OFP10_VERSION};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Throughput,
    Latency,
    /// A flood: `window` PACKET_INs every millisecond whatever the
    /// controller answers (only TCP back-pressure slows it), for DoS tests
    /// against controllers that drop what they cannot place.
    Flood,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Config {
    pub target: SocketAddr,
    pub switches: usize,
    pub macs: usize,
    pub mode: Mode,
    pub version: u8,
    pub loops: usize,
    pub loop_ms: u64,
    pub warmup: usize,
    /// Outstanding PACKET_INs per switch in throughput mode.
    pub window: usize,
    /// New connections per second; 0: as fast as the controller accepts
    /// (a short pause after every 64).
    pub connect_rate: f64,
    /// Datapath id of the first switch (the others follow).
    pub first_dpid: u64,
    /// Ports each switch reports.
    pub ports: u32,
    /// Malformed messages mixed into the load, per thousand PACKET_INs
    /// (RFC 8456 exception handling): alternately a PACKET_IN whose frame
    /// says ARP but carries IPv4, and a message of an unknown type.
    pub malformed_per_mille: u32,
    /// Throughput mode, paced: PACKET_INs per second over all switches
    /// (0: as many as the window allows). Requests still outstanding are
    /// capped by the window.
    pub offered_rate: f64,
    /// PACKET_IN frames carry this 802.1Q VLAN id, as frames reach the
    /// controller from a switch whose first table pushes a port's VLAN
    /// (Faucet's `native_vlan`); None: untagged.
    #[serde(default)]
    pub vlan: Option<u16>,
    /// How an answer is told to belong to a request.
    #[serde(default)]
    pub answers: Answers,
    /// `Answers::NewSource`: how long a request waits for its answer
    /// before it is given up, ms (longer than the controller's queue of
    /// `window` requests takes, or answers come after it).
    #[serde(default)]
    pub unanswered_after_ms: u64,
}

/// How the controller's answers are matched to the PACKET_INs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answers {
    /// cbench's way: a FLOW_MOD or PACKET_OUT carrying the PACKET_IN's
    /// buffer id (learning switches that answer every PACKET_IN).
    #[default]
    Buffer,
    /// A controller that learns each new source once and installs flows
    /// for it without buffers (Faucet): every PACKET_IN carries a source
    /// MAC never sent before, and its answer is the first FLOW_MOD whose
    /// match names that eth_src. The PACKET_INs come as from the
    /// controller's own send-to-controller rule: none before the
    /// controller installs it, then reason ACTION with its table and
    /// cookie. A request unanswered for `unanswered_after_ms` is given up
    /// and counted (a learning controller may drop some by design).
    NewSource,
}

/// What one loop measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoopResult {
    pub loop_index: usize,
    pub seconds: f64,
    /// cbench's figure: every FLOW_MOD or PACKET_OUT counts.
    pub responses_per_s: f64,
    /// Responses matched to an outstanding request, once each.
    pub matched_per_s: f64,
    pub unmatched: u64,
    /// Good PACKET_INs sent per second.
    pub requests_per_s: f64,
    pub malformed_sent: u64,
    pub malformed_acted: u64,
    /// OFPT_ERRORs received.
    pub errors: u64,
    /// Requests given up unanswered (`Answers::NewSource` only).
    pub unanswered: u64,
    pub per_switch_min: u64,
    pub per_switch_max: u64,
    /// Each emulated switch's own FLOW_MODs and PACKET_OUTs in the loop
    /// (cbench's per-switch columns).
    pub per_switch: Vec<u64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    pub config: Config,
    pub loops: Vec<LoopResult>,
    pub rtt_us_p50: f64,
    pub rtt_us_p99: f64,
    pub rtt_us_max: f64,
    /// The round-trip distribution as (microseconds, cumulative fraction).
    pub rtt_cdf: Vec<(f64, f64)>,
    pub sessions_lost: u64,
}

#[derive(Default)]
struct SwitchCounters {
    responses: AtomicU64,
    matched: AtomicU64,
    unmatched: AtomicU64,
    malformed_sent: AtomicU64,
    requests: AtomicU64,
    /// FLOW_MODs or PACKET_OUTs answering a malformed PACKET_IN.
    malformed_acted: AtomicU64,
    errors: AtomicU64,
    unanswered: AtomicU64,
    /// The switch finished its handshake.
    established: AtomicBool,
}

impl SwitchCounters {
    /// The counters now. They are read one after another while the switch
    /// tasks keep adding, so a loop's figures can differ by one read batch
    /// at its edges (e.g. matched slightly above responses in one loop);
    /// over a run they agree.
    fn snapshot(&self) -> [u64; 8] {
        [
            &self.responses,
            &self.matched,
            &self.unmatched,
            &self.malformed_sent,
            &self.malformed_acted,
            &self.errors,
            &self.requests,
            &self.unanswered,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
}

fn measuring_now(t: &SwitchTask) -> bool {
    t.measuring.load(Ordering::Relaxed)
}

/// Buffer ids of malformed PACKET_INs have the top bit set; good ones never do.
const MALFORMED_BIT: u32 = 0x8000_0000;

const MAX_OUTSTANDING: usize = 1 << 16;

/// A 60-byte Ethernet/IPv4/UDP frame from `src` to `dst`.
fn frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[
        0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80, 0, 26, 0, 0,
    ]);
    f.resize(60, 0);
    f
}

/// `f` with an 802.1Q tag of `vlan` after its addresses (as it is without).
fn tagged(mut f: Vec<u8>, vlan: Option<u16>) -> Vec<u8> {
    if let Some(v) = vlan {
        let tci = (v & 0x0fff).to_be_bytes();
        f.splice(12..12, [0x81, 0x00, tci[0], tci[1]]);
    }
    f
}

fn mac(switch: usize, i: usize) -> [u8; 6] {
    let s = switch as u32;
    let i = i as u16;
    [0x02, (s >> 16) as u8, (s >> 8) as u8, s as u8, (i >> 8) as u8, i as u8]
}

/// The first three bytes of a connection's new sources: locally
/// administered unicast, 6 bits that differ from one connection to the
/// next (so a controller that outlives a run, `--target`, still meets new
/// sources in the next), then the switch's index (16 bits).
fn source_prefix(switch: usize) -> [u8; 3] {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let s = switch as u32;
    [(((nanos >> 10) as u8) << 2) | 0x02, (s >> 8) as u8, s as u8]
}

/// The source MAC of request `seq` in `Answers::NewSource` (24 bits of
/// sequence; they come round after 16 million requests of one connection).
fn new_source(prefix: [u8; 3], seq: u32) -> [u8; 6] {
    [
        prefix[0],
        prefix[1],
        prefix[2],
        (seq >> 16) as u8,
        (seq >> 8) as u8,
        seq as u8,
    ]
}

/// The request (24 bits of its sequence) a FLOW_MOD answers in
/// `Answers::NewSource`: the eth_src its match names, if it is one of this
/// connection's sources.
fn answered_source(flow_mod: &Message, prefix: [u8; 3]) -> Option<u32> {
    let m = learnt_source(flow_mod)?;
    (m[..3] == prefix).then(|| u32::from_be_bytes([0, m[3], m[4], m[5]]))
}

/// The source MAC an OpenFlow 1.3 FLOW_MOD's match names exactly, if any.
fn learnt_source(flow_mod: &Message) -> Option<[u8; 6]> {
    let Body::V13(v13::Body::FlowMod(fm)) = &flow_mod.body else {
        return None;
    };
    fm.match_.fields.iter().find_map(|f| match f {
        ofwire::oxm::Oxm::EthSrc(m, None) => Some(m.0),
        _ => None,
    })
}

/// The table and cookie of a FLOW_MOD that sends to the controller (the
/// rule a learning controller's PACKET_INs come from).
fn to_controller_rule(flow_mod: &Message) -> Option<(u8, u64)> {
    let Body::V13(v13::Body::FlowMod(fm)) = &flow_mod.body else {
        return None;
    };
    let to_ctl = |acts: &Vec<v13::Action>| {
        acts.iter()
            .any(|a| matches!(a, v13::Action::Output { port, .. } if *port == v13::port::CONTROLLER))
    };
    fm.instructions
        .iter()
        .any(|i| match i {
            v13::Instruction::ApplyActions(a) | v13::Instruction::WriteActions(a) => to_ctl(a),
            _ => false,
        })
        .then_some((fm.table_id, fm.cookie))
}

/// Appends a PACKET_IN with `buffer_id` = `seq`.
fn put_packet_in(out: &mut Vec<u8>, version: u8, seq: u32, in_port: u32, data: &[u8]) {
    put_packet_in_as(out, version, seq, in_port, data, ofwire::PacketInReason::NoMatch)
}

/// `put_packet_in` with a reason.
fn put_packet_in_as(
    out: &mut Vec<u8>,
    version: u8,
    seq: u32,
    in_port: u32,
    data: &[u8],
    reason: ofwire::PacketInReason,
) {
    let body = if version == OFP10_VERSION {
        Body::V10(v10::Body::PacketIn(v10::PacketIn {
            buffer_id: seq,
            total_len: data.len() as u16,
            in_port: in_port as u16,
            reason,
            data: ofwire::Bytes(data.to_vec()),
        }))
    } else {
        Body::V13(v13::Body::PacketIn(v13::PacketIn {
            buffer_id: seq,
            total_len: data.len() as u16,
            reason,
            table_id: 0,
            cookie: 0,
            match_: ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::InPort(in_port)]),
            data: ofwire::Bytes(data.to_vec()),
        }))
    };
    Message {
        version,
        xid: seq,
        body,
    }
    .encode(out)
    .expect("packet-in encodes");
}

/// The buffer id a FLOW_MOD or PACKET_OUT refers to, if it is one.
fn answered_buffer(version: u8, m: &[u8]) -> Option<u32> {
    let be32 = |i: usize| m.get(i..i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    match (version, m[1]) {
        (OFP10_VERSION, 14) => be32(8 + 40 + 8 + 8),
        (OFP10_VERSION, 13) => be32(8),
        (_, 14) => be32(8 + 8 + 8 + 1 + 1 + 6),
        (_, 13) => be32(8),
        _ => None,
    }
}

async fn handshake(s: &mut TcpStream, framer: &mut Framer, version: u8, id: switch::Identity) -> std::io::Result<()> {
    s.write_all(
        &Message::new(version, 1, Body::Hello(Hello::with_versions(&[version])))
            .to_bytes()
            .expect("hello"),
    )
    .await?;
    let mut buf = vec![0u8; 8192];
    // In 1.3, when the controller asked for our features (and not yet for
    // the port list).
    let mut features_at: Option<std::time::Instant> = None;
    loop {
        while let Some(raw) = framer
            .next_message()
            .map_err(|e| std::io::Error::other(e.to_string()))?
        {
            let Ok(m) = ofwire::decode(raw) else { continue };
            // Done once the controller has our features (1.0) or our port
            // list (1.3: controllers such as os-ken and sdnlab's drop
            // PACKET_INs until they have it); not every controller sends
            // SET_CONFIG. A 1.3 controller that never asks for the port
            // list (ovs-testcontroller) is done 200 ms after the features.
            let done = matches!(
                m.body,
                Body::V10(v10::Body::FeaturesRequest) | Body::V13(v13::Body::MultipartRequest(_))
            );
            if matches!(m.body, Body::V13(v13::Body::FeaturesRequest)) {
                features_at.get_or_insert_with(std::time::Instant::now);
            }
            for r in switch::replies(id, &m) {
                s.write_all(&r.to_bytes().expect("reply")).await?;
            }
            if done {
                return Ok(());
            }
        }
        let n = match features_at {
            None => s.read(&mut buf).await?,
            Some(at) => {
                let left = Duration::from_millis(200).saturating_sub(at.elapsed());
                match tokio::time::timeout(left, s.read(&mut buf)).await {
                    Err(_) => return Ok(()),
                    Ok(r) => r?,
                }
            }
        };
        if n == 0 {
            return Err(std::io::Error::other("controller closed during the handshake"));
        }
        framer.push(&buf[..n]);
    }
}

struct SwitchTask {
    idx: usize,
    cfg: Config,
    counters: Arc<SwitchCounters>,
    stop: Arc<AtomicBool>,
    measuring: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
}

async fn run_switch(t: SwitchTask) -> Histogram<u64> {
    // Round trips are recorded by at most ~1024 switches (a histogram each),
    // so memory stays bounded with tens of thousands of switches.
    let sample_every = t.cfg.switches.div_ceil(1024).max(1);
    let records = t.idx.is_multiple_of(sample_every);
    let mut hist = if records {
        new_histogram()
    } else {
        Histogram::<u64>::new(1).expect("tiny histogram")
    };
    let cfg = &t.cfg;
    let Ok(mut s) = TcpStream::connect(cfg.target).await else {
        t.lost.fetch_add(1, Ordering::Relaxed);
        return hist;
    };
    let _ = s.set_nodelay(true);
    let mut framer = Framer::default();
    let id = switch::Identity {
        datapath_id: cfg.first_dpid.wrapping_add(t.idx as u64),
        ports: cfg.ports,
    };
    if handshake(&mut s, &mut framer, cfg.version, id).await.is_err() {
        t.lost.fetch_add(1, Ordering::Relaxed);
        return hist;
    }
    t.counters.established.store(true, Ordering::Relaxed);
    // Encoded once; each send copies a template and patches xid and buffer
    // id (and, for new sources, the source MAC at `src_at`).
    let new_sources = cfg.answers == Answers::NewSource;
    let reason = match new_sources {
        true => ofwire::PacketInReason::Action,
        false => ofwire::PacketInReason::NoMatch,
    };
    let mut src_at = 0;
    let mut templates: Vec<Vec<u8>> = (0..cfg.macs)
        .map(|i| {
            let mut v = Vec::new();
            let f = tagged(frame(mac(t.idx, i), mac(t.idx, (i + 1) % cfg.macs)), cfg.vlan);
            put_packet_in_as(&mut v, cfg.version, 0, 1 + (i % 4) as u32, &f, reason);
            // The frame is the message's last part.
            src_at = v.len() - f.len() + 6;
            v
        })
        .collect();
    // New sources: when the controller's send-to-controller rule was last
    // stamped on the templates, and when unanswered requests were last
    // looked for.
    let mut stamped: Option<(u8, u64)> = None;
    let prefix = source_prefix(t.idx);
    let mut swept = Instant::now();
    let learn: Vec<Vec<u8>> = (0..cfg.macs)
        .map(|i| tagged(frame(mac(t.idx, i), [0xff; 6]), cfg.vlan))
        .collect();
    let window = if cfg.mode == Mode::Latency {
        1
    } else {
        cfg.window.clamp(1, MAX_OUTSTANDING / 4)
    };
    // Each slot remembers which request it holds, so a late or duplicate
    // answer is never credited to a later request in the same slot.
    let slots = (window * 4).next_power_of_two().max(16);
    let started = Instant::now();
    let mut sent_at: Vec<(u32, Instant)> = vec![(0, started); slots];
    // Per-switch buffers shrink as switches multiply (memory stays bounded).
    let size = (4 << 20) / cfg.switches.max(1);
    let size = size.clamp(4096, 256 * 1024);
    let mut out = Vec::with_capacity(size);
    let mut buf = vec![0u8; size];
    let mut seq: u32 = 1;
    let mut outstanding = 0usize;
    // Learning phase: every MAC once, as a broadcast; answers are drained
    // below. (New sources need none: every one is new.)
    for (i, f) in learn.iter().enumerate().filter(|_| !new_sources) {
        put_packet_in(&mut out, cfg.version, 0, 1 + (i % 4) as u32, f);
    }
    if s.write_all(&out).await.is_err() {
        t.lost.fetch_add(1, Ordering::Relaxed);
        return hist;
    }
    out.clear();
    let window = if cfg.mode == Mode::Latency {
        1
    } else {
        cfg.window.clamp(1, MAX_OUTSTANDING / 2)
    };
    let mut next_mac = 0usize;
    let mut sent_total = 0u64;
    let mut malformed_seq = 0u32;
    let arp_carrying_ipv4 = {
        let mut f = frame(mac(t.idx, 0), mac(t.idx, 1 % cfg.macs));
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        let f = tagged(f, cfg.vlan);
        let mut v = Vec::new();
        put_packet_in(&mut v, cfg.version, 0, 1, &f);
        v
    };
    let per_switch_rate = if cfg.mode != Mode::Latency && cfg.offered_rate > 0.0 {
        cfg.offered_rate / cfg.switches.max(1) as f64
    } else {
        0.0
    };
    let pace_start = Instant::now();
    let mut paced_sent = 0u64;
    while !t.stop.load(Ordering::Relaxed) {
        // New sources: requests unanswered for too long are given up (their
        // place in the window freed), and counted.
        if new_sources && swept.elapsed() >= Duration::from_millis(100) {
            let now = Instant::now();
            let give_up = Duration::from_millis(cfg.unanswered_after_ms.max(1));
            swept = now;
            let mut gone = 0;
            for slot in sent_at.iter_mut() {
                if slot.0 != 0 && now.duration_since(slot.1) >= give_up {
                    *slot = (0, started);
                    outstanding = outstanding.saturating_sub(1);
                    gone += 1;
                }
            }
            if gone > 0 && measuring_now(&t) {
                t.counters.unanswered.fetch_add(gone, Ordering::Relaxed);
            }
        }
        let mut budget = if cfg.mode == Mode::Flood {
            window
        } else {
            window.saturating_sub(outstanding)
        };
        // New sources come from the controller's send-to-controller rule: a
        // switch sends none before the controller has installed it.
        if new_sources && stamped.is_none() {
            budget = 0;
        }
        if per_switch_rate > 0.0 {
            let due = (pace_start.elapsed().as_secs_f64() * per_switch_rate) as u64;
            budget = budget.min(due.saturating_sub(paced_sent) as usize);
        }
        let mut sent_now = 0u64;
        // One clock read for the batch: its requests go out in one write
        // just below (a read per request cost a fifth of the driver's time).
        let batch_at = Instant::now();
        while budget > 0 {
            if cfg.malformed_per_mille > 0 {
                sent_total += 1;
                // Spread evenly: one every 1000/per_mille requests.
                if (sent_total * cfg.malformed_per_mille as u64) % 1000 < cfg.malformed_per_mille as u64 {
                    malformed_seq = malformed_seq.wrapping_add(1);
                    if malformed_seq.is_multiple_of(2) {
                        let at = out.len();
                        out.extend_from_slice(&arp_carrying_ipv4);
                        let b = MALFORMED_BIT | (malformed_seq & 0x7fff_ffff);
                        out[at + 4..at + 8].copy_from_slice(&b.to_be_bytes());
                        out[at + 8..at + 12].copy_from_slice(&b.to_be_bytes());
                    } else {
                        out.extend_from_slice(&[cfg.version, 0x63, 0, 8]);
                        out.extend_from_slice(&(MALFORMED_BIT | malformed_seq).to_be_bytes());
                    }
                    if measuring_now(&t) {
                        t.counters.malformed_sent.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
            }
            let id = seq as usize % slots;
            sent_at[id] = (seq, batch_at);
            let at = out.len();
            out.extend_from_slice(&templates[next_mac]);
            out[at + 4..at + 8].copy_from_slice(&seq.to_be_bytes());
            out[at + 8..at + 12].copy_from_slice(&seq.to_be_bytes());
            if new_sources {
                out[at + src_at..at + src_at + 6].copy_from_slice(&new_source(prefix, seq));
            }
            next_mac = (next_mac + 1) % cfg.macs;
            // Below the malformed bit, never 0 (the learning phase's id).
            seq = (seq.wrapping_add(1) & !MALFORMED_BIT).max(1);
            outstanding += 1;
            budget -= 1;
            sent_now += 1;
        }
        paced_sent += sent_now;
        if measuring_now(&t) {
            t.counters.requests.fetch_add(sent_now, Ordering::Relaxed);
        }
        if !out.is_empty() {
            if s.write_all(&out).await.is_err() {
                t.lost.fetch_add(1, Ordering::Relaxed);
                return hist;
            }
            out.clear();
        }
        // Paced sending wakes up every millisecond to send what is due.
        let wait = if per_switch_rate > 0.0 || cfg.mode == Mode::Flood {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(200)
        };
        let n = match tokio::time::timeout(wait, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                t.lost.fetch_add(1, Ordering::Relaxed);
                return hist;
            }
            Ok(Ok(n)) => n,
            // Nothing more came: what the framer already holds (left by the
            // handshake) is still taken below.
            Err(_) => 0,
        };
        framer.push(&buf[..n]);
        let measuring = t.measuring.load(Ordering::Relaxed);
        let now = Instant::now();
        let (mut resp, mut matched, mut unmatched, mut acted, mut errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
        while let Ok(Some(m)) = framer.next_message() {
            if m[1] == 1 {
                errors += 1;
                continue;
            }
            if m[1] == 2 {
                // ECHO_REQUEST: answer in kind.
                let mut r = m.to_vec();
                r[1] = 3;
                out.extend_from_slice(&r);
                continue;
            }
            let Some(b) = answered_buffer(cfg.version, m) else {
                // Other control messages (barrier, stats, config) get a switch's answer.
                if let Ok(m) = ofwire::decode(m) {
                    for r in switch::replies(id, &m) {
                        let _ = r.encode(&mut out);
                    }
                }
                continue;
            };
            resp += 1;
            // The request answered, and which bits of its sequence say so.
            let (answered, bits) = if new_sources {
                // Answers are FLOW_MODs naming a new source (1.3 only).
                if m[1] != 14 {
                    continue;
                }
                let Ok(fm) = ofwire::decode(m) else {
                    continue;
                };
                if let Some(rule) = to_controller_rule(&fm).filter(|r| stamped != Some(*r)) {
                    // PACKET_INs come from that rule from now on.
                    stamped = Some(rule);
                    for tpl in templates.iter_mut() {
                        tpl[15] = rule.0;
                        tpl[16..24].copy_from_slice(&rule.1.to_be_bytes());
                    }
                }
                let Some(s24) = answered_source(&fm, prefix) else {
                    continue;
                };
                (s24, 0xff_ffff)
            } else {
                if b == 0 || b == u32::MAX {
                    continue; // an answer to the learning phase (or unbuffered)
                }
                if b & MALFORMED_BIT != 0 {
                    acted += 1;
                    continue;
                }
                (b, u32::MAX)
            };
            let slot = &mut sent_at[answered as usize % slots];
            match (slot.0 != 0 && slot.0 & bits == answered).then(|| std::mem::replace(slot, (0, started)).1) {
                Some(at) => {
                    matched += 1;
                    outstanding = outstanding.saturating_sub(1);
                    if measuring && records {
                        hist.saturating_record(now.duration_since(at).as_nanos().max(1) as u64);
                    }
                }
                None => unmatched += 1,
            }
        }
        if measuring {
            t.counters.responses.fetch_add(resp, Ordering::Relaxed);
            t.counters.matched.fetch_add(matched, Ordering::Relaxed);
            t.counters.unmatched.fetch_add(unmatched, Ordering::Relaxed);
            t.counters.malformed_acted.fetch_add(acted, Ordering::Relaxed);
            t.counters.errors.fetch_add(errors, Ordering::Relaxed);
        }
    }
    hist
}

/// Nanoseconds from 1 ns to an hour, 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

/// Runs the benchmark; `on_loop` sees each loop's result as it is measured
/// (so callers can write samples to disk before anything is summarised).
pub async fn run(cfg: Config, mut on_loop: impl FnMut(&LoopResult)) -> Report {
    let stop = Arc::new(AtomicBool::new(false));
    let measuring = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicU64::new(0));
    let counters: Vec<Arc<SwitchCounters>> = (0..cfg.switches).map(|_| Arc::new(SwitchCounters::default())).collect();
    let mut tasks = Vec::new();
    for (idx, c) in counters.iter().enumerate() {
        let t = SwitchTask {
            idx,
            cfg: cfg.clone(),
            counters: c.clone(),
            stop: stop.clone(),
            measuring: measuring.clone(),
            lost: lost.clone(),
        };
        tasks.push(tokio::spawn(run_switch(t)));
        if cfg.connect_rate > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(1.0 / cfg.connect_rate)).await;
        } else if cfg.switches <= 64 || idx % 64 == 63 {
            // Pace connections a little (some controllers give a new switch ~1 s to
            // finish its handshake); in bulk only every 64th waits.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let mut loops = Vec::new();
    for i in 0..cfg.warmup + cfg.loops {
        let before: Vec<[u64; 8]> = counters.iter().map(|c| c.snapshot()).collect();
        measuring.store(i >= cfg.warmup, Ordering::Relaxed);
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(cfg.loop_ms)).await;
        let secs = t0.elapsed().as_secs_f64();
        if i < cfg.warmup {
            continue;
        }
        let after: Vec<[u64; 8]> = counters.iter().map(|c| c.snapshot()).collect();
        let delta = |k: usize| -> u64 { after.iter().zip(&before).map(|(a, b)| a[k] - b[k]).sum() };
        let per: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a[0] - b[0]).collect();
        let r = LoopResult {
            loop_index: i - cfg.warmup,
            seconds: secs,
            responses_per_s: per.iter().sum::<u64>() as f64 / secs,
            matched_per_s: delta(1) as f64 / secs,
            requests_per_s: delta(6) as f64 / secs,
            unmatched: delta(2),
            malformed_sent: delta(3),
            malformed_acted: delta(4),
            errors: delta(5),
            unanswered: delta(7),
            per_switch_min: per.iter().copied().min().unwrap_or(0),
            per_switch_max: per.iter().copied().max().unwrap_or(0),
            per_switch: per,
        };
        on_loop(&r);
        loops.push(r);
    }
    stop.store(true, Ordering::Relaxed);
    let mut hist = new_histogram();
    // A switch still in its handshake (a controller that never asked for
    // what ends it) does not look at `stop`, nor does one whose writes a
    // controller stopped reading: each is given a moment, then ended, so
    // the run ends. One that never finished its handshake counts as lost.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    for (mut t, c) in tasks.into_iter().zip(&counters) {
        match tokio::time::timeout_at(deadline, &mut t).await {
            Ok(Ok(h)) => {
                let _ = hist.add(&h);
            }
            Ok(Err(_)) => {}
            Err(_) => {
                t.abort();
                if !c.established.load(Ordering::Relaxed) {
                    lost.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let rtt_cdf = if hist.is_empty() {
        Vec::new()
    } else {
        let mut qs: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
        qs.extend([0.995, 0.999, 0.9999]);
        qs.sort_by(|a, b| a.total_cmp(b));
        qs.iter().map(|&q| (us(q), q)).collect()
    };
    Report {
        rtt_cdf,
        rtt_us_p50: us(0.5),
        rtt_us_p99: us(0.99),
        rtt_us_max: hist.max() as f64 / 1000.0,
        sessions_lost: lost.load(Ordering::Relaxed),
        config: cfg,
        loops,
    }
}
