//! The emulated switches' load, on per-core event loops.
//!
//! A switch connects and completes its handshake as an async task on the
//! caller's runtime (thousands at once, at the configured pace), then is
//! handed, socket and all, to one of the event loops (switch `i` to loop
//! `i % n`): a thread of its own around one epoll set (mio), which owns its
//! switches' sockets and one histogram of round trips they share. Nothing
//! on the hot path crosses threads: a switch's counters are atomics it adds
//! to once per read, which the measuring thread reads once per loop.
//!
//! The loop is written by hand, not on an async runtime: in latency mode the
//! driver is one read and one write per answer, and an async runtime's
//! wake-ups and task polls were a tenth of the driver's time, enough to keep
//! it below the reference generator (crates/ofref). A switch reads straight
//! into its framer (no copy), builds requests by patching templates (no
//! allocation), reads the clock once per read and once per write (the vDSO,
//! no system call), and records runs of equal round trips into the
//! histogram at once.

use crate::{
    answered_buffer, answered_source, frame, handshake_with, mac, new_source, put_packet_in, put_packet_in_as,
    source_prefix, switch, tagged, to_controller_rule, Answers, Config, Mode, MALFORMED_BIT, MAX_OUTSTANDING,
};
use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use ofswitch::roles::{Async, Roles, Verdict};
use ofwire::v13::ControllerRole;
use ofwire::{Framer, OFP10_VERSION};
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

mod connect;
pub(crate) use connect::*;

/// Nanoseconds from 1 ns to an hour, 3 significant digits.
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

/// What the measuring thread and every event loop share.
pub(crate) struct Shared {
    pub stop: AtomicBool,
    /// Past the warm-up: switches count what they do.
    pub measuring: AtomicBool,
    /// Sessions that could not be opened, were closed, or never finished
    /// their handshake.
    pub lost: AtomicU64,
    /// Cluster mode: switches whose roles have settled.
    pub settled: AtomicU64,
    /// Each switch's MASTER (a member's index), or `NO_MASTER`.
    pub master_of: Vec<AtomicU64>,
    /// Each member's counts (one entry standalone).
    pub members: Vec<MemberCounters>,
}

pub(crate) const NO_MASTER: u64 = u64::MAX;

impl Shared {
    pub fn new(switches: usize, members: usize) -> Shared {
        Shared {
            stop: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            lost: AtomicU64::new(0),
            settled: AtomicU64::new(0),
            master_of: (0..switches).map(|_| AtomicU64::new(NO_MASTER)).collect(),
            members: (0..members.max(1)).map(|_| MemberCounters::default()).collect(),
        }
    }
}

/// What the switches saw of one member (measured loops only).
#[derive(Default)]
pub(crate) struct MemberCounters {
    pub requests: AtomicU64,
    pub first_answers: AtomicU64,
    pub duplicates: AtomicU64,
    pub slave_writes: AtomicU64,
}

#[derive(Default)]
pub(crate) struct SwitchCounters {
    responses: AtomicU64,
    matched: AtomicU64,
    unmatched: AtomicU64,
    malformed_sent: AtomicU64,
    requests: AtomicU64,
    /// FLOW_MODs or PACKET_OUTs answering a malformed PACKET_IN.
    malformed_acted: AtomicU64,
    errors: AtomicU64,
    unanswered: AtomicU64,
    duplicates: AtomicU64,
    /// The switch finished its handshake.
    pub established: AtomicBool,
}

impl SwitchCounters {
    /// The counters now: responses, matched, unmatched, malformed sent,
    /// malformed acted on, errors, requests, unanswered, duplicates. They are read one
    /// after another while the switches keep adding, so a loop's figures
    /// can differ by one read batch at its edges (e.g. matched slightly
    /// above responses in one loop); over a run they agree.
    pub fn snapshot(&self) -> [u64; 9] {
        [
            &self.responses,
            &self.matched,
            &self.unmatched,
            &self.malformed_sent,
            &self.malformed_acted,
            &self.errors,
            &self.requests,
            &self.unanswered,
            &self.duplicates,
        ]
        .map(|c| c.load(Ordering::Relaxed))
    }
}

