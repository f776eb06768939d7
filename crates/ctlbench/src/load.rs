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
    answered_buffer, answered_source, frame, handshake, mac, new_source, put_packet_in, put_packet_in_as,
    source_prefix, switch, tagged, to_controller_rule, Answers, Config, Mode, MALFORMED_BIT, MAX_OUTSTANDING,
};
use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use ofwire::Framer;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Nanoseconds from 1 ns to an hour, 3 significant digits.
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

/// What the measuring thread and every event loop share.
#[derive(Default)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    /// Past the warm-up: switches count what they do.
    pub measuring: AtomicBool,
    /// Sessions that could not be opened, were closed, or never finished
    /// their handshake.
    pub lost: AtomicU64,
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
    /// The switch finished its handshake.
    pub established: AtomicBool,
}

impl SwitchCounters {
    /// The counters now: responses, matched, unmatched, malformed sent,
    /// malformed acted on, errors, requests, unanswered. They are read one
    /// after another while the switches keep adding, so a loop's figures
    /// can differ by one read batch at its edges (e.g. matched slightly
    /// above responses in one loop); over a run they agree.
    pub fn snapshot(&self) -> [u64; 8] {
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

/// A switch past its handshake, on its way to an event loop.
pub(crate) struct Established {
    pub idx: usize,
    pub stream: std::net::TcpStream,
    /// What the handshake read beyond what it used.
    pub framer: Framer,
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
/// until `stop`, then closes their sessions.
fn serve(mut poll: Poll, rx: mpsc::Receiver<Established>, cfg: &Config, shared: &Shared) -> Histogram<u64> {
    let mut events = Events::with_capacity(256);
    let mut switches: Vec<Option<Switch>> = Vec::new();
    let mut hist = new_histogram();
    let clock = Instant::now();
    // Paced and flood sending look every millisecond for what is due; the
    // others every 100 ms, to give up unanswered new sources and to get a
    // switch going whose learning phase the controller left unanswered.
    let every = if cfg.mode == Mode::Flood || (cfg.mode == Mode::Throughput && cfg.offered_rate > 0.0) {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(100)
    };
    let mut next_tick = Instant::now() + every;
    let lost = |switches: &mut Vec<Option<Switch>>, i: usize, registry: &Registry| {
        if let Some(mut sw) = switches[i].take() {
            let _ = registry.deregister(&mut sw.stream);
        }
        shared.lost.fetch_add(1, Ordering::Relaxed);
    };
    loop {
        let timeout = next_tick.saturating_duration_since(Instant::now());
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            // The loop cannot wait any more: its switches are lost.
            let n = switches.iter().flatten().count() as u64;
            shared.lost.fetch_add(n, Ordering::Relaxed);
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
                    let mut sw = Switch::new(e, cfg, clock);
                    let ok = registry.register(&mut sw.stream, Token(i), Interest::READABLE).is_ok();
                    switches.push(Some(sw));
                    // What came after the handshake's end (a new-sources
                    // controller's send-to-controller rule), the learning
                    // phase, and the first requests.
                    let sw = switches[i].as_mut().expect("just pushed");
                    if !ok
                        || sw.take(cfg, measuring, &mut hist).is_err()
                        || sw.pump(cfg, measuring, registry, Token(i)).is_err()
                    {
                        lost(&mut switches, i, registry);
                    }
                }
                continue;
            }
            let i = ev.token().0;
            let Some(sw) = switches.get_mut(i).and_then(|s| s.as_mut()) else {
                continue;
            };
            let ok = (!ev.is_readable() || sw.on_readable(cfg, measuring, &mut hist).is_ok())
                && sw.pump(cfg, measuring, registry, Token(i)).is_ok();
            if !ok {
                lost(&mut switches, i, registry);
            }
        }
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + every;
            for i in 0..switches.len() {
                let Some(sw) = switches[i].as_mut() else { continue };
                sw.sweep(cfg, measuring);
                if sw.pump(cfg, measuring, registry, Token(i)).is_err() {
                    lost(&mut switches, i, registry);
                }
            }
        }
    }
    hist
}

