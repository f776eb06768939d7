//! One switch's controller side without I/O: the OpenFlow session, the
//! application instances, commands from other threads and the switch's
//! entry in the registry. The runtime feeds it bytes read from a socket
//! and writes out what it transmits; a simulation (tests/fakenet) feeds it
//! bytes from an emulated switch. Both see the same behaviour.

use crate::app::{AppFactory, SwitchApp, Verdict};
use crate::shared::Registered;
use crate::shared::{Answer, Command, Context, Ha, Membership, Outbox, RequestError, Stats, Wait};
use ofconn::{CloseReason, Event, Session};
use ofwire::{v10, v13, Body, Message};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// OpenFlow message types that change a switch (a SLAVE may not send them):
/// PACKET_OUT, FLOW_MOD and PORT_MOD in 1.0; PACKET_OUT, FLOW_MOD,
/// GROUP_MOD, PORT_MOD, TABLE_MOD and METER_MOD in 1.3.
fn changes_switch(version: u8, msg_type: u8) -> bool {
    if version == ofwire::OFP10_VERSION {
        matches!(msg_type, 13..=15)
    } else {
        matches!(msg_type, 13..=17 | 29)
    }
}

/// Removes the messages that change a switch from `buf` (whole messages,
/// framed by their headers), appending them to `keep` when given; returns
/// how many went.
fn hold_back_changes(buf: &mut Vec<u8>, mut keep: Option<&mut Vec<u8>>) -> u64 {
    let mut kept = 0;
    let mut at = 0;
    let mut dropped = 0;
    while at + 8 <= buf.len() {
        let len = (u16::from_be_bytes([buf[at + 2], buf[at + 3]]) as usize).max(8);
        let end = (at + len).min(buf.len());
        if changes_switch(buf[at], buf[at + 1]) {
            dropped += 1;
            if let Some(k) = keep.as_deref_mut() {
                k.extend_from_slice(&buf[at..end]);
            }
        } else {
            buf.copy_within(at..end, kept);
            kept += end - at;
        }
        at = end;
    }
    buf.copy_within(at.., kept);
    kept += buf.len() - at;
    buf.truncate(kept);
    dropped
}

/// What every switch's driver of one controller shares.
#[derive(Clone)]
pub struct Environment {
    pub apps: Vec<AppFactory>,
    pub session: ofconn::Config,
    pub ctx: Context,
    pub stats: Arc<Stats>,
    /// Log sessions and malformed messages to stderr.
    pub verbose: bool,
    /// Set when this controller is (or was) a standby.
    pub ha: Option<Arc<Ha>>,
    /// Set when this controller is a cluster member.
    pub membership: Option<Arc<dyn Membership>>,
}

impl Environment {
    /// `apps` with `session`'s settings, alone (no standby, no cluster),
    /// with counters of its own and quiet.
    pub fn new(apps: Vec<AppFactory>, session: ofconn::Config) -> Environment {
        Environment {
            apps,
            session,
            ctx: Context::default(),
            stats: Arc::new(Stats::default()),
            verbose: false,
            ha: None,
            membership: None,
        }
    }
}

/// A cluster member's role for one switch, as its session knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClusterRole {
    /// Not in cluster mode.
    Off,
    /// Not elected yet: what would change the switch is kept back.
    Pending,
    Master,
    /// What would change the switch is dropped (counted as held back).
    Slave,
}

/// At most this much is kept back for a switch whose election is pending
/// (the apps' first rules); beyond it, messages are dropped and counted.
const DEFERRED_MAX: usize = 4 << 20;

/// A command in flight inside a session.
struct Pending {
    /// The xid whose answer completes it (the request's, or the barrier's).
    done_xid: u32,
    /// The request's own xid (an ERROR with it fails the command).
    request_xid: u32,
    wait: Wait,
    got: Vec<Message>,
    reply: oneshot::Sender<Answer>,
}

/// One switch's controller side.
pub struct Driver {
    pub sess: Session,
    apps: Vec<Box<dyn SwitchApp>>,
    ctx: Context,
    stats: Arc<Stats>,
    id: u64,
    verbose: bool,
    /// How other threads reach this session (kept in the registry).
    outbox: Outbox,
    dpid: Option<u64>,
    reason: Option<CloseReason>,
    pending: Vec<Pending>,
    ha: Option<Arc<Ha>>,
    membership: Option<Arc<dyn Membership>>,
    role: ClusterRole,
    /// What changes the switch, kept while the election is pending.
    deferred: Vec<u8>,
}

