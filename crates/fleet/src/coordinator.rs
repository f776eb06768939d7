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
use crate::proto::{
    self, Call, CtlCall, FabricCall, NetCall, Reply, Request, Response, TesterCall, VERSION, WORKER_NAME,
};
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

mod ctl;
mod fabric;
mod net;
mod tester;
pub use ctl::*;
pub use fabric::*;
pub use net::*;

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
}

impl Fleet {
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
}
