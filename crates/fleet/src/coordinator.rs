//! The coordinator's side of the channel: connect to every worker of an
//! inventory, say hello, measure each one's clock, keep their leases with
//! heartbeats, make calls and wait for their answers. A worker whose
//! connection breaks is *lost*: every call to it fails with
//! [`FleetError::Lost`] naming it. Dropping the [`Fleet`] closes every
//! connection, and each worker tears down what it made.
//!
//! [`SpreadNet`] is a topology brought up over the fleet.

use crate::clock::{self, Exchange, Offset};
use crate::inventory::Inventory;
use crate::partition::{self, Underlay};
use crate::proto::{self, Call, Reply, Request, Response, VERSION, WORKER_NAME};
use crate::FleetError;
use futures::future::join_all;
use netlab::run::{IperfResult, PingResult, SwitchKind};
use netlab::state::Part;
use netlab::topo::Topology;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::sync::mpsc;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Clock exchanges per worker over the session (when probes fail).
const EXCHANGES: usize = 16;
/// Clock probes per worker (UDP; a few ms in all).
const PROBES: usize = 64;

/// A worker's clock known less well than this (microseconds) is flagged.
pub const CLOCK_LOOSE_US: f64 = 1000.0;

type Pending = Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Reply>>>>;

/// One connected worker.
pub struct Worker {
    /// What the inventory calls it.
    pub name: String,
    pub addr: SocketAddrV4,
    /// Its host name, as it says.
    pub host: String,
    /// Its clock against ours.
    pub clock: Option<Offset>,
    /// How it was measured: "udp" (the worker's clock probes) or "tls"
    /// (exchanges over the session, when probes got no answer).
    pub clock_via: &'static str,
    /// When it was measured.
    clock_at: std::time::Instant,
    /// Where the worker answers clock probes, and their token.
    probes: Option<(std::net::SocketAddr, clock::Token)>,
    tx: mpsc::UnboundedSender<Request>,
    pending: Pending,
    /// Why the worker is lost, once it is (set by the reader when the
    /// connection ends).
    lost: tokio::sync::watch::Receiver<Option<String>>,
    next: AtomicU64,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Worker {
    async fn connect(
        name: &str,
        addr: SocketAddrV4,
        inv: &Inventory,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<Worker, FleetError> {
        let fail = |message: String| FleetError::Worker {
            worker: name.to_string(),
            message,
        };
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| fail(format!("no answer from {addr} within {CONNECT_TIMEOUT:?}")))?
            .map_err(|e| fail(format!("cannot connect to {addr}: {e}")))?;
        let _ = tcp.set_nodelay(true);
        let server = rustls::pki_types::ServerName::try_from(WORKER_NAME).expect("a valid name");
        let stream = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio_rustls::TlsConnector::from(tls).connect(server, tcp),
        )
        .await
        .map_err(|_| fail(format!("no TLS handshake with {addr} within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| fail(format!("TLS with {addr}: {e}")))?;
        let (r, w) = tokio::io::split(stream);
        let (tx, rx) = mpsc::unbounded_channel::<Request>();
        let pending: Pending = Arc::default();
        let writer = tokio::spawn(proto::write_lines(w, rx));
        let p = pending.clone();
        let (lost_tx, lost) = tokio::sync::watch::channel(None);
        let reader = tokio::spawn(async move {
            let mut r = BufReader::new(r);
            let why = loop {
                match proto::read_line(&mut r).await {
                    Ok(Some(line)) => match serde_json::from_slice::<Response>(&line) {
                        Ok(resp) => {
                            let waiting = {
                                let mut pending = p.lock().expect("pending");
                                if resp.reply.is_final() {
                                    pending.remove(&resp.id)
                                } else {
                                    pending.get(&resp.id).cloned()
                                }
                            };
                            match waiting {
                                Some(w) => {
                                    let _ = w.send(resp.reply);
                                }
                                // Id 0 answers no call: the worker refusing the session.
                                None => {
                                    if let Reply::Error { message } = resp.reply {
                                        break message;
                                    }
                                }
                            }
                        }
                        Err(e) => break format!("it sent something that is not a response: {e}"),
                    },
                    Ok(None) => break "the connection closed".to_string(),
                    Err(e) => break format!("the connection failed: {e}"),
                }
            };
            // Why first: a call whose sender is dropped reads it.
            let _ = lost_tx.send(Some(why));
            p.lock().expect("pending").clear();
        });
        let mut w = Worker {
            name: name.to_string(),
            addr,
            host: String::new(),
            clock: None,
            clock_via: "tls",
            clock_at: std::time::Instant::now(),
            probes: None,
            tx,
            pending,
            lost,
            next: AtomicU64::new(1),
            tasks: vec![writer, reader],
        };
        let lease_ms = inv.lease_s * 1000;
        match w
            .call(Call::Hello {
                version: VERSION,
                lease_ms,
            })
            .await?
        {
            Reply::Hello {
                host,
                clock_port,
                clock_token,
                ..
            } => {
                w.host = host;
                if let (Some(port), Some(token)) = (clock_port, clock_token) {
                    w.probes = Some((std::net::SocketAddr::from((*addr.ip(), port)), token));
                }
            }
            other => return Err(fail(format!("answered hello with {other:?}"))),
        }
        (w.clock, w.clock_via) = w.measure_clock().await?;
        w.clock_at = std::time::Instant::now();
        // Heartbeats: three per lease.
        let (tx, every) = (w.tx.clone(), Duration::from_millis((lease_ms / 3).max(1)));
        w.tasks.push(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if tx
                    .send(Request {
                        id: 0,
                        call: Call::Heartbeat,
                    })
                    .is_err()
                {
                    break;
                }
            }
        }));
        Ok(w)
    }

