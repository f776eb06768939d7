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

/// A switch whose handshake completed, as other threads see it.
struct Registered {
    session: u64,
    evict: Arc<Notify>,
    info: ofconn::SwitchInfo,
    commands: mpsc::UnboundedSender<Command>,
}

/// What a request from another thread (the REST API) waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Every part of the reply with the request's xid (multipart/stats replies).
    Reply,
    /// A barrier sent after the request: the request is in effect.
    Barrier,
}

/// A message for a switch from another thread; the answer comes back on `reply`.
pub struct Command {
    pub body: ofwire::Body,
    pub wait: Wait,
    pub reply: tokio::sync::oneshot::Sender<Result<Vec<ofwire::Message>, String>>,
}

/// A command in flight inside a session.
struct Pending {
    /// The xid whose answer completes it (the request's, or the barrier's).
    done_xid: u32,
    /// The request's own xid (an ERROR with it fails the command).
    request_xid: u32,
    wait: Wait,
    got: Vec<ofwire::Message>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<ofwire::Message>, String>>,
}

struct Shared {
    cfg: Config,
    stats: Arc<Stats>,
    /// datapath id -> the session that serves it.
    switches: Mutex<HashMap<u64, Registered>>,
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

    /// What the handshakes reported, by datapath id.
    pub fn switch_infos(&self) -> Vec<ofconn::SwitchInfo> {
        let mut v: Vec<_> = self
            .shared
            .switches
            .lock()
            .expect("registry lock")
            .values()
            .map(|r| r.info.clone())
            .collect();
        v.sort_by_key(|i| i.datapath_id);
        v
    }

