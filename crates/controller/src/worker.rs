//! A worker: one thread around one epoll set (mio) that owns the sessions
//! of the switches dealt to it, their application instances and their
//! timers. A switch's bytes are read in batches (64 KiB per read, into the
//! worker's one buffer) and handled `BUDGET` messages per turn; the replies
//! of a turn go out in one write (gathered over a few turns while a flood
//! is worked through). Reading a session stops while its replies are
//! unwritten, and a session with messages left waits for the others' turn:
//! a switch that floods us is bounded to a few messages of work per turn,
//! so a well-behaved switch's message waits behind a few of each flooding
//! switch's, not behind whole reads of them (RFC 8456's DoS test).
//!
//! Written by hand rather than on an async runtime: in latency mode every
//! PACKET_IN is a wake-up, and on tokio (I/O driver dispatch, task wake,
//! the local set's tick, readiness futures, a command channel, two
//! eviction signals and a timer polled per turn) the runtime was about 5 %
//! of the worker's time, more than all the C null responder's user space.
//! Here a turn is: epoll, one read, the session, one write. Other threads
//! reach a session through the worker's `Mailbox` (commands, evictions, new
//! connections); timers are one heap per worker.

use crate::driver::{Driver, Environment};
use crate::shared::{Accepted, Mail, Mailbox, Outbox};
use crate::tls::TlsStream;
use mio::{Events, Interest, Poll, Token};
use ofconn::CloseReason;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The mailbox's waker; sessions are tokens by their id (from 1).
const WAKER: Token = Token(0);
/// How long a closed session's last words (an OFPT_ERROR) may take to go out.
const LAST_WORDS: Duration = Duration::from_secs(1);
/// The messages a session has handled per turn, at most: a round of a
/// worker's busy sessions is this many messages each, so a switch that
/// floods delays another switch's message by a few of its own at most
/// (one 64 KiB read holds some 800 PACKET_INs: a whole read per turn made
/// the others wait milliseconds behind a few flooding switches).
pub(crate) const BUDGET: usize = 16;
/// Replies gathered while a session still has messages to handle are
/// written once they reach this size.
const FLUSH_AT: usize = 32 * 1024;
/// A read this small is a light session's (a switch in latency mode, one
/// or two messages at a time; a flood's reads are kilobytes): for
/// `LIGHT_FOR` after one, the worker's turns are `BUDGET` messages.
const LIGHT_READ: usize = 256;
const LIGHT_FOR: Duration = Duration::from_millis(20);

/// What every worker of a controller shares with its listeners and its
/// handles: how a session starts (the applications, the registry), whether
/// the controller is stopping, the listeners' admission and the TLS
/// configuration. The runtime owns it (`runtime::Shared`); a worker sees
/// nothing else of the runtime.
pub(crate) struct Core {
    pub(crate) env: Environment,
    pub(crate) stop: std::sync::atomic::AtomicBool,
    /// The listeners' connections, each with what evicts it during its
    /// handshake.
    pub(crate) admission: std::sync::Mutex<ofconn::admission::Admission<Outbox>>,
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
}

impl Core {
    /// A connection the listeners admitted is gone.
    pub(crate) fn admission_closed(&self, id: u64) {
        self.admission.lock().unwrap_or_else(|e| e.into_inner()).closed(id);
    }
}

/// A worker's epoll set and mailbox, made on the caller's thread so that a
/// failure is the caller's error.
pub(crate) fn prepare() -> io::Result<(Poll, Arc<Mailbox>)> {
    let poll = Poll::new()?;
    let waker = mio::Waker::new(poll.registry(), WAKER)?;
    Ok((poll, Arc::new(Mailbox::new(waker))))
}

struct Conn {
    stream: mio::net::TcpStream,
    tls: Option<Box<TlsStream>>,
    d: Driver,
    admission: u64,
    in_handshake: bool,
    /// Bytes taken from the driver (or encrypted) not yet written, from `pos`.
    out: Vec<u8>,
    pos: usize,
    /// A write failed: what the session still sends is dropped.
    broken: bool,
    /// The socket may have bytes to read (epoll is edge-triggered).
    readable: bool,
    /// The earliest timer entry in the heap for this session.
    armed: Instant,
    /// Closed, with last words still going out until then.
    closing: Option<Instant>,
    /// In the worker's `again` list (at most once: a session with work
    /// left has one turn a round, however many events it also raises).
    again: bool,
}

enum Flush {
    Done,
    Blocked,
}

impl Conn {
    fn has_output(&mut self) -> bool {
        !self.broken
            && (self.pos < self.out.len()
                || !self.d.transmit().is_empty()
                || self.tls.as_ref().is_some_and(|t| t.wants_write()))
    }