/// A switch past its handshakes, on its way to an event loop.
pub(crate) struct Established {
    pub idx: usize,
    /// A session per controller (`Config::addresses`), each with what its
    /// handshake read beyond what it used.
    pub sessions: Vec<(std::net::TcpStream, Framer)>,
    /// The sessions' roles (OpenFlow 1.3).
    pub roles: Option<Roles>,
    pub counters: Arc<SwitchCounters>,
}

/// How switches are given to an event loop (from any thread).
#[derive(Clone)]
pub(crate) struct Door {
    tx: mpsc::Sender<Established>,
    waker: Arc<Waker>,
}

impl Door {
    /// The switch back if the loop is gone.
    pub fn add(&self, e: Established) -> Result<(), Established> {
        self.tx.send(e).map_err(|e| e.0)?;
        let _ = self.waker.wake();
        Ok(())
    }
}

/// One event loop: its door, and the histogram it hands back once the run
/// has stopped.
pub(crate) struct EventLoop {
    door: Door,
    done: tokio::sync::oneshot::Receiver<Histogram<u64>>,
}

const WAKE: Token = Token(usize::MAX);

impl EventLoop {
    pub fn start(i: usize, cfg: Arc<Config>, shared: Arc<Shared>) -> std::io::Result<EventLoop> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKE)?);
        let (tx, rx) = mpsc::channel();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("ctlbench-{i}"))
            .spawn(move || {
                let _ = done_tx.send(serve(poll, rx, &cfg, &shared));
            })?;
        Ok(EventLoop {
            door: Door { tx, waker },
            done,
        })
    }

    pub fn door(&self) -> Door {
        self.door.clone()
    }

    /// Once `stop` is set: the round trips the loop's switches recorded.
    pub async fn finish(self) -> Histogram<u64> {
        let _ = self.door.waker.wake();
        drop(self.door);
        self.done.await.unwrap_or_else(|_| new_histogram())
    }
}

/// The event loop's life: it takes the switches given to it and runs them
/// until `stop`, then closes their sessions. Switch `i`'s session `k` is
/// token `i * per + k` (`per`: the controllers each switch connects to).
fn serve(mut poll: Poll, rx: mpsc::Receiver<Established>, cfg: &Config, shared: &Arc<Shared>) -> Histogram<u64> {
    let mut events = Events::with_capacity(256);
    let mut switches: Vec<Option<Switch>> = Vec::new();
    let mut hist = new_histogram();
    let clock = Instant::now();
    let per = cfg.addresses().len();
    // Paced and flood sending look every millisecond for what is due; the
    // others every 100 ms, to give up unanswered new sources, to get a
    // switch going whose learning phase the controller left unanswered,
    // and to settle a cluster's switches that no role request reached.
    let every = if cfg.mode == Mode::Flood || (cfg.mode == Mode::Throughput && cfg.offered_rate > 0.0) {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(100)
    };
    let mut next_tick = Instant::now() + every;
    // A switch with no session left is dropped (its sessions were counted
    // lost one by one).
    let prune = |switches: &mut Vec<Option<Switch>>, i: usize| {
        if switches[i].as_ref().is_some_and(|sw| !sw.any_open()) {
            switches[i] = None;
        }
    };
    loop {
        let timeout = next_tick.saturating_duration_since(Instant::now());
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            // The loop cannot wait any more: its sessions are lost.
            let n: usize = switches.iter().flatten().map(|sw| sw.open_sessions()).sum();
            shared.lost.fetch_add(n as u64, Ordering::Relaxed);
            break;
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let measuring = shared.measuring.load(Ordering::Relaxed);
        let registry = poll.registry();
        for ev in events.iter() {
            if ev.token() == WAKE {
                while let Ok(e) = rx.try_recv() {
                    let i = switches.len();
                    let mut sw = Switch::new(e, cfg, clock, shared.clone(), i * per);
                    sw.register(registry);
                    // What came after the handshakes' end (a new-sources
                    // controller's send-to-controller rule, role requests),
                    // the learning phase, and the first requests.
                    for k in 0..sw.sessions.len() {
                        sw.take(k, cfg, measuring, &mut hist, registry);
                    }
                    sw.pump(cfg, measuring, registry);
                    switches.push(Some(sw));
                    prune(&mut switches, i);
                }
                continue;
            }
            let (i, k) = (ev.token().0 / per, ev.token().0 % per);
            let Some(sw) = switches.get_mut(i).and_then(|s| s.as_mut()) else {
                continue;
            };
            if ev.is_readable() {
                sw.on_readable(k, cfg, measuring, &mut hist, registry);
            }
            sw.pump(cfg, measuring, registry);
            prune(&mut switches, i);
        }
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + every;
            for i in 0..switches.len() {
                let Some(sw) = switches[i].as_mut() else { continue };
                sw.sweep(cfg, measuring);
                sw.pump(cfg, measuring, registry);
                prune(&mut switches, i);
            }
        }
    }
    hist
}

