//! The controller runtime: listeners, one acceptor thread per listener, and
//! worker threads (one per core by default), each a single-threaded tokio
//! runtime owning its switches' sessions and application instances. A
//! switch's bytes are read in batches (64 KiB per read), every message in
//! them handled, and all replies written with one write: many messages per
//! syscall, and no lock or cross-thread hand-off on the PACKET_IN path.
//! Reading stops while replies are unwritten, so a switch that floods us is
//! bounded to one read's worth of work per turn and cannot starve the others.

use crate::app::{AppFactory, SwitchApp, Verdict};
use ofconn::{CloseReason, Event, Session};
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, Notify};

#[derive(Clone)]
pub struct Config {
    pub listen: Vec<SocketAddr>,
    pub workers: usize,
    pub apps: Vec<AppFactory>,
    pub session: ofconn::Config,
    /// Log each session's start and end to stderr.
    pub verbose: bool,
}

/// Controller-wide counters (touched per session, never per message).
#[derive(Default, Debug)]
pub struct Stats {
    pub sessions_active: AtomicU64,
    pub sessions_total: AtomicU64,
    pub switches_up: AtomicU64,
    pub refused: AtomicU64,
    pub replaced_duplicates: AtomicU64,
    pub messages_in: AtomicU64,
    pub messages_out: AtomicU64,
    pub errors_sent: AtomicU64,
}

struct Shared {
    cfg: Config,
    stats: Arc<Stats>,
    /// datapath id -> (session number, how to close it).
    switches: Mutex<HashMap<u64, (u64, Arc<Notify>)>>,
    next_session: AtomicU64,
    stop: AtomicBool,
}

/// A running controller.
pub struct Handle {
    pub local_addrs: Vec<SocketAddr>,
    pub stats: Arc<Stats>,
    shared: Arc<Shared>,
}

impl Handle {
    /// Stops accepting new switches (existing sessions end with the process).
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
    }

    /// Datapath ids of the switches whose handshake completed.
    pub fn switches(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .shared
            .switches
            .lock()
            .expect("registry lock")
            .keys()
            .copied()
            .collect();
        v.sort();
        v
    }
}

fn log(msg: impl std::fmt::Display) {
    eprintln!("controller: {msg}");
}

/// Raises the soft open-file limit to the hard limit; returns the new limit.
pub fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) => {
            if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Err(_) => 1024,
    }
}

/// Starts listeners and workers; returns once every listener is bound.
pub fn start(cfg: Config) -> io::Result<Handle> {
    let limit = raise_fd_limit();
    if cfg.verbose {
        log(format_args!("open-file limit {limit}"));
    }
    let workers = cfg.workers.max(1);
    let stats = Arc::new(Stats::default());
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        stats: stats.clone(),
        switches: Mutex::new(HashMap::new()),
        next_session: AtomicU64::new(1),
        stop: AtomicBool::new(false),
    });
    let mut senders = Vec::new();
    for w in 0..workers {
        let (tx, rx) = mpsc::unbounded_channel::<std::net::TcpStream>();
        senders.push(tx);
        let shared = shared.clone();
        std::thread::Builder::new()
            .name(format!("ctl-worker-{w}"))
            .spawn(move || worker(rx, shared))?;
    }
    let mut local_addrs = Vec::new();
    for addr in &cfg.listen {
        let l = TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("listen on {addr}: {e}")))?;
        l.set_nonblocking(true)?;
        local_addrs.push(l.local_addr()?);
        let (senders, shared) = (senders.clone(), shared.clone());
        std::thread::Builder::new()
            .name(format!("ctl-accept-{addr}"))
            .spawn(move || acceptor(l, senders, shared))?;
    }
    Ok(Handle {
        local_addrs,
        stats,
        shared,
    })
}

