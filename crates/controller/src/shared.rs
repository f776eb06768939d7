//! What a controller's switch drivers share with each other, with the
//! applications and with the other threads: the registry of connected
//! switches and the commands it carries, the controller's statistics, the
//! standby state, and the applications' `Context`.

use ofwire::{v13, Body, Message};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Controller-wide counters (touched per session, never per message).
#[derive(Default, Debug)]
pub struct Stats {
    pub sessions_active: AtomicU64,
    pub sessions_total: AtomicU64,
    pub switches_up: AtomicU64,
    pub refused: AtomicU64,
    pub replaced_duplicates: AtomicU64,
    /// Messages of sessions that have ended (live sessions report their own).
    pub messages_in: AtomicU64,
    pub messages_out: AtomicU64,
    pub errors_sent: AtomicU64,
    /// Messages the apps wrote that would change a switch, held back while standby.
    pub standby_held_back: AtomicU64,
}

/// High availability: a standby controller watches the active one and
/// takes over when it stops answering. While standby, every OpenFlow 1.3
/// switch is asked to make it a SLAVE that still gets PACKET_IN and
/// PORT_STATUS (SET_ASYNC), so the apps learn the topology (from the
/// active controller's LLDP probes) and the hosts as the active one does;
/// what they write that would change a switch is held back. On takeover
/// each switch is asked to make it MASTER with a newer generation id.
/// (OpenFlow 1.0 has no roles: its switches get nothing from a standby.)
#[derive(Debug, Default)]
pub struct Ha {
    pub active: std::sync::atomic::AtomicBool,
    pub generation: AtomicU64,
}

impl Ha {
    pub fn is_standby(&self) -> bool {
        !self.active.load(Ordering::Acquire)
    }

    /// The role request (and asynchronous configuration) for a switch that
    /// just connected or for takeover.
    pub fn role_messages(&self) -> Vec<v13::Body> {
        let generation_id = self.generation.load(Ordering::Acquire);
        if self.is_standby() {
            vec![
                v13::Body::RoleRequest(v13::Role {
                    role: v13::ControllerRole::Slave,
                    generation_id,
                }),
                v13::Body::SetAsync(v13::AsyncConfig {
                    packet_in_mask: [0b111, 0b111],
                    port_status_mask: [0b111, 0b111],
                    flow_removed_mask: [0b1111, 0],
                }),
            ]
        } else {
            vec![v13::Body::RoleRequest(v13::Role {
                role: v13::ControllerRole::Master,
                generation_id,
            })]
        }
    }
}

/// What a request from another thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Every part of the reply with the request's xid (multipart/stats replies).
    Reply,
    /// A barrier sent after the request: the request is in effect.
    Barrier,
}

pub type Answer = Result<Vec<Message>, RequestError>;

/// Why a request to a switch (the REST API's, the cluster's) got no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    #[error("the switch is not ready")]
    NotReady,
    /// A standby holds back what would change a switch.
    #[error("this controller is the standby: ask the active one")]
    Standby,
    /// So does a cluster member that is not the switch's master.
    #[error("this cluster member is not the switch's master: ask its master (GET /cluster)")]
    NotMaster,
    #[error("not sent: {0}")]
    NotSent(ofwire::EncodeError),
    /// The switch's OFPT_ERROR, as the decoder prints it.
    #[error("the switch answered with an error: {0}")]
    Refused(String),
    #[error("the session ended")]
    SessionEnded,
    #[error("no switch {0:#x}")]
    NoSwitch(u64),
    #[error("switch {0:#x} went away")]
    WentAway(u64),
    #[error("switch {0:#x} did not answer within 5 s")]
    Timeout(u64),
}

/// Work for a switch's session from another thread.
pub enum Command {
    /// Send `body` and answer with what `wait` says.
    Request {
        body: Body,
        wait: Wait,
        reply: oneshot::Sender<Answer>,
    },
    /// Send `body`, expect nothing (apps steering other switches).
    Send(Body),
    /// Report the session's counters.
    Counters(oneshot::Sender<ofconn::Counters>),
    /// Cluster mode: this member's role for the switch, from the election
    /// (`cluster::member`). Until the first one a session writes nothing
    /// that changes the switch (it keeps it for a MASTER role).
    Role { master: bool, generation_id: u64 },
}

/// Cluster mode: what the sessions tell the member's etcd side.
pub trait Membership: Send + Sync {
    /// A switch finished its handshake with this member.
    fn switch_up(&self, dpid: u64);
    /// The switch's session with this member ended.
    fn switch_down(&self, dpid: u64);
    /// As a SLAVE, ask for every PACKET_IN and PORT_STATUS (SET_ASYNC).
    fn slave_packet_ins(&self) -> bool {
        true
    }
}

/// A new connection for a worker; `tls` when it came in on a TLS listener.
pub(crate) struct Accepted {
    pub(crate) stream: std::net::TcpStream,
    pub(crate) tls: bool,
    pub(crate) session: u64,
    pub(crate) admission: u64,
}

/// What reaches a worker from other threads: a new connection, a command
/// or an eviction for one of its sessions, or the end.
pub(crate) enum Mail {
    Accept(Accepted),
    Command(u64, Command),
    /// Close the session: its datapath id was announced again elsewhere,
    /// or the controller was killed.
    Evict(u64),
    /// Close the session if it is still in its handshake: the connection
    /// limit was reached and it is the oldest half-open one.
    Kill(u64),
    Stop,
}