    /// Its clock against ours now: by its probes if it answers them
    /// (`"udp"`), else by exchanges over the session (`"tls"`).
    async fn measure_clock(&self) -> Result<(Option<Offset>, &'static str), FleetError> {
        if let Some((to, token)) = self.probes {
            let probed = tokio::task::spawn_blocking(move || clock::probe(to, token, PROBES))
                .await
                .ok()
                .and_then(Result::ok)
                .filter(|ex| ex.len() >= PROBES / 2)
                .and_then(|ex| clock::estimate(&ex));
            if probed.is_some() {
                return Ok((probed, "udp"));
            }
        }
        // No probes answered (a firewall, an older worker): exchanges over
        // the session, known less well.
        let mut exchanges = Vec::with_capacity(EXCHANGES);
        for _ in 0..EXCHANGES {
            let t0 = clock::unix_ns();
            let reply = self.call(Call::Clock).await?;
            let t2 = clock::unix_ns();
            if let Reply::Clock { unix_ns } = reply {
                exchanges.push(Exchange {
                    t0,
                    t1: unix_ns,
                    t1b: unix_ns,
                    t2,
                });
            }
        }
        Ok((clock::estimate(&exchanges), "tls"))
    }

    /// Why the worker is lost, if it is.
    pub fn lost(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    /// Makes `call` and waits for its answer; an error answer is an error.
    pub async fn call(&self, call: Call) -> Result<Reply, FleetError> {
        self.call_with(call, |_| {}).await
    }

    /// Makes `call`, hands every answer before the last to `partial` as it
    /// comes, and returns the last.
    pub async fn call_with(&self, call: Call, mut partial: impl FnMut(Reply)) -> Result<Reply, FleetError> {
        let lost = |why: String| FleetError::Lost {
            worker: self.name.clone(),
            message: why,
        };
        if let Some(why) = self.lost() {
            return Err(lost(why));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.pending.lock().expect("pending").insert(id, tx);
        if self.tx.send(Request { id, call }).is_err() {
            return Err(lost(self.lost().unwrap_or_else(|| "the connection closed".into())));
        }
        loop {
            match rx.recv().await {
                Some(Reply::Error { message }) => {
                    return Err(FleetError::Failed {
                        worker: self.name.clone(),
                        message,
                    })
                }
                Some(reply) if reply.is_final() => return Ok(reply),
                Some(reply) => partial(reply),
                // The reader records why before it drops the senders.
                None => return Err(lost(self.lost().unwrap_or_else(|| "the connection closed".into()))),
            }
        }
    }
}

/// An emulated fabric over the workers, in one part per worker: brought
/// up and stopped, and acted on as the change-detection test does (each
/// failure made on the workers that run the switches concerned).
pub struct SpreadFabric<'a> {
    pub fleet: &'a Fleet,
    pub spec: ctlbench::fabric::Spec,
    /// Which worker runs each switch: in the spec's switch order, and by datapath id.
    assignment: Vec<usize>,
    owner: HashMap<u64, usize>,
}

impl<'a> SpreadFabric<'a> {
    /// `spec` dealt out over `fleet` as a topology is (balanced, few links
    /// cut), once: bringing it up, acting on it and stopping it all follow
    /// this one assignment.
    pub fn new(fleet: &'a Fleet, spec: &ctlbench::fabric::Spec) -> SpreadFabric<'a> {
        let assignment = partition::assign_fabric(spec, fleet.workers.len());
        SpreadFabric {
            fleet,
            spec: spec.clone(),
            owner: spec
                .switches
                .iter()
                .map(|s| s.0)
                .zip(assignment.iter().copied())
                .collect(),
            assignment,
        }
    }

    /// Brings the fabric up: each worker runs its part and carries the
    /// links to other parts over UDP between the workers' addresses,
    /// every switch connected to `targets`. Returns once every part has
    /// answered (its switches connected, or `timeout` passed): each
    /// worker's part as it stands.
    pub async fn up(
        &self,
        targets: &[std::net::SocketAddr],
        version: u8,
        timeout: Duration,
        malformed_per_mille: u32,
    ) -> Result<Vec<FabricPart>, FleetError> {
        let (fleet, spec, assignment) = (self.fleet, &self.spec, &self.assignment);
        let bound = join_all(fleet.workers.iter().map(|w| w.call(Call::FabricBind)));
        let mut sockets = Vec::new();
        for (w, r) in fleet
            .workers
            .iter()
            .zip(fleet.unless_lost(async { Ok(bound.await) }).await?)
        {
            match r? {
                Reply::FabricBound { port } => sockets.push(std::net::SocketAddr::from((*w.addr.ip(), port))),
                other => return Err(FleetError::Partition(format!("fabric-bind answered {other:?}"))),
            }
        }
        let start = fleet.workers.iter().enumerate().map(|(i, w)| {
            let here: Vec<u64> = spec
                .switches
                .iter()
                .zip(assignment)
                .filter(|(_, &p)| p == i)
                .map(|(s, _)| s.0)
                .collect();
            let elsewhere = spec
                .switches
                .iter()
                .zip(assignment)
                .filter(|(_, &p)| p != i)
                .map(|(s, &p)| (s.0, sockets[p]))
                .collect();
            w.call(Call::FabricStart {
                spec: spec.clone(),
                here,
                elsewhere,
                targets: targets.to_vec(),
                version,
                timeout_ms: timeout.as_millis() as u64,
                malformed_per_mille,
            })
        });
        let up = fleet.unless_lost(async { Ok(join_all(start).await) }).await?;
        self.parts(up)
    }

    /// Stops every worker's part of the fabric: what each counted.
    pub async fn stop(&self) -> Result<Vec<FabricPart>, FleetError> {
        let stopped = join_all(self.fleet.workers.iter().map(|w| w.call(Call::FabricStop))).await;
        self.parts(stopped)
    }

    fn parts(&self, replies: Vec<Result<Reply, FleetError>>) -> Result<Vec<FabricPart>, FleetError> {
        let mut out = Vec::new();
        for (i, (w, r)) in self.fleet.workers.iter().zip(replies).enumerate() {
            match r? {
                Reply::FabricUp { counts } => out.push(FabricPart {
                    worker: w.name.clone(),
                    switches: self.assignment.iter().filter(|&&p| p == i).count(),
                    counts,
                }),
                other => return Err(FleetError::Partition(format!("the fabric answered {other:?}"))),
            }
        }
        Ok(out)
    }

    fn owner(&self, dpid: u64) -> Result<&Worker, FleetError> {
        self.owner
            .get(&dpid)
            .map(|&w| &self.fleet.workers[w])
            .ok_or_else(|| FleetError::Partition(format!("no switch {dpid:#x} in the fabric")))
    }

    /// The ports wired to `at` (the far end of its link, if any).
    fn peer(&self, at: ctlbench::fabric::Attach) -> Option<ctlbench::fabric::Attach> {
        self.spec.links.iter().find_map(|&(a, b)| {
            if a == at {
                Some(b)
            } else if b == at {
                Some(a)
            } else {
                None
            }
        })
    }

    async fn port_down(&self, at: ctlbench::fabric::Attach) -> Result<(), FleetError> {
        let call = self.owner(at.0)?.call(Call::FabricPort { at, up: false });
        self.fleet.unless_lost(call).await.map(drop)
    }
}

impl ctlbench::topology_tests::Failures for SpreadFabric<'_> {
    type Error = FleetError;