fn acceptor(l: TcpListener, workers: Vec<mpsc::UnboundedSender<std::net::TcpStream>>, shared: Arc<Shared>) {
    // One descriptor kept in reserve: when the limit is reached we release it,
    // accept the connection and close it at once (a clean refusal) instead
    // of leaving it to hang in the backlog.
    let mut reserve = std::fs::File::open("/dev/null").ok();
    let mut next = 0usize;
    while !shared.stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((s, peer)) => {
                let _ = s.set_nodelay(true);
                if s.set_nonblocking(true).is_err() {
                    continue;
                }
                if shared.cfg.verbose {
                    log(format_args!("connection from {peer}"));
                }
                let _ = workers[next % workers.len()].send(s);
                next += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(2)),
            // EMFILE (24) or ENFILE (23): out of descriptors.
            Err(e) if matches!(e.raw_os_error(), Some(23 | 24)) => {
                drop(reserve.take());
                if let Ok((s, peer)) = l.accept() {
                    drop(s);
                    shared.stats.refused.fetch_add(1, Ordering::Relaxed);
                    log(format_args!(
                        "refused {peer}: open-file limit reached with {} sessions",
                        shared.stats.sessions_active.load(Ordering::Relaxed)
                    ));
                }
                reserve = std::fs::File::open("/dev/null").ok();
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                log(format_args!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

fn worker(mut rx: mpsc::UnboundedReceiver<std::net::TcpStream>, shared: Arc<Shared>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("worker runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        while let Some(s) = rx.recv().await {
            let shared = shared.clone();
            tokio::task::spawn_local(async move {
                if let Ok(stream) = tokio::net::TcpStream::from_std(s) {
                    serve(stream, shared).await;
                }
            });
        }
    });
}

async fn serve(mut stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
    shared.stats.sessions_active.fetch_add(1, Ordering::Relaxed);
    shared.stats.sessions_total.fetch_add(1, Ordering::Relaxed);
    let mut apps: Vec<Box<dyn SwitchApp>> = shared.cfg.apps.iter().map(|f| f()).collect();
    let mut sess = Session::new(shared.cfg.session.clone(), Instant::now());
    let evict = Arc::new(Notify::new());
    let mut dpid: Option<u64> = None;
    let mut reason = None;
    loop {
        if !sess.transmit().is_empty() {
            let mut out = std::mem::take(sess.transmit());
            let ok = stream.write_all(&out).await.is_ok();
            out.clear();
            *sess.transmit() = out;
            if !ok {
                sess.close(CloseReason::Local("write failed".into()));
            }
        }
        handle_events(&mut sess, &mut apps, &shared, id, &evict, &mut dpid, &mut reason);
        if sess.is_closed() {
            break;
        }
        let wake = sess
            .on_timer(Instant::now())
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        // The timer may have closed the session or queued an echo.
        if sess.is_closed() || !sess.transmit().is_empty() {
            continue;
        }
        tokio::select! {
            r = stream.readable() => {
                // Read into the worker's buffer (sessions keep none of their own):
                // the borrow ends before the next await.
                let got = READ_BUF.with(|b| {
                    let mut b = b.borrow_mut();
                    match stream.try_read(&mut b[..]) {
                        Ok(0) => Some(Err(())),
                        Ok(n) => {
                            sess.on_bytes(&b[..n], Instant::now(), &mut |s, pi| dispatch_packet_in(&mut apps, s, pi));
                            Some(Ok(()))
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                        Err(_) => Some(Err(())),
                    }
                });
                match (r, got) {
                    (Err(_), _) | (_, Some(Err(()))) => sess.on_eof(),
                    _ => {
                        // Applications see `switch_up` before the PACKET_INs that came with the handshake.
                        while sess.held() {
                            handle_events(&mut sess, &mut apps, &shared, id, &evict, &mut dpid, &mut reason);
                            sess.resume(Instant::now(), &mut |s, pi| dispatch_packet_in(&mut apps, s, pi));
                        }
                    }
                }
            },
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
            _ = evict.notified() => sess.close(CloseReason::Local("another connection announced the same datapath id".into())),
        }
    }
    // Last words (an OFPT_ERROR before a close) go out before the socket closes.
    if !sess.transmit().is_empty() {
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(sess.transmit())).await;
    }
    let _ = stream.shutdown().await;
    if let Some(d) = dpid {
        let mut reg = shared.switches.lock().expect("registry lock");
        if reg.get(&d).map(|(sid, _)| *sid) == Some(id) {
            reg.remove(&d);
        }
        drop(reg);
        for app in apps.iter_mut() {
            app.switch_down(d);
        }
        shared.stats.switches_up.fetch_sub(1, Ordering::Relaxed);
    }
    let c = sess.counters;
    shared.stats.messages_in.fetch_add(c.rx_messages, Ordering::Relaxed);
    shared.stats.messages_out.fetch_add(c.tx_messages, Ordering::Relaxed);
    shared.stats.errors_sent.fetch_add(c.rx_errors_sent, Ordering::Relaxed);
    shared.stats.sessions_active.fetch_sub(1, Ordering::Relaxed);
    if shared.cfg.verbose {
        log(format_args!("session {id} (dpid {:?}) ended: {:?}", dpid, reason));
    }
}

thread_local! {
    /// Each worker's read buffer, shared by all its sessions.
    static READ_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]);
}

fn dispatch_packet_in(apps: &mut [Box<dyn SwitchApp>], sw: &mut Session, pi: &ofwire::hot::PacketInView) {
    for app in apps.iter_mut() {
        if app.packet_in(sw, pi) == Verdict::Done {
            break;
        }
    }
}

fn handle_events(
    sess: &mut Session,
    apps: &mut [Box<dyn SwitchApp>],
    shared: &Shared,
    id: u64,
    evict: &Arc<Notify>,
    dpid: &mut Option<u64>,
    reason: &mut Option<CloseReason>,
) {
    while let Some(ev) = sess.poll_event() {
        match ev {
            Event::Up(info) => {
                let d = info.datapath_id;
                let old = shared
                    .switches
                    .lock()
                    .expect("registry lock")
                    .insert(d, (id, evict.clone()));
                if let Some((old_id, notify)) = old {
                    // The switch reconnected: the older connection is stale.
                    notify.notify_one();
                    shared.stats.replaced_duplicates.fetch_add(1, Ordering::Relaxed);
                    log(format_args!(
                        "datapath {d:#x}: new session {id} replaces session {old_id}"
                    ));
                }
                shared.stats.switches_up.fetch_add(1, Ordering::Relaxed);
                *dpid = Some(d);
                if shared.cfg.verbose {
                    log(format_args!(
                        "switch {d:#018x} up (OpenFlow {:#04x}, {} ports)",
                        info.version,
                        info.ports.len()
                    ));
                }
                for app in apps.iter_mut() {
                    app.switch_up(sess, &info);
                }
            }
            Event::Message(m) => {
                for app in apps.iter_mut() {
                    app.message(sess, &m);
                }
            }
            Event::Malformed(e) => {
                if shared.cfg.verbose {
                    log(format_args!(
                        "session {id}: malformed message answered with {}: {}",
                        e.code, e.what
                    ));
                }
            }
            Event::Closed(r) => *reason = Some(r),
        }
    }
}
