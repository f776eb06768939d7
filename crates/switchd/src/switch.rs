//! A running switch: datapath threads (pinned to cores when asked) plus
//! one control thread that runs the OpenFlow agent over TCP, connecting
//! out to controllers (reconnecting with back-off) and listening for
//! passive connections (`ovs-ofctl ... tcp:HOST:PORT`), and that expires
//! flows and follows link state.

use crate::datapath::{self, Shared};
use crate::fast_egress::FastEgress;
use ofconn::admission::{open_file_limit, Admission, Admit, Limits};
use ofswitch::agent::{Agent, Effects, Identity};
use ofswitch::pipeline::{Pipeline, PortCounters, PortState};
use ofwire::header::{negotiate_version, Framer, Header};
use ofwire::{Body, DescStats, ErrorMsg, Message};
use packetio::port::PortIo;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

mod handle;
pub use handle::*;

type Writers = Arc<Mutex<HashMap<usize, Writer>>>;

/// Where a session's outgoing bytes go, and how many wait to be written.
#[derive(Clone)]
struct Writer {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    backlog: Arc<std::sync::atomic::AtomicUsize>,
}

/// Bytes a session may have waiting to be written. Past it the session's
/// requests are not read (its replies would only pile up) and PACKET_INs
/// for it are dropped and counted; a peer that reads nothing for
/// `STALLED` after that is closed.
const MAX_BACKLOG: usize = 4 << 20;
const STALLED: Duration = Duration::from_secs(10);
/// A session that has done nothing but keep alive for this long may give
/// its place on a full listener to a newcomer.
const IDLE_EVICTABLE: Duration = Duration::from_secs(2);

#[derive(Clone)]
struct Ctx {
    agent: Arc<Mutex<Agent>>,
    shared: Arc<Shared>,
    writers: Writers,
    verbose: bool,
    deadline: Duration,
    probe: Option<Duration>,
    /// The listeners' connections, each with what evicts it during its
    /// handshake.
    admission: Arc<Mutex<Admission<Arc<tokio::sync::Notify>>>>,
}

impl Ctx {
    fn dispatch(&self, mut fx: Effects) {
        // Before any reply goes out (a BARRIER_REPLY above all): if the
        // tables changed, the fast path's flows, planned under the old
        // ones, stop at once.
        self.shared.sync_fast_path();
        if !fx.messages.is_empty() {
            let writers = self.writers.lock().unwrap_or_else(|e| e.into_inner());
            let mut per_conn: HashMap<usize, Vec<u8>> = HashMap::new();
            for (c, m) in fx.messages.drain(..) {
                let full = writers.get(&c).is_some_and(|w| w.backlog.load(Relaxed) >= MAX_BACKLOG);
                if full
                    && matches!(
                        m.body,
                        Body::V13(ofwire::v13::Body::PacketIn(_)) | Body::V10(ofwire::v10::Body::PacketIn(_))
                    )
                {
                    self.shared.packet_ins_dropped.fetch_add(1, Relaxed);
                    continue;
                }
                let buf = per_conn.entry(c).or_default();
                if let Err(e) = m.encode(buf) {
                    if self.verbose {
                        tracing::warn!("sdnlab switch: cannot encode {}: {e}", m.type_name());
                    }
                }
            }
            for (c, buf) in per_conn {
                if let Some(w) = writers.get(&c) {
                    w.backlog.fetch_add(buf.len(), Relaxed);
                    let _ = w.tx.send(buf);
                }
            }
        }
        let mut frames = std::mem::take(&mut fx.frames);
        self.shared.transmit(&mut frames);
    }
}