/// One session of a switch: a connection to one controller (a member of a
/// cluster), its bytes in and out, and what its role lets it do.
struct Session {
    stream: TcpStream,
    framer: Framer,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    written: usize,
    /// The socket is watched for room to write (a write fell short).
    want_write: bool,
    open: bool,
    /// Its role is SLAVE (its writes are refused).
    slave: bool,
    /// Its role and asynchronous configuration give it the PACKET_INs.
    wants: bool,
}

/// One emulated switch on an event loop: its sessions (one, or one per
/// member of a cluster), its requests in flight (a window of them, or one
/// in latency mode), and its answers matched, whichever session brings
/// them.
struct Switch {
    sessions: Vec<Session>,
    /// The sessions' roles (OpenFlow 1.3; None: 1.0, every session equal).
    roles: Option<Roles>,
    /// The PACKET_INs' reason (what the roles' masks are asked about).
    reason: u8,
    /// Session `k`'s token is `token_base + k`.
    token_base: usize,
    /// Requests go out once the roles have settled (at once standalone).
    settled: bool,
    /// A MASTER or SLAVE role has been asked for on some session (else, a
    /// second after the handshakes, the cluster is taken to be all EQUAL).
    role_seen: bool,
    connected_at: Instant,
    idx: usize,
    shared: Arc<Shared>,
    counters: Arc<SwitchCounters>,
    id: switch::Identity,
    /// Nanoseconds are counted from here (the loop's clock).
    clock: Instant,
    /// Read and write sizes.
    size: usize,
    /// Requests built and not yet given to the sessions that want them,
    /// and how many good ones they are.
    stage: Vec<u8>,
    staged: u64,
    /// Every MAC's PACKET_IN, encoded once, `tpl_len` bytes each, all of
    /// them twice over: a batch of requests from MAC `i` on is one copy
    /// from `i * tpl_len`, then each gets its xid and buffer id (and, for
    /// new sources, its source MAC at `src_at`).
    templates: Vec<u8>,
    tpl_len: usize,
    src_at: usize,
    new_sources: bool,
    /// New sources: the controller's send-to-controller rule last stamped on
    /// the templates, the sources' prefix, and when unanswered requests were
    /// last looked for.
    stamped: Option<(u8, u64)>,
    prefix: [u8; 3],
    swept: Instant,
    window: usize,
    /// Each slot remembers which request it holds (its sequence number, and
    /// when it was sent in nanoseconds on the clock, or `ANSWERED`), so a
    /// late answer is never credited to a later request in the same slot
    /// and a second answer to one request is told apart (also once the
    /// slot has moved on: by its sequence number, sent before).
    sent_at: Vec<(u32, u64)>,
    seq: u32,
    outstanding: usize,
    next_mac: usize,
    sent_total: u64,
    malformed_seq: u32,
    arp_carrying_ipv4: Vec<u8>,
    /// Paced sending: requests per second, since when, and sent so far.
    rate: f64,
    pace_start: Instant,
    paced_sent: u64,
    rtts: Rtts,
}

/// A slot's time once its request has been answered.
const ANSWERED: u64 = u64::MAX;

/// A role's sessions keep this much unsent at most; beyond it a slow
/// member's PACKET_INs are not queued (the switch keeps going for the
/// others, as a switch's per-connection queue would drop).
const MAX_BACKLOG: usize = 4 << 20;

/// Messages that change the switch (a SLAVE may not send them): PACKET_OUT,
/// FLOW_MOD, GROUP_MOD, PORT_MOD, TABLE_MOD, METER_MOD.
fn is_write(t: u8) -> bool {
    matches!(t, 13..=17 | 29)
}