    /// Sends `body` to switch `dpid` and waits (5 s at most) for what `wait` says.
    pub async fn request(&self, dpid: u64, body: ofwire::Body, wait: Wait) -> Result<Vec<ofwire::Message>, String> {
        let tx = {
            let reg = self.shared.switches.lock().expect("registry lock");
            reg.get(&dpid)
                .map(|r| r.commands.clone())
                .ok_or_else(|| format!("no switch {dpid:#x}"))?
        };
        let (reply, rx) = tokio::sync::oneshot::channel();
        tx.send(Command { body, wait, reply })
            .map_err(|_| format!("switch {dpid:#x} went away"))?;
        match tokio::time::timeout(Duration::from_secs(5), rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(format!("switch {dpid:#x} went away")),
            Err(_) => Err(format!("switch {dpid:#x} did not answer within 5 s")),
        }
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

/// Starts a controller running app `app` on a loopback port of its own,
/// for use inside another program (benchmarks, `sdnlab net --app`, tests).
pub fn start_local(app: &str, workers: usize) -> Result<Handle, String> {
    let factory = crate::app::by_name(app)?;
    start(Config {
        listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
        workers,
        apps: vec![factory],
        session: ofconn::Config::default(),
        verbose: false,
    })
    .map_err(|e| format!("starting the built-in controller: {e}"))
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
    let (cmd_tx, mut cmd_rx) = mpsc::unbounded_channel::<Command>();
    let mut local = Local {
        id,
        evict: Arc::new(Notify::new()),
        dpid: None,
        reason: None,
        commands: cmd_tx,
        pending: Vec::new(),
    };
    let evict = local.evict.clone();
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
        handle_events(&mut sess, &mut apps, &shared, &mut local);
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
                            handle_events(&mut sess, &mut apps, &shared, &mut local);
                            sess.resume(Instant::now(), &mut |s, pi| dispatch_packet_in(&mut apps, s, pi));
                        }
                    }
                }
            },
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
            _ = evict.notified() => sess.close(CloseReason::Local("another connection announced the same datapath id".into())),
            Some(cmd) = cmd_rx.recv() => start_command(&mut sess, &mut local, cmd),
        }
    }
    // Last words (an OFPT_ERROR before a close) go out before the socket closes.
    if !sess.transmit().is_empty() {
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(sess.transmit())).await;
    }
    let _ = stream.shutdown().await;
    for p in local.pending.drain(..) {
        let _ = p.reply.send(Err("the session ended".into()));
    }
    let (dpid, reason) = (local.dpid, local.reason.take());
    if let Some(d) = dpid {
        let mut reg = shared.switches.lock().expect("registry lock");
        if reg.get(&d).map(|r| r.session) == Some(id) {
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

/// A session's own state besides the protocol machine.
struct Local {
    id: u64,
    evict: Arc<Notify>,
    dpid: Option<u64>,
    reason: Option<CloseReason>,
    commands: mpsc::UnboundedSender<Command>,
    pending: Vec<Pending>,
}

/// Sends a command's message (and a barrier when asked) and remembers it.
fn start_command(sess: &mut Session, local: &mut Local, cmd: Command) {
    if sess.phase() != ofconn::Phase::Ready {
        let _ = cmd.reply.send(Err("the switch is not ready".into()));
        return;
    }
    let version = sess.version();
    let xid = sess.xid();
    let msg = ofwire::Message {
        version,
        xid,
        body: cmd.body,
    };
    let mut bytes = Vec::new();
    if let Err(e) = msg.encode(&mut bytes) {
        let _ = cmd.reply.send(Err(e.to_string()));
        return;
    }
    sess.transmit().extend_from_slice(&bytes);
    let done_xid = match cmd.wait {
        Wait::Reply => xid,
        Wait::Barrier if version == ofwire::OFP10_VERSION => sess.send10(ofwire::v10::Body::BarrierRequest),
        Wait::Barrier => sess.send13(ofwire::v13::Body::BarrierRequest),
    };
    local.pending.push(Pending {
        done_xid,
        request_xid: xid,
        wait: cmd.wait,
        got: Vec::new(),
        reply: cmd.reply,
    });
}

/// Gives a message to the command waiting for it, if any; true when it did.
fn complete_command(local: &mut Local, m: &ofwire::Message) -> bool {
    use ofwire::{v10, v13, Body};
    let Some(i) = local
        .pending
        .iter()
        .position(|p| p.done_xid == m.xid || p.request_xid == m.xid)
    else {
        return false;
    };
    let is_error = matches!(m.body, Body::V10(v10::Body::Error(_)) | Body::V13(v13::Body::Error(_)));
    let more = match &m.body {
        Body::V10(v10::Body::StatsReply(r)) => r.flags & v10::STATS_REPLY_MORE != 0,
        Body::V13(v13::Body::MultipartReply(r)) => r.flags & v13::MULTIPART_MORE != 0,
        _ => false,
    };
    let p = &mut local.pending[i];
    let finished = is_error || m.xid == p.done_xid && (p.wait == Wait::Barrier || !more);
    if p.wait == Wait::Reply || is_error {
        p.got.push(m.clone());
    }
    if finished {
        let p = local.pending.remove(i);
        let r = if is_error {
            Err(format!(
                "the switch answered with an error: {}",
                p.got.last().map(|m| m.to_string()).unwrap_or_default()
            ))
        } else {
            Ok(p.got)
        };
        let _ = p.reply.send(r);
    }
    true
}

fn handle_events(sess: &mut Session, apps: &mut [Box<dyn SwitchApp>], shared: &Shared, local: &mut Local) {
    let id = local.id;
    while let Some(ev) = sess.poll_event() {
        match ev {
            Event::Up(info) => {
                let d = info.datapath_id;
                let entry = Registered {
                    session: id,
                    evict: local.evict.clone(),
                    info: info.clone(),
                    commands: local.commands.clone(),
                };
                let old = shared.switches.lock().expect("registry lock").insert(d, entry);
                if let Some(old) = old {
                    // The switch reconnected: the older connection is stale.
                    old.evict.notify_one();
                    shared.stats.replaced_duplicates.fetch_add(1, Ordering::Relaxed);
                    log(format_args!(
                        "datapath {d:#x}: new session {id} replaces session {}",
                        old.session
                    ));
                }
                shared.stats.switches_up.fetch_add(1, Ordering::Relaxed);
                local.dpid = Some(d);
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
                if complete_command(local, &m) {
                    continue;
                }
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
            Event::Closed(r) => local.reason = Some(r),
        }
    }
}
