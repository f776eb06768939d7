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
//!
//! Cluster mode (RFC 8456): each switch connects to every member, keeps
//! OpenFlow 1.3 roles as a switch does (`ofswitch::roles`), starts once
//! they have settled, sends each PACKET_IN to every member its roles and
//! asynchronous configuration say, takes the first answer whoever sends
//! it, and counts per member what it was sent, answered first, answered
//! again (duplicates) and tried to write as a SLAVE.

pub mod capacity;
pub mod ceiling;
pub mod fabric;
mod load;
pub mod method;
pub mod northbound;
pub mod rate;
pub mod security;
pub mod switch;
pub mod synflood;
pub mod topology_tests;

use load::{EventLoop, Shared, SwitchCounters};
use ofwire::{v10, v13, Body, Framer, Hello, Message, OFP10_VERSION};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Throughput,
    Latency,
    /// A flood: `window` PACKET_INs every millisecond whatever the
    /// controller answers (only TCP back-pressure slows it), for DoS tests
    /// against controllers that drop what they cannot place.
    Flood,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// The driver's event loops (threads), the switches spread over them;
    /// 0: half the cores (`event_loops`).
    #[serde(default)]
    pub threads: usize,
    /// RFC 8456's cluster mode: the cluster's members, every switch
    /// connected to each (`target` is not used); empty: standalone. A
    /// switch sends its PACKET_INs once its roles have settled, to every
    /// member its roles and asynchronous configuration say (OpenFlow 1.3
    /// section 6.3.7), and takes an answer from whoever sends it first.
    #[serde(default)]
    pub members: Vec<SocketAddr>,
}

impl Config {
    /// cbench's defaults against `target`: 16 switches of 1,000 MACs, 4
    /// ports each, OpenFlow 1.0 throughput mode with 256 PACKET_INs
    /// outstanding per switch, 5 loops of 1 s after one of warm-up, answers
    /// matched by buffer id; no pacing, malformed messages, VLAN or cluster.
    pub fn new(target: SocketAddr) -> Config {
        Config {
            target,
            switches: 16,
            macs: 1000,
            mode: Mode::Throughput,
            version: ofwire::OFP10_VERSION,
            loops: 5,
            loop_ms: 1000,
            warmup: 1,
            window: 256,
            connect_rate: 0.0,
            first_dpid: 1,
            ports: 4,
            malformed_per_mille: 0,
            offered_rate: 0.0,
            vlan: None,
            answers: Answers::Buffer,
            unanswered_after_ms: 0,
            threads: 0,
            members: Vec::new(),
        }
    }

    /// The controllers each switch connects to: the members, or `target`.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        if self.members.is_empty() {
            vec![self.target]
        } else {
            self.members.clone()
        }
    }
}

impl Config {
    /// The event loops the switches run on: `threads`, or by default half
    /// the cores (at least one), never more than switches. Half, because
    /// the controller measured shares the machine in every benchmark here:
    /// on two cores one loop drove the reference responder faster than two
    /// in both modes (two loops and the responder's thread contend for two
    /// cores). A driver on a machine of its own can take them all.
    pub fn event_loops(&self) -> usize {
        let n = match self.threads {
            0 => std::thread::available_parallelism().map(|n| n.get() / 2).unwrap_or(1),
            n => n,
        };
        n.clamp(1, self.switches.max(1))
    }
}

/// How the controller's answers are matched to the PACKET_INs.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// Answers to a request no longer waiting: answered already (in a
    /// cluster, by another member; or twice by one), or, with new
    /// sources, given up before its answer came.
    #[serde(default)]
    pub duplicates: u64,
    pub per_switch_min: u64,
    pub per_switch_max: u64,
    /// Each emulated switch's own FLOW_MODs and PACKET_OUTs in the loop
    /// (cbench's per-switch columns).
    pub per_switch: Vec<u64>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub config: Config,
    pub loops: Vec<LoopResult>,
    pub rtt_us_p50: f64,
    pub rtt_us_p99: f64,
    pub rtt_us_max: f64,
    /// The round-trip distribution as (microseconds, cumulative fraction).
    pub rtt_cdf: Vec<(f64, f64)>,
    pub sessions_lost: u64,
    /// Cluster mode: what each member did, and how mastership settled.
    #[serde(default)]
    pub cluster: Option<ClusterReport>,
    /// Every round trip recorded (nanoseconds), for merging runs exactly
    /// (the shards of a run spread over workers); not written out.
    #[serde(skip)]
    pub rtt_histogram: Option<hdrhistogram::Histogram<u64>>,
}