/// The switch's tables, its ports in them, and the table-miss flood rule
/// when asked for.
fn pipeline_for(cfg: &Config) -> std::io::Result<(Pipeline, datapath::PortTable)> {
    let mut pipeline = Pipeline::new(cfg.n_tables, cfg.max_rules);
    let table = datapath::PortTable {
        by_no: cfg.ports.iter().cloned().map(Some).collect(),
        local: cfg.local.clone(),
    };
    for (port_no, io) in table.iter() {
        pipeline.add_port(port_state(port_no, io));
    }
    if cfg.flood_on_miss {
        let fm = ofwire::v13::FlowMod {
            instructions: vec![ofwire::v13::Instruction::ApplyActions(vec![
                ofwire::v13::Action::Output {
                    port: ofwire::v13::port::FLOOD,
                    max_len: 0,
                },
            ])],
            ..ofwire::v13::FlowMod::add(0)
        };
        pipeline
            .flow_mod(&fm, Instant::now())
            .map_err(|e| std::io::Error::other(format!("table-miss flood rule: {e:?}")))?;
    }
    Ok((pipeline, table))
}

/// The switch's OpenFlow agent: its identity, the versions it speaks.
fn agent_for(cfg: &Config, pipeline: Arc<RwLock<Pipeline>>) -> Agent {
    let mut agent = Agent::new(
        pipeline,
        Identity {
            datapath_id: cfg.datapath_id,
            desc: DescStats {
                mfr_desc: "sdnlab".into(),
                hw_desc: "userspace switch".into(),
                sw_desc: format!("sdnlab {}", env!("CARGO_PKG_VERSION")),
                serial_num: "none".into(),
                dp_desc: format!("sdnlab switch dpid {:016x}", cfg.datapath_id),
            },
        },
    );
    if !cfg.versions.is_empty() {
        agent.set_versions(&cfg.versions);
    }
    agent
}

/// The control listeners: TCP, and a Unix socket for tools on this machine.
type Listeners = (Vec<std::net::TcpListener>, Option<std::os::unix::net::UnixListener>);

/// The control listeners, bound here so that errors (a port in use)
/// reach the caller.
fn bind_listeners(cfg: &Config) -> std::io::Result<Listeners> {
    let mut std_listeners = Vec::new();
    for a in &cfg.listen {
        let l = std::net::TcpListener::bind(a)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {a}: {e}")))?;
        l.set_nonblocking(true)?;
        std_listeners.push(l);
    }
    let Some(path) = &cfg.listen_unix else {
        return Ok((std_listeners, None));
    };
    // A socket left by a switch that died is replaced; a live one
    // answers, and is not.
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("{}: another switch is listening there", path.display()),
        ));
    }
    let _ = std::fs::remove_file(path);
    let l = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", path.display())))?;
    // This user's only (Open vSwitch's management sockets are
    // likewise its own): whoever connects can reprogram the switch.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    l.set_nonblocking(true)?;
    Ok((std_listeners, Some(l)))
}

