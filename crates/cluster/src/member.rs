//! One cluster member's etcd side: it registers the member (a key held by
//! its lease), says which switches it has connected, claims the mastership
//! of the switches `placement` gives it, resigns those a newcomer should
//! hold, and watches the cluster's keys to know every other master. It
//! runs on a thread of its own (a single-threaded tokio runtime: the
//! etcd client is async); the controller drives it through a `Handle` and
//! hears from it through a callback. The OpenFlow hot path never waits on
//! it.
//!
//! Keys, under `/sdnlab/CLUSTER/`:
//! - `members/NAME` = `{"lease":ID,"probe":"IP:PORT"}`, held by NAME's lease;
//! - `switches/DPID/NAME` = "", held by NAME's lease: NAME has DPID connected;
//! - `masters/DPID` = NAME, held by NAME's lease, created by a transaction
//!   that succeeds only when the key does not exist (one election per
//!   switch); its create revision is the generation id NAME sends in its
//!   ROLE_REQUEST MASTER, and every member's SLAVE request carries it too;
//! - `state/...` = JSON, held by no lease: the network's shared state
//!   (what the northbound API asked for, the hosts learnt), which outlives
//!   any member. Every member keeps a copy fed by the watch
//!   (`Handle::state`) and hears each change (`Notice::State`); writes go
//!   through `Handle::put_state` and `Handle::delete_state`.
//!
//! A member's death is noticed by the others at once: each member listens
//! on a TCP socket of its own (`members/NAME`'s "probe") and every other
//! member holds a connection to it. When the connection closes, they try
//! to connect again every `probe_every`; after `probe_misses` failures in
//! a row (a dead process refuses at once) they revoke its lease, which
//! deletes its keys, and the watch re-elects at once. The lease's TTL is
//! only the safety net (a member that hangs, a machine that vanishes).
//!
//! When etcd cannot be reached (quorum lost) the member keeps every role
//! as it is, says so once, and retries; when etcd answers again it
//! re-reads the keys and carries on.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp, WatchOptions,
};
use tokio::sync::mpsc;

mod mastership;
mod view;

/// What a member is told to be for one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Master,
    Slave,
}

/// What the member tells the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// This member's role for `dpid` (sent again when the switch
    /// reconnects): send ROLE_REQUEST `role` with `generation`.
    Role {
        dpid: u64,
        role: Role,
        generation: u64,
        master: String,
    },
    /// Another member stopped answering its probes: its lease was revoked.
    MemberGone { member: String },
    /// etcd stopped answering (roles are kept as they are) or answers again.
    Etcd { reachable: bool, detail: String },
    /// A key of the shared state (relative to `state/`) was written
    /// (`value`) or deleted (None), at etcd revision `revision`. Also sent
    /// for every key when the member reads them all afresh (at its start,
    /// after etcd was unreachable).
    State {
        key: String,
        value: Option<serde_json::Value>,
        revision: i64,
    },
}

/// Why this member's lease could not be kept (said in its etcd notice).
#[derive(Debug, thiserror::Error)]
enum LeaseError {
    #[error("a lease keep-alive timed out")]
    TimedOut,
    #[error(transparent)]
    Etcd(#[from] etcd_client::Error),
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("etcd at {endpoints}: {source}")]
    Etcd {
        endpoints: String,
        #[source]
        source: etcd_client::Error,
    },
    #[error("etcd at {endpoints} did not answer within {secs} s (is it running? `etcdctl --endpoints {endpoints} endpoint health` tells)")]
    Timeout { endpoints: String, secs: u64 },
    #[error("member name {0:?}: use letters, digits, '-', '_' or '.' (it is part of etcd keys)")]
    BadName(String),
    #[error("another member named {0:?} is alive in this cluster: give each member its own --member name")]
    Duplicate(String),
    #[error("starting the cluster thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error("shared state key {0:?}: use letters, digits and '-', '_', '.', ':' or '/' between non-empty parts")]
    BadKey(String),
    #[error("this cluster member has left")]
    Left,
}