/// A run against a cluster: the members, what each did over the measured
/// loops, and the mastership the switches saw.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ClusterReport {
    pub members: Vec<MemberCounts>,
    /// Seconds from the first connection until every switch's roles had
    /// settled (one MASTER and the rest SLAVE, or no role asked for a
    /// second: all EQUAL); None if some never did (within 10 s).
    pub settle_s: Option<f64>,
    /// Switches whose roles had not settled when the loops began.
    pub unsettled: u64,
    /// Switches with no MASTER at the end (all EQUAL, or none elected).
    pub without_master: u64,
}

/// One member's share of a run against a cluster (measured loops only,
/// except `masters`, taken at the end).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct MemberCounts {
    pub address: String,
    /// Switches it is MASTER of at the end.
    pub masters: u64,
    /// PACKET_INs the switches sent it.
    pub requests: u64,
    /// Answers that were the first to a request (the ones timed).
    pub first_answers: u64,
    /// Answers to a request another answer had already taken.
    pub duplicates: u64,
    /// FLOW_MODs, PACKET_OUTs and other writes it sent as a SLAVE (the
    /// switch refuses them with BAD_REQUEST/IS_SLAVE).
    pub slave_writes: u64,
}

impl Report {
    /// The mean over the measured loops of `f` (0 without loops).
    pub fn mean(&self, f: impl Fn(&LoopResult) -> f64) -> f64 {
        self.loops.iter().map(f).sum::<f64>() / self.loops.len().max(1) as f64
    }
}

/// The round-trip figures of a histogram of nanoseconds: median, 99th
/// percentile, largest (microseconds) and the distribution as
/// (microseconds, cumulative fraction) at every percent and at 99.5, 99.9
/// and 99.99 %.
pub fn rtt_figures(hist: &hdrhistogram::Histogram<u64>) -> (f64, f64, f64, Vec<(f64, f64)>) {
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let cdf = if hist.is_empty() {
        Vec::new()
    } else {
        let mut qs: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
        qs.extend([0.995, 0.999, 0.9999]);
        qs.sort_by(|a, b| a.total_cmp(b));
        qs.iter().map(|&q| (us(q), q)).collect()
    };
    (us(0.5), us(0.99), hist.max() as f64 / 1000.0, cdf)
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
    handshake_with(s, framer, version, |m| switch::replies(id, m)).await
}