/// Starts the switch.
pub fn start(cfg: Config) -> std::io::Result<Handle> {
    let (pipeline, table) = pipeline_for(&cfg)?;
    let pipeline = Arc::new(RwLock::new(pipeline));
    let (pi_tx, pi_rx) = mpsc::channel(4096);
    let shared = Arc::new(Shared {
        pipeline: pipeline.clone(),
        ports: arc_swap::ArcSwap::from_pointee(table),
        to_controller: pi_tx,
        stop: false.into(),
        packet_ins_dropped: 0.into(),
        fast_ports: (1..=cfg.ports.len() as u32)
            .map(|p| cfg.fast_path.is_some() && cfg.fast_ports.contains(&p))
            .collect(),
        fast_path: cfg.fast_path.clone(),
        fast_generation: u64::MAX.into(),
    });
    let agent = Arc::new(Mutex::new(agent_for(&cfg, pipeline)));

    // Before any frame is forwarded: only ports that can take redirected
    // frames go in the fast path's DEVMAP.
    let fast_egress = cfg.fast_path.as_ref().map(|fp| {
        let mut e = FastEgress::new(
            cfg.fast_ports
                .iter()
                .filter_map(|&p| {
                    let io = cfg.ports.get((p as usize).checked_sub(1)?)?;
                    Some((p, io.ifindex()?, io.name().to_string()))
                })
                .collect(),
        );
        e.refresh(fp);
        e
    });

    let mut threads = Vec::new();
    let n = match cfg.ports_may_change {
        true => cfg.datapath_threads.max(1),
        false => cfg.datapath_threads.clamp(1, cfg.ports.len().max(1)),
    };
    for t in 0..n {
        let shared = shared.clone();
        let core = cfg.cores.get(t).copied();
        threads.push(
            std::thread::Builder::new()
                .name(format!("sdnlab-dp{t}"))
                .spawn(move || datapath::run(shared, t, n, core))?,
        );
    }

    let (std_listeners, unix_listener) = bind_listeners(&cfg)?;
    let listening = std_listeners.iter().filter_map(|l| l.local_addr().ok()).collect();
    let ctx = Ctx {
        agent: agent.clone(),
        shared: shared.clone(),
        writers: Arc::new(Mutex::new(HashMap::new())),
        verbose: cfg.verbose,
        deadline: cfg.session_deadline,
        probe: cfg.inactivity_probe,
        // Full of sessions that only keep alive, the listener makes room:
        // an operator's tool always gets in (docs/manual/switch.md).
        admission: Arc::new(Mutex::new(
            Admission::new(cfg.limits.unwrap_or_else(|| Limits::for_open_files(open_file_limit())))
                .evict_idle(IDLE_EVICTABLE),
        )),
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let egress = fast_egress.map(|e| (e, cfg.fast_egress_recheck));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let rt_handle = rt.handle().clone();
    let control_ctx = ctx.clone();
    threads.push(std::thread::Builder::new().name("sdnlab-ctl".into()).spawn(move || {
        rt.block_on(control(
            control_ctx,
            std_listeners,
            unix_listener,
            egress,
            pi_rx,
            stop_rx,
        ));
    })?);
    let handle = Handle {
        shared,
        agent,
        listening,
        threads,
        control_stop: Some(stop_tx),
        rt: rt_handle,
        ctx,
        controllers: Mutex::new(Vec::new()),
        port_writer: Mutex::new(()),
        listen_unix: cfg.listen_unix.clone(),
    };
    handle.set_controllers(&cfg.controllers);
    Ok(handle)
}

/// A port's state as the pipeline first sees it.
fn port_state(port_no: u32, io: &Arc<dyn PortIo>) -> PortState {
    PortState {
        port_no,
        name: io.name().to_string(),
        hw_addr: io.hw_addr(),
        config: 0,
        link_up: io.link_up(),
        speed_kbps: io.speed_kbps(),
        counters: Arc::new(PortCounters::default()),
    }
}

/// One controller, dialled until the task is aborted: reconnects with
/// back-off; `up` says whether a session is established.
async fn dial(ctx: Ctx, addr: SocketAddr, up: Arc<AtomicBool>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                backoff = Duration::from_millis(100);
                let (rd, wr) = s.into_split();
                serve(ctx.clone(), rd, wr, None, Some(up.clone())).await;
                if ctx.verbose {
                    tracing::info!("sdnlab switch: connection to {addr} closed; reconnecting");
                }
            }
            Err(e) if ctx.verbose => tracing::warn!("sdnlab switch: cannot reach controller {addr}: {e}"),
            Err(_) => {}
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(4));
    }
}

