//! One switch's controller side without I/O: the OpenFlow session, the
//! application instances, commands from other threads and the switch's
//! entry in the registry. The runtime feeds it bytes read from a socket
//! and writes out what it transmits; a simulation (tests/fakenet) feeds it
//! bytes from an emulated switch. Both see the same behaviour.

use crate::app::{AppFactory, SwitchApp, Verdict};
use crate::shared::Registered;
pub use crate::shared::{Answer, Command, Context, Ha, Mailbox, Outbox, Registry, Stats, Wait};
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
/// framed by their headers); returns how many went.
fn hold_back_changes(buf: &mut Vec<u8>) -> u64 {
    let mut kept = 0;
    let mut at = 0;
    let mut dropped = 0;
    while at + 8 <= buf.len() {
        let len = (u16::from_be_bytes([buf[at + 2], buf[at + 3]]) as usize).max(8);
        let end = (at + len).min(buf.len());
        if changes_switch(buf[at], buf[at + 1]) {
            dropped += 1;
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
}

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
}

fn log(msg: impl std::fmt::Display) {
    eprintln!("controller: {msg}");
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
        if self.standby() {
            let n = hold_back_changes(&mut out);
            self.stats.standby_held_back.fetch_add(n, Ordering::Relaxed);
        }
        out
    }

    fn standby(&self) -> bool {
        self.ha.as_ref().is_some_and(|h| h.is_standby())
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
        }
    }

    /// Encodes `body` in the session's version; returns its xid.
    fn send_body(&mut self, body: Body) -> Result<u32, String> {
        let version = self.sess.version();
        let matches = match &body {
            Body::V10(_) => version == ofwire::OFP10_VERSION,
            Body::V13(_) => version == ofwire::OFP13_VERSION,
            _ => true,
        };
        if !matches {
            return Err(format!("message is not in the switch's version {version:#04x}"));
        }
        let xid = self.sess.xid();
        let msg = Message { version, xid, body };
        let mut bytes = Vec::new();
        msg.encode(&mut bytes).map_err(|e| e.to_string())?;
        self.sess.transmit().extend_from_slice(&bytes);
        Ok(xid)
    }

    /// Sends a request's message (and a barrier when asked) and remembers it.
    fn start_request(&mut self, body: Body, wait: Wait, reply: oneshot::Sender<Answer>) {
        if self.sess.phase() != ofconn::Phase::Ready {
            let _ = reply.send(Err("the switch is not ready".into()));
            return;
        }
        if self.standby() {
            let mut probe = Vec::new();
            let kind = Message::new(self.sess.version(), 0, body.clone()).encode(&mut probe);
            if kind.is_ok() && probe.len() >= 8 && changes_switch(probe[0], probe[1]) {
                let _ = reply.send(Err("this controller is the standby: ask the active one".into()));
                return;
            }
        }
        let xid = match self.send_body(body) {
            Ok(x) => x,
            Err(e) => {
                let _ = reply.send(Err(e));
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
                        log(format_args!(
                            "datapath {d:#x}: new session {id} replaces session {}",
                            old.session
                        ));
                    }
                    self.stats.switches_up.fetch_add(1, Ordering::Relaxed);
                    self.dpid = Some(d);
                    if self.verbose {
                        log(format_args!(
                            "switch {d:#018x} up (OpenFlow {:#04x}, {} ports)",
                            info.version,
                            info.ports.len()
                        ));
                    }
                    if let Some(ha) = &self.ha {
                        if info.version == ofwire::OFP13_VERSION {
                            for body in ha.role_messages() {
                                self.sess.send13(body);
                            }
                        } else if ha.is_standby() {
                            log(format_args!(
                                "switch {d:#x} speaks OpenFlow 1.0, which has no roles: as standby we only watch"
                            ));
                        }
                    }
                    for app in self.apps.iter_mut() {
                        app.switch_up(&mut self.sess, &info);
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
                        log(format_args!(
                            "session {id}: malformed message answered with {}: {}",
                            e.code, e.what
                        ));
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
            let _ = p.reply.send(Err("the session ended".into()));
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
            }
            self.stats.switches_up.fetch_sub(1, Ordering::Relaxed);
        }
        let c = self.sess.counters;
        self.stats.messages_in.fetch_add(c.rx_messages, Ordering::Relaxed);
        self.stats.messages_out.fetch_add(c.tx_messages, Ordering::Relaxed);
        self.stats.errors_sent.fetch_add(c.rx_errors_sent, Ordering::Relaxed);
        self.stats.sessions_active.fetch_sub(1, Ordering::Relaxed);
        if self.verbose {
            log(format_args!(
                "session {} (dpid {:?}) ended: {:?}",
                self.id, self.dpid, self.reason
            ));
        }
        self.reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(hold_back_changes(&mut buf), 3);
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
}