/// A member's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// etcd's client URLs (`http://127.0.0.1:2379`).
    pub endpoints: Vec<String>,
    /// This member's name, unique in the cluster.
    pub member: String,
    /// The cluster's name: its keys live under `/sdnlab/CLUSTER/`.
    pub cluster: String,
    /// Where this member's cluster socket listens (port 0: any free one);
    /// the other members hold a connection to it to notice its death.
    pub listen: SocketAddr,
    /// The lease's TTL: the safety net when probes cannot tell.
    pub lease_ttl: Duration,
    pub probe_every: Duration,
    pub probe_misses: u32,
    /// A switch with no master that its preferred member does not claim
    /// within this is claimed by any member that has it.
    pub claim_grace: Duration,
    /// A master hands a switch over to the member placement prefers (one
    /// that joined, or came back) only once that member has had it
    /// connected this long: its apps learn the network from the switch
    /// first (links by LLDP, edge ports), instead of taking over cold and
    /// dropping what it cannot place yet.
    pub handover_after: Duration,
    /// How long one etcd request may take before etcd counts as unreachable.
    pub request_timeout: Duration,
    /// The controller's side: as a SLAVE, ask the switch for every
    /// PACKET_IN and PORT_STATUS (SET_ASYNC), so the apps know the network
    /// when this member takes over; false: OpenFlow's default for a
    /// slave (PORT_STATUS only), every member then not paying for every
    /// PACKET_IN (the apps learn what they need after a takeover).
    pub slave_packet_ins: bool,
}

impl Config {
    pub fn new(endpoints: Vec<String>, member: String, listen: SocketAddr) -> Config {
        Config {
            endpoints,
            member,
            cluster: "default".into(),
            listen,
            lease_ttl: Duration::from_secs(5),
            probe_every: Duration::from_millis(50),
            probe_misses: 2,
            claim_grace: Duration::from_millis(500),
            handover_after: Duration::from_secs(2),
            request_timeout: Duration::from_secs(2),
            slave_packet_ins: true,
        }
    }
}

/// Who masters what, as this member last saw it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Mastership {
    pub member: String,
    pub members: BTreeMap<String, String>,
    /// Datapath id -> (master, generation id).
    pub masters: BTreeMap<u64, (String, u64)>,
    /// Datapath id -> the members that have it connected.
    pub connected: BTreeMap<u64, BTreeSet<String>>,
    pub etcd_reachable: bool,
}

/// The shared state as this member last read it: key (under `state/`) ->
/// (value, the revision that wrote it).
pub type State = BTreeMap<String, (serde_json::Value, i64)>;

type Reply<T> = tokio::sync::oneshot::Sender<Result<T, Error>>;

enum Msg {
    Up(u64),
    Down(u64),
    Dead(String, i64),
    Put(String, String, Reply<i64>),
    Delete(String, bool, Reply<()>),
    Stop(std::sync::mpsc::Sender<()>),
}

