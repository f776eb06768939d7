//! `sdnlab worker`: one per machine, run as root, serving one coordinator
//! at a time over mutual TLS (the lab's certificates, [`crate::creds`]).
//! A peer that fails the handshake, or whose certificate is not the
//! coordinator's, gets nothing and is logged; so is a second coordinator
//! while one is served.
//!
//! What the worker makes for a coordinator (a netlab run: namespaces,
//! veths, VXLAN tunnels, switches; iperf3 servers) lives as long as the
//! coordinator does: it is removed when the coordinator says `down`, when
//! its connection closes, when it has sent nothing (not even a heartbeat)
//! for its lease, and when the worker is stopped.

use crate::creds::{peer_is, Role};
use crate::proto::{self, Call, CtlCall, FabricCall, NetCall, Reply, Request, Response, TesterCall, VERSION};
use futures::FutureExt;
use netlab::run::{Net, UpOptions};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Mutex};

mod ctl;
mod fabric;
mod net;
mod tester;

/// A call's answer. Text on purpose: an error goes to the coordinator as
/// `Reply::Error { message }`, and the coordinator types it there
/// (`FleetError::Failed`, naming the worker); so do the families' handlers.
type Answer = Result<Reply, String>;

/// How long a coordinator has to finish the TLS handshake and say hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest lease a coordinator may ask for.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// Moves this process into network namespace `name` (under /run/netns),
/// before any other thread starts: every thread and process it starts
/// afterwards is there too. For several workers on one machine, each in a
/// namespace of its own.
pub fn enter_netns(name: &str) -> Result<(), crate::FleetError> {
    nsexec::enter(name).map_err(|e| crate::FleetError::Credentials {
        path: nsexec::netns_path(name),
        message: e.to_string(),
    })
}

/// Removes what a worker that died (killed, its machine rebooted) left of
/// its parts of spread topologies: netlab runs brought up with a part
/// whose process is gone. Runs of anything else are left alone. Returns
/// the run ids removed.
pub async fn clean_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for (dir, st) in netlab::run::list_states() {
        let Ok(st) = st else { continue };
        if st.options.part.is_none() || netlab::run::is_sdnlab(st.pid) {
            continue;
        }
        match netlab::run::teardown(&st).await {
            Ok(()) => {
                let _ = std::fs::remove_dir_all(&dir);
                removed.push(st.id.clone());
            }
            Err(e) => tracing::info!("sdnlab worker: {}", format!("stale run {}: {e}", st.id)),
        }
    }
    removed
}

/// Serves coordinators on `listener` until `stop` turns true; whatever is
/// up then is torn down before this returns.
pub async fn serve(listener: TcpListener, tls: Arc<rustls::ServerConfig>, stop: watch::Receiver<bool>) {
    let limits = ofconn::admission::Limits::for_open_files(ofconn::admission::open_file_limit());
    serve_within(listener, tls, stop, limits).await
}

/// Admission to the worker's listener: at most `limits` connections at
/// once (in all, and from one address), those not yet authenticated (no
/// TLS handshake done, or not the coordinator's certificate yet) the first
/// to go when a newcomer finds it full, each within `HANDSHAKE_TIMEOUT`
/// (as the controller's and the switch's listeners: `ofconn::admission`).
/// A flood of connections that never authenticate cannot keep the
/// coordinator out.
type Admission = std::sync::Mutex<ofconn::admission::Admission<Arc<tokio::sync::Notify>>>;

/// A connection's place in the admission, given back however it ends.
struct Held {
    admission: Arc<Admission>,
    id: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.admission.lock().unwrap_or_else(|e| e.into_inner()).closed(self.id);
    }
}