async fn control(
    ctx: Ctx,
    listeners: Vec<std::net::TcpListener>,
    unix_listener: Option<std::os::unix::net::UnixListener>,
    egress: Option<(FastEgress, Duration)>,
    mut packet_ins: mpsc::Receiver<ofswitch::pipeline::ToController>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let (mut fast_egress, recheck) = match egress {
        Some((e, r)) => (Some(e), r),
        None => (None, Duration::MAX),
    };
    // Heard in this loop, so a port that cannot take redirected frames
    // leaves the DEVMAP as soon as the kernel says so.
    let mut egress_watch = fast_egress
        .as_mut()
        .and_then(FastEgress::take_watch)
        // SAFETY: the watch owns its socket (an OwnedFd closed only when
        // the watch is dropped) and always returns that descriptor.
        .and_then(|w| {
            unsafe { tokio::io::unix::AsyncFd::register_with_interest(w, tokio::io::Interest::READABLE) }.ok()
        });
    let mut last_recheck = Instant::now();
    for l in listeners {
        tokio::spawn(accept_tcp(ctx.clone(), l));
    }
    if let Some(l) = unix_listener {
        // Tools on this machine (ovs-ofctl BRIDGE): the socket's
        // permissions admit them, so no admission limits.
        tokio::spawn(accept_unix(ctx.clone(), l));
    }
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut batch = Vec::with_capacity(256);
    loop {
        tokio::select! {
            _ = &mut stop => return,
            n = packet_ins.recv_many(&mut batch, 256) => {
                if n == 0 {
                    return;
                }
                let mut fx = Effects::default();
                {
                    let mut agent = ctx.agent.lock().unwrap_or_else(|e| e.into_inner());
                    for tc in batch.drain(..) {
                        agent.packet_in(tc, &mut fx);
                    }
                }
                ctx.dispatch(fx);
            }
            ready = async {
                match egress_watch.as_mut() {
                    Some(w) => w.readable_mut().await,
                    None => std::future::pending().await,
                }
            } => {
                let heard = match ready {
                    Ok(mut guard) => {
                        let heard = guard.get_inner_mut().drain();
                        guard.clear_ready();
                        heard
                    }
                    Err(e) => Err(e),
                };
                match (heard, &mut fast_egress, &ctx.shared.fast_path) {
                    (Ok(h), Some(e), Some(fp)) => e.heard(fp, &h),
                    (Err(e), _, _) => {
                        tracing::info!("sdnlab switch: the kernel's interface announcements: {e}; checking every {recheck:?} only");
                        egress_watch = None;
                    }
                    _ => {}
                }
            }
            _ = tick.tick() => {
                if let (Some(e), Some(fp)) = (&mut fast_egress, &ctx.shared.fast_path) {
                    if last_recheck.elapsed() >= recheck {
                        last_recheck = Instant::now();
                        e.refresh(fp);
                    }
                }
                ctx.on_tick();
            }
        }
    }
}