    fn spec(&self) -> &ctlbench::fabric::Spec {
        &self.spec
    }

    async fn link_down(&self, a: ctlbench::fabric::Attach) -> Result<(), FleetError> {
        let b = self
            .peer(a)
            .ok_or_else(|| FleetError::Partition(format!("no link at {a:?}")))?;
        let (x, y) = futures::join!(self.port_down(a), self.port_down(b));
        x.and(y)
    }

    async fn switch_off(&self, dpid: u64) -> Result<(), FleetError> {
        let off = self.owner(dpid)?.call(Call::FabricSwitchOff { dpid });
        self.fleet.unless_lost(off).await?;
        // Its neighbours on other workers (those on its own went down with it).
        let mine = self.owner.get(&dpid).copied();
        let far: Vec<ctlbench::fabric::Attach> = self
            .spec
            .links
            .iter()
            .filter_map(|&(a, b)| match (a.0 == dpid, b.0 == dpid) {
                (true, _) => Some(b),
                (_, true) => Some(a),
                _ => None,
            })
            .filter(|p| self.owner.get(&p.0).copied() != mine)
            .collect();
        for r in join_all(far.into_iter().map(|p| self.port_down(p))).await {
            r?;
        }
        Ok(())
    }

    async fn last_probe_ns(&self) -> Result<u64, FleetError> {
        let counts = join_all(self.fleet.workers.iter().map(|w| w.call(Call::FabricCount)));
        let counts = self.fleet.unless_lost(async { Ok(counts.await) }).await?;
        let mut latest = 0u64;
        for (w, r) in self.fleet.workers.iter().zip(counts) {
            if let Reply::FabricUp { counts } = r? {
                let last_lldp_out_ns = counts.last_lldp_out_ns;
                if last_lldp_out_ns > 0 {
                    // On our clock: the worker's minus its offset.
                    let offset_ns = w.clock.map_or(0.0, |c| c.offset_us * 1e3) as i64;
                    latest = latest.max((last_lldp_out_ns as i64 - offset_ns).max(0) as u64);
                }
            }
        }
        Ok(latest)
    }
}

/// One worker's part of an emulated fabric, as it reported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FabricPart {
    pub worker: String,
    pub switches: usize,
    #[serde(flatten)]
    pub counts: proto::FabricCounts,
}

/// A cluster of sdnlab's controller running on the workers
/// ([`Fleet::cluster_up`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SpreadCluster {
    /// The worker running its etcd, the etcd's client URLs and version.
    pub etcd_worker: String,
    pub endpoints: Vec<String>,
    pub etcd_version: String,
    pub members: Vec<SpreadMember>,
}

/// One member of a [`SpreadCluster`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct SpreadMember {
    pub name: String,
    /// The worker it runs on.
    pub worker: String,
    pub openflow: std::net::SocketAddr,
    pub rest: std::net::SocketAddr,
}

/// The workers of an inventory, connected.
pub struct Fleet {
    pub workers: Vec<Worker>,
    pub inventory: Inventory,
}

impl Fleet {
    /// Connects to every worker (side by side); fails naming the first
    /// that cannot be reached or refuses us.
    pub async fn connect(inv: &Inventory) -> Result<Fleet, FleetError> {
        let tls = crate::creds::coordinator_config(&inv.credentials)?;
        let jobs = inv
            .workers
            .iter()
            .map(|(name, addr)| Worker::connect(name, *addr, inv, tls.clone()));
        let mut workers = Vec::new();
        for r in join_all(jobs).await {
            workers.push(r?);
        }
        Ok(Fleet {
            workers,
            inventory: inv.clone(),
        })
    }