/// The controller's side of a running member.
pub struct Handle {
    tx: mpsc::UnboundedSender<Msg>,
    view: Arc<Mutex<Mastership>>,
    state: Arc<Mutex<State>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Handle {
    /// A switch (OpenFlow 1.3 or 1.0) finished its handshake with this member.
    pub fn switch_up(&self, dpid: u64) {
        let _ = self.tx.send(Msg::Up(dpid));
    }

    /// The switch's session with this member ended.
    pub fn switch_down(&self, dpid: u64) {
        let _ = self.tx.send(Msg::Down(dpid));
    }

    pub fn mastership(&self) -> Mastership {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Who masters `dpid`, as this member last saw it (without a copy of
    /// the whole map).
    pub fn master_of(&self, dpid: u64) -> Option<String> {
        let v = self.view.lock().unwrap_or_else(|p| p.into_inner());
        v.masters.get(&dpid).map(|(m, _)| m.clone())
    }

    /// This member's name.
    pub fn name(&self) -> String {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).member.clone()
    }

    /// The shared state's keys under `prefix` (relative to `state/`), as
    /// the watch last brought them: key -> (value, revision).
    pub fn state(&self, prefix: &str) -> State {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// One key of the shared state.
    pub fn state_get(&self, key: &str) -> Option<(serde_json::Value, i64)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).get(key).cloned()
    }

    /// Writes `key` (relative to `state/`) in etcd; returns the revision
    /// that wrote it. The local copy follows when the watch brings it.
    pub async fn put_state(&self, key: &str, value: &serde_json::Value) -> Result<i64, Error> {
        if !valid_key(key) {
            return Err(Error::BadKey(key.into()));
        }
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Msg::Put(key.into(), value.to_string(), reply))
            .map_err(|_| Error::Left)?;
        rx.await.map_err(|_| Error::Left)?
    }

    /// Deletes `key` (every key under it when `prefix`) from etcd.
    pub async fn delete_state(&self, key: &str, prefix: bool) -> Result<(), Error> {
        if !valid_key(key.trim_end_matches('/')) {
            return Err(Error::BadKey(key.into()));
        }
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Msg::Delete(key.into(), prefix, reply))
            .map_err(|_| Error::Left)?;
        rx.await.map_err(|_| Error::Left)?
    }

    /// Leaves the cluster: the lease is revoked (the switches this member
    /// mastered are re-elected at once) and the thread ends. Later calls
    /// do nothing.
    pub fn leave(&self) {
        let (tx, rx) = std::sync::mpsc::channel();
        if self.tx.send(Msg::Stop(tx)).is_ok() {
            let _ = rx.recv_timeout(Duration::from_secs(3));
        }
        let t = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.leave();
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

fn valid_key(s: &str) -> bool {
    s.len() <= 512
        && s.split('/')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b)))
}

/// Joins the cluster: connects to etcd, registers this member (refused
/// when a live member has the name) and starts its thread. `notify` is
/// called from that thread.
pub fn start(cfg: Config, notify: Box<dyn Fn(Notice) + Send>) -> Result<Handle, Error> {
    for name in [&cfg.member, &cfg.cluster] {
        if !valid_name(name) {
            return Err(Error::BadName(name.clone()));
        }
    }
    let view = Arc::new(Mutex::new(Mastership {
        member: cfg.member.clone(),
        etcd_reachable: true,
        ..Default::default()
    }));
    let state = Arc::new(Mutex::new(State::new()));
    let (tx, rx) = mpsc::unbounded_channel();
    // The member joins on its own thread (its runtime may not be started
    // from inside the caller's, if the caller runs one) and says how that
    // went before it carries on.
    let (joined_tx, joined) = std::sync::mpsc::channel();
    let (v, t, st) = (view.clone(), tx.clone(), state.clone());
    let thread = std::thread::Builder::new().name("ctl-cluster".into()).spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                let _ = joined_tx.send(Err(Error::Thread(e)));
                return;
            }
        };
        rt.block_on(async move {
            match Member::join(cfg, v, st, t, notify).await {
                Ok(mut m) => {
                    let _ = joined_tx.send(Ok(()));
                    m.run(rx).await;
                }
                Err(e) => {
                    let _ = joined_tx.send(Err(e));
                }
            }
        });
    })?;
    match joined.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            let _ = thread.join();
            return Err(Error::Thread(std::io::Error::other(
                "the cluster thread ended while joining",
            )));
        }
    }
    Ok(Handle {
        tx,
        view,
        state,
        thread: Mutex::new(Some(thread)),
    })
}

