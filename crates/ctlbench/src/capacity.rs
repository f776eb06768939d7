//! RFC 8456 Control Session Capacity: open sessions (each a switch that
//! completes its handshake and answers echoes) one after another until the
//! controller refuses one, stalls, drops earlier ones or stops answering
//! them, or until the limit asked for; report how many were held and how
//! it failed. The paper's controllers failed in each of these ways.
//! Against a cluster (`members`), each switch opens a session to every
//! member, and is held only while all of them are.

use crate::switch::{self, Identity};
use ofwire::{v10, v13, Body, Framer, Message, OFP10_VERSION};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The datapath id of the first session (the others follow).
pub const FIRST_DPID: u64 = 0x5e55_0000_0000_0001;
/// Ports each session's switch reports.
pub const PORTS: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CapacityConfig {
    pub target: SocketAddr,
    pub version: u8,
    /// The datapath id of the first session (the others follow).
    #[serde(default = "first_dpid")]
    pub first_dpid: u64,
    /// Stop here if the controller has not failed before.
    pub max_sessions: usize,
    /// Probe every held session with an echo after this many new ones.
    pub check_every: usize,
    pub timeout: Duration,
    /// A cluster's members: each switch connects to every one (empty:
    /// to `target` alone).
    #[serde(default)]
    pub members: Vec<SocketAddr>,
}

fn first_dpid() -> u64 {
    FIRST_DPID
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CapacityResult {
    /// Switches whose sessions (one per member against a cluster) were
    /// open and answering when the test ended.
    pub held: usize,
    /// "limit" (max_sessions reached), "refused", "connect timed out",
    /// "closed during handshake", "handshake timed out", "closed earlier
    /// sessions", "stopped answering echo", "our open-file limit",
    /// "stopped" (told to: another shard of the test ended it).
    pub ended_by: String,
    pub detail: String,
    pub seconds: f64,
    pub sessions_per_s: f64,
    /// (sessions, seconds since start) at each check.
    pub progress: Vec<(usize, f64)>,
}

#[derive(Default)]
struct Shared {
    closed: AtomicU64,
    /// The switches one of whose sessions closed.
    closed_switches: std::sync::Mutex<std::collections::HashSet<u64>>,
    echo_replies: AtomicU64,
}

/// One held session: answers the controller, and sends an echo at each probe.
async fn hold(
    mut s: TcpStream,
    mut framer: Framer,
    id: Identity,
    version: u8,
    shared: Arc<Shared>,
    mut probe: watch::Receiver<u64>,
) {
    let mut buf = vec![0u8; 2048];
    let mut probe_xid = 0u32;
    loop {
        tokio::select! {
            r = s.read(&mut buf) => {
                let n = match r { Ok(0) | Err(_) => break, Ok(n) => n };
                framer.push(&buf[..n]);
                let mut out = Vec::new();
                while let Ok(Some(raw)) = framer.next_message() {
                    let Ok(m) = ofwire::decode(raw) else { continue };
                    let is_reply = matches!(m.body, Body::V10(v10::Body::EchoReply(_)) | Body::V13(v13::Body::EchoReply(_)));
                    if is_reply && m.xid == probe_xid {
                        shared.echo_replies.fetch_add(1, Ordering::Relaxed);
                    } else {
                        for r in switch::replies(id, &m) {
                            let _ = r.encode(&mut out);
                        }
                    }
                }
                if !out.is_empty() && s.write_all(&out).await.is_err() {
                    break;
                }
            }
            changed = probe.changed() => {
                if changed.is_err() {
                    return; // the test is over
                }
                probe_xid = 0xec00_0000 | (*probe.borrow() as u32 & 0xffff);
                let body = if version == OFP10_VERSION {
                    Body::V10(v10::Body::EchoRequest(ofwire::Bytes(vec![])))
                } else {
                    Body::V13(v13::Body::EchoRequest(ofwire::Bytes(vec![])))
                };
                let m = Message { version, xid: probe_xid, body };
                if s.write_all(&m.to_bytes().expect("echo")).await.is_err() {
                    break;
                }
            }
        }
    }
    shared
        .closed_switches
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.datapath_id);
    shared.closed.fetch_add(1, Ordering::Relaxed);
}

/// Runs the test; the sessions are closed when it returns.
pub async fn run(cfg: CapacityConfig, on_progress: impl FnMut(usize, f64)) -> CapacityResult {
    let (_never, stop) = watch::channel(false);
    open(cfg, on_progress, stop).await.result
}

/// Sessions opened by [`open`], still held (answering the controller)
/// until this is dropped.
pub struct Held {
    pub result: CapacityResult,
    _probe: watch::Sender<u64>,
}

