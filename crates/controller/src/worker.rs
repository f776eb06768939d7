//! A worker: one thread around one epoll set (mio) that owns the sessions
//! of the switches dealt to it, their application instances and their
//! timers. A switch's bytes are read in batches (64 KiB per read, into the
//! worker's one buffer), every message in them handled, and all replies
//! written with one write. Reading a session stops while its replies are
//! unwritten, and a session whose read filled the buffer waits for the
//! others' turn before it is read again: a switch that floods us is bounded
//! to one read's worth of work per turn and cannot starve the others.
//!
//! Written by hand rather than on an async runtime: in latency mode every
//! PACKET_IN is a wake-up, and on tokio (I/O driver dispatch, task wake,
//! the local set's tick, readiness futures, a command channel, two
//! eviction signals and a timer polled per turn) the runtime was about 5 %
//! of the worker's time, more than all the C null responder's user space.
//! Here a turn is: epoll, one read, the session, one write. Other threads
//! reach a session through the worker's `Mailbox` (commands, evictions, new
//! connections); timers are one heap per worker.

use crate::driver::Driver;
use crate::runtime::{log, Shared};
use crate::shared::{Mail, Mailbox, Outbox};
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

/// A new connection for a worker; `tls` when it came in on a TLS listener.
pub(crate) struct Accepted {
    pub(crate) stream: std::net::TcpStream,
    pub(crate) tls: bool,
    pub(crate) session: u64,
    pub(crate) admission: u64,
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
                            self.d.close(CloseReason::Local(e));
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
    shared: Arc<Shared>,
    conns: HashMap<u64, Conn, foldhash::fast::RandomState>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    /// Sessions whose last read filled the buffer: read again next turn.
    again: Vec<u64>,
    buf: Vec<u8>,
    plain: Vec<u8>,
}

/// Runs a worker until the controller stops.
pub(crate) fn run(poll: Poll, mailbox: Arc<Mailbox>, shared: Arc<Shared>) {
    let mut w = Worker {
        poll,
        mailbox,
        shared,
        conns: HashMap::default(),
        timers: BinaryHeap::new(),
        again: Vec::new(),
        buf: vec![0u8; 64 * 1024],
        plain: vec![0u8; 64 * 1024],
    };
    let mut events = Events::with_capacity(1024);
    let mut mail = Vec::new();
    let mut again = Vec::new();
    loop {
        let timeout = if !w.again.is_empty() {
            Some(Duration::ZERO)
        } else {
            w.timers
                .peek()
                .map(|Reverse((t, _))| t.saturating_duration_since(Instant::now()))
        };
        if let Err(e) = w.poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                log(format_args!("worker: epoll: {e}"));
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
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
                    return;
                }
            }
        }
        std::mem::swap(&mut again, &mut w.again);
        for sid in again.drain(..) {
            w.turn(sid, now);
        }
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
    }
}

fn far(now: Instant) -> Instant {
    now + Duration::from_secs(3600)
}

impl Worker {
    fn accept(&mut self, a: Accepted, now: Instant) {
        let shared = self.shared.clone();
        let tls = match (a.tls, &shared.cfg.tls) {
            (true, Some(cfg)) => match TlsStream::new(cfg.clone()).map(Box::new) {
                Ok(t) => Some(t),
                Err(e) => {
                    log(format_args!("TLS session: {e}"));
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
            log(format_args!("worker: epoll: {e}"));
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
            },
        );
        self.turn(a.session, now);
    }

    /// One session's turn: write what it has, run its timers, read once if
    /// it may have bytes, and again until it has nothing to write or waits.
    fn turn(&mut self, sid: u64, now: Instant) {
        let Some(c) = self.conns.get_mut(&sid) else { return };
        let mut read_once = false;
        loop {
            if c.in_handshake && c.d.datapath_id().is_some() {
                c.in_handshake = false;
                if !self
                    .shared
                    .admission
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .established(c.admission)
                {
                    c.d.close(CloseReason::Local("evicted during its handshake".into()));
                }
            }
            if c.closing.is_some_and(|dl| dl <= now) {
                self.end(sid);
                return;
            }
            if c.has_output() {
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
            if c.d.is_closed() || c.has_output() {
                continue;
            }
            if wake < c.armed || c.armed <= now {
                c.armed = wake;
                self.timers.push(Reverse((wake, sid)));
            }
            if !c.readable {
                return;
            }
            if read_once {
                // Its read filled the buffer: the others go first.
                self.again.push(sid);
                return;
            }
            read_once = true;
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
                    match c.tls.as_mut() {
                        None => c.d.on_bytes(&self.buf[..n], now),
                        Some(t) => {
                            let d = &mut c.d;
                            match t.decrypt(&self.buf[..n], &mut self.plain[..], |p| d.on_bytes(p, now)) {
                                Ok(false) => {}
                                Ok(true) => c.d.on_eof(),
                                Err(e) => c.d.close(CloseReason::Local(e)),
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.readable = false;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => read_once = false,
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