struct Member {
    cfg: Config,
    /// This member's cluster socket (taken by `run`), and its address.
    listener: Option<tokio::net::TcpListener>,
    probe: SocketAddr,
    client: Client,
    lease: i64,
    prefix: String,
    view: Arc<Mutex<Mastership>>,
    state: Arc<Mutex<State>>,
    notify: Box<dyn Fn(Notice) + Send>,
    tx: mpsc::UnboundedSender<Msg>,
    /// What the keys say: members (name -> (lease, probe)), which members
    /// have which switch, and masters (dpid -> (name, create revision)).
    members: BTreeMap<String, (i64, String)>,
    connected: BTreeMap<u64, BTreeSet<String>>,
    masters: BTreeMap<u64, (String, i64)>,
    /// Since when this member has seen each (switch, member) connected.
    connected_since: HashMap<(u64, String), Instant>,
    /// The switches connected here, and since when each has had no master.
    local: BTreeMap<u64, Option<Instant>>,
    /// The role last told for each local switch.
    told: HashMap<u64, (Role, i64)>,
    probes: HashMap<String, tokio::task::JoinHandle<()>>,
    reachable: bool,
    /// etcd requests failed in a row.
    failures: u32,
}

fn dpid_key(d: u64) -> String {
    format!("{d:016x}")
}

impl Member {
    async fn join(
        cfg: Config,
        view: Arc<Mutex<Mastership>>,
        state: Arc<Mutex<State>>,
        tx: mpsc::UnboundedSender<Msg>,
        notify: Box<dyn Fn(Notice) + Send>,
    ) -> Result<Member, Error> {
        let endpoints = cfg.endpoints.join(",");
        let etcd = |source| Error::Etcd {
            endpoints: endpoints.clone(),
            source,
        };
        let timeout = cfg.request_timeout;
        let listener = tokio::net::TcpListener::bind(cfg.listen).await?;
        let probe = listener.local_addr()?;
        let setup = async {
            let opts = ConnectOptions::new()
                .with_connect_timeout(timeout)
                .with_timeout(timeout)
                .with_keep_alive(Duration::from_millis(500), timeout);
            let mut client = Client::connect(&cfg.endpoints, Some(opts)).await.map_err(etcd)?;
            let ttl = cfg.lease_ttl.as_secs().max(1) as i64;
            let lease = client.lease_grant(ttl, None).await.map_err(etcd)?.id();
            let prefix = format!("/sdnlab/{}/", cfg.cluster);
            let me = format!("{prefix}members/{}", cfg.member);
            let value = serde_json::json!({"lease": lease, "probe": probe.to_string()}).to_string();
            // The name, if nobody holds it, under this member's lease.
            let claim = || {
                Txn::new()
                    .when([Compare::create_revision(me.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        me.clone(),
                        value.clone(),
                        Some(PutOptions::new().with_lease(lease)),
                    )])
            };
            let claimed = client.txn(claim()).await.map_err(etcd)?;
            if !claimed.succeeded() {
                // The name is taken: by a live member (refused), or by this
                // member's previous process, killed before its lease ran
                // out (its socket refuses: its lease is revoked and the
                // name taken over).
                let old = client.get(me.clone(), None).await.map_err(etcd)?;
                let old: serde_json::Value = old
                    .kvs()
                    .first()
                    .and_then(|kv| serde_json::from_slice(kv.value()).ok())
                    .unwrap_or_default();
                let alive = match old["probe"].as_str().and_then(|p| p.parse::<SocketAddr>().ok()) {
                    Some(a) => matches!(
                        tokio::time::timeout(cfg.probe_every * 4, tokio::net::TcpStream::connect(a)).await,
                        Ok(Ok(_))
                    ),
                    None => true,
                };
                let taken_over = !alive && {
                    if let Some(l) = old["lease"].as_i64() {
                        let _ = client.lease_revoke(l).await;
                    }
                    client.txn(claim()).await.map_err(etcd)?.succeeded()
                };
                if !taken_over {
                    let _ = client.lease_revoke(lease).await;
                    return Err(Error::Duplicate(cfg.member.clone()));
                }
            }
            Ok((client, lease, prefix))
        };
        let (client, lease, prefix) =
            tokio::time::timeout(timeout * 3, setup)
                .await
                .map_err(|_| Error::Timeout {
                    endpoints: endpoints.clone(),
                    secs: (timeout * 3).as_secs(),
                })??;
        Ok(Member {
            cfg,
            listener: Some(listener),
            probe,
            client,
            lease,
            prefix,
            view,
            state,
            notify,
            tx,
            members: BTreeMap::new(),
            connected: BTreeMap::new(),
            masters: BTreeMap::new(),
            connected_since: HashMap::new(),
            local: BTreeMap::new(),
            told: HashMap::new(),
            probes: HashMap::new(),
            reachable: true,
            failures: 0,
        })
    }