/// A worker's mailbox: mail is queued under a lock and the worker woken
/// through its epoll set (an eventfd) when the queue was empty. The worker
/// sleeps in one place, epoll, with nothing registered per session or per
/// message; other threads reach a session through its `Outbox`.
pub struct Mailbox {
    /// The mail, and whether the worker has ended (mail then is dropped
    /// at once: a connection handed to an ended worker is closed, not
    /// left open unserved).
    mail: Mutex<(Vec<Mail>, bool)>,
    waker: Option<mio::Waker>,
}

impl Mailbox {
    pub(crate) fn new(waker: mio::Waker) -> Mailbox {
        Mailbox {
            mail: Mutex::new((Vec::new(), false)),
            waker: Some(waker),
        }
    }

    /// A mailbox no worker reads (drivers run by hand: benches, tests).
    pub fn detached() -> Arc<Mailbox> {
        Arc::new(Mailbox {
            mail: Mutex::new((Vec::new(), false)),
            waker: None,
        })
    }

    pub(crate) fn post(&self, m: Mail) {
        let mut q = self.mail.lock().unwrap_or_else(|p| p.into_inner());
        if q.1 {
            return;
        }
        let was_empty = q.0.is_empty();
        q.0.push(m);
        drop(q);
        if was_empty {
            if let Some(w) = &self.waker {
                let _ = w.wake();
            }
        }
    }

    /// The commands posted to a detached mailbox so far, in order (for
    /// whoever runs the drivers by hand; evictions are dropped).
    pub fn take_commands(&self) -> Vec<Command> {
        let mut mail = Vec::new();
        self.take(&mut mail);
        mail.into_iter()
            .filter_map(|m| match m {
                Mail::Command(_, c) => Some(c),
                _ => None,
            })
            .collect()
    }

    /// Everything posted so far, in order (`into` is left with it).
    pub(crate) fn take(&self, into: &mut Vec<Mail>) {
        let mut q = self.mail.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::swap(&mut q.0, into);
    }

    /// The worker has ended: what is queued and what comes later is dropped.
    pub(crate) fn close(&self) {
        let mut q = self.mail.lock().unwrap_or_else(|p| p.into_inner());
        q.1 = true;
        let dropped = std::mem::take(&mut q.0);
        drop(q);
        drop(dropped);
    }
}

/// How other threads reach one session: its id and its worker's mailbox.
#[derive(Clone)]
pub struct Outbox {
    pub session: u64,
    pub(crate) mailbox: Arc<Mailbox>,
}

impl Outbox {
    pub fn new(session: u64, mailbox: Arc<Mailbox>) -> Outbox {
        Outbox { session, mailbox }
    }

    /// Hands `cmd` to the session (dropped, and its reply with it, if the
    /// session has ended meanwhile).
    pub fn send(&self, cmd: Command) {
        self.mailbox.post(Mail::Command(self.session, cmd));
    }

    pub(crate) fn evict(&self) {
        self.mailbox.post(Mail::Evict(self.session));
    }

    pub(crate) fn kill(&self) {
        self.mailbox.post(Mail::Kill(self.session));
    }
}

/// A switch whose handshake completed, as other threads see it.
pub(crate) struct Registered {
    pub(crate) session: u64,
    pub(crate) info: ofconn::SwitchInfo,
    pub(crate) outbox: Outbox,
}

/// The switches that completed their handshake, by datapath id; the only
/// state shared between workers (touched when a switch comes and goes, and
/// by requests from other threads, never per PACKET_IN).
#[derive(Clone, Default)]
pub struct Registry(pub(crate) Arc<Mutex<HashMap<u64, Registered>>>);

impl Registry {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Registered>> {
        // A panicking app must not take every other switch down with it.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every registered session's outbox.
    pub(crate) fn outboxes(&self) -> Vec<Outbox> {
        self.lock().values().map(|r| r.outbox.clone()).collect()
    }

    pub fn datapath_ids(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.lock().keys().copied().collect();
        v.sort();
        v
    }

    pub fn infos(&self) -> Vec<ofconn::SwitchInfo> {
        let mut v: Vec<_> = self.lock().values().map(|r| r.info.clone()).collect();
        v.sort_by_key(|i| i.datapath_id);
        v
    }

    pub fn commands(&self, dpid: u64) -> Option<Outbox> {
        self.lock().get(&dpid).map(|r| r.outbox.clone())
    }

    /// Hands a command to switch `dpid`'s session; false when there is no such switch.
    pub fn command(&self, dpid: u64, cmd: Command) -> bool {
        match self.commands(dpid) {
            Some(o) => {
                o.send(cmd);
                true
            }
            None => false,
        }
    }
}

/// What applications can reach beyond their own switch.
#[derive(Clone, Default)]
pub struct Context {
    pub registry: Registry,
}

impl Context {
    /// Sends `body` to switch `dpid` (through its session, on its worker);
    /// false when that switch is not connected. The body must be in the
    /// switch's version (`version_of`).
    pub fn send(&self, dpid: u64, body: Body) -> bool {
        self.registry.command(dpid, Command::Send(body))
    }

    /// Sends `body` to switch `dpid` and waits (5 s at most) for what `wait` says.
    pub async fn request(&self, dpid: u64, body: Body, wait: Wait) -> Result<Vec<Message>, RequestError> {
        let (reply, rx) = oneshot::channel();
        if !self.registry.command(dpid, Command::Request { body, wait, reply }) {
            return Err(RequestError::NoSwitch(dpid));
        }
        match tokio::time::timeout(std::time::Duration::from_secs(5), rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(RequestError::WentAway(dpid)),
            Err(_) => Err(RequestError::Timeout(dpid)),
        }
    }

    pub fn version_of(&self, dpid: u64) -> Option<u8> {
        self.registry.lock().get(&dpid).map(|r| r.info.version)
    }
}