impl Switch {
    fn new(e: Established, cfg: &Config, clock: Instant, shared: Arc<Shared>, token_base: usize) -> Switch {
        let idx = e.idx;
        let new_sources = cfg.answers == Answers::NewSource;
        let reason = match new_sources {
            true => ofwire::PacketInReason::Action,
            false => ofwire::PacketInReason::NoMatch,
        };
        let mut templates = Vec::new();
        let mut frame_len = 0;
        for i in (0..cfg.macs).chain(0..cfg.macs) {
            let f = tagged(frame(mac(idx, i), mac(idx, (i + 1) % cfg.macs)), cfg.vlan);
            put_packet_in_as(&mut templates, cfg.version, 0, 1 + (i % 4) as u32, &f, reason);
            frame_len = f.len();
        }
        // Every frame has the same length, so every PACKET_IN too; the frame
        // is the message's last part.
        let tpl_len = templates.len() / (2 * cfg.macs);
        let src_at = tpl_len - frame_len + 6;
        let window = if cfg.mode == Mode::Latency {
            1
        } else {
            cfg.window.clamp(1, MAX_OUTSTANDING / 4)
        };
        let slots = (window * 4).next_power_of_two().max(16);
        // Per-switch buffers shrink as switches multiply (memory stays bounded).
        let size = ((4 << 20) / cfg.switches.max(1)).clamp(4096, 256 * 1024);
        let mut stage = Vec::with_capacity(size);
        // Learning phase: every MAC once, as a broadcast; answers are
        // drained as they come. (New sources need none: every one is new.)
        if !new_sources {
            for i in 0..cfg.macs {
                let f = tagged(frame(mac(idx, i), [0xff; 6]), cfg.vlan);
                put_packet_in(&mut stage, cfg.version, 0, 1 + (i % 4) as u32, &f);
            }
        }
        let arp_carrying_ipv4 = {
            let mut f = frame(mac(idx, 0), mac(idx, 1 % cfg.macs));
            f[12..14].copy_from_slice(&[0x08, 0x06]);
            let f = tagged(f, cfg.vlan);
            let mut v = Vec::new();
            put_packet_in(&mut v, cfg.version, 0, 1, &f);
            v
        };
        let rate = if cfg.mode != Mode::Latency && cfg.offered_rate > 0.0 {
            cfg.offered_rate / cfg.switches.max(1) as f64
        } else {
            0.0
        };
        // Standalone: nothing to settle. A cluster of one member still
        // waits for its MASTER role.
        let standalone = cfg.members.is_empty();
        let sessions = e
            .sessions
            .into_iter()
            .map(|(stream, framer)| Session {
                stream: TcpStream::from_std(stream),
                framer,
                out: Vec::with_capacity(size),
                written: 0,
                want_write: false,
                open: true,
                slave: false,
                wants: true,
            })
            .collect();
        let mut sw = Switch {
            sessions,
            roles: e.roles,
            reason: u8::from(reason),
            token_base,
            settled: standalone,
            role_seen: false,
            connected_at: Instant::now(),
            idx,
            shared,
            counters: e.counters,
            id: switch::Identity {
                datapath_id: cfg.first_dpid.wrapping_add(idx as u64),
                ports: cfg.ports,
            },
            clock,
            size,
            stage,
            staged: 0,
            templates,
            tpl_len,
            src_at,
            new_sources,
            stamped: None,
            prefix: source_prefix(idx),
            swept: Instant::now(),
            window,
            sent_at: vec![(0, 0); slots],
            seq: 1,
            outstanding: 0,
            next_mac: 0,
            sent_total: 0,
            malformed_seq: 0,
            arp_carrying_ipv4,
            rate,
            pace_start: Instant::now(),
            paced_sent: 0,
            rtts: Rtts { value: 0, count: 0 },
        };
        // Roles asked for during the handshakes.
        sw.refresh_roles();
        sw
    }

    fn register(&mut self, registry: &Registry) {
        for k in 0..self.sessions.len() {
            let token = Token(self.token_base + k);
            if registry
                .register(&mut self.sessions[k].stream, token, Interest::READABLE)
                .is_err()
            {
                self.fail(k, registry);
            }
        }
    }