    async fn run(&mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        if let Some(l) = self.listener.take() {
            tokio::spawn(hold_connections(l));
        }
        let keep_every = (self.cfg.lease_ttl / 3).max(Duration::from_millis(200));
        let mut keep = tokio::time::interval(keep_every);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            // (Re)read every key, then follow the changes from there.
            let mut watch = match self.resync().await {
                Ok(w) => w,
                Err(e) => {
                    self.unreachable(e.to_string());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    if let Ok(msg) = rx.try_recv() {
                        if self.handle(msg).await {
                            return;
                        }
                    }
                    continue;
                }
            };
            loop {
                tokio::select! {
                    msg = rx.recv() => {
                        let Some(msg) = msg else { return };
                        if self.handle(msg).await {
                            return;
                        }
                    }
                    ev = watch.message() => match ev {
                        Ok(Some(resp)) if !resp.canceled() => {
                            for e in resp.events() {
                                let Some(kv) = e.kv() else { continue };
                                let put = e.event_type() == EventType::Put;
                                self.apply(kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), put);
                            }
                            self.reconcile().await;
                        }
                        Ok(_) | Err(_) => {
                            self.unreachable("the watch ended".into());
                            break;
                        }
                    },
                    _ = keep.tick() => match self.keep_alive().await {
                        Err(e) => self.unreachable(e.to_string()),
                        // etcd answers again: read everything afresh.
                        Ok(()) if !self.reachable => break,
                        Ok(()) => self.failures = 0,
                    },
                    _ = tick.tick() => self.reconcile().await,
                }
            }
        }
    }

    /// Returns true when the member should end.
    async fn handle(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Up(d) => {
                self.local.insert(d, None);
                self.told.remove(&d);
                let key = format!("{}switches/{}/{}", self.prefix, dpid_key(d), self.cfg.member);
                let opts = PutOptions::new().with_lease(self.lease);
                if let Err(e) = self.client.put(key, "", Some(opts)).await {
                    self.unreachable(e.to_string());
                }
                self.connected.entry(d).or_default().insert(self.cfg.member.clone());
                self.reconcile().await;
            }
            Msg::Down(d) => {
                self.local.remove(&d);
                self.told.remove(&d);
                let key = format!("{}switches/{}/{}", self.prefix, dpid_key(d), self.cfg.member);
                let _ = self.client.delete(key, None).await;
                if self.masters.get(&d).is_some_and(|(m, _)| *m == self.cfg.member) {
                    self.resign(d).await;
                }
            }
            Msg::Dead(name, lease) => {
                let current = self.members.get(&name).is_some_and(|(l, _)| *l == lease);
                if current && self.client.lease_revoke(lease).await.is_ok() {
                    (self.notify)(Notice::MemberGone { member: name });
                }
            }
            // Each in a task of its own: many writes at once wait on
            // etcd's disk together, not one after another.
            Msg::Put(key, value, reply) => {
                let key = format!("{}state/{key}", self.prefix);
                let (mut client, t) = (self.client.clone(), self.cfg.request_timeout);
                let (etcd, timeout) = (self.etcd_error_fn(), self.timeout_error());
                tokio::spawn(async move {
                    let r = match tokio::time::timeout(t, client.put(key, value, None)).await {
                        Ok(Ok(r)) => Ok(r.header().map_or(0, |h| h.revision())),
                        Ok(Err(e)) => Err(etcd(e)),
                        Err(_) => Err(timeout),
                    };
                    let _ = reply.send(r);
                });
            }
            Msg::Delete(key, prefix, reply) => {
                let key = format!("{}state/{key}", self.prefix);
                let opts = prefix.then(|| etcd_client::DeleteOptions::new().with_prefix());
                let (mut client, t) = (self.client.clone(), self.cfg.request_timeout);
                let (etcd, timeout) = (self.etcd_error_fn(), self.timeout_error());
                tokio::spawn(async move {
                    let r = match tokio::time::timeout(t, client.delete(key, opts)).await {
                        Ok(Ok(_)) => Ok(()),
                        Ok(Err(e)) => Err(etcd(e)),
                        Err(_) => Err(timeout),
                    };
                    let _ = reply.send(r);
                });
            }
            Msg::Stop(done) => {
                for (_, p) in self.probes.drain() {
                    p.abort();
                }
                let _ = tokio::time::timeout(self.cfg.request_timeout, self.client.lease_revoke(self.lease)).await;
                let _ = done.send(());
                return true;
            }
        }
        false
    }

    fn etcd_error_fn(&self) -> impl FnOnce(etcd_client::Error) -> Error {
        let endpoints = self.cfg.endpoints.join(",");
        move |source| Error::Etcd { endpoints, source }
    }

    fn timeout_error(&self) -> Error {
        Error::Timeout {
            endpoints: self.cfg.endpoints.join(","),
            secs: self.cfg.request_timeout.as_secs().max(1),
        }
    }

    /// An etcd request failed. One failure alone is not an outage (the
    /// client's balancer may have tried a member that just died while the
    /// others keep quorum): two in a row, with no success between, are.
    fn unreachable(&mut self, detail: String) {
        self.failures += 1;
        if self.reachable && self.failures >= 2 {
            self.reachable = false;
            self.view.lock().unwrap_or_else(|p| p.into_inner()).etcd_reachable = false;
            (self.notify)(Notice::Etcd {
                reachable: false,
                detail: format!("{detail}; every switch keeps its roles and flows until etcd answers again"),
            });
        }
    }
}