    /// Writes what is pending, then what the driver has queued.
    fn flush(&mut self) -> Flush {
        loop {
            if self.pos == self.out.len() {
                // Everything taken is written. The two buffers (ours and
                // the session's) go back and forth: nothing is allocated
                // per message.
                let written = std::mem::take(&mut self.out);
                self.pos = 0;
                let tls_wants = self.tls.as_ref().is_some_and(|t| t.wants_write());
                if self.d.transmit().is_empty() && !tls_wants {
                    self.d.give_back(written);
                    return Flush::Done;
                }
                let plain = self.d.take_transmit();
                self.d.give_back(written);
                match self.tls.as_mut() {
                    None => self.out = plain,
                    Some(t) => {
                        let sealed = t.encrypt(&plain);
                        self.d.give_back(plain);
                        if let Err(e) = sealed {
                            self.d.close(CloseReason::Local(e.to_string()));
                            self.broken = true;
                            return Flush::Done;
                        }
                        self.out = t.ciphertext().to_vec();
                    }
                }
                if self.out.is_empty() {
                    return Flush::Done;
                }
            }
            match (&self.stream).write(&self.out[self.pos..]) {
                Ok(0) => {
                    self.fail();
                    return Flush::Done;
                }
                Ok(n) => self.pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flush::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.fail();
                    return Flush::Done;
                }
            }
        }
    }

    fn fail(&mut self) {
        self.broken = true;
        self.out.clear();
        self.pos = 0;
        self.d.close(CloseReason::Local("write failed".into()));
    }
}

struct Worker {
    poll: Poll,
    mailbox: Arc<Mailbox>,
    shared: Arc<Core>,
    conns: HashMap<u64, Conn, foldhash::fast::RandomState>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    /// Sessions whose last read filled the buffer: read again next turn.
    again: Vec<u64>,
    buf: Vec<u8>,
    plain: Vec<u8>,
    /// Until when turns are short (a light session was seen), and for how
    /// long after one.
    light_until: Instant,
    light_for: Duration,
    /// Scratch lists, kept to be reused: the mail taken, and this round's
    /// sessions with work left.
    mail: Vec<Mail>,
    round: Vec<u64>,
}

/// Runs a worker until the controller stops.
pub(crate) fn run(poll: Poll, mailbox: Arc<Mailbox>, shared: Arc<Core>) {
    let mut w = Worker::new(poll, mailbox, shared);
    let mut events = Events::with_capacity(1024);
    while w.step(&mut events) {}
}

impl Worker {
    fn new(poll: Poll, mailbox: Arc<Mailbox>, shared: Arc<Core>) -> Worker {
        Worker {
            poll,
            mailbox,
            shared,
            conns: HashMap::default(),
            timers: BinaryHeap::new(),
            again: Vec::new(),
            buf: vec![0u8; 64 * 1024],
            plain: vec![0u8; 64 * 1024],
            light_until: Instant::now(),
            light_for: LIGHT_FOR,
            mail: Vec::new(),
            round: Vec::new(),
        }
    }

