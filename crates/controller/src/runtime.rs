//! The controller runtime: listeners, one acceptor thread per listener, and
//! worker threads (one per core by default), each an event loop of its own
//! (`worker`) owning its switches' sessions and application instances: no
//! lock or cross-thread hand-off on the PACKET_IN path.

use crate::app::AppFactory;
use crate::cluster_state::{Event, SharedState};
use crate::driver::Environment;
use crate::shared::{Accepted, Context, Ha, Mail, Mailbox, Membership, Outbox};
pub use crate::shared::{Command, RequestError, Stats, Wait};
use crate::worker::Core;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Config {
    pub listen: Vec<SocketAddr>,
    pub workers: usize,
    /// How many of the workers take switches that connect from this
    /// machine (a loopback address, or the address they connected to):
    /// whatever emulates those switches (Open vSwitch, Mininet, a
    /// benchmark's driver) shares the cores with the controller, and a
    /// worker per core then makes three busy threads on two cores that
    /// park and wake on every message. None: half the workers, at least
    /// one. Switches from other machines go to every worker.
    pub local_workers: Option<usize>,
    pub apps: Vec<AppFactory>,
    pub session: ofconn::Config,
    /// Log each session's start and end to stderr.
    pub verbose: bool,
    /// Addresses where switches connect over TLS (needs `tls`).
    pub tls_listen: Vec<SocketAddr>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Run as the standby of the controller whose REST API (or any TCP
    /// service of its process) is at this address; take over when it stops
    /// accepting connections (`driver::Ha`).
    pub standby_for: Option<SocketAddr>,
    /// How many connections the listeners hold at once, in all and from
    /// one address (None: the open-file limit, raised to its hard value,
    /// less a reserve, `ofconn::admission::Limits::for_open_files`, as many
    /// from one address as in all); half-open ones are evicted first.
    pub limits: Option<ofconn::admission::Limits>,
    /// Run as a member of a cluster coordinated through etcd
    /// (`cluster::member`): every switch's mastership is elected there.
    pub cluster: Option<cluster::Config>,
}

impl Default for Config {
    /// No listener, one worker per core, no app, default session settings.
    fn default() -> Config {
        Config {
            listen: Vec::new(),
            workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            local_workers: None,
            apps: Vec::new(),
            session: ofconn::Config::default(),
            verbose: false,
            tls_listen: Vec::new(),
            tls: None,
            standby_for: None,
            limits: None,
            cluster: None,
        }
    }
}

/// What the listeners and the handles share: the workers' `Core` (read
/// through it: `shared.env`, `shared.stop`), and what only the runtime
/// needs.
pub(crate) struct Shared {
    pub(crate) core: Arc<Core>,
    pub(crate) cfg: Config,
    pub(crate) next_session: AtomicU64,
    /// Every worker's mailbox.
    pub(crate) workers: Vec<Arc<Mailbox>>,
    /// Cluster mode: the sessions' way to the member's etcd side.
    member: Option<Arc<Member>>,
}

impl std::ops::Deref for Shared {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

/// A running controller.
#[derive(Clone)]
pub struct Handle {
    pub local_addrs: Vec<SocketAddr>,
    /// Where the TLS listeners are.
    pub tls_addrs: Vec<SocketAddr>,
    pub stats: Arc<Stats>,
    shared: Arc<Shared>,
    member: Option<Arc<cluster::Handle>>,
}

impl Handle {
    /// Stops accepting new switches and ends every session (the sockets
    /// close; the switches see the controller gone).
    pub fn stop(&self) {
        self.leave_cluster();
        self.shared.stop.store(true, Ordering::SeqCst);
        for m in &self.shared.workers {
            m.post(Mail::Stop);
        }
    }

    /// Stops accepting and closes every switch's session at once, as if the
    /// process had died (failover tests of in-process controllers).
    pub fn kill(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for o in self.shared.env.ctx.registry.outboxes() {
            o.evict();
        }
        self.stop();
    }

    /// Cluster mode: who masters what, as this member last saw it.
    pub fn mastership(&self) -> Option<cluster::Mastership> {
        self.member.as_ref().map(|m| m.mastership())
    }

    /// Cluster mode: starts sharing the network's state through etcd
    /// (`cluster_state`): what the REST API installs, the hosts `apps`'
    /// `paths` learns and, when each member hears only its own switches'
    /// PACKET_INs, the links `topology` finds. Once per controller (later calls return the same);
    /// None when not in a cluster.
    pub fn share_state(&self, apps: &crate::catalog::AppSet) -> io::Result<Option<Arc<SharedState>>> {
        let (Some(m), Some(h)) = (&self.shared.member, &self.member) else {
            return Ok(None);
        };
        let mut started = m.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*started {
            return Ok(Some(s.clone()));
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        *m.events.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx.clone());
        let shared_apps = crate::cluster_state::Apps {
            paths: apps.paths.clone(),
            topology: apps.topology.clone(),
            share_links: !m.slave_packet_ins,
        };
        let s = SharedState::start(self.shared.core.clone(), h.clone(), shared_apps, rx, tx)?;
        *started = Some(s.clone());
        Ok(Some(s))
    }

    /// Cluster mode, once `share_state` was called: the shared state.
    pub fn shared_state(&self) -> Option<Arc<SharedState>> {
        let m = self.shared.member.as_ref()?;
        m.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether `stop` (or `kill`) was called.
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Cluster mode: leaves the cluster at once (the lease revoked, this
    /// member's switches re-elected) instead of at the process's end.
    pub fn leave_cluster(&self) {
        if let Some(m) = &self.member {
            m.leave();
        }
    }

    /// This controller's high-availability state, when it runs as (or was) a standby.
    pub fn ha(&self) -> Option<Arc<Ha>> {
        self.shared.env.ha.clone()
    }

    /// Datapath ids of the switches whose handshake completed.
    pub fn switches(&self) -> Vec<u64> {
        self.shared.env.ctx.registry.datapath_ids()
    }

    /// What the handshakes reported, by datapath id.
    pub fn switch_infos(&self) -> Vec<ofconn::SwitchInfo> {
        self.shared.env.ctx.registry.infos()
    }

    /// What applications see of the controller (the registry of switches).
    pub fn context(&self) -> &Context {
        &self.shared.env.ctx
    }

    /// Sends `body` to switch `dpid` and waits (5 s at most) for what `wait` says.
    pub async fn request(
        &self,
        dpid: u64,
        body: ofwire::Body,
        wait: Wait,
    ) -> Result<Vec<ofwire::Message>, crate::shared::RequestError> {
        self.shared.env.ctx.request(dpid, body, wait).await
    }

    /// A switch's session counters as of now.
    pub async fn switch_counters(&self, dpid: u64) -> Option<ofconn::Counters> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        if !self.shared.env.ctx.registry.command(dpid, Command::Counters(reply)) {
            return None;
        }
        tokio::time::timeout(Duration::from_secs(5), rx).await.ok()?.ok()
    }
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

/// What the workers, acceptors and handles share, for `cfg`.
pub(crate) fn new_shared(cfg: &Config, stats: Arc<Stats>, workers: Vec<Arc<Mailbox>>, limit: u64) -> Arc<Shared> {
    let member = cfg.cluster.as_ref().map(|c| {
        Arc::new(Member {
            handle: std::sync::OnceLock::new(),
            slave_packet_ins: c.slave_packet_ins,
            events: std::sync::Mutex::new(None),
            state: std::sync::Mutex::new(None),
        })
    });
    let core = Core {
        env: Environment {
            stats,
            verbose: cfg.verbose,
            ha: cfg.standby_for.map(|_| Arc::new(Ha::default())),
            membership: member.clone().map(|m| m as Arc<dyn Membership>),
            ..Environment::new(cfg.apps.clone(), cfg.session.clone())
        },
        stop: AtomicBool::new(false),
        // By default as many from one address as in all: an emulated
        // network's switches all come from one.
        admission: std::sync::Mutex::new(ofconn::admission::Admission::new(cfg.limits.unwrap_or_else(|| {
            let total = ofconn::admission::Limits::for_open_files(limit).total;
            ofconn::admission::Limits {
                total,
                per_source: total,
            }
        }))),
        tls: cfg.tls.clone(),
    };
    Arc::new(Shared {
        core: Arc::new(core),
        cfg: cfg.clone(),
        member,
        // From 1: a session's id is its token in its worker's epoll set,
        // where 0 is the mailbox's.
        next_session: AtomicU64::new(1),
        workers,
    })
}

/// Starts listeners and workers; returns once every listener is bound.
pub fn start(cfg: Config) -> io::Result<Handle> {
    let limit = raise_fd_limit();
    if cfg.verbose {
        tracing::info!("controller: open-file limit {limit}");
    }
    let workers = cfg.workers.max(1);
    if !cfg.tls_listen.is_empty() && cfg.tls.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "TLS listeners need a certificate and key",
        ));
    }
    let stats = Arc::new(Stats::default());
    // Each worker's epoll set and mailbox, made before its thread.
    let prepared = (0..workers)
        .map(|_| crate::worker::prepare())
        .collect::<io::Result<Vec<_>>>()?;
    let shared = new_shared(
        &cfg,
        stats.clone(),
        prepared.iter().map(|(_, m)| m.clone()).collect(),
        limit,
    );
    // The cluster member joins before any switch can connect.
    let member = match &cfg.cluster {
        Some(c) => Some(join_cluster(c.clone(), &shared)?),
        None => None,
    };
    let senders = shared.workers.clone();
    for (w, (poll, mailbox)) in prepared.into_iter().enumerate() {
        let core = shared.core.clone();
        std::thread::Builder::new()
            .name(format!("ctl-worker-{w}"))
            .spawn(move || crate::worker::run(poll, mailbox, core))?;
    }
    let mut local_addrs = Vec::new();
    let mut tls_addrs = Vec::new();
    let all = cfg
        .listen
        .iter()
        .map(|a| (a, false))
        .chain(cfg.tls_listen.iter().map(|a| (a, true)));
    for (addr, tls) in all {
        let l = TcpListener::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("listen on {addr}: {e}")))?;
        // std listens with a backlog of 128: a network of thousands of
        // switches connecting at once would see SYNs dropped and retried
        // a second later. Listening again on Linux only changes the backlog.
        nix::sys::socket::listen(&l, nix::sys::socket::Backlog::MAXCONN)
            .map_err(|e| io::Error::other(format!("listen on {addr}: {e}")))?;
        l.set_nonblocking(true)?;
        if tls {
            tls_addrs.push(l.local_addr()?);
        } else {
            local_addrs.push(l.local_addr()?);
        }
        let (senders, shared) = (senders.clone(), shared.clone());
        std::thread::Builder::new()
            .name(format!("ctl-accept-{addr}"))
            .spawn(move || acceptor(l, tls, senders, shared))?;
    }
    if let Some(active) = cfg.standby_for {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("ctl-standby".into())
            .spawn(move || watch_active(active, shared))?;
    }
    Ok(Handle {
        local_addrs,
        tls_addrs,
        stats,
        shared,
        member,
    })
}