/// One emulated switch on an event loop: its session, its requests in
/// flight (a window of them, or one in latency mode), and its answers
/// matched.
struct Switch {
    stream: TcpStream,
    framer: Framer,
    counters: Arc<SwitchCounters>,
    id: switch::Identity,
    /// Nanoseconds are counted from here (the loop's clock).
    clock: Instant,
    /// Read and write sizes.
    size: usize,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    written: usize,
    /// The socket is watched for room to write (a write fell short).
    want_write: bool,
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
    /// when it was sent in nanoseconds on the clock), so a late or duplicate
    /// answer is never credited to a later request in the same slot.
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

impl Switch {
    fn new(e: Established, cfg: &Config, clock: Instant) -> Switch {
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
        let mut out = Vec::with_capacity(size);
        // Learning phase: every MAC once, as a broadcast; answers are
        // drained as they come. (New sources need none: every one is new.)
        if !new_sources {
            for i in 0..cfg.macs {
                let f = tagged(frame(mac(idx, i), [0xff; 6]), cfg.vlan);
                put_packet_in(&mut out, cfg.version, 0, 1 + (i % 4) as u32, &f);
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
        Switch {
            stream: TcpStream::from_std(e.stream),
            framer: e.framer,
            counters: e.counters,
            id: switch::Identity {
                datapath_id: cfg.first_dpid.wrapping_add(idx as u64),
                ports: cfg.ports,
            },
            clock,
            size,
            out,
            written: 0,
            want_write: false,
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
        }
    }

    fn now_ns(&self) -> u64 {
        self.clock.elapsed().as_nanos() as u64
    }

    /// Writes what is waiting; when all of it went, the next requests too.
    fn pump(&mut self, cfg: &Config, measuring: bool, registry: &Registry, token: Token) -> std::io::Result<()> {
        self.flush(registry, token)?;
        if self.out.is_empty() {
            self.fill(cfg, measuring);
            self.flush(registry, token)?;
        }
        Ok(())
    }

    /// Writes `out` as far as the socket takes it; the socket is watched
    /// for room while some is left (TCP's back-pressure holds new requests).
    fn flush(&mut self, registry: &Registry, token: Token) -> std::io::Result<()> {
        while self.written < self.out.len() {
            match self.stream.write(&self.out[self.written..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !self.want_write {
                        registry.reregister(&mut self.stream, token, Interest::READABLE | Interest::WRITABLE)?;
                        self.want_write = true;
                    }
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.written = 0;
        if self.want_write {
            registry.reregister(&mut self.stream, token, Interest::READABLE)?;
            self.want_write = false;
        }
        Ok(())
    }

    /// New sources: requests unanswered for too long are given up (their
    /// place in the window freed), and counted.
    fn sweep(&mut self, cfg: &Config, measuring: bool) {
        if !self.new_sources || self.swept.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.swept = Instant::now();
        let now = self.now_ns();
        let give_up = cfg.unanswered_after_ms.max(1) * 1_000_000;
        let mut gone = 0;
        for slot in self.sent_at.iter_mut() {
            if slot.0 != 0 && now.saturating_sub(slot.1) >= give_up {
                *slot = (0, 0);
                self.outstanding = self.outstanding.saturating_sub(1);
                gone += 1;
            }
        }
        if gone > 0 && measuring {
            self.counters.unanswered.fetch_add(gone, Ordering::Relaxed);
        }
    }

    /// Puts the requests the window (or the pace) allows into `out`.
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
                    let out = &mut self.out;
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
            let at = self.out.len();
            self.out.extend_from_slice(&self.templates[from..from + run * l]);
            for p in (at..at + run * l).step_by(l) {
                let seq = self.seq;
                self.sent_at[seq as usize % slots] = (seq, batch_at);
                self.out[p + 4..p + 8].copy_from_slice(&seq.to_be_bytes());
                self.out[p + 8..p + 12].copy_from_slice(&seq.to_be_bytes());
                if self.new_sources {
                    let s = p + self.src_at;
                    self.out[s..s + 6].copy_from_slice(&new_source(self.prefix, seq));
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
        if measuring {
            self.counters.requests.fetch_add(sent_now, Ordering::Relaxed);
        }
    }

    /// Reads what came (straight into the framer) and takes each message.
    /// An error: the session is lost.
    fn on_readable(&mut self, cfg: &Config, measuring: bool, hist: &mut Histogram<u64>) -> std::io::Result<()> {
        loop {
            let room = self.framer.spare(self.size);
            let len = room.len();
            match self.stream.read(room) {
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    self.framer.commit(n);
                    self.take(cfg, measuring, hist)?;
                    // Less than the room: the socket is drained (epoll
                    // reports the next bytes as a new edge).
                    if n < len {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes every whole message the framer holds: answers are matched to
    /// their requests, control messages get a switch's answer.
    fn take(&mut self, cfg: &Config, measuring: bool, hist: &mut Histogram<u64>) -> std::io::Result<()> {
        let now = self.now_ns();
        let slots = self.sent_at.len();
        let (mut resp, mut matched, mut unmatched, mut acted, mut errors) = (0u64, 0u64, 0u64, 0u64, 0u64);
        loop {
            let m = match self.framer.next_message() {
                Ok(Some(m)) => m,
                Ok(None) => break,
                // A length that cannot be: the stream is lost.
                Err(e) => return Err(std::io::Error::new(ErrorKind::InvalidData, e.to_string())),
            };
            match m[1] {
                1 => {
                    errors += 1;
                    continue;
                }
                2 => {
                    // ECHO_REQUEST: answered in kind.
                    let at = self.out.len();
                    self.out.extend_from_slice(m);
                    self.out[at + 1] = 3;
                    continue;
                }
                _ => {}
            }
            let Some(b) = answered_buffer(cfg.version, m) else {
                // Other control messages (barrier, stats, config) get a switch's answer.
                if let Ok(m) = ofwire::decode(m) {
                    for r in switch::replies(self.id, &m) {
                        let _ = r.encode(&mut self.out);
                    }
                }
                continue;
            };
            resp += 1;
            // The request answered, and which bits of its sequence say so.
            let (answered, bits) = if self.new_sources {
                // Answers are FLOW_MODs naming a new source (1.3 only).
                if m[1] != 14 {
                    continue;
                }
                let Ok(fm) = ofwire::decode(m) else {
                    continue;
                };
                if let Some(rule) = to_controller_rule(&fm).filter(|r| self.stamped != Some(*r)) {
                    // PACKET_INs come from that rule from now on.
                    self.stamped = Some(rule);
                    for tpl in self.templates.chunks_exact_mut(self.tpl_len) {
                        tpl[15] = rule.0;
                        tpl[16..24].copy_from_slice(&rule.1.to_be_bytes());
                    }
                }
                let Some(s24) = answered_source(&fm, self.prefix) else {
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
            let slot = &mut self.sent_at[answered as usize % slots];
            if slot.0 != 0 && slot.0 & bits == answered {
                let at = std::mem::take(slot).1;
                matched += 1;
                self.outstanding = self.outstanding.saturating_sub(1);
                if measuring {
                    self.rtts.record(now.saturating_sub(at).max(1), hist);
                }
            } else {
                unmatched += 1;
            }
        }
        self.rtts.flush(hist);
        if measuring {
            let add = |c: &AtomicU64, n: u64| {
                if n > 0 {
                    c.fetch_add(n, Ordering::Relaxed);
                }
            };
            add(&self.counters.responses, resp);
            add(&self.counters.matched, matched);
            add(&self.counters.unmatched, unmatched);
            add(&self.counters.malformed_acted, acted);
            add(&self.counters.errors, errors);
        }
        Ok(())
    }
}

/// Connects switch `idx` and completes its handshake (on the caller's
/// runtime), then gives it to its event loop. A switch that cannot connect,
/// finish its handshake or reach its loop counts as lost.
pub(crate) async fn connect(
    idx: usize,
    cfg: Arc<Config>,
    counters: Arc<SwitchCounters>,
    shared: Arc<Shared>,
    door: Option<Door>,
) {
    let lost = || {
        shared.lost.fetch_add(1, Ordering::Relaxed);
    };
    let Ok(mut s) = tokio::net::TcpStream::connect(cfg.target).await else {
        return lost();
    };
    let _ = s.set_nodelay(true);
    let mut framer = Framer::default();
    let id = switch::Identity {
        datapath_id: cfg.first_dpid.wrapping_add(idx as u64),
        ports: cfg.ports,
    };
    if handshake(&mut s, &mut framer, cfg.version, id).await.is_err() {
        return lost();
    }
    counters.established.store(true, Ordering::Relaxed);
    // Still non-blocking, as the event loop wants it.
    let (Ok(stream), Some(door)) = (s.into_std(), door) else {
        return lost();
    };
    let given = door.add(Established {
        idx,
        stream,
        framer,
        counters,
    });
    if given.is_err() {
        lost();
    }
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