/// Opens sessions as `run` does, also ending ("stopped") once `stop` turns
/// true (checked before each new session), and leaves them open: the
/// shards of one test on several machines are counted while all of them
/// hold theirs.
pub async fn open(cfg: CapacityConfig, mut on_progress: impl FnMut(usize, f64), stop: watch::Receiver<bool>) -> Held {
    let shared = Arc::new(Shared::default());
    let (probe_tx, probe_rx) = watch::channel(0u64);
    let targets = if cfg.members.is_empty() {
        vec![cfg.target]
    } else {
        cfg.members.clone()
    };
    let start = Instant::now();
    let mut held = 0usize;
    let mut progress = Vec::new();
    let mut probes = 0u64;
    let (ended_by, detail): (String, String) = loop {
        if held >= cfg.max_sessions {
            break ("limit".into(), format!("{} sessions asked for", cfg.max_sessions));
        }
        if *stop.borrow() {
            break ("stopped".into(), "told to stop: the test ended elsewhere".into());
        }
        let id = Identity {
            datapath_id: cfg.first_dpid + held as u64,
            ports: PORTS,
        };
        let mut failed = None;
        for (m, &target) in targets.iter().enumerate() {
            let to = if targets.len() > 1 {
                format!(" (to member {} at {target})", m + 1)
            } else {
                String::new()
            };
            let connect = tokio::time::timeout(cfg.timeout, TcpStream::connect(target)).await;
            let mut s = match connect {
                Err(_) => {
                    failed = Some((
                        "connect timed out".into(),
                        format!("no answer to connect within {:?}{to}", cfg.timeout),
                    ));
                    break;
                }
                Ok(Err(e)) if matches!(e.raw_os_error(), Some(23 | 24)) => {
                    failed = Some(("our open-file limit".into(), e.to_string()));
                    break;
                }
                Ok(Err(e)) => {
                    failed = Some(("refused".into(), format!("{e}{to}")));
                    break;
                }
                Ok(Ok(s)) => s,
            };
            let _ = s.set_nodelay(true);
            let mut framer = Framer::default();
            match tokio::time::timeout(cfg.timeout, crate::handshake(&mut s, &mut framer, cfg.version, id)).await {
                Err(_) => {
                    failed = Some((
                        "handshake timed out".into(),
                        format!(
                            "session {} got no FEATURES_REQUEST within {:?}{to}",
                            held + 1,
                            cfg.timeout
                        ),
                    ));
                    break;
                }
                Ok(Err(e)) => {
                    failed = Some((
                        "closed during handshake".into(),
                        format!("session {}{to}: {e}", held + 1),
                    ));
                    break;
                }
                Ok(Ok(())) => {}
            }
            tokio::spawn(hold(s, framer, id, cfg.version, shared.clone(), probe_rx.clone()));
        }
        if let Some(f) = failed {
            break f;
        }
        held += 1;
        let closed = shared.closed.load(Ordering::Relaxed) as usize;
        if closed > 0 {
            break (
                "closed earlier sessions".into(),
                format!("{closed} earlier session(s) closed by the controller"),
            );
        }
        if held.is_multiple_of(cfg.check_every.max(1)) {
            // Every held session must still answer.
            probes += 1;
            let want = shared.echo_replies.load(Ordering::Relaxed) + (held * targets.len()) as u64;
            let _ = probe_tx.send(probes);
            let t = Instant::now();
            while shared.echo_replies.load(Ordering::Relaxed) < want && t.elapsed() < cfg.timeout {
                tokio::time::sleep(Duration::from_millis(5)).await;
                if shared.closed.load(Ordering::Relaxed) > 0 {
                    break;
                }
            }
            let closed = shared.closed.load(Ordering::Relaxed) as usize;
            if closed > 0 {
                break (
                    "closed earlier sessions".into(),
                    format!("{closed} session(s) closed by the controller"),
                );
            }
            let missing = want.saturating_sub(shared.echo_replies.load(Ordering::Relaxed));
            if missing > 0 {
                break (
                    "stopped answering echo".into(),
                    format!(
                        "{missing} of {} sessions got no ECHO_REPLY within {:?}",
                        held * targets.len(),
                        cfg.timeout
                    ),
                );
            }
            let secs = start.elapsed().as_secs_f64();
            progress.push((held, secs));
            on_progress(held, secs);
        }
    };
    // Sessions refused at the end may have been the last straw for the others.
    let closed = shared.closed_switches.lock().unwrap_or_else(|e| e.into_inner()).len();
    let held_now = held.saturating_sub(closed);
    let seconds = start.elapsed().as_secs_f64();
    Held {
        result: CapacityResult {
            held: held_now,
            ended_by,
            detail,
            seconds,
            sessions_per_s: held as f64 / seconds.max(1e-9),
            progress,
        },
        _probe: probe_tx,
    }
}