/// `serve` with the admission's limits given.
pub async fn serve_within(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    mut stop: watch::Receiver<bool>,
    limits: ofconn::admission::Limits,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let busy = Arc::new(AtomicBool::new(false));
    let admission: Arc<Admission> = Arc::new(std::sync::Mutex::new(ofconn::admission::Admission::new(limits)));
    let mut sessions = tokio::task::JoinSet::new();
    let mut refused = 0u64;
    loop {
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    tracing::info!("sdnlab worker: {}", format!("accept: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let kill = Arc::new(tokio::sync::Notify::new());
        let admit = admission.lock().unwrap_or_else(|e| e.into_inner()).admit(
            peer.ip(),
            std::time::Instant::now(),
            kill.clone(),
        );
        let held = match admit {
            ofconn::admission::Admit::Refuse => {
                // Every connection held is the coordinator's or on its way
                // to being one: said once in a while, not per connection.
                refused += 1;
                if refused.is_power_of_two() {
                    tracing::warn!(
                        "sdnlab worker: {}",
                        format!(
                            "refused {peer} ({refused} so far): {} connections held, all authenticated",
                            limits.total
                        )
                    );
                }
                drop(tcp);
                continue;
            }
            ofconn::admission::Admit::Accept { id, evict } => {
                if let Some(k) = evict {
                    k.notify_one();
                }
                Held {
                    admission: admission.clone(),
                    id,
                }
            }
        };
        let (acceptor, busy, stop) = (acceptor.clone(), busy.clone(), stop.clone());
        sessions.spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
            let tls = tokio::select! {
                r = handshake => match r {
                    Err(_) => return tracing::warn!("sdnlab worker: {}", format!("refused {peer}: no TLS handshake within {HANDSHAKE_TIMEOUT:?}")),
                    Ok(Err(e)) => return tracing::warn!("sdnlab worker: {}", format!("refused {peer}: {e}")),
                    Ok(Ok(s)) => s,
                },
                // The listener was full: a newcomer took its place.
                _ = kill.notified() => return,
            };
            let coordinator = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .is_some_and(|c| peer_is(c, Role::Coordinator));
            if !coordinator {
                return tracing::warn!("sdnlab worker: {}", format!(
                    "refused {peer}: its certificate is the lab's but not the coordinator's"
                ));
            }
            if !held
                .admission
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .established(held.id, std::time::Instant::now())
            {
                return;
            }
            if busy.swap(true, Ordering::SeqCst) {
                tracing::warn!("sdnlab worker: {}", format!("refused {peer}: serving another coordinator"));
                let mut tls = tls;
                let _ = tls
                    .write_all(&proto::line(&Response {
                        id: 0,
                        reply: Reply::Error {
                            message: "this worker is serving another coordinator".into(),
                        },
                    }))
                    .await;
                let _ = tls.shutdown().await;
                return;
            }
            tracing::info!("sdnlab worker: {}", format!("serving the coordinator at {peer}"));
            let local = tls.get_ref().0.local_addr().ok();
            session(tls, peer, local, stop).await;
            busy.store(false, Ordering::SeqCst);
            drop(held);
        });
        while sessions.try_join_next().is_some() {}
    }
    // Stopping: every session tears down (they watch `stop` too).
    while sessions.join_next().await.is_some() {}
}

/// What the worker made for its coordinator.
#[derive(Default)]
struct Made {
    net: Option<Net>,
    iperf: Vec<tokio::process::Child>,
    http: Vec<lb::replica::Server>,
    /// The capacity shard running: its stop and its release.
    sessions: Option<(watch::Sender<bool>, Arc<tokio::sync::Notify>)>,
    /// Tester ports counting test frames, by interface.
    testers: std::collections::HashMap<String, traffic::run::Receiver>,
    /// This worker's part of an emulated fabric, and its socket.
    fabric: Option<ctlbench::fabric::Fabric>,
    fabric_socket: Option<Arc<tokio::net::UdpSocket>>,
    /// Members of sdnlab's controller cluster running here, and the etcd
    /// here (with its private directory).
    members: Vec<controller::runtime::Handle>,
    etcd: Option<(cluster::etcd::Etcd, netlab::private::TempDir)>,
}

/// What a fabric part counted.
fn fabric_up(f: &ctlbench::fabric::Fabric) -> Reply {
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    Reply::FabricUp {
        counts: crate::proto::FabricCounts {
            connected: n(&f.stats.connected),
            lost: n(&f.stats.lost),
            lldp_packet_ins: n(&f.stats.lldp_packet_ins),
            frames_to_other_parts: n(&f.stats.frames_to_other_parts),
            frames_from_other_parts: n(&f.stats.frames_from_other_parts),
            refused_datagrams: n(&f.stats.refused_datagrams),
            last_lldp_out_ns: n(&f.stats.last_lldp_out_ns),
        },
    }
}

impl Made {
    /// The capacity shard's stop and release, made by the first call
    /// that needs them.
    fn sessions(&mut self) -> (watch::Sender<bool>, Arc<tokio::sync::Notify>) {
        self.sessions
            .get_or_insert_with(|| (watch::channel(false).0, Arc::default()))
            .clone()
    }