    fn any_open(&self) -> bool {
        self.sessions.iter().any(|s| s.open)
    }

    fn open_sessions(&self) -> usize {
        self.sessions.iter().filter(|s| s.open).count()
    }

    /// Session `k` is lost (closed, refused, or its stream broken): it is
    /// counted, and the switch goes on with the others.
    fn fail(&mut self, k: usize, registry: &Registry) {
        let s = &mut self.sessions[k];
        if !s.open {
            return;
        }
        s.open = false;
        s.wants = false;
        let _ = registry.deregister(&mut s.stream);
        s.out.clear();
        s.written = 0;
        if let Some(r) = self.roles.as_mut() {
            r.close(k);
        }
        self.shared.lost.fetch_add(1, Ordering::Relaxed);
        self.refresh_roles();
    }

    /// After a role or asynchronous configuration changed: which sessions
    /// are slaves and which get PACKET_INs, the switch's master, and
    /// whether the roles have settled.
    fn refresh_roles(&mut self) {
        let mut master = NO_MASTER;
        let (mut masters, mut slaves, mut open) = (0, 0, 0);
        for (k, s) in self.sessions.iter_mut().enumerate() {
            if !s.open {
                continue;
            }
            open += 1;
            let Some(r) = &self.roles else { continue };
            let role = r.role(k);
            s.slave = role == ControllerRole::Slave;
            s.wants = r.wants(k, Async::PacketIn { reason: self.reason });
            if role == ControllerRole::Master {
                master = k as u64;
                masters += 1;
            }
            slaves += usize::from(s.slave);
        }
        if let Some(m) = self.shared.master_of.get(self.idx) {
            m.store(master, Ordering::Relaxed);
        }
        // A MASTER or SLAVE asked for: the controllers elect (an EQUAL or
        // NOCHANGE request, as Faucet's, elects nobody).
        if masters + slaves > 0 {
            self.role_seen = true;
        }
        if !self.settled {
            let one_master = masters == 1 && masters + slaves == open;
            // No role asked for a second after the handshakes: all EQUAL.
            let all_equal = !self.role_seen && self.connected_at.elapsed() >= Duration::from_secs(1);
            if one_master || all_equal {
                self.settled = true;
                self.shared.settled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn now_ns(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// Writes what is waiting; when the first session that gets the
    /// PACKET_INs has sent all of it, the next requests, to every session
    /// that gets them.
    fn pump(&mut self, cfg: &Config, measuring: bool, registry: &Registry) {
        for k in 0..self.sessions.len() {
            self.flush(k, registry);
        }
        if !self.settled {
            return;
        }
        let Some(first) = self.sessions.iter().position(|s| s.open && s.wants) else {
            return;
        };
        if !self.sessions[first].out.is_empty() {
            return;
        }
        self.fill(cfg, measuring);
        if self.stage.is_empty() {
            return;
        }
        let wanting = self.sessions.iter().filter(|s| s.open && s.wants).count();
        for k in first..self.sessions.len() {
            let s = &mut self.sessions[k];
            if !s.open || !s.wants {
                continue;
            }
            if wanting == 1 {
                // One reader (standalone, or one master): no copy.
                std::mem::swap(&mut s.out, &mut self.stage);
            } else if s.out.len() - s.written < MAX_BACKLOG {
                s.out.extend_from_slice(&self.stage);
            } else {
                continue;
            }
            if measuring && self.staged > 0 {
                self.shared.members[k]
                    .requests
                    .fetch_add(self.staged, Ordering::Relaxed);
            }
            self.flush(k, registry);
        }
        self.stage.clear();
        self.staged = 0;
    }

    /// Writes session `k`'s `out` as far as the socket takes it; the socket
    /// is watched for room while some is left (TCP's back-pressure holds
    /// new requests).
    fn flush(&mut self, k: usize, registry: &Registry) {
        let token = Token(self.token_base + k);
        let s = &mut self.sessions[k];
        if !s.open {
            return;
        }
        let broken = loop {
            if s.written >= s.out.len() {
                break None;
            }
            match s.stream.write(&s.out[s.written..]) {
                Ok(0) => break Some(()),
                Ok(n) => s.written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !s.want_write {
                        if registry
                            .reregister(&mut s.stream, token, Interest::READABLE | Interest::WRITABLE)
                            .is_err()
                        {
                            break Some(());
                        }
                        s.want_write = true;
                    }
                    return;
                }
                Err(_) => break Some(()),
            }
        };
        if broken.is_some() {
            return self.fail(k, registry);
        }
        s.out.clear();
        s.written = 0;
        if s.want_write {
            if registry.reregister(&mut s.stream, token, Interest::READABLE).is_err() {
                return self.fail(k, registry);
            }
            s.want_write = false;
        }
    }

    /// New sources: requests unanswered for too long are given up (their
    /// place in the window freed), and counted. A cluster's switch that
    /// no role request reached is settled (all EQUAL) a second after its
    /// handshakes.
    fn sweep(&mut self, cfg: &Config, measuring: bool) {
        if !self.settled {
            self.refresh_roles();
        }
        if !self.new_sources || self.swept.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.swept = Instant::now();
        let now = self.now_ns();
        let give_up = cfg.unanswered_after_ms.max(1) * 1_000_000;
        let mut gone = 0;
        for slot in self.sent_at.iter_mut() {
            if slot.0 != 0 && slot.1 != ANSWERED && now.saturating_sub(slot.1) >= give_up {
                *slot = (0, 0);
                self.outstanding = self.outstanding.saturating_sub(1);
                gone += 1;
            }
        }
        if gone > 0 && measuring {
            self.counters.unanswered.fetch_add(gone, Ordering::Relaxed);
        }
    }

    /// Puts the requests the window (or the pace) allows into `stage`.
    fn fill(&mut self, cfg: &Config, measuring: bool) {
        let mut budget = if cfg.mode == Mode::Flood {
            self.window
        } else {
            self.window.saturating_sub(self.outstanding)
        };
        // New sources come from the controller's send-to-controller rule: a
        // switch sends none before the controller has installed it.
        if self.new_sources && self.stamped.is_none() {
            budget = 0;
        }
        if self.rate > 0.0 {
            let due = (self.pace_start.elapsed().as_secs_f64() * self.rate) as u64;
            budget = budget.min(due.saturating_sub(self.paced_sent) as usize);
        }
        if budget == 0 {
            return;
        }
        // One clock read for the batch: its requests go out in one write
        // just after (a read per request cost a fifth of the driver's time).
        let batch_at = self.now_ns();
        let slots = self.sent_at.len();
        let mut sent_now = 0u64;
        while budget > 0 {
            // Good requests in one copy: as many as the budget (MACs come
            // round at most once), or one when malformed ones are mixed in.
            let mut run = budget.min(cfg.macs);
            if cfg.malformed_per_mille > 0 {
                run = 1;
                self.sent_total += 1;
                // Spread evenly: one every 1000/per_mille requests.
                let per_mille = cfg.malformed_per_mille as u64;
                if (self.sent_total * per_mille) % 1000 < per_mille {
                    self.malformed_seq = self.malformed_seq.wrapping_add(1);
                    let out = &mut self.stage;
                    if self.malformed_seq.is_multiple_of(2) {
                        let at = out.len();
                        out.extend_from_slice(&self.arp_carrying_ipv4);
                        let b = MALFORMED_BIT | (self.malformed_seq & 0x7fff_ffff);
                        out[at + 4..at + 8].copy_from_slice(&b.to_be_bytes());
                        out[at + 8..at + 12].copy_from_slice(&b.to_be_bytes());
                    } else {
                        out.extend_from_slice(&[cfg.version, 0x63, 0, 8]);
                        out.extend_from_slice(&(MALFORMED_BIT | self.malformed_seq).to_be_bytes());
                    }
                    if measuring {
                        self.counters.malformed_sent.fetch_add(1, Ordering::Relaxed);
                    }
                    continue;
                }
            }
            let l = self.tpl_len;
            let from = self.next_mac * l;
            let at = self.stage.len();
            self.stage.extend_from_slice(&self.templates[from..from + run * l]);
            for p in (at..at + run * l).step_by(l) {
                let seq = self.seq;
                self.sent_at[seq as usize % slots] = (seq, batch_at);
                self.stage[p + 4..p + 8].copy_from_slice(&seq.to_be_bytes());
                self.stage[p + 8..p + 12].copy_from_slice(&seq.to_be_bytes());
                if self.new_sources {
                    let s = p + self.src_at;
                    self.stage[s..s + 6].copy_from_slice(&new_source(self.prefix, seq));
                }
                // Below the malformed bit, never 0 (the learning phase's id).
                self.seq = (seq.wrapping_add(1) & !MALFORMED_BIT).max(1);
            }
            self.next_mac = (self.next_mac + run) % cfg.macs;
            self.outstanding += run;
            budget -= run;
            sent_now += run as u64;
        }
        self.paced_sent += sent_now;
        self.staged += sent_now;
        if measuring {
            self.counters.requests.fetch_add(sent_now, Ordering::Relaxed);
        }
    }

    /// Reads what came on session `k` (straight into its framer) and takes
    /// each message. An error: the session is lost.
    fn on_readable(&mut self, k: usize, cfg: &Config, measuring: bool, hist: &mut Histogram<u64>, registry: &Registry) {
        loop {
            let size = self.size;
            let s = &mut self.sessions[k];
            if !s.open {
                return;
            }
            let room = s.framer.spare(size);
            let len = room.len();
            match s.stream.read(room) {
                Ok(0) => return self.fail(k, registry),
                Ok(n) => {
                    s.framer.commit(n);
                    self.take(k, cfg, measuring, hist, registry);
                    // Less than the room: the socket is drained (epoll
                    // reports the next bytes as a new edge).
                    if n < len {
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => return self.fail(k, registry),
            }
        }
    }

    /// Takes every whole message session `k`'s framer holds: answers are
    /// matched to their requests (the first answer to each; a second one
    /// is a duplicate), a slave's writes refused, control messages given a
    /// switch's answer on the same session.
    fn take(&mut self, k: usize, cfg: &Config, measuring: bool, hist: &mut Histogram<u64>, registry: &Registry) {
        if !self.sessions[k].open {
            return;
        }
        let now = self.now_ns();
        let mut t = Tally::default();
        // Out of the session while its messages are read (they borrow it).
        let mut framer = std::mem::replace(&mut self.sessions[k].framer, Framer::unallocated(0));
        let mut broken = false;
        loop {
            let m = match framer.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                // A length that cannot be: the stream is lost.
                Err(_) => {
                    broken = true;
                    break;
                }
            };
            match m[1] {
                1 => {
                    t.errors += 1;
                    continue;
                }
                2 => {
                    // ECHO_REQUEST: answered in kind.
                    let out = &mut self.sessions[k].out;
                    let at = out.len();
                    out.extend_from_slice(m);
                    out[at + 1] = 3;
                    continue;
                }
                _ => {}
            }
            let slave_write = self.sessions[k].slave && is_write(m[1]);
            let answered = if slave_write {
                None
            } else {
                answered_buffer(cfg.version, m)
            };
            let Some(b) = answered else {
                self.control_message(k, m, slave_write, &mut t);
                continue;
            };
            t.resp += 1;
            // The request answered, and which bits of its sequence say so.
            let answer = if self.new_sources {
                self.new_source_answer(m)
            } else if b == 0 || b == u32::MAX {
                None // an answer to the learning phase (or unbuffered)
            } else if b & MALFORMED_BIT != 0 {
                t.acted += 1;
                None
            } else {
                Some((b, u32::MAX))
            };
            if let Some((answered, bits)) = answer {
                self.match_answer(answered, bits, now, measuring, hist, &mut t);
            }
        }
        self.sessions[k].framer = framer;
        self.rtts.flush(hist);
        if measuring {
            let add = |c: &AtomicU64, n: u64| {
                if n > 0 {
                    c.fetch_add(n, Ordering::Relaxed);
                }
            };
            add(&self.counters.responses, t.resp);
            add(&self.counters.matched, t.matched);
            add(&self.counters.unmatched, t.unmatched);
            add(&self.counters.malformed_acted, t.acted);
            add(&self.counters.errors, t.errors);
            add(&self.counters.duplicates, t.duplicates);
            let member = &self.shared.members[k.min(self.shared.members.len() - 1)];
            add(&member.first_answers, t.matched);
            add(&member.duplicates, t.duplicates);
            add(&member.slave_writes, t.slave_writes);
        }
        if t.roles_changed {
            self.refresh_roles();
        }
        if broken {
            self.fail(k, registry);
        }
    }

    /// A message that answers no request: role requests, asynchronous
    /// configuration and a slave's writes are the roles' matter; other
    /// control messages (barrier, stats, config) get a switch's answer.
    #[cold]
    fn control_message(&mut self, k: usize, m: &[u8], slave_write: bool, t: &mut Tally) {
        let Ok(m) = ofwire::decode(m) else { return };
        let verdict = match self.roles.as_mut() {
            Some(r) => r.on_message(k, &m),
            None => Verdict::Pass,
        };
        let out = &mut self.sessions[k].out;
        match verdict {
            Verdict::Answer(r) => {
                let _ = r.encode(out);
                if slave_write {
                    t.slave_writes += 1;
                } else {
                    t.roles_changed = true;
                }
            }
            Verdict::Taken => t.roles_changed = true,
            Verdict::Pass => {
                for r in switch::replies(self.id, &m) {
                    let _ = r.encode(out);
                }
            }
        }
    }

    /// An answer naming a new source (a FLOW_MOD, 1.3 only): the source
    /// it answers and the bits of the sequence that say so. The rule
    /// sending to the controller is stamped into the templates the first
    /// time it is seen: PACKET_INs come from it from then on.
    fn new_source_answer(&mut self, m: &[u8]) -> Option<(u32, u32)> {
        if m[1] != 14 {
            return None;
        }
        let fm = ofwire::decode(m).ok()?;
        if let Some(rule) = to_controller_rule(&fm).filter(|r| self.stamped != Some(*r)) {
            self.stamped = Some(rule);
            for tpl in self.templates.chunks_exact_mut(self.tpl_len) {
                tpl[15] = rule.0;
                tpl[16..24].copy_from_slice(&rule.1.to_be_bytes());
            }
        }
        let s24 = answered_source(&fm, self.prefix)?;
        Some((s24, 0xff_ffff))
    }

    /// The answer to request `answered` (its sequence's `bits`): the
    /// first answer is matched and its round trip recorded, a second a
    /// duplicate; one to a request never sent is unmatched.
    #[inline]
    fn match_answer(
        &mut self,
        answered: u32,
        bits: u32,
        now: u64,
        measuring: bool,
        hist: &mut Histogram<u64>,
        t: &mut Tally,
    ) {
        let slots = self.sent_at.len();
        let slot = &mut self.sent_at[answered as usize % slots];
        if slot.0 != 0 && slot.0 & bits == answered {
            if slot.1 == ANSWERED {
                t.duplicates += 1;
                return;
            }
            let at = std::mem::replace(&mut slot.1, ANSWERED);
            t.matched += 1;
            self.outstanding = self.outstanding.saturating_sub(1);
            if measuring {
                self.rtts.record(now.saturating_sub(at).max(1), hist);
            }
        } else {
            // Its slot has moved on: a request sent before (answered
            // already; a lagging member's answers come this late) is
            // a duplicate, one never sent is unmatched.
            let span: u32 = if self.new_sources { 1 << 24 } else { 1 << 31 };
            let back = self.seq.wrapping_sub(answered) & (span - 1);
            if back > 0 && back < span / 2 {
                t.duplicates += 1;
            } else {
                t.unmatched += 1;
            }
        }
    }
}

/// What one read of a session's messages counted.
#[derive(Default)]
struct Tally {
    resp: u64,
    matched: u64,
    unmatched: u64,
    acted: u64,
    errors: u64,
    duplicates: u64,
    slave_writes: u64,
    roles_changed: bool,
}

/// Round trips waiting to go into the histogram: a run of equal values
/// (answers to one batch of requests read in one batch) goes in at once.
struct Rtts {
    value: u64,
    count: u64,
}

impl Rtts {
    fn record(&mut self, value: u64, hist: &mut Histogram<u64>) {
        if value != self.value {
            self.flush(hist);
            self.value = value;
        }
        self.count += 1;
    }

    fn flush(&mut self, hist: &mut Histogram<u64>) {
        if self.count > 0 {
            hist.saturating_record_n(self.value, self.count);
            self.count = 0;
        }
    }
}