fn dispatch_packet_in(apps: &mut [Box<dyn SwitchApp>], sw: &mut Session, pi: &ofwire::hot::PacketInView) {
    for app in apps.iter_mut() {
        if app.packet_in(sw, pi) == Verdict::Done {
            break;
        }
    }
}

impl Driver {
    /// A new session (our HELLO queued) with fresh app instances. Commands
    /// posted through `outbox` must be given to `on_command`.
    pub fn new(id: u64, env: &Environment, outbox: Outbox, now: Instant) -> Driver {
        env.stats.sessions_active.fetch_add(1, Ordering::Relaxed);
        env.stats.sessions_total.fetch_add(1, Ordering::Relaxed);
        Driver {
            sess: Session::new(env.session.clone(), now),
            apps: env.apps.iter().map(|f| f(&env.ctx)).collect(),
            ctx: env.ctx.clone(),
            stats: env.stats.clone(),
            id,
            verbose: env.verbose,
            outbox,
            dpid: None,
            reason: None,
            pending: Vec::new(),
            ha: env.ha.clone(),
            membership: env.membership.clone(),
            role: if env.membership.is_some() {
                ClusterRole::Pending
            } else {
                ClusterRole::Off
            },
            deferred: Vec::new(),
        }
    }

    pub fn datapath_id(&self) -> Option<u64> {
        self.dpid
    }

    pub fn is_closed(&self) -> bool {
        self.sess.is_closed()
    }

    /// Bytes to write to the switch; the caller drains what it wrote.
    pub fn transmit(&mut self) -> &mut Vec<u8> {
        self.sess.transmit()
    }

    /// Takes the bytes to send; `give_back` the buffer once written. A
    /// standby holds back what would change the switch.
    pub fn take_transmit(&mut self) -> Vec<u8> {
        let mut out = self.sess.take_transmit();
        self.filter(&mut out);
        out
    }