/// Cluster mode: the sessions' side of the member.
struct Member {
    /// The etcd side (started after the registry it steers exists, hence
    /// the cell).
    handle: std::sync::OnceLock<Arc<cluster::Handle>>,
    /// Whether its slaves ask for every PACKET_IN.
    slave_packet_ins: bool,
    /// Where the election's and the shared state's news go once the state
    /// is shared (`Handle::share_state`).
    events: std::sync::Mutex<Option<crate::cluster_state::Feed>>,
    state: std::sync::Mutex<Option<Arc<SharedState>>>,
}

impl Member {
    fn tell(&self, ev: Event) {
        if let Some(tx) = &*self.events.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = tx.send(ev);
        }
    }
}

impl Membership for Member {
    fn slave_packet_ins(&self) -> bool {
        self.slave_packet_ins
    }
    fn switch_up(&self, dpid: u64) {
        if let Some(h) = self.handle.get() {
            h.switch_up(dpid);
        }
    }
    fn switch_down(&self, dpid: u64) {
        if let Some(h) = self.handle.get() {
            h.switch_down(dpid);
        }
    }
}

/// Joins the cluster; the election's roles reach the sessions as commands.
fn join_cluster(c: cluster::Config, shared: &Arc<Shared>) -> io::Result<Arc<cluster::Handle>> {
    let registry = shared.env.ctx.registry.clone();
    let verbose = shared.cfg.verbose;
    let member = shared.member.clone();
    let tell = move |ev: Event| {
        if let Some(m) = &member {
            m.tell(ev);
        }
    };
    let notify = move |n: cluster::Notice| match n {
        cluster::Notice::Role {
            dpid,
            role,
            generation,
            master,
        } => {
            let is_master = role == cluster::Role::Master;
            registry.command(
                dpid,
                Command::Role {
                    master: is_master,
                    generation_id: generation,
                },
            );
            if verbose || is_master {
                tracing::info!(
                    "controller: switch {dpid:#018x}: {} (master {master}, generation {generation})",
                    if is_master { "MASTER" } else { "SLAVE" }
                );
            }
            if is_master {
                // A new master sends what the API installed there again.
                tell(Event::Master(dpid));
            }
        }
        cluster::Notice::State { key, value, revision } => tell(Event::Changed(key, value, revision)),
        cluster::Notice::MemberGone { member } => {
            tracing::warn!("controller: cluster member {member} is gone: its lease revoked, its switches re-elected")
        }
        cluster::Notice::Etcd { detail, .. } => tracing::info!("controller: etcd: {detail}"),
    };
    let h = cluster::start(c, Box::new(notify)).map_err(|e| io::Error::other(e.to_string()))?;
    let h = Arc::new(h);
    if let Some(m) = &shared.member {
        let _ = m.handle.set(h.clone());
    }
    Ok(h)
}