/// Whether etcd said the lease is unknown: it expired (this member was
/// stopped, or cut off, past its TTL) or was revoked by a member that
/// took it for dead. Not an outage: the member joins again.
fn lease_gone(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(s) => s.message().contains("lease not found"),
        etcd_client::Error::LeaseKeepAliveError(m) => m.contains("lease not found"),
        _ => false,
    }
}

/// Accepts the other members' connections and holds each open until its
/// member closes it (or this process ends, which closes them all: that
/// is how the others learn of this member's death).
async fn hold_connections(l: tokio::net::TcpListener) {
    loop {
        let Ok((mut s, _)) = l.accept().await else { continue };
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 64];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
    }
}

/// Holds a connection to one other member's cluster socket; when it
/// closes, tries again every `every`, and after `misses` failures in a
/// row reports the member dead and ends.
async fn probe_member(
    addr: SocketAddr,
    name: String,
    lease: i64,
    every: Duration,
    misses: u32,
    tx: mpsc::UnboundedSender<Msg>,
) {
    use tokio::io::AsyncReadExt;
    let mut missed = 0;
    loop {
        match tokio::time::timeout(every * 2, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(mut s)) => {
                missed = 0;
                let mut buf = [0u8; 64];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            }
            _ => {
                missed += 1;
                if missed >= misses {
                    let _ = tx.send(Msg::Dead(name, lease));
                    return;
                }
                tokio::time::sleep(every).await;
            }
        }
    }
}