    /// The members here leave their cluster and stop, then the etcd
    /// here stops (its members' processes, its files).
    async fn cluster_down(&mut self) {
        let members = std::mem::take(&mut self.members);
        let etcd = self.etcd.take();
        let _ = tokio::task::spawn_blocking(move || {
            for m in &members {
                m.stop();
            }
            drop(etcd);
        })
        .await;
    }

    // Text on purpose: what tear-down left goes to the coordinator in the reply (see `run`).
    async fn tear_down(&mut self) -> Result<Option<String>, String> {
        self.cluster_down().await;
        // (A receiver dropped stops counting.)
        self.testers.clear();
        if let Some(f) = self.fabric.take() {
            f.stop();
        }
        self.fabric_socket = None;
        for mut c in self.iperf.drain(..) {
            let _ = c.kill().await;
        }
        let servers = std::mem::take(&mut self.http);
        let _ = tokio::task::spawn_blocking(move || drop(servers)).await;
        match self.net.take() {
            Some(net) => {
                let id = net.state.id.clone();
                net.down().await.map(|()| Some(id)).map_err(|e| e.to_string())
            }
            None => Ok(None),
        }
    }
}

async fn session(
    tls: tokio_rustls::server::TlsStream<TcpStream>,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    mut stop: watch::Receiver<bool>,
) {
    let (r, w) = tokio::io::split(tls);
    let mut r = BufReader::new(r);
    let (tx, rx) = mpsc::unbounded_channel::<Response>();
    let writer = tokio::spawn(proto::write_lines(w, rx));
    let made = Arc::new(Mutex::new(Made::default()));
    let mut calls = tokio::task::JoinSet::new();
    // Set at teardown, for the calls that wait outside an await point.
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut lease: Option<Duration> = None;
    // Clock probes for this session, answered while it lasts.
    let token = crate::clock::token();
    let probes = local.and_then(|l| {
        crate::clock::ProbeServer::start(l.ip(), token, move |from| {
            tracing::warn!(
                "sdnlab worker: {}",
                format!("refused a clock probe from {from}: not this session's token")
            )
        })
        .map_err(|e| {
            tracing::info!(
                "sdnlab worker: {}",
                format!("no clock probes for {peer} (exchanges over TLS instead): {e}")
            )
        })
        .ok()
    });
    let why = loop {
        let wait = lease.unwrap_or(HANDSHAKE_TIMEOUT);
        let line = tokio::select! {
            l = tokio::time::timeout(wait, proto::read_line(&mut r)) => l,
            _ = stop.changed() => break "the worker is stopping".to_string(),
        };
        let line = match line {
            Err(_) => break format!("the coordinator said nothing for {:.1} s", wait.as_secs_f64()),
            Ok(Ok(None)) => break "the coordinator closed the connection".to_string(),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break "the coordinator closed the connection".to_string()
            }
            Ok(Err(e)) => break format!("the connection failed: {e}"),
            Ok(Ok(Some(l))) => l,
        };
        let req: Request = match serde_json::from_slice(&line) {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Response {
                    id: 0,
                    reply: Reply::Error {
                        message: format!("not a request of protocol {VERSION}: {e}"),
                    },
                });
                break format!("the coordinator sent something that is not a request ({e})");
            }
        };
        let id = req.id;
        let answer = |reply: Reply| {
            let _ = tx.send(Response { id, reply });
        };
        match req.call {
            Call::Hello { version, lease_ms } => {
                if version != VERSION {
                    answer(Reply::Error {
                        message: format!(
                            "this worker speaks protocol {VERSION}, not {version}: run the same sdnlab on both sides"
                        ),
                    });
                    break format!("protocol {version}, not {VERSION}");
                }
                let asked = Duration::from_millis(lease_ms);
                if asked.is_zero() || asked > MAX_LEASE {
                    answer(Reply::Error {
                        message: format!("a lease of {lease_ms} ms: ask for 1 ms to {} s", MAX_LEASE.as_secs()),
                    });
                    break "a lease out of range".to_string();
                }
                lease = Some(asked);
                answer(Reply::Hello {
                    version: VERSION,
                    host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                        .map(|h| h.trim().to_string())
                        .unwrap_or_default(),
                    clock_port: probes.as_ref().map(|p| p.port),
                    clock_token: probes.as_ref().map(|_| token),
                });
            }
            _ if lease.is_none() => {
                answer(Reply::Error {
                    message: "say hello first".into(),
                });
                break "a call before hello".to_string();
            }
            Call::Heartbeat => {}
            // Answered at once, not behind other calls: its timing is the point.
            Call::Clock => answer(Reply::Clock {
                unix_ns: crate::clock::unix_ns(),
            }),
            call => {
                let (made, tx, cancelled) = (made.clone(), tx.clone(), cancelled.clone());
                calls.spawn(async move {
                    let partial = |reply: Reply| {
                        let _ = tx.send(Response { id, reply });
                    };
                    // A call that panics still gets its answer: the
                    // coordinator would otherwise wait on it for ever.
                    let reply = match std::panic::AssertUnwindSafe(run(call, &made, local, &partial, &cancelled))
                        .catch_unwind()
                        .await
                    {
                        Ok(r) => r.unwrap_or_else(|message| Reply::Error { message }),
                        Err(panic) => {
                            let what = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "a panic".into());
                            tracing::warn!(
                                "sdnlab worker: {}",
                                format!("a call failed inside the worker (a bug): {what}")
                            );
                            Reply::Error {
                                message: format!("the call failed inside the worker (a bug): {what}"),
                            }
                        }
                    };
                    partial(reply);
                });
            }
        }
        while calls.try_join_next().is_some() {}
    };
    cancelled.store(true, Ordering::Relaxed);
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    match made.lock().await.tear_down().await {
        Ok(Some(run)) => tracing::info!(
            "sdnlab worker: {}",
            format!("{why} ({peer}): netlab run {run} torn down")
        ),
        Ok(None) => tracing::info!("sdnlab worker: {}", format!("{why} ({peer}): nothing to tear down")),
        Err(e) => tracing::warn!("sdnlab worker: {}", format!("{why} ({peer}): teardown failed: {e}")),
    }
    drop(tx);
    let _ = writer.await;
}