/// How often a standby checks the active controller, and how many checks
/// in a row must fail before it takes over.
pub const STANDBY_CHECK: Duration = Duration::from_millis(50);
pub const STANDBY_MISSES: u32 = 2;

/// A standby's watch: a TCP connection attempt to the active controller
/// every `STANDBY_CHECK` (a dead process refuses at once; a hung one that
/// still accepts is not detected); after `STANDBY_MISSES` failures in a
/// row, takes over.
fn watch_active(active: SocketAddr, shared: Arc<Shared>) {
    let Some(ha) = shared.env.ha.clone() else { return };
    let mut misses = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(STANDBY_CHECK);
        match std::net::TcpStream::connect_timeout(&active, STANDBY_CHECK * 2) {
            Ok(_) => misses = 0,
            Err(_) => misses += 1,
        }
        if misses >= STANDBY_MISSES {
            let generation = ha.generation.fetch_add(1, Ordering::AcqRel) + 1;
            ha.active.store(true, Ordering::Release);
            tracing::info!(
                "controller: the active controller at {active} stopped answering: taking over as master (generation {generation})"
            );
            let registry = &shared.env.ctx.registry;
            for dpid in registry.datapath_ids() {
                if shared.env.ctx.version_of(dpid) == Some(ofwire::OFP13_VERSION) {
                    for body in ha.role_messages() {
                        registry.command(dpid, Command::Send(ofwire::Body::V13(body)));
                    }
                }
            }
            return;
        }
    }
}