/// The handshake with `answer` giving the switch's replies to each
/// controller message (the load switches' canned replies, or a fabric
/// switch's agent).
async fn handshake_with(
    s: &mut TcpStream,
    framer: &mut Framer,
    version: u8,
    mut answer: impl FnMut(&Message) -> Vec<Message>,
) -> std::io::Result<()> {
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
            for r in answer(&m) {
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

/// Runs the benchmark; `on_loop` sees each loop's result as it is measured
/// (so callers can write samples to disk before anything is summarised).
/// The switches run on `cfg.event_loops()` threads of their own; this
/// future only starts them, paces their connections and reads counters.
pub async fn run(cfg: Config, mut on_loop: impl FnMut(&LoopResult)) -> Report {
    let addresses = cfg.addresses();
    let shared = Arc::new(Shared::new(cfg.switches, addresses.len()));
    // A run dropped part-way (its caller gave up) still stops its threads.
    struct StopOnDrop(Arc<Shared>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.stop.store(true, Ordering::Relaxed);
        }
    }
    let _stop = StopOnDrop(shared.clone());
    let counters: Vec<Arc<SwitchCounters>> = (0..cfg.switches).map(|_| Arc::new(SwitchCounters::default())).collect();
    let shared_cfg = Arc::new(cfg.clone());
    // A loop that cannot start (threads exhausted): its switches count as lost.
    let event_loops: Vec<Option<EventLoop>> = (0..cfg.event_loops())
        .map(|i| EventLoop::start(i, shared_cfg.clone(), shared.clone()).ok())
        .collect();
    let mut handshakes = Vec::new();
    let connecting = Instant::now();
    for (idx, c) in counters.iter().enumerate() {
        let door = event_loops[idx % event_loops.len()].as_ref().map(|l| l.door());
        handshakes.push(tokio::spawn(load::connect(
            idx,
            shared_cfg.clone(),
            c.clone(),
            shared.clone(),
            door,
        )));
        if cfg.connect_rate > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(1.0 / cfg.connect_rate)).await;
        } else if cfg.switches <= 64 || idx % 64 == 63 {
            // Pace connections a little (some controllers give a new switch ~1 s to
            // finish its handshake); in bulk only every 64th waits.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    // Cluster mode: the loops begin once every switch's roles have
    // settled (or 10 s have passed: those still unsettled are reported).
    let mut settle_s = None;
    if !cfg.members.is_empty() {
        let deadline = connecting.elapsed() + Duration::from_secs(10);
        while connecting.elapsed() < deadline {
            if shared.settled.load(Ordering::Relaxed) >= cfg.switches as u64 {
                settle_s = Some(connecting.elapsed().as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let unsettled = (cfg.switches as u64).saturating_sub(shared.settled.load(Ordering::Relaxed));
    let mut loops = Vec::new();
    for i in 0..cfg.warmup + cfg.loops {
        let before: Vec<[u64; 9]> = counters.iter().map(|c| c.snapshot()).collect();
        shared.measuring.store(i >= cfg.warmup, Ordering::Relaxed);
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(cfg.loop_ms)).await;
        let secs = t0.elapsed().as_secs_f64();
        if i < cfg.warmup {
            continue;
        }
        let after: Vec<[u64; 9]> = counters.iter().map(|c| c.snapshot()).collect();
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
            duplicates: delta(8),
            per_switch_min: per.iter().copied().min().unwrap_or(0),
            per_switch_max: per.iter().copied().max().unwrap_or(0),
            per_switch: per,
        };
        on_loop(&r);
        loops.push(r);
    }
    shared.stop.store(true, Ordering::Relaxed);
    // A switch still in its handshake (a controller that never asked for
    // what ends it) is given a moment, then ended, and counts as lost.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    for (mut h, c) in handshakes.into_iter().zip(&counters) {
        if tokio::time::timeout_at(deadline, &mut h).await.is_err() {
            h.abort();
            if !c.established.load(Ordering::Relaxed) {
                shared.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let mut hist = load::new_histogram();
    for l in event_loops.into_iter().flatten() {
        let _ = hist.add(l.finish().await);
    }
    let (rtt_us_p50, rtt_us_p99, rtt_us_max, rtt_cdf) = rtt_figures(&hist);
    let cluster = (!cfg.members.is_empty()).then(|| {
        let master_of: Vec<u64> = shared.master_of.iter().map(|m| m.load(Ordering::Relaxed)).collect();
        ClusterReport {
            members: addresses
                .iter()
                .enumerate()
                .map(|(k, a)| {
                    let c = &shared.members[k];
                    let get = |x: &std::sync::atomic::AtomicU64| x.load(Ordering::Relaxed);
                    MemberCounts {
                        address: a.to_string(),
                        masters: master_of.iter().filter(|m| **m == k as u64).count() as u64,
                        requests: get(&c.requests),
                        first_answers: get(&c.first_answers),
                        duplicates: get(&c.duplicates),
                        slave_writes: get(&c.slave_writes),
                    }
                })
                .collect(),
            settle_s,
            unsettled,
            without_master: master_of.iter().filter(|m| **m == load::NO_MASTER).count() as u64,
        }
    });
    Report {
        cluster,
        rtt_cdf,
        rtt_us_p50,
        rtt_us_p99,
        rtt_us_max,
        sessions_lost: shared.lost.load(Ordering::Relaxed),
        config: cfg,
        loops,
        rtt_histogram: Some(hist),
    }
}