    /// What this session may send of `out`: all of it, unless a standby or
    /// a cluster member that is not the switch's master.
    fn filter(&mut self, out: &mut Vec<u8>) {
        let n = match self.role {
            ClusterRole::Master => 0,
            ClusterRole::Off if !self.ha.as_ref().is_some_and(|h| h.is_standby()) => 0,
            ClusterRole::Pending if self.deferred.len() < DEFERRED_MAX => {
                hold_back_changes(out, Some(&mut self.deferred));
                0
            }
            _ => hold_back_changes(out, None),
        };
        if n > 0 {
            self.stats.standby_held_back.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A standby, or a cluster member that is not (yet) the switch's master.
    fn standby(&self) -> bool {
        match self.role {
            ClusterRole::Off => self.ha.as_ref().is_some_and(|h| h.is_standby()),
            r => r != ClusterRole::Master,
        }
    }

    /// Cluster mode: the election's word for this switch. The ROLE_REQUEST
    /// goes first (OpenFlow 1.3; 1.0 has no roles and only the local
    /// holding back applies), then, for a new master, what was kept back.
    fn set_role(&mut self, master: bool, generation_id: u64) {
        if self.role == ClusterRole::Off {
            return;
        }
        // What is queued was written under the old role.
        let mut queued = std::mem::take(self.sess.transmit());
        self.filter(&mut queued);
        self.sess.transmit().extend_from_slice(&queued);
        if self.sess.version() == ofwire::OFP13_VERSION {
            let role = if master {
                v13::ControllerRole::Master
            } else {
                v13::ControllerRole::Slave
            };
            self.sess
                .send13(v13::Body::RoleRequest(v13::Role { role, generation_id }));
            let asks = self.membership.as_ref().is_none_or(|m| m.slave_packet_ins());
            if !master && asks {
                // A slave still hears PACKET_IN and PORT_STATUS, so its apps
                // know the network when it becomes master.
                self.sess.send13(v13::Body::SetAsync(v13::AsyncConfig {
                    packet_in_mask: [0b111, 0b111],
                    port_status_mask: [0b111, 0b111],
                    flow_removed_mask: [0b1111, 0],
                }));
            }
        }
        let kept = std::mem::take(&mut self.deferred);
        if master {
            self.role = ClusterRole::Master;
            self.sess.transmit().extend_from_slice(&kept);
        } else {
            self.role = ClusterRole::Slave;
            let n = hold_back_changes(&mut kept.clone(), None);
            self.stats.standby_held_back.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn give_back(&mut self, buf: Vec<u8>) {
        self.sess.give_back(buf)
    }

    /// Bytes read from the switch.
    pub fn on_bytes(&mut self, data: &[u8], now: Instant) {
        let apps = &mut self.apps;
        self.sess
            .on_bytes(data, now, &mut |s, pi| dispatch_packet_in(apps, s, pi));
        // Applications see `switch_up` before the PACKET_INs that came with the handshake.
        while self.sess.held() {
            self.handle_events();
            let apps = &mut self.apps;
            self.sess.resume(now, &mut |s, pi| dispatch_packet_in(apps, s, pi));
        }
        self.handle_events();
    }

    /// See [`ofconn::Session::set_budget`].
    pub fn set_budget(&mut self, n: usize) {
        self.sess.set_budget(n);
    }

    /// Messages of the switch's handled so far.
    #[cfg(test)]
    pub(crate) fn handled(&self) -> u64 {
        self.sess.counters.rx_messages
    }

    /// Messages read but not yet handled wait (call `work`).
    pub fn backlog(&self) -> bool {
        self.sess.backlog()
    }

    /// Handles the next budget's worth of the messages already read.
    pub fn work(&mut self, now: Instant) {
        let apps = &mut self.apps;
        self.sess.work(now, &mut |s, pi| dispatch_packet_in(apps, s, pi));
        while self.sess.held() {
            self.handle_events();
            let apps = &mut self.apps;
            self.sess.resume(now, &mut |s, pi| dispatch_packet_in(apps, s, pi));
        }
        self.handle_events();
    }

    pub fn on_eof(&mut self) {
        self.sess.on_eof();
        self.handle_events();
    }

    pub fn close(&mut self, reason: CloseReason) {
        self.sess.close(reason);
        self.handle_events();
    }

    /// Runs the session's and the applications' timers; returns when to call again.
    pub fn on_timer(&mut self, now: Instant) -> Option<Instant> {
        let mut next = self.sess.on_timer(now);
        if self.sess.phase() == ofconn::Phase::Ready {
            for app in self.apps.iter_mut() {
                if let Some(t) = app.on_timer(&mut self.sess, now) {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
        }
        self.handle_events();
        next
    }

    pub fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Counters(reply) => {
                let _ = reply.send(self.sess.counters);
            }
            Command::Send(body) => {
                if self.sess.phase() == ofconn::Phase::Ready {
                    let _ = self.send_body(body);
                }
            }
            Command::Request { body, wait, reply } => self.start_request(body, wait, reply),
            Command::Role { master, generation_id } => {
                if self.sess.phase() == ofconn::Phase::Ready {
                    self.set_role(master, generation_id);
                }
            }
        }
    }

    /// Encodes `body` straight into the session's transmit buffer, in the
    /// session's version (another version's is refused); returns its xid.
    fn send_body(&mut self, body: Body) -> Result<u32, ofwire::EncodeError> {
        self.sess.send(body)
    }

    /// Sends a request's message (and a barrier when asked) and remembers it.
    fn start_request(&mut self, body: Body, wait: Wait, reply: oneshot::Sender<Answer>) {
        if self.sess.phase() != ofconn::Phase::Ready {
            let _ = reply.send(Err(RequestError::NotReady));
            return;
        }
        // Held back by its type, before anything is encoded.
        if self.standby() && changes_switch(self.sess.version(), body.msg_type()) {
            let why = if self.role == ClusterRole::Off {
                RequestError::Standby
            } else {
                RequestError::NotMaster
            };
            let _ = reply.send(Err(why));
            return;
        }
        let xid = match self.send_body(body) {
            Ok(x) => x,
            Err(e) => {
                let _ = reply.send(Err(RequestError::NotSent(e)));
                return;
            }
        };
        let done_xid = match wait {
            Wait::Reply => xid,
            Wait::Barrier if self.sess.version() == ofwire::OFP10_VERSION => {
                self.sess.send10(v10::Body::BarrierRequest)
            }
            Wait::Barrier => self.sess.send13(v13::Body::BarrierRequest),
        };
        self.pending.push(Pending {
            done_xid,
            request_xid: xid,
            wait,
            got: Vec::new(),
            reply,
        });
    }

    /// Gives a message to the request waiting for it, if any; true when it did.
    fn complete_request(&mut self, m: &Message) -> bool {
        let Some(i) = self
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
        let p = &mut self.pending[i];
        let finished = is_error || m.xid == p.done_xid && (p.wait == Wait::Barrier || !more);
        if p.wait == Wait::Reply || is_error {
            p.got.push(m.clone());
        }
        if finished {
            let p = self.pending.remove(i);
            let r = if is_error {
                Err(RequestError::Refused(
                    p.got.last().map(|m| m.to_string()).unwrap_or_default(),
                ))
            } else {
                Ok(p.got)
            };
            let _ = p.reply.send(r);
        }
        true
    }

    fn handle_events(&mut self) {
        let id = self.id;
        while let Some(ev) = self.sess.poll_event() {
            match ev {
                Event::Up(info) => {
                    let d = info.datapath_id;
                    let entry = Registered {
                        session: id,
                        info: info.clone(),
                        outbox: self.outbox.clone(),
                    };
                    let old = self.ctx.registry.lock().insert(d, entry);
                    if let Some(old) = old {
                        // The switch reconnected: the older connection is stale.
                        old.outbox.evict();
                        self.stats.replaced_duplicates.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(
                            "controller: datapath {d:#x}: new session {id} replaces session {}",
                            old.session
                        );
                    }
                    self.stats.switches_up.fetch_add(1, Ordering::Relaxed);
                    self.dpid = Some(d);
                    if self.verbose {
                        tracing::info!(
                            "controller: switch {d:#018x} up (OpenFlow {:#04x}, {} ports)",
                            info.version,
                            info.ports.len()
                        );
                    }
                    if let Some(ha) = &self.ha {
                        if info.version == ofwire::OFP13_VERSION {
                            for body in ha.role_messages() {
                                self.sess.send13(body);
                            }
                        } else if ha.is_standby() {
                            tracing::info!(
                                "controller: switch {d:#x} speaks OpenFlow 1.0, which has no roles: as standby we only watch"
                            );
                        }
                    }
                    for app in self.apps.iter_mut() {
                        app.switch_up(&mut self.sess, &info);
                    }
                    if let Some(m) = &self.membership {
                        m.switch_up(d);
                    }
                }
                Event::Message(m) => {
                    if self.complete_request(&m) {
                        continue;
                    }
                    for app in self.apps.iter_mut() {
                        app.message(&mut self.sess, &m);
                    }
                }
                Event::Malformed(e) => {
                    if self.verbose {
                        tracing::info!(
                            "controller: session {id}: malformed message answered with {}: {}",
                            e.code,
                            e.what
                        );
                    }
                }
                Event::Closed(r) => self.reason = Some(r),
            }
        }
    }

    /// The session is over (the socket is closed): answers what is pending,
    /// leaves the registry, tells the apps, and adds the session's counters
    /// to the controller's. Returns why it ended.
    pub fn finish(mut self) -> Option<CloseReason> {
        self.handle_events();
        for p in self.pending.drain(..) {
            let _ = p.reply.send(Err(RequestError::SessionEnded));
        }
        if let Some(d) = self.dpid {
            let mut reg = self.ctx.registry.lock();
            let owned = reg.get(&d).map(|r| r.session) == Some(self.id);
            if owned {
                reg.remove(&d);
            }
            drop(reg);
            // A session replaced by a newer one for the same datapath id does
            // not take the switch down: the switch is still there.
            if owned {
                for app in self.apps.iter_mut() {
                    app.switch_down(d);
                }
                if let Some(m) = &self.membership {
                    m.switch_down(d);
                }
            }
            self.stats.switches_up.fetch_sub(1, Ordering::Relaxed);
        }
        let c = self.sess.counters;
        self.stats.messages_in.fetch_add(c.rx_messages, Ordering::Relaxed);
        self.stats.messages_out.fetch_add(c.tx_messages, Ordering::Relaxed);
        self.stats.errors_sent.fetch_add(c.rx_errors_sent, Ordering::Relaxed);
        self.stats.sessions_active.fetch_sub(1, Ordering::Relaxed);
        if self.verbose {
            tracing::info!(
                "controller: session {} (dpid {:?}) ended: {:?}",
                self.id,
                self.dpid,
                self.reason
            );
        }
        self.reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standby holds a request back by its body's type, before encoding:
    /// the same verdict the encoded header's type gets, in both versions.
    #[test]
    fn a_requests_body_is_held_back_by_the_type_it_goes_on_the_wire_as() {
        use crate::flows::{FlowFilter, FlowSpec};
        let spec: FlowSpec = serde_json::from_str(r#"{"actions": [{"output": 1}]}"#).unwrap();
        for version in [ofwire::OFP10_VERSION, ofwire::OFP13_VERSION] {
            let (barrier, features) = if version == ofwire::OFP10_VERSION {
                (
                    Body::V10(v10::Body::BarrierRequest),
                    Body::V10(v10::Body::FeaturesRequest),
                )
            } else {
                (
                    Body::V13(v13::Body::BarrierRequest),
                    Body::V13(v13::Body::FeaturesRequest),
                )
            };
            let bodies = [
                (spec.add(version).unwrap(), true),
                (FlowFilter::default().delete(version).unwrap(), true),
                (barrier, false),
                (features, false),
            ];
            for (body, changes) in bodies {
                let wire = Message::new(version, 1, body.clone()).to_bytes().unwrap();
                assert_eq!(changes_switch(wire[0], wire[1]), changes, "{version} {body:?}");
                assert_eq!(changes_switch(version, body.msg_type()), changes, "{version} {body:?}");
            }
        }
    }

    #[test]
    fn a_standby_holds_back_only_what_changes_a_switch() {
        let mut buf = Vec::new();
        let msgs = [
            (ofwire::OFP13_VERSION, 14u8, 16usize), // FLOW_MOD
            (ofwire::OFP13_VERSION, 24, 24),        // ROLE_REQUEST
            (ofwire::OFP13_VERSION, 13, 10),        // PACKET_OUT
            (ofwire::OFP13_VERSION, 2, 12),         // ECHO_REQUEST
            (ofwire::OFP10_VERSION, 15, 8),         // PORT_MOD in 1.0
            (ofwire::OFP10_VERSION, 16, 8),         // STATS_REQUEST in 1.0
        ];
        for (v, t, len) in msgs {
            let mut m = vec![v, t, 0, len as u8, 0, 0, 0, t];
            m.resize(len, t);
            buf.extend_from_slice(&m);
        }
        assert_eq!(hold_back_changes(&mut buf, None), 3);
        let types: Vec<u8> = {
            let mut at = 0;
            let mut v = Vec::new();
            while at < buf.len() {
                v.push(buf[at + 1]);
                at += buf[at + 3] as usize;
            }
            v
        };
        assert_eq!(types, vec![24, 2, 16]);
        assert_eq!(buf.len(), 24 + 12 + 8);
    }

    #[test]
    fn a_pending_cluster_member_keeps_what_changes_a_switch_in_order() {
        let mut buf = Vec::new();
        for (t, len) in [(14u8, 16usize), (2, 8), (13, 10), (14, 12)] {
            let mut m = vec![ofwire::OFP13_VERSION, t, 0, len as u8, 0, 0, 0, t];
            m.resize(len, t);
            buf.extend_from_slice(&m);
        }
        let mut kept = Vec::new();
        assert_eq!(hold_back_changes(&mut buf, Some(&mut kept)), 3);
        assert_eq!(buf.len(), 8, "the ECHO_REQUEST goes out");
        let lens: Vec<u8> = {
            let mut at = 0;
            let mut v = Vec::new();
            while at < kept.len() {
                v.push(kept[at + 3]);
                at += kept[at + 3] as usize;
            }
            v
        };
        assert_eq!(lens, vec![16, 10, 12], "FLOW_MOD, PACKET_OUT, FLOW_MOD, in their order");
    }
}