/// Takes TCP control connections, each a session once admitted (a full
/// house makes room by evicting an idle one, or drops the newcomer).
async fn accept_tcp(ctx: Ctx, l: std::net::TcpListener) {
    let Ok(l) = tokio::net::TcpListener::from_std(l) else {
        return;
    };
    let mut warned = false;
    loop {
        match l.accept().await {
            Ok((s, peer)) => {
                let kill = Arc::new(tokio::sync::Notify::new());
                let admit = ctx.admission.lock().unwrap_or_else(|e| e.into_inner()).admit(
                    peer.ip(),
                    Instant::now(),
                    kill.clone(),
                );
                let Admit::Accept { id, evict } = admit else {
                    // Every connection held is a session: this one is dropped.
                    continue;
                };
                if let Some(victim) = evict {
                    victim.notify_one();
                }
                let _ = s.set_nodelay(true);
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let (rd, wr) = s.into_split();
                    serve(ctx.clone(), rd, wr, Some((id, kill)), None).await;
                    ctx.admission.lock().unwrap_or_else(|e| e.into_inner()).closed(id);
                });
            }
            // Out of descriptors (EMFILE, ENFILE) or memory: wait
            // for connections to close rather than spin.
            Err(e) => {
                if !warned {
                    tracing::info!("sdnlab switch: accept: {e}; retrying every 100 ms");
                    warned = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Takes control connections on the Unix socket.
async fn accept_unix(ctx: Ctx, l: std::os::unix::net::UnixListener) {
    let Ok(l) = tokio::net::UnixListener::from_std(l) else {
        return;
    };
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                let (rd, wr) = s.into_split();
                tokio::spawn(serve(ctx.clone(), rd, wr, None, None));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

impl Ctx {
    /// Every 100 ms: rules expired, links' changes told, the ports'
    /// receive drops counted.
    fn on_tick(&self) {
        let mut fx = Effects::default();
        {
            let mut agent = self.agent.lock().unwrap_or_else(|e| e.into_inner());
            agent.expire(Instant::now(), &mut fx);
            for (port_no, io) in self.shared.port_table().iter() {
                agent.link_changed(port_no, io.link_up(), &mut fx);
                let drops = io.take_rx_drops();
                if drops > 0 {
                    let p = self.shared.pipeline.read().unwrap_or_else(|e| e.into_inner());
                    if let Some(ps) = p.ports.get(&port_no) {
                        ps.counters.rx_dropped.fetch_add(drops, Relaxed);
                    }
                }
            }
        }
        self.dispatch(fx);
    }
}

/// The xid of the inactivity probe's ECHO_REQUEST.
const ECHO_XID: u32 = 0x7072_6f62;

thread_local! {
    /// Where a connection's bytes land before the framer takes them: one
    /// buffer per thread, not one per connection, so an idle or half-open
    /// connection holds only what it has sent.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 * 1024]);
}

/// The read side of a control connection, TCP or Unix.
trait ReadSide: Send + 'static {
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl ReadSide for tokio::net::tcp::OwnedReadHalf {
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
        tokio::net::tcp::OwnedReadHalf::readable(self)
    }
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        tokio::net::tcp::OwnedReadHalf::try_read(self, buf)
    }
}

impl ReadSide for tokio::net::unix::OwnedReadHalf {
    fn readable(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
        tokio::net::unix::OwnedReadHalf::readable(self)
    }
    fn try_read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        tokio::net::unix::OwnedReadHalf::try_read(self, buf)
    }
}

/// Reads what the socket has into `framer`. False when the peer closed
/// or the socket failed.
async fn read_more(rd: &mut impl ReadSide, framer: &mut Framer) -> bool {
    loop {
        if rd.readable().await.is_err() {
            return false;
        }
        let got = SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            rd.try_read(&mut s[..]).inspect(|&n| framer.push(&s[..n]))
        });
        match got {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return false,
        }
    }
}

/// Resolves when the listeners' admission evicts this connection (never,
/// for a connection the switch made to a controller). A fresh one may be
/// made at each wait: an eviction told while nobody waited is kept.
async fn evicted(admitted: &Option<(u64, Arc<tokio::sync::Notify>)>) {
    match admitted {
        Some((_, kill)) => kill.notified().await,
        None => std::future::pending().await,
    }
}

/// The HELLO exchange: ours sent, the peer's read (within `ctx.deadline`,
/// unless evicted first) and the version negotiated. None when the
/// connection is to end: closed, evicted, no HELLO in time, or no
/// version in common (told with HELLO_FAILED).
async fn handshake(
    ctx: &Ctx,
    rd: &mut impl ReadSide,
    wr: &mut (impl tokio::io::AsyncWrite + Unpin),
    framer: &mut Framer,
    admitted: &Option<(u64, Arc<tokio::sync::Notify>)>,
) -> Option<u8> {
    let versions = ctx.agent.lock().unwrap_or_else(|e| e.into_inner()).versions().to_vec();
    let newest = *versions.iter().max().unwrap_or(&ofwire::OFP13_VERSION);
    let hello = Message {
        version: newest,
        xid: 0,
        body: Body::Hello(ofwire::header::Hello::with_versions(&versions)),
    };
    wr.write_all(&hello.to_bytes().unwrap_or_default()).await.ok()?;
    let handshake_by = tokio::time::Instant::now() + ctx.deadline;
    loop {
        let msg = match framer.next_message() {
            Ok(Some(m)) => m.to_vec(),
            Ok(None) => {
                let more = tokio::select! {
                    r = tokio::time::timeout_at(handshake_by, read_more(rd, framer)) => r.unwrap_or(false),
                    _ = evicted(admitted) => false,
                };
                if more {
                    continue;
                }
                // Closed, evicted, or no HELLO in time.
                return None;
            }
            Err(_) => return None,
        };
        let header = Header::peek(&msg);
        let Ok(Message {
            body: Body::Hello(h), ..
        }) = ofwire::decode(&msg)
        else {
            return None;
        };
        match negotiate_version(&versions, header.map(|h| h.version).unwrap_or(0), &h) {
            Ok(v) => return Some(v),
            Err(e) => {
                let err = Message {
                    version: newest,
                    xid: header.map(|h| h.xid).unwrap_or(0),
                    body: Body::V13(ofwire::v13::Body::Error(ErrorMsg::for_decode_error(&e, &msg))),
                };
                let _ = wr.write_all(&err.to_bytes().unwrap_or_default()).await;
                return None;
            }
        }
    }
}