    /// One round of the loop: wait for events (not at all while sessions
    /// have work left), give every session with an event its turn, then
    /// the mail, then every session with work left its turn, then the
    /// timers due. False once the worker has stopped.
    fn step(&mut self, events: &mut Events) -> bool {
        let w = self;
        let timeout = if !w.again.is_empty() {
            Some(Duration::ZERO)
        } else {
            w.timers
                .peek()
                .map(|Reverse((t, _))| t.saturating_duration_since(Instant::now()))
        };
        if let Err(e) = w.poll.poll(events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::info!("controller: worker: epoll: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
            return true;
        }
        let now = Instant::now();
        for ev in events.iter() {
            if ev.token() == WAKER {
                continue;
            }
            let sid = ev.token().0 as u64;
            if let Some(c) = w.conns.get_mut(&sid) {
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    c.readable = true;
                }
                w.turn(sid, now);
            }
        }
        // Mail is looked at on every wake-up, not only the waker's: a busy
        // worker may see the waker's event late, never the mail.
        let mut mail = std::mem::take(&mut w.mail);
        w.mailbox.take(&mut mail);
        let mut posted = mail.drain(..);
        while let Some(m) = posted.next() {
            match m {
                Mail::Accept(a) => w.accept(a, now),
                Mail::Command(sid, cmd) => {
                    if let Some(c) = w.conns.get_mut(&sid) {
                        c.d.on_command(cmd);
                        w.turn(sid, now);
                    }
                }
                Mail::Evict(sid) => {
                    if let Some(c) = w.conns.get_mut(&sid) {
                        let why = if w.shared.stop.load(Ordering::Relaxed) {
                            "the controller was killed"
                        } else {
                            "another connection announced the same datapath id"
                        };
                        c.d.close(CloseReason::Local(why.into()));
                        w.turn(sid, now);
                    }
                }
                Mail::Kill(sid) => {
                    if let Some(c) = w.conns.get_mut(&sid) {
                        if c.in_handshake {
                            c.d.close(CloseReason::Local(
                                "evicted in its handshake: the connection limit was reached".into(),
                            ));
                            w.turn(sid, now);
                        }
                    }
                }
                Mail::Stop => {
                    w.mailbox.close();
                    for m in posted.by_ref() {
                        if let Mail::Accept(a) = m {
                            w.shared.admission_closed(a.admission);
                        }
                    }
                    let ids: Vec<u64> = w.conns.keys().copied().collect();
                    for sid in ids {
                        w.end(sid);
                    }
                    return false;
                }
            }
        }
        drop(posted);
        w.mail = mail;
        let mut round = std::mem::take(&mut w.round);
        std::mem::swap(&mut round, &mut w.again);
        for sid in round.drain(..) {
            if let Some(c) = w.conns.get_mut(&sid) {
                c.again = false;
                w.turn(sid, now);
            }
        }
        w.round = round;
        while let Some(&Reverse((t, sid))) = w.timers.peek() {
            if t > now {
                break;
            }
            w.timers.pop();
            if let Some(c) = w.conns.get_mut(&sid) {
                if c.armed == t {
                    c.armed = far(now);
                    w.turn(sid, now);
                } else if c.closing.is_some_and(|dl| dl <= now) {
                    w.turn(sid, now);
                }
            }
        }
        true
    }
}

fn far(now: Instant) -> Instant {
    now + Duration::from_secs(3600)
}