    /// Waits until some worker is lost; the error names it.
    pub async fn first_lost(&self) -> FleetError {
        let waits = self.workers.iter().map(|w| {
            let mut lost = w.lost.clone();
            Box::pin(async move {
                let _ = lost.wait_for(|why| why.is_some()).await;
                FleetError::Lost {
                    worker: w.name.clone(),
                    message: w.lost().unwrap_or_else(|| "the connection closed".into()),
                }
            })
        });
        futures::future::select_all(waits).await.0
    }

    /// `f`, unless a worker is lost first (a call to one worker may wait
    /// on another's part: traffic through its tunnels).
    pub async fn unless_lost<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, FleetError>>,
    ) -> Result<T, FleetError> {
        tokio::select! {
            r = f => r,
            e = self.first_lost() => Err(e),
        }
    }

    /// A warning for each worker whose clock is known only loosely (its
    /// offset's uncertainty above `CLOCK_LOOSE_US`): figures that compare
    /// instants taken on two machines (one-way delays) are not comparable
    /// across it; a worker whose clock could not be read at all, likewise.
    pub fn clock_warnings(&self) -> Vec<String> {
        self.workers
            .iter()
            .filter_map(|w| match w.clock {
                None => Some(format!(
                    "worker {}: its clock could not be read; instants taken there are not comparable with others",
                    w.name
                )),
                Some(c) if c.uncertainty_us > CLOCK_LOOSE_US => Some(format!(
                    "worker {}: its clock is known within {:.0} us only (offset {:.0} us): one-way figures across machines are not comparable to better than that",
                    w.name, c.uncertainty_us, c.offset_us
                )),
                Some(_) => None,
            })
            .collect()
    }

    /// Each worker's clock measured again: how far it moved against ours
    /// since it was first measured, for meta.json, and a warning for each
    /// that moved by more than the two measurements' uncertainty (the
    /// offsets used all run long were off by up to that by its end).
    pub async fn clock_drift(&self) -> Result<(serde_json::Value, Vec<String>), FleetError> {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        for w in &self.workers {
            let (now, _) = w.measure_clock().await?;
            let secs = w.clock_at.elapsed().as_secs_f64();
            let (Some(then), Some(now)) = (w.clock, now) else {
                out.push(serde_json::json!({ "worker": w.name, "moved_us": null }));
                continue;
            };
            let moved = now.offset_us - then.offset_us;
            let bound = now.uncertainty_us + then.uncertainty_us;
            out.push(serde_json::json!({
                "worker": w.name, "moved_us": moved, "within_us": bound, "over_s": secs,
                "us_per_s": moved / secs.max(1e-9),
            }));
            if moved.abs() > bound {
                warnings.push(format!(
                    "worker {}: its clock moved {moved:.0} us against ours in {secs:.0} s (more than the {bound:.0} us its offset is known within): one-way figures late in the run are off by up to that",
                    w.name
                ));
            }
        }
        Ok((serde_json::Value::Array(out), warnings))
    }

    /// The worker the inventory names `name`, or whose host calls itself
    /// that: its index.
    pub fn worker_named(&self, name: &str) -> Option<usize> {
        self.workers
            .iter()
            .position(|w| w.name == name)
            .or_else(|| self.workers.iter().position(|w| w.host == name))
    }

    /// Interfaces `ifaces` on worker `w`, as they are there; an error
    /// names one missing or down.
    pub async fn tester_ports(&self, w: usize, ifaces: &[String]) -> Result<Vec<netlab::kernel::PortInfo>, FleetError> {
        let call = self.workers[w].call(Call::TesterPorts {
            ifaces: ifaces.to_vec(),
        });
        match self.unless_lost(call).await? {
            Reply::TesterPorts { ports } => Ok(ports),
            other => Err(FleetError::Partition(format!("tester-ports answered {other:?}"))),
        }
    }

    /// One trial of test frames between two workers' interfaces (the ports
    /// of a switch under test between their machines): `rcv`'s interface
    /// counts, `spec` is sent from `gen`'s (its `ifname`), then the count
    /// ends once `quiet` has passed without a frame (at most `at_most`).
    /// The receiver takes the two clocks' offset off every latency; also
    /// returned: how well that offset is known, µs (0 on one worker).
    pub async fn tester_trial(
        &self,
        gen: usize,
        rcv: (usize, &str),
        method: traffic::run::RecvMethod,
        spec: &traffic::run::GenSpec,
        quiet: Duration,
        at_most: Duration,
    ) -> Result<(traffic::run::GenReport, traffic::run::RecvReport, f64), FleetError> {
        let (rw, iface) = rcv;
        let (ahead_ns, uncertainty_us) = if gen == rw {
            (0, 0.0)
        } else {
            match (self.workers[gen].clock, self.workers[rw].clock) {
                (Some(g), Some(r)) => (
                    ((r.offset_us - g.offset_us) * 1e3) as i64,
                    g.uncertainty_us + r.uncertainty_us,
                ),
                _ => (0, f64::INFINITY),
            }
        };
        let (sender, receiver) = (&self.workers[gen], &self.workers[rw]);
        let run = async {
            receiver
                .call(Call::TesterListen {
                    iface: iface.to_string(),
                    method,
                    clock_ahead_ns: ahead_ns,
                })
                .await?;
            let sent = sender.call(Call::TesterSend { spec: spec.clone() }).await;
            // The count ends even when the sender failed (nothing is left counting).
            let received = receiver
                .call(Call::TesterFinish {
                    iface: iface.to_string(),
                    quiet_ms: quiet.as_millis() as u32,
                    at_most_ms: at_most.as_millis() as u32,
                })
                .await?;
            let Reply::FlowSent { report: sent } = sent? else {
                return Err(FleetError::Partition("tester-send answered out of turn".into()));
            };
            let Reply::TesterReceived {
                report: mut received,
                seen,
                blocks,
            } = received
            else {
                return Err(FleetError::Partition("tester-finish answered out of turn".into()));
            };
            let unpack = |t: &str| {
                crate::shard::unpack_words(t).map_err(|source| FleetError::Unpack {
                    worker: receiver.name.clone(),
                    source,
                })
            };
            received.set_index(unpack(&seen)?, unpack(&blocks)?);
            Ok((sent, *received, uncertainty_us))
        };
        self.unless_lost(run).await
    }

    /// Each worker's clock offset, for meta.json.
    pub fn clocks(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.workers
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "worker": w.name, "address": w.addr.to_string(), "host": w.host,
                        "clock_offset_us": w.clock.map(|c| c.offset_us),
                        "clock_uncertainty_us": w.clock.map(|c| c.uncertainty_us),
                        "clock_via": w.clock_via,
                    })
                })
                .collect(),
        )
    }

    /// The control session capacity test `cfg` with its sessions shared
    /// out over the workers ([`crate::shard::split_sessions`]), all opening
    /// at once. When one shard ends because the controller failed, the
    /// others are told to stop; every shard holds its sessions until all
    /// have ended, so the sum is what the controller held at once.
    /// `on_progress` sees the total held as the shards report it. Returns
    /// the merged result and each worker's own.
    pub async fn sessions(
        &self,
        cfg: &ctlbench::capacity::CapacityConfig,
        mut on_progress: impl FnMut(usize),
    ) -> Result<
        (
            ctlbench::capacity::CapacityResult,
            Vec<(String, ctlbench::capacity::CapacityResult)>,
        ),
        FleetError,
    > {
        let configs = crate::shard::split_sessions(cfg, self.workers.len());
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Reply)>();
        let mut active = Vec::new();
        let mut calls = Vec::new();
        for (i, (w, c)) in self.workers.iter().zip(&configs).enumerate() {
            if c.max_sessions == 0 {
                continue;
            }
            active.push(i);
            let tx = tx.clone();
            calls.push(w.call_with(Call::Sessions { config: c.clone() }, move |r| {
                let _ = tx.send((i, r));
            }));
        }
        drop(tx);
        let run = async {
            let all = join_all(calls);
            tokio::pin!(all);
            let mut held = vec![0usize; self.workers.len()];
            let mut ended: Vec<Option<ctlbench::capacity::CapacityResult>> = vec![None; self.workers.len()];
            let mut stopped = false;
            let mut finished = None;
            while active.iter().any(|&i| ended[i].is_none()) {
                tokio::select! {
                    Some((i, r)) = rx.recv() => match r {
                        Reply::SessionsProgress { held: n, .. } => {
                            held[i] = n;
                            on_progress(held.iter().sum());
                        }
                        Reply::SessionsEnded { result } => {
                            held[i] = result.held;
                            on_progress(held.iter().sum());
                            if result.ended_by != "limit" && !stopped {
                                // The controller failed: the test is over everywhere.
                                stopped = true;
                                let stops = active
                                    .iter()
                                    .filter(|&&j| j != i && ended[j].is_none())
                                    .map(|&j| self.workers[j].call(Call::SessionsStop { release: false }));
                                for r in join_all(stops).await {
                                    r?;
                                }
                            }
                            ended[i] = Some(*result);
                        }
                        _ => {}
                    },
                    r = &mut all, if finished.is_none() => {
                        // Every call ended before all said how: one failed.
                        for r in r {
                            r?;
                        }
                        finished = Some(());
                    }
                }
            }
            // Every shard holds its count: now they may let go.
            for r in join_all(
                active
                    .iter()
                    .map(|&i| self.workers[i].call(Call::SessionsStop { release: true })),
            )
            .await
            {
                r?;
            }
            if finished.is_none() {
                for r in all.await {
                    r?;
                }
            }
            let shards: Vec<(String, ctlbench::capacity::CapacityResult)> = active
                .iter()
                .map(|&i| (self.workers[i].name.clone(), ended[i].take().expect("ended")))
                .collect();
            Ok((crate::shard::merge_sessions(&shards), shards))
        };
        self.unless_lost(run).await
    }

    /// Runs the controller benchmark `cfg` with its switches shared out over
    /// the workers ([`crate::shard`]), all starting together; `on_loop`
    /// sees each loop merged over the shards once every shard has measured
    /// it. Returns the merged report and each shard's own.
    pub async fn ctl(
        &self,
        cfg: &ctlbench::Config,
        mut on_loop: impl FnMut(&ctlbench::LoopResult),
    ) -> Result<(ctlbench::Report, Vec<crate::shard::Shard>), FleetError> {
        let configs = crate::shard::split(cfg, self.workers.len());
        // Everyone starts a moment from now, each by its own clock.
        let start = clock::unix_ns() + 500_000_000;
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, ctlbench::LoopResult)>();
        let calls = self
            .workers
            .iter()
            .zip(&configs)
            .enumerate()
            .filter(|(_, (_, c))| c.switches > 0)
            .map(|(i, (w, c))| {
                let offset_ns = w.clock.map(|o| (o.offset_us * 1e3) as i64).unwrap_or(0);
                let tx = tx.clone();
                async move {
                    let r = w
                        .call_with(
                            Call::Ctl {
                                config: c.clone(),
                                start_unix_ns: start.saturating_add_signed(offset_ns),
                            },
                            |reply| {
                                if let Reply::CtlLoop { result } = reply {
                                    let _ = tx.send((i, result));
                                }
                            },
                        )
                        .await;
                    (i, r)
                }
            });
        let calls: Vec<_> = calls.collect();
        drop(tx);
        let shards = configs.iter().filter(|c| c.switches > 0).count();
        let mut merger = crate::shard::LoopMerger::new(shards);
        let all = join_all(calls);
        tokio::pin!(all);
        let results = loop {
            tokio::select! {
                Some((i, l)) = rx.recv() => {
                    if let Some(merged) = merger.add(i, l) {
                        on_loop(&merged);
                    }
                }
                r = &mut all => break r,
                e = self.first_lost() => return Err(e),
            }
        };
        while let Ok((i, l)) = rx.try_recv() {
            if let Some(merged) = merger.add(i, l) {
                on_loop(&merged);
            }
        }
        let mut out = Vec::new();
        for (i, r) in results {
            match r? {
                Reply::Ctl {
                    mut report,
                    rtt_histogram,
                } => {
                    report.rtt_histogram =
                        Some(
                            crate::shard::decode_histogram(&rtt_histogram).map_err(|source| FleetError::Unpack {
                                worker: self.workers[i].name.clone(),
                                source,
                            })?,
                        );
                    out.push(crate::shard::Shard {
                        worker: self.workers[i].name.clone(),
                        switches: configs[i].switches,
                        first_dpid: configs[i].first_dpid,
                        report: *report,
                    })
                }
                other => {
                    return Err(FleetError::Failed {
                        worker: self.workers[i].name.clone(),
                        message: format!("answered the benchmark with {other:?}"),
                    })
                }
            }
        }
        Ok((crate::shard::merge(cfg, &out), out))
    }

    /// The driver's own ceiling for `cfg` over the workers: each measures
    /// its shard of the load against the reference null responder on its
    /// machine, all at once (as the shards will run), and the figures add
    /// up (the round trip is the slowest worker's median). None when the
    /// load cannot be answered by the reference responder.
    pub async fn ceiling(&self, cfg: &ctlbench::Config) -> Result<Option<ctlbench::ceiling::Ceiling>, FleetError> {
        let configs = crate::shard::split(cfg, self.workers.len());
        let calls = self
            .workers
            .iter()
            .zip(&configs)
            .filter(|(_, c)| c.switches > 0)
            .map(|(w, c)| async move { (w, w.call(Call::Ceiling { config: c.clone() }).await) });
        let results = self.unless_lost(async { Ok(join_all(calls).await) }).await?;
        let mut sum = ctlbench::ceiling::Ceiling {
            responses_per_s: 0.0,
            matched_per_s: 0.0,
            rtt_us_p50: 0.0,
        };
        for (w, r) in results {
            match r? {
                Reply::Ceiling { ceiling: None } => return Ok(None),
                Reply::Ceiling { ceiling: Some(c) } => {
                    sum.responses_per_s += c.responses_per_s;
                    sum.matched_per_s += c.matched_per_s;
                    sum.rtt_us_p50 = sum.rtt_us_p50.max(c.rtt_us_p50);
                }
                other => {
                    return Err(FleetError::Failed {
                        worker: w.name.clone(),
                        message: format!("answered the ceiling with {other:?}"),
                    })
                }
            }
        }
        Ok(Some(sum))
    }

    /// Starts a cluster of `n` members of sdnlab's controller running
    /// `app` (named `name`; `slave_packet_ins` as `sdnlab controller
    /// --slave-packet-ins all` says) on the workers: its etcd of
    /// `etcd_members` on the first worker, member cI on worker (I - 1)
    /// modulo their number, each on its worker's address. What started is
    /// stopped again if any part fails; `cluster_down` stops it all.
    pub async fn cluster_up(
        &self,
        n: usize,
        etcd_members: usize,
        app: &str,
        name: &str,
        slave_packet_ins: bool,
    ) -> Result<SpreadCluster, FleetError> {
        // What started before a failure is stopped with it.
        let up = async {
            let first = self
                .workers
                .first()
                .ok_or_else(|| FleetError::Partition("a cluster on workers needs one worker at least".into()))?;
            let failed = |w: &Worker, other: Reply| FleetError::Failed {
                worker: w.name.clone(),
                message: format!("answered with {other:?}"),
            };
            let (endpoints, etcd_version) = match self
                .unless_lost(first.call(Call::EtcdUp { members: etcd_members }))
                .await?
            {
                Reply::EtcdUp { endpoints, version } => (endpoints, version),
                other => return Err(failed(first, other)),
            };
            // One after another: each member's claims settle as it joins.
            let mut members = Vec::new();
            for i in 1..=n {
                let w = &self.workers[(i - 1) % self.workers.len()];
                let member = format!("c{i}");
                let call = Call::MemberUp {
                    endpoints: endpoints.clone(),
                    cluster: name.to_string(),
                    member: member.clone(),
                    app: app.to_string(),
                    slave_packet_ins,
                };
                match self.unless_lost(w.call(call)).await? {
                    Reply::MemberUp { openflow, rest } => members.push(SpreadMember {
                        name: member,
                        worker: w.name.clone(),
                        openflow,
                        rest,
                    }),
                    other => return Err(failed(w, other)),
                }
            }
            Ok(SpreadCluster {
                etcd_worker: first.name.clone(),
                endpoints,
                etcd_version,
                members,
            })
        };
        let r = up.await;
        if r.is_err() {
            let _ = self.cluster_down().await;
        }
        r
    }

    /// Every worker stops the cluster members and the etcd it runs.
    pub async fn cluster_down(&self) -> Result<(), FleetError> {
        for r in join_all(self.workers.iter().map(|w| w.call(Call::ClusterDown))).await {
            r?;
        }
        Ok(())
    }

    /// Brings `topo` up spread over the workers.
    pub async fn net_up(
        &self,
        topo: &Topology,
        kind: SwitchKind,
        controller: Option<String>,
    ) -> Result<SpreadNet<'_>, FleetError> {
        let assignment = partition::assign(topo, self.workers.len());
        let underlay = Underlay {
            addresses: self.workers.iter().map(|w| *w.addr.ip()).collect(),
            vni_base: self.inventory.vni_base,
            port: self.inventory.vxlan_port,
            mtu: self.inventory.underlay_mtu,
        };
        let parts = partition::parts(topo, &assignment, &underlay)?;
        let calls = self.workers.iter().zip(&parts).map(|(w, part)| {
            w.call(Call::NetUp {
                topology: topo.clone(),
                part: part.clone(),
                kind,
                controller: controller.clone(),
            })
        });
        let results = self.unless_lost(async { Ok(join_all(calls).await) }).await?;
        let mut runs = Vec::new();
        let mut first_error = None;
        for r in results {
            match r {
                Ok(Reply::NetUp { run, .. }) => runs.push(run),
                Ok(other) => {
                    first_error = first_error.or(Some(FleetError::Partition(format!("net-up answered {other:?}"))))
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let Some(e) = first_error {
            // What did come up goes down again.
            let _ = join_all(self.workers.iter().map(|w| w.call(Call::Down))).await;
            return Err(e);
        }
        let host_worker = topo
            .hosts
            .iter()
            .map(|h| {
                let w = parts
                    .iter()
                    .position(|p| p.nodes.contains(&h.name))
                    .expect("every host placed");
                (h.name.clone(), (h.ip, w))
            })
            .collect();
        Ok(SpreadNet {
            fleet: self,
            parts,
            runs,
            cut: partition::cut(topo, &assignment),
            hosts: host_worker,
        })
    }
}

/// A topology up over a fleet.
pub struct SpreadNet<'a> {
    fleet: &'a Fleet,
    /// Each worker's part.
    pub parts: Vec<Part>,
    /// Each worker's netlab run id.
    pub runs: Vec<String>,
    /// Links carried between workers.
    pub cut: usize,
    /// Each host's address and worker.
    pub hosts: HashMap<String, (Ipv4Addr, usize)>,
}