/// The session's writes, in order: what the agent queued for the peer,
/// joined into one write when several wait. `backlog` counts the bytes
/// queued and not yet written, `wrote` says when a write last went
/// through, `drained` is told after each.
struct WriteSide {
    backlog: Arc<std::sync::atomic::AtomicUsize>,
    wrote: Arc<Mutex<tokio::time::Instant>>,
    drained: Arc<tokio::sync::Notify>,
}

impl WriteSide {
    fn spawn(
        &self,
        mut wr: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
        mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    ) -> tokio::task::JoinHandle<()> {
        let (wrote, backlog, drained) = (self.wrote.clone(), self.backlog.clone(), self.drained.clone());
        tokio::spawn(async move {
            while let Some(mut b) = rx.recv().await {
                while let Ok(more) = rx.try_recv() {
                    b.extend_from_slice(&more);
                }
                if wr.write_all(&b).await.is_err() {
                    break;
                }
                // Every byte sent was counted in before it was sent.
                backlog.fetch_sub(b.len(), Relaxed);
                *wrote.lock().unwrap_or_else(|e| e.into_inner()) = tokio::time::Instant::now();
                drained.notify_one();
            }
            // Nothing more will be written: nobody waits for it.
            backlog.store(0, Relaxed);
            drained.notify_one();
        })
    }