impl Worker {
    fn accept(&mut self, a: Accepted, now: Instant) {
        let shared = self.shared.clone();
        let tls = match (a.tls, &shared.tls) {
            (true, Some(cfg)) => match TlsStream::new(cfg.clone()).map(Box::new) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::info!("controller: TLS session: {e}");
                    shared.admission_closed(a.admission);
                    return;
                }
            },
            _ => None,
        };
        let mut stream = mio::net::TcpStream::from_std(a.stream);
        let token = Token(a.session as usize);
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
        {
            tracing::info!("controller: worker: epoll: {e}");
            shared.admission_closed(a.admission);
            return;
        }
        let outbox = Outbox::new(a.session, self.mailbox.clone());
        let d = Driver::new(a.session, &shared.env, outbox, now);
        self.conns.insert(
            a.session,
            Conn {
                stream,
                tls,
                d,
                admission: a.admission,
                in_handshake: true,
                out: Vec::new(),
                pos: 0,
                broken: false,
                readable: false,
                armed: far(now),
                closing: None,
                again: false,
            },
        );
        self.turn(a.session, now);
    }

    /// One session's turn: write what it has, run its timers, then one
    /// piece of work (the next `BUDGET` messages already read, or one read
    /// and the first `BUDGET` messages in it), and again until it has
    /// nothing to write or waits. A session with more work left waits for
    /// the others' turn.
    fn turn(&mut self, sid: u64, now: Instant) {
        let Some(c) = self.conns.get_mut(&sid) else { return };
        // Already waiting for its turn of this round: writes and timers only.
        let mut worked = c.again;
        loop {
            if c.in_handshake && c.d.datapath_id().is_some() {
                c.in_handshake = false;
                if !self
                    .shared
                    .admission
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .established(c.admission, now)
                {
                    c.d.close(CloseReason::Local("evicted during its handshake".into()));
                }
            }
            if c.closing.is_some_and(|dl| dl <= now) {
                self.end(sid);
                return;
            }
            // With messages still to handle, replies are gathered into
            // larger writes (a write is dearer than a message); a write
            // under way is always carried on.
            let gather = c.d.backlog() && c.pos == c.out.len() && c.d.transmit().len() < FLUSH_AT;
            if !gather && c.has_output() {
                if let Flush::Blocked = c.flush() {
                    if c.d.is_closed() && c.closing.is_none() {
                        let dl = now + LAST_WORDS;
                        c.closing = Some(dl);
                        self.timers.push(Reverse((dl, sid)));
                    }
                    // The rest goes when the socket says it can take it.
                    return;
                }
            }
            if c.d.is_closed() {
                self.end(sid);
                return;
            }
            let wake = c.d.on_timer(now).unwrap_or_else(|| far(now));
            // The timers may have closed the session or queued messages.
            if c.d.is_closed() || (c.has_output() && !c.d.backlog()) {
                continue;
            }
            if wake < c.armed || c.armed <= now {
                c.armed = wake;
                self.timers.push(Reverse((wake, sid)));
            }
            if !c.d.backlog() && !c.readable {
                return;
            }
            if worked {
                // It has had its share of this round: the others go first.
                if !c.again {
                    c.again = true;
                    self.again.push(sid);
                }
                return;
            }
            worked = true;
            // Turns of a few messages only while a light session shares
            // the worker: among floods alone, whole reads (a turn costs
            // about as much as a few messages).
            c.d.set_budget(if now < self.light_until { BUDGET } else { usize::MAX });
            if c.d.backlog() {
                c.d.work(now);
                continue;
            }
            match (&c.stream).read(&mut self.buf[..]) {
                Ok(0) => {
                    c.readable = false;
                    c.d.on_eof();
                }
                Ok(n) => {
                    // A short read emptied the socket; bytes that come
                    // later raise a new edge.
                    if n < self.buf.len() {
                        c.readable = false;
                    }
                    if n <= LIGHT_READ {
                        self.light_until = now + self.light_for;
                    }
                    match c.tls.as_mut() {
                        None => c.d.on_bytes(&self.buf[..n], now),
                        Some(t) => {
                            let d = &mut c.d;
                            match t.decrypt(&self.buf[..n], &mut self.plain[..], |p| d.on_bytes(p, now)) {
                                Ok(false) => {}
                                Ok(true) => c.d.on_eof(),
                                Err(e) => c.d.close(CloseReason::Local(e.to_string())),
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.readable = false;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => worked = false,
                Err(_) => {
                    c.readable = false;
                    c.d.on_eof();
                }
            }
        }
    }

    /// The session is over: the driver finished (the registry and the apps
    /// told), the admission slot freed, then the socket shut and closed.
    fn end(&mut self, sid: u64) {
        let Some(mut c) = self.conns.remove(&sid) else { return };
        let _ = self.poll.registry().deregister(&mut c.stream);
        // The registry and the apps learn it first, then the switch.
        c.d.finish();
        self.shared.admission_closed(c.admission);
        let _ = c.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofwire::{v10, Body, Hello, Message, OFP10_VERSION};
    use std::net::{TcpListener, TcpStream};

    fn bytes(xid: u32, body: Body) -> Vec<u8> {
        Message::new(OFP10_VERSION, xid, body).to_bytes().unwrap()
    }

    /// A PACKET_IN from a host of `src` to a host of `dst`.
    fn packet_in(xid: u32, src: u8, dst: u8) -> Vec<u8> {
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        bytes(
            xid,
            Body::V10(v10::Body::PacketIn(v10::PacketIn {
                buffer_id: xid,
                total_len: 60,
                in_port: 1,
                reason: ofwire::PacketInReason::NoMatch,
                data: frame.into(),
            })),
        )
    }

    struct Bed {
        w: Worker,
        events: Events,
        listener: TcpListener,
        next: u64,
    }

    impl Bed {
        fn new() -> Bed {
            let (poll, mailbox) = prepare().unwrap();
            let core = Arc::new(Core {
                env: Environment::new(
                    vec![crate::catalog::by_name("l2-learning").unwrap()],
                    ofconn::Config::default(),
                ),
                stop: Default::default(),
                admission: std::sync::Mutex::new(ofconn::admission::Admission::new(ofconn::admission::Limits {
                    total: 1024,
                    per_source: 1024,
                })),
                tls: None,
            });
            let mut w = Worker::new(poll, mailbox, core);
            // Light sessions keep the worker in short turns for as long as
            // the test takes, however slow the machine.
            w.light_for = Duration::from_secs(3600);
            Bed {
                w,
                events: Events::with_capacity(64),
                listener: TcpListener::bind("127.0.0.1:0").unwrap(),
                next: 1,
            }
        }

        /// A switch connected to the worker and past its handshake: its
        /// socket and its session's id.
        fn switch(&mut self, dpid: u64) -> (TcpStream, u64) {
            let client = TcpStream::connect(self.listener.local_addr().unwrap()).unwrap();
            let (stream, peer) = self.listener.accept().unwrap();
            stream.set_nonblocking(true).unwrap();
            let sid = self.next;
            self.next += 1;
            let admit = self.w.shared.admission.lock().unwrap().admit(
                peer.ip(),
                Instant::now(),
                Outbox::new(sid, self.w.mailbox.clone()),
            );
            let ofconn::admission::Admit::Accept { id, .. } = admit else {
                panic!("refused")
            };
            self.w.accept(
                Accepted {
                    stream,
                    tls: false,
                    session: sid,
                    admission: id,
                },
                Instant::now(),
            );
            let mut c = client;
            c.write_all(&bytes(1, Body::Hello(Hello::with_versions(&[OFP10_VERSION]))))
                .unwrap();
            let fr = v10::FeaturesReply::bare(dpid);
            c.write_all(&bytes(2, Body::V10(v10::Body::FeaturesReply(fr)))).unwrap();
            while self.w.conns[&sid].in_handshake {
                self.step();
            }
            (c, sid)
        }

        fn step(&mut self) {
            assert!(self.w.step(&mut self.events));
        }

        fn handled(&self, sid: u64) -> u64 {
            self.w.conns[&sid].d.handled()
        }
    }

    /// Reads what `s` has now (discarded).
    fn drain(s: &mut TcpStream) {
        s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 65536];
        while let Ok(n) = s.read(&mut b) {
            if n == 0 {
                break;
            }
        }
    }

    /// Whether what `s` has now holds the answer to the PACKET_IN of
    /// buffer `id` (l2-learning's PACKET_OUT or FLOW_MOD of that buffer).
    fn answered(s: &mut TcpStream, framer: &mut ofwire::Framer, id: u32) -> bool {
        s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 65536];
        while let Ok(n) = s.read(&mut b) {
            if n == 0 {
                break;
            }
            framer.push(&b[..n]);
        }
        let mut found = false;
        while let Ok(Some(m)) = framer.next_message() {
            match ofwire::decode(m).map(|m| m.body) {
                Ok(Body::V10(v10::Body::PacketOut(po))) if po.buffer_id == id => found = true,
                Ok(Body::V10(v10::Body::FlowMod(fm))) if fm.buffer_id == id => found = true,
                _ => {}
            }
        }
        found
    }

    /// RFC 8456's DoS test, as the loop sees it: a well-behaved switch's
    /// request is answered before the worker works through more than a
    /// turn of each flooding switch's backlog, not after whole reads of it.
    #[test]
    fn a_well_behaved_switch_is_answered_before_the_flood_gets_another_turn() {
        let mut bed = Bed::new();
        let (mut good, g) = bed.switch(1);
        let mut floods: Vec<(TcpStream, u64)> = (0..2).map(|i| bed.switch(100 + i)).collect();
        // The well-behaved switch's first request: a light session.
        let mut framer = ofwire::Framer::default();
        good.write_all(&packet_in(10, 1, 2)).unwrap();
        while !answered(&mut good, &mut framer, 10) {
            bed.step();
        }
        // Each flooding switch has a few hundred kilobytes waiting (more
        // than one read of the worker's), new sources every one.
        for (f, _) in floods.iter_mut() {
            f.set_nonblocking(true).unwrap();
            let mut sent = 0;
            for xid in 0..4000u32 {
                let m = packet_in(1000 + xid, (xid % 200) as u8, 1);
                match f.write(&m) {
                    Ok(n) if n == m.len() => sent += n,
                    _ => break,
                }
            }
            assert!(sent > 128 * 1024, "only {sent} bytes of flood queued");
        }
        // Let the flood start: the worker is busy with it. The flooding
        // switches read their answers (their sockets never block the
        // worker's writes).
        bed.step();
        for (f, _) in floods.iter_mut() {
            drain(f);
        }
        let before: Vec<u64> = floods.iter().map(|(_, sid)| bed.handled(*sid)).collect();
        assert!(before.iter().all(|&n| n > 0), "the flood was not read: {before:?}");
        good.write_all(&packet_in(11, 1, 2)).unwrap();
        let mut steps = 0;
        while !answered(&mut good, &mut framer, 11) {
            bed.step();
            for (f, _) in floods.iter_mut() {
                drain(f);
            }
            steps += 1;
            assert!(steps < 1000, "the well-behaved switch was never answered");
        }
        let after: Vec<u64> = floods.iter().map(|(_, sid)| bed.handled(*sid)).collect();
        for (b, a) in before.iter().zip(&after) {
            // The answer went out in the round that read the request (or
            // the next, if the request arrived after the round's wait):
            // each flood had at most two turns meanwhile.
            assert!(
                a - b <= 2 * BUDGET as u64,
                "a flooding switch had {} messages handled before the well-behaved one's (turns of {BUDGET})",
                a - b
            );
        }
        assert!(bed.handled(g) >= 3);
    }
}