/// A fabric part's socket buffers, bytes (the kernel charges a small
/// datagram about a kilobyte).
const FABRIC_RCVBUF: usize = 64 << 20;
const FABRIC_SNDBUF: usize = 8 << 20;

/// The longest a shard waits for its start time.
const MAX_START_WAIT: Duration = Duration::from_secs(30);

/// How long until this machine's clock reads `start_unix_ns`; an error if
/// that is further off than `MAX_START_WAIT`.
// Text on purpose: it goes to the coordinator as `Reply::Error` (see `run`).
fn until(start_unix_ns: u64) -> Result<Duration, String> {
    let wait = Duration::from_nanos(start_unix_ns.saturating_sub(crate::clock::unix_ns()));
    if wait > MAX_START_WAIT {
        return Err(format!(
            "asked to start in {:.1} s (more than {} s): are the clocks far apart?",
            wait.as_secs_f64(),
            MAX_START_WAIT.as_secs()
        ));
    }
    Ok(wait)
}

/// Runs one call; `partial` sends what comes before its final answer.
/// Its error is text on purpose: it goes to the coordinator as
/// `Reply::Error { message }`, and the coordinator types it there
/// (`FleetError::Failed`, naming the worker); so do this module's helpers.
async fn run(
    call: Call,
    made: &Mutex<Made>,
    local: Option<SocketAddr>,
    partial: &(dyn Fn(Reply) + Sync),
    cancelled: &AtomicBool,
) -> Answer {
    match call {
        Call::Net(c) => net::handle(c, made, partial, cancelled).await,
        Call::Ctl(c) => ctl::handle(c, made, local, partial).await,
        Call::Tester(c) => tester::handle(c, made).await,
        Call::Fabric(c) => fabric::handle(c, made, local).await,
        Call::Down => {
            if let Some(run) = made.lock().await.tear_down().await? {
                tracing::info!(
                    "sdnlab worker: {}",
                    format!("the coordinator asked: netlab run {run} torn down")
                );
            }
            Ok(Reply::Done)
        }
        Call::Hello { .. } | Call::Heartbeat | Call::Clock => Err("answered by the session".into()),
    }
}

/// Thousands of emulated switches need thousands of descriptors: the soft
/// limit goes up to the hard one.
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// The running network's state, or an error if none is up.
// Text on purpose: it goes to the coordinator as `Reply::Error` (see `run`).
async fn up(made: &Mutex<Made>) -> Result<netlab::run::State, String> {
    made.lock()
        .await
        .net
        .as_ref()
        .map(|n| n.state.clone())
        .ok_or_else(|| "no network is up here: bring one up first".to_string())
}