    fn last_write(&self) -> tokio::time::Instant {
        *self.wrote.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The peer said nothing by the time something had to happen: a
    /// message begun and not finished by its deadline, or a probe not
    /// answered, closes the session (false); a probe falls due, and goes
    /// out unless a write went through since (a peer reading a long reply
    /// is alive).
    fn quiet(
        &self,
        ctx: &Ctx,
        finish_by: tokio::time::Instant,
        probed: &mut Option<tokio::time::Instant>,
        tx: &mpsc::UnboundedSender<Vec<u8>>,
        echo: &[u8],
    ) -> bool {
        let now = tokio::time::Instant::now();
        if now >= finish_by {
            if ctx.verbose {
                tracing::warn!(
                    "sdnlab switch: closing a connection whose message stayed unfinished for {:?}",
                    ctx.deadline
                );
            }
            return false;
        }
        if probed.is_some() {
            if ctx.verbose {
                tracing::warn!("sdnlab switch: closing a connection that did not answer its inactivity probe");
            }
            return false;
        }
        if self.last_write() + ctx.probe.unwrap_or_default() <= now {
            self.backlog.fetch_add(echo.len(), Relaxed);
            let _ = tx.send(echo.to_vec());
            *probed = Some(now);
        }
        true
    }
}

/// Why a batch of messages stopped.
enum BatchEnd {
    /// Every whole message in the framer was handled.
    Emptied,
    /// The batch's replies are many: the peer's backlog is looked at.
    Full,
    /// A length that cannot be: the stream cannot be framed any more.
    Broken,
}

/// Handles the framer's whole messages under one lock of the agent, until
/// it is empty or 64 replies wait, and hands the replies to the writers.
/// A message that does not decode gets the error the codec names.
/// `completed`: a message was completed; `acted`: one was more than
/// keeping alive.
fn handle_batch(
    ctx: &Ctx,
    framer: &mut Framer,
    conn: usize,
    version: u8,
    completed: &mut bool,
    acted: &mut bool,
) -> BatchEnd {
    let mut fx = Effects::default();
    let end = {
        let mut agent = ctx.agent.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if fx.messages.len() >= 64 {
                break BatchEnd::Full;
            }
            let raw = match framer.next_message() {
                Ok(Some(raw)) => raw,
                Ok(None) => break BatchEnd::Emptied,
                Err(_) => break BatchEnd::Broken,
            };
            *completed = true;
            let now = Instant::now();
            match ofwire::decode_in_session(raw, version) {
                Ok(m) => {
                    // Keeping alive is not activity.
                    *acted |= !matches!(
                        m.body,
                        Body::V10(ofwire::v10::Body::EchoRequest(_) | ofwire::v10::Body::EchoReply(_))
                            | Body::V13(ofwire::v13::Body::EchoRequest(_) | ofwire::v13::Body::EchoReply(_))
                    );
                    agent.on_message(conn, &m, now, &mut fx)
                }
                Err(e) => {
                    let xid = Header::peek(raw).map(|h| h.xid).unwrap_or(0);
                    let err = ErrorMsg::for_decode_error(&e, raw);
                    let msg = if version == ofwire::OFP10_VERSION {
                        Message::v10(xid, ofwire::v10::Body::Error(err))
                    } else {
                        Message::v13(xid, ofwire::v13::Body::Error(err))
                    };
                    fx.messages.push((conn, msg));
                }
            }
        }
    };
    ctx.dispatch(fx);
    end
}