/// Whether a switch connected from this machine: from a loopback address,
/// or from the address it connected to.
fn same_machine(peer: std::net::IpAddr, local: Option<std::net::IpAddr>) -> bool {
    peer.is_loopback() || local == Some(peer)
}

/// How long the acceptor sleeps in poll(2) at most before it looks at the
/// stop flag again.
const ACCEPT_STOP_CHECK_MS: u16 = 50;

fn acceptor(l: TcpListener, tls: bool, workers: Vec<Arc<Mailbox>>, shared: Arc<Shared>) {
    // One descriptor kept in reserve: when the limit is reached we release it,
    // accept the connection and close it at once (a clean refusal) instead
    // of leaving it to hang in the backlog.
    let mut reserve = std::fs::File::open("/dev/null").ok();
    // Switches from this machine and from others take turns apart.
    let local_pool = shared
        .cfg
        .local_workers
        .unwrap_or(workers.len() / 2)
        .clamp(1, workers.len());
    let (mut next_local, mut next_remote) = (0usize, 0usize);
    while !shared.stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((s, peer)) => {
                let _ = s.set_nodelay(true);
                if s.set_nonblocking(true).is_err() {
                    continue;
                }
                if shared.cfg.verbose {
                    tracing::info!("controller: connection from {peer}");
                }
                let local = same_machine(peer.ip(), s.local_addr().ok().map(|a| a.ip()));
                let w = if local {
                    next_local % local_pool
                } else {
                    next_remote % workers.len()
                };
                let session = shared.next_session.fetch_add(1, Ordering::Relaxed);
                let kill = Outbox::new(session, workers[w].clone());
                let admit =
                    shared
                        .admission
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .admit(peer.ip(), Instant::now(), kill);
                let ofconn::admission::Admit::Accept { id, evict } = admit else {
                    shared.env.stats.refused.fetch_add(1, Ordering::Relaxed);
                    if shared.cfg.verbose {
                        tracing::warn!(
                            "controller: refused {peer}: the connection limit is reached with sessions only"
                        );
                    }
                    continue;
                };
                if let Some(victim) = evict {
                    victim.kill();
                }
                if local {
                    next_local += 1;
                } else {
                    next_remote += 1;
                }
                workers[w].post(Mail::Accept(Accepted {
                    stream: s,
                    tls,
                    session,
                    admission: id,
                }));
            }
            // Nothing waiting: sleep in poll(2) until a connection is, so
            // that it is taken at once. A 2 ms nap here used to delay every
            // lone connection by a millisecond on average (the sessions
            // test's bound: about 450 sessions/s) and woke the idle
            // controller 500 times a second. The timeout only bounds how
            // late `stop` is seen.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                use std::os::fd::AsFd;
                let mut fds = [nix::poll::PollFd::new(l.as_fd(), nix::poll::PollFlags::POLLIN)];
                let _ = nix::poll::poll(&mut fds, ACCEPT_STOP_CHECK_MS);
            }
            // EMFILE (24) or ENFILE (23): out of descriptors.
            Err(e) if matches!(e.raw_os_error(), Some(23 | 24)) => {
                drop(reserve.take());
                if let Ok((s, peer)) = l.accept() {
                    drop(s);
                    shared.env.stats.refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        "controller: refused {peer}: open-file limit reached with {} sessions",
                        shared.env.stats.sessions_active.load(Ordering::Relaxed)
                    );
                }
                reserve = std::fs::File::open("/dev/null").ok();
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                tracing::info!("controller: accept: {e}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_from_this_machine_are_told_apart() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert!(same_machine(ip("127.0.0.1"), Some(ip("127.0.0.1"))));
        assert!(same_machine(ip("127.3.2.1"), Some(ip("10.0.0.1"))));
        assert!(same_machine(ip("::1"), None));
        assert!(same_machine(ip("10.0.0.1"), Some(ip("10.0.0.1"))));
        assert!(!same_machine(ip("10.0.0.2"), Some(ip("10.0.0.1"))));
        assert!(!same_machine(ip("192.168.1.9"), None));
    }
}