impl SpreadNet<'_> {
    /// Every host pings every other, `count` times.
    pub async fn ping_all(&self, count: u32) -> Result<Vec<PingResult>, FleetError> {
        let mut targets: Vec<(String, Ipv4Addr)> = self.hosts.iter().map(|(n, (ip, _))| (n.clone(), *ip)).collect();
        targets.sort();
        let calls = self.fleet.workers.iter().map(|w| {
            w.call(Call::Ping {
                targets: targets.clone(),
                count,
            })
        });
        let mut out = Vec::new();
        for r in self.fleet.unless_lost(async { Ok(join_all(calls).await) }).await? {
            match r? {
                Reply::Ping { results } => out.extend(results),
                other => return Err(FleetError::Partition(format!("ping answered {other:?}"))),
            }
        }
        Ok(out)
    }

    /// iperf3 (TCP) from host `client` to host `server`, wherever they are.
    pub async fn iperf(&self, client: &str, server: &str, seconds: u32) -> Result<IperfResult, FleetError> {
        let ((_, cw), (sip, sw)) = (self.find(client)?, self.find(server)?);
        let workers = &self.fleet.workers;
        self.fleet
            .unless_lost(workers[sw].call(Call::IperfServer { host: server.into() }))
            .await?;
        let reply = self
            .fleet
            .unless_lost(workers[cw].call(Call::Iperf {
                client: client.into(),
                server_ip: sip,
                seconds,
            }))
            .await?;
        match reply {
            Reply::Iperf { result } => Ok(result),
            other => Err(FleetError::Partition(format!("iperf answered {other:?}"))),
        }
    }

    /// Runs `flows` at once between hosts wherever they are: every
    /// receiver listening first (on its host's worker), then every sender
    /// from one moment, each worker starting by its own clock. Each
    /// receiver takes the two workers' clock offset off its latencies;
    /// the result says how well that offset is known. `on_interval` sees
    /// each flow's intervals (by index in `flows`) as they arrive.
    pub async fn flows(
        &self,
        flows: &[netlab::flow::Flow],
        interval_ms: u32,
        mut on_interval: impl FnMut(usize, &traffic::run::Interval),
    ) -> Result<Vec<netlab::flow::FlowResult>, FleetError> {
        let workers = &self.fleet.workers;
        let worker = |h: &str| self.find(h).map(|(_, w)| w);
        let clock = |w: usize| {
            workers[w].clock.unwrap_or(Offset {
                offset_us: 0.0,
                uncertainty_us: f64::INFINITY,
                exchanges: 0,
            })
        };
        let ns = |us: f64| (us * 1e3) as i64;
        let mut ends = Vec::new();
        for f in flows {
            ends.push((worker(&f.from.host)?, worker(&f.to.host)?));
        }
        // Receivers count until the senders' planned end; a sender that
        // starts later only makes its receiver wait for the frames to stop.
        let planned = clock::unix_ns() + 1_000_000_000;
        let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Reply)>();
        let receive = flows
            .iter()
            .zip(&ends)
            .enumerate()
            .map(|(i, (f, &(sw, rw)))| {
                let tx = tx.clone();
                let ahead = if sw == rw {
                    0
                } else {
                    ns(clock(rw).offset_us - clock(sw).offset_us)
                };
                let until = (planned as i64 + ns(clock(rw).offset_us)) as u64 + (f.seconds * 1e9) as u64;
                workers[rw].call_with(
                    Call::FlowReceive {
                        flow: f.clone(),
                        clock_ahead_ns: ahead,
                        until_unix_ns: until,
                        interval_ms,
                    },
                    move |r| {
                        let _ = tx.send((i, r));
                    },
                )
            })
            .collect::<Vec<_>>();
        drop(tx);
        let run = async {
            let received = join_all(receive);
            tokio::pin!(received);
            let mut received_all = None;
            let mut listening = 0;
            while listening < flows.len() {
                tokio::select! {
                    Some((i, r)) = rx.recv() => match r {
                        Reply::FlowListening => listening += 1,
                        Reply::FlowInterval { interval } => on_interval(i, &interval),
                        _ => {}
                    },
                    r = &mut received => {
                        received_all = Some(r);
                        break;
                    }
                }
            }
            if let Some(r) = received_all {
                // A receiver ended before all were listening: it failed.
                for r in r {
                    r?;
                }
                return Err(FleetError::Partition(
                    "a flow's receiver ended before it counted".into(),
                ));
            }
            let start = planned.max(clock::unix_ns() + 100_000_000);
            let send = join_all(flows.iter().zip(&ends).map(|(f, &(sw, _))| {
                workers[sw].call(Call::FlowSend {
                    flow: f.clone(),
                    start_unix_ns: (start as i64 + ns(clock(sw).offset_us)) as u64,
                })
            }));
            tokio::pin!(send);
            let mut sent_all = None;
            while sent_all.is_none() || received_all.is_none() {
                tokio::select! {
                    Some((i, r)) = rx.recv() => {
                        if let Reply::FlowInterval { interval } = r {
                            on_interval(i, &interval);
                        }
                    }
                    r = &mut send, if sent_all.is_none() => sent_all = Some(r),
                    r = &mut received, if received_all.is_none() => received_all = Some(r),
                }
            }
            while let Ok((i, r)) = rx.try_recv() {
                if let Reply::FlowInterval { interval } = r {
                    on_interval(i, &interval);
                }
            }
            let (sent_all, received_all) = (sent_all.unwrap_or_default(), received_all.unwrap_or_default());
            let mut out = Vec::new();
            for ((f, &(sw, rw)), (s, r)) in flows.iter().zip(&ends).zip(sent_all.into_iter().zip(received_all)) {
                let (Reply::FlowSent { report: sent }, Reply::FlowReceived { report: received }) = (s?, r?) else {
                    return Err(FleetError::Partition("a flow's ends answered out of turn".into()));
                };
                out.push(netlab::flow::FlowResult {
                    flow: f.clone(),
                    sent,
                    received: *received,
                    clock_uncertainty_us: if sw == rw {
                        0.0
                    } else {
                        clock(sw).uncertainty_us + clock(rw).uncertainty_us
                    },
                });
            }
            Ok(out)
        };
        self.fleet.unless_lost(run).await
    }

    /// Starts nginx on host `host`, on its worker (port 80, until the
    /// network comes down).
    pub async fn http_server(&self, host: &str) -> Result<(), FleetError> {
        let (_, w) = self.find(host)?;
        self.fleet
            .unless_lost(self.fleet.workers[w].call(Call::HttpServer { host: host.into() }))
            .await
            .map(drop)
    }

    /// Open-loop HTTP load from host `client` to host `server` (whose
    /// nginx is started), on the client's worker; `on_batch` sees the
    /// requests done in each interval as they come back (every request,
    /// once).
    pub async fn http_load(
        &self,
        client: &str,
        server: &str,
        rate: f64,
        seconds: f64,
        interval_ms: u32,
        mut on_batch: impl FnMut(Vec<lb::load::Request>),
    ) -> Result<(), FleetError> {
        let ((_, cw), (sip, _)) = (self.find(client)?, self.find(server)?);
        let call = self.fleet.workers[cw].call_with(
            Call::HttpLoad {
                client: client.into(),
                server_ip: sip,
                rate,
                seconds,
                interval_ms,
            },
            |r| {
                if let Reply::HttpRequests { requests } = r {
                    on_batch(requests);
                }
            },
        );
        match self.fleet.unless_lost(call).await? {
            Reply::Done => Ok(()),
            other => Err(FleetError::Partition(format!("http-load answered {other:?}"))),
        }
    }

    /// A host's address and worker.
    fn find(&self, h: &str) -> Result<(Ipv4Addr, usize), FleetError> {
        self.hosts
            .get(h)
            .copied()
            .ok_or_else(|| FleetError::Partition(format!("no host '{h}' in the topology")))
    }

    /// The worker a host is on.
    pub fn worker_of(&self, host: &str) -> Option<&str> {
        self.hosts.get(host).map(|(_, w)| self.fleet.workers[*w].name.as_str())
    }

    /// Every worker tears its part down.
    pub async fn down(self) -> Result<(), FleetError> {
        for r in join_all(self.fleet.workers.iter().map(|w| w.call(Call::Down))).await {
            r?;
        }
        Ok(())
    }
}