/// One controller connection: HELLO exchange, then messages until EOF, a
/// byte stream that can no longer be framed, or a deadline missed (the
/// HELLO, or the rest of a message begun, not in `ctx.deadline`).
/// `admitted`: its id with the listeners' admission and what evicts it
/// during its handshake (None for a connection the switch made to a
/// controller).
/// `up`: set while the session is established (a controller dialled).
async fn serve(
    ctx: Ctx,
    mut rd: impl ReadSide,
    mut wr: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    admitted: Option<(u64, Arc<tokio::sync::Notify>)>,
    up: Option<Arc<AtomicBool>>,
) {
    let mut framer = Framer::new(u16::MAX as usize);
    let Some(version) = handshake(&ctx, &mut rd, &mut wr, &mut framer, &admitted).await else {
        return;
    };
    if let Some((id, _)) = &admitted {
        // Evicted as its handshake ended: it goes before it is a session.
        if !ctx
            .admission
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .established(*id, Instant::now())
        {
            return;
        }
    }
    let conn = ctx.agent.lock().unwrap_or_else(|e| e.into_inner()).connect(version);
    // Ends the session with the agent however this future ends (its task
    // aborted when the controller is no longer wanted, too).
    let session = Session {
        ctx: ctx.clone(),
        conn,
        up,
    };
    if let Some(u) = &session.up {
        u.store(true, Relaxed);
    }
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    // When a write last went through: a peer reading a long reply is alive
    // even if it says nothing.
    let ws = WriteSide {
        backlog: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        wrote: Arc::new(Mutex::new(tokio::time::Instant::now())),
        drained: Arc::new(tokio::sync::Notify::new()),
    };
    let backlog = ws.backlog.clone();
    ctx.writers.lock().unwrap_or_else(|e| e.into_inner()).insert(
        conn,
        Writer {
            tx: tx.clone(),
            backlog: backlog.clone(),
        },
    );
    let writer = ws.spawn(wr, rx);
    let echo = if version == ofwire::OFP10_VERSION {
        Message::v10(ECHO_XID, ofwire::v10::Body::EchoRequest(ofwire::Bytes::default()))
    } else {
        Message::v13(ECHO_XID, ofwire::v13::Body::EchoRequest(ofwire::Bytes::default()))
    }
    .to_bytes()
    .unwrap_or_default();
    let mut heard = tokio::time::Instant::now();
    // When the ECHO_REQUEST of an inactivity probe went out, if one is out.
    let mut probed: Option<tokio::time::Instant> = None;
    // Since when the message at the front of the framer has been waiting
    // for its rest (None: nothing pending).
    let mut partial_since: Option<tokio::time::Instant> = None;
    // Messages that came in with the HELLO are already in the framer.
    let mut first = true;
    // Whole messages left in the framer while the peer's replies waited.
    let mut buffered = false;
    // The peer did something besides keeping alive since it was last said.
    let mut acted = false;
    'read: loop {
        // Replies waiting to be written past the bound: read nothing more
        // until the peer takes some, and close it if it takes none.
        while backlog.load(Relaxed) >= MAX_BACKLOG {
            if tokio::time::timeout(STALLED, ws.drained.notified()).await.is_err() {
                if ctx.verbose {
                    tracing::warn!("sdnlab switch: closing a connection that read none of its replies for {STALLED:?}");
                }
                break 'read;
            }
        }
        if !first && !buffered {
            // The next time something must happen: the message begun must
            // be finished, a probe sent, or the probe answered.
            let far = tokio::time::Instant::now() + Duration::from_secs(3600);
            let finish_by = partial_since.map_or(far, |t| t + ctx.deadline);
            let probe_at = match (ctx.probe, probed) {
                (None, _) => far,
                (Some(p), None) => heard.max(ws.last_write()) + p,
                (Some(p), Some(t)) => t + p,
            };
            let read = tokio::select! {
                r = tokio::time::timeout_at(finish_by.min(probe_at), read_more(&mut rd, &mut framer)) => r,
                // Idle on a full listener: a newcomer took its place.
                _ = evicted(&admitted) => break 'read,
            };
            match read {
                Ok(true) => {
                    heard = tokio::time::Instant::now();
                    probed = None;
                }
                Ok(false) => break,
                Err(_) if ws.quiet(&ctx, finish_by, &mut probed, &tx, &echo) => continue,
                Err(_) => break,
            }
        }
        first = false;
        let mut completed = false;
        // Messages are handled in batches; between batches, if the replies
        // waiting for this peer pass the bound, the rest stay in the framer
        // until it has read some.
        buffered = false;
        loop {
            match handle_batch(&ctx, &mut framer, conn, version, &mut completed, &mut acted) {
                BatchEnd::Emptied => break,
                BatchEnd::Broken => break 'read,
                BatchEnd::Full if backlog.load(Relaxed) >= MAX_BACKLOG => {
                    buffered = true;
                    break;
                }
                BatchEnd::Full => {}
            }
        }
        partial_since = ofconn::unfinished_since(
            partial_since,
            framer.pending() > 0,
            completed,
            tokio::time::Instant::now(),
        );
        if let (true, Some((id, _))) = (std::mem::take(&mut acted), &admitted) {
            ctx.admission
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .active(*id, Instant::now());
        }
    }
    drop(session);
    // Let queued replies go out before the socket closes; a peer that
    // does not read them does not keep the socket open.
    let mut writer = writer;
    if tokio::time::timeout(Duration::from_millis(200), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

/// An established session; dropped, it leaves the agent and the writers.
struct Session {
    ctx: Ctx,
    conn: usize,
    up: Option<Arc<AtomicBool>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.ctx
            .agent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .disconnect(self.conn);
        self.ctx
            .writers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.conn);
        if let Some(u) = &self.up {
            u.store(false, Relaxed);
        }
    }
}
