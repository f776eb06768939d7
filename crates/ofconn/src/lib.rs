//! The controller side of one OpenFlow session, as a state machine with no
//! I/O and no clock (quinn-proto style): feed it bytes and the time, take
//! out bytes to send and events for the applications.
//!
//! It negotiates the version from the HELLOs (1.0 and 1.3 supported), runs
//! the handshake (FEATURES, port description on 1.3, SET_CONFIG), answers
//! ECHO_REQUESTs, sends its own echoes when the line is idle and declares the
//! peer dead when they go unanswered, and answers malformed input with the
//! OFPT_ERROR the wire library names, or closes the session when the byte
//! stream can no longer be trusted.

use ofwire::hot::PacketInView;
use ofwire::{v10, v13, Body, DecodeError, ErrorCode, ErrorMsg, Framer, Header, Hello, Message};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub mod admission;
pub mod blocking;

/// Since when the message at the front of a framer has waited for its
/// rest, after a batch of bytes was framed: None when no byte is pending;
/// `now` when the batch completed a message (the one now at the front
/// began since) or nothing was pending before; otherwise as it was. A
/// stream of whole messages never runs out of time; bytes trickled into one
/// message do. Used with a deadline by the controller's sessions and the
/// switch's.
pub fn unfinished_since<T: Copy>(was: Option<T>, pending: bool, completed: bool, now: T) -> Option<T> {
    match (pending, completed, was) {
        (false, _, _) => None,
        (true, true, _) | (true, false, None) => Some(now),
        (true, false, Some(t)) => Some(t),
    }
}

/// Session settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Wire versions we accept, e.g. `[0x01, 0x04]`.
    pub versions: Vec<u8>,
    /// Send an ECHO_REQUEST after this long without hearing from the switch.
    pub echo_interval: Duration,
    /// Declare the switch dead this long after an unanswered ECHO_REQUEST.
    pub echo_timeout: Duration,
    /// Close a session that has not finished its handshake in this time.
    pub handshake_timeout: Duration,
    /// Close a session that has begun a message and not finished it in
    /// this time (a peer trickling bytes keeps the echo quiet, not this).
    pub message_timeout: Duration,
    /// SET_CONFIG's miss_send_len (bytes of a table-miss packet sent to us).
    pub miss_send_len: u16,
    /// Largest message accepted from the switch.
    pub max_message: usize,
    /// Hand PACKET_INs over as decoded `Event::Message`s instead of to the
    /// zero-copy callback (for clients that are not on the hot path).
    pub packet_ins_as_events: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            versions: vec![ofwire::OFP10_VERSION, ofwire::OFP13_VERSION],
            echo_interval: Duration::from_secs(5),
            echo_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            message_timeout: Duration::from_secs(20),
            miss_send_len: 0xffff,
            max_message: 65535,
            packet_ins_as_events: false,
        }
    }
}

/// Where the session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    AwaitHello,
    AwaitFeatures,
    /// 1.3: waiting for the port-description multipart reply (possibly several parts).
    AwaitPortDesc,
    Ready,
    Closed,
}

/// A port as the handshake reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub port_no: u32,
    pub name: String,
    pub hw_addr: ofwire::MacAddr,
    /// OFPPS_LINK_DOWN not set.
    pub link_up: bool,
}

/// What the handshake learnt about the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchInfo {
    pub datapath_id: u64,
    pub version: u8,
    pub n_tables: u8,
    pub n_buffers: u32,
    pub ports: Vec<PortInfo>,
}

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    NoCommonVersion(String),
    MessageBeforeHello(String),
    HandshakeTimeout(Phase),
    EchoTimeout,
    /// A message begun and not finished within `message_timeout`.
    MessageTimeout,
    /// The byte stream cannot be split into messages any more.
    Unframeable(String),
    /// The application or the controller asked for it.
    Local(String),
    /// The switch closed the connection.
    PeerClosed,
}

/// What the session reports to the controller and its applications.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Handshake complete.
    Up(SwitchInfo),
    /// A message after the handshake that the session does not handle itself.
    Message(Message),
    /// An inbound message could not be decoded; an OFPT_ERROR went back.
    Malformed(DecodeError),
    Closed(CloseReason),
}

/// Counters kept per session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub rx_messages: u64,
    pub tx_messages: u64,
    pub rx_errors_sent: u64,
    pub echoes_sent: u64,
}

pub struct Session {
    cfg: Config,
    phase: Phase,
    version: u8,
    next_xid: u32,
    framer: Framer,
    out: Vec<u8>,
    events: VecDeque<Event>,
    started: Instant,
    last_rx: Instant,
    echo_sent: Option<(u32, Instant)>,
    /// Since when the message at the front of the framer has waited for
    /// its rest (None: nothing pending).
    partial_since: Option<Instant>,
    info: Option<SwitchInfo>,
    hold: bool,
    /// At most this many messages are handled per `on_bytes`/`work` call.
    budget: usize,
    /// The last call stopped at the budget: whole messages may be waiting.
    backlog: bool,
    pub counters: Counters,
}

impl Session {
    /// A new session; our HELLO is queued at once.
    pub fn new(cfg: Config, now: Instant) -> Session {
        let mut s = Session {
            // Both buffers start empty and grow with the traffic: an idle
            // session costs little, so tens of thousands fit in memory.
            framer: Framer::unallocated(cfg.max_message),
            cfg,
            phase: Phase::AwaitHello,
            version: 0,
            next_xid: 1,
            out: Vec::new(),
            events: VecDeque::new(),
            started: now,
            last_rx: now,
            echo_sent: None,
            partial_since: None,
            info: None,
            hold: false,
            budget: usize::MAX,
            backlog: false,
            counters: Counters::default(),
        };
        let top = *s.cfg.versions.iter().max().unwrap_or(&ofwire::OFP13_VERSION);
        let hello = Message::new(top, 0, Body::Hello(Hello::with_versions(&s.cfg.versions)));
        s.queue(&hello);
        s
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The negotiated wire version (0 before HELLO).
    pub fn version(&self) -> u8 {
        self.version
    }

    pub fn info(&self) -> Option<&SwitchInfo> {
        self.info.as_ref()
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Bytes to write to the switch; the caller drains what it wrote.
    pub fn transmit(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Takes the bytes to send (written by the session and by applications
    /// through `transmit`) and counts their messages; hand the buffer back
    /// with `give_back` once written, so its capacity is reused.
    pub fn take_transmit(&mut self) -> Vec<u8> {
        let out = std::mem::take(&mut self.out);
        let mut at = 0;
        while at + 4 <= out.len() {
            let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
            self.counters.tx_messages += 1;
            at += len.max(8);
        }
        out
    }

    pub fn give_back(&mut self, mut buf: Vec<u8>) {
        if self.out.is_empty() {
            buf.clear();
            self.out = buf;
        }
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// A fresh transaction id.
    pub fn xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    fn queue(&mut self, m: &Message) {
        // Our own messages are well-formed by construction; a failure here is a bug.
        m.encode(&mut self.out).expect("controller-built message encodes");
    }

    /// Sends `body`, encoded straight into the transmit buffer, in the
    /// negotiated version; returns its xid. A body of another version is
    /// refused and nothing is written: the one place a message of either
    /// version is checked against the session's (`send10`/`send13` are for
    /// callers that built the version they know the session speaks).
    pub fn send(&mut self, body: Body) -> Result<u32, ofwire::EncodeError> {
        let xid = self.xid();
        Message {
            version: self.version,
            xid,
            body,
        }
        .encode(&mut self.out)?;
        Ok(xid)
    }

    /// Sends a message in OpenFlow 1.0; returns its xid.
    pub fn send10(&mut self, body: v10::Body) -> u32 {
        let xid = self.xid();
        self.queue(&Message::v10(xid, body));
        xid
    }

    pub fn send13(&mut self, body: v13::Body) -> u32 {
        let xid = self.xid();
        self.queue(&Message::v13(xid, body));
        xid
    }

    /// Closes the session locally.
    pub fn close(&mut self, reason: CloseReason) {
        if self.phase != Phase::Closed {
            self.phase = Phase::Closed;
            self.events.push_back(Event::Closed(reason));
        }
    }

    /// Feeds bytes read from the switch. PACKET_INs are handed to `on_packet_in`
    /// as zero-copy views (the hot path, no event allocation); the callback
    /// gets the session to write replies into.
    pub fn on_bytes(&mut self, data: &[u8], now: Instant, on_packet_in: &mut dyn FnMut(&mut Session, &PacketInView)) {
        if self.phase == Phase::Closed {
            return;
        }
        self.last_rx = now;
        self.echo_sent = None;
        self.framer.push(data);
        self.process(now, on_packet_in);
    }

    /// True when the handshake just completed and messages that arrived with
    /// it wait until the caller has handled the `Up` event (so applications
    /// see `switch_up` before the switch's first PACKET_IN); call `resume`.
    pub fn held(&self) -> bool {
        self.hold
    }

    /// Handle at most `n` messages per call of `on_bytes`, `resume` or
    /// `work` (at least one; unbounded by default), so that a caller serving
    /// many sessions on one thread can take turns between them at message
    /// granularity: a switch that sends a flood waits in its own framer.
    pub fn set_budget(&mut self, n: usize) {
        self.budget = n.max(1);
    }

    /// The last call stopped at its budget: messages may be waiting (call `work`).
    pub fn backlog(&self) -> bool {
        self.backlog
    }

    /// Handles the next budget's worth of messages already read.
    pub fn work(&mut self, now: Instant, on_packet_in: &mut dyn FnMut(&mut Session, &PacketInView)) {
        self.process(now, on_packet_in);
    }

    /// Handles the messages held back after the handshake.
    pub fn resume(&mut self, now: Instant, on_packet_in: &mut dyn FnMut(&mut Session, &PacketInView)) {
        self.hold = false;
        self.process(now, on_packet_in);
    }

    fn process(&mut self, now: Instant, on_packet_in: &mut dyn FnMut(&mut Session, &PacketInView)) {
        // The framer is moved out while its messages are handled, so they can
        // be borrowed in place (no copy per message) while `self` is mutated.
        let max = self.cfg.max_message;
        let mut framer = std::mem::replace(&mut self.framer, Framer::unallocated(max));
        let mut completed = false;
        let mut handled = 0usize;
        self.backlog = false;
        while !self.hold && self.phase != Phase::Closed {
            if handled == self.budget {
                self.backlog = framer.pending() > 0;
                break;
            }
            match framer.next_message() {
                Ok(Some(m)) => {
                    completed = true;
                    handled += 1;
                    self.on_message(m, now, on_packet_in)
                }
                Ok(None) => break,
                Err(e) => self.close(CloseReason::Unframeable(e.to_string())),
            }
        }
        self.partial_since = unfinished_since(self.partial_since, framer.pending() > 0, completed, now);
        self.framer = framer;
    }

    /// The switch closed its end.
    pub fn on_eof(&mut self) {
        self.close(CloseReason::PeerClosed);
    }

    fn reply_error(&mut self, version: u8, xid: u32, e: &DecodeError, raw: &[u8]) {
        let err = ErrorMsg::for_decode_error(e, raw);
        let m = match version {
            ofwire::OFP10_VERSION => Message::v10(xid, v10::Body::Error(err)),
            _ => Message::v13(xid, v13::Body::Error(err)),
        };
        self.queue(&m);
        self.counters.rx_errors_sent += 1;
        self.events.push_back(Event::Malformed(e.clone()));
    }

    fn on_message(&mut self, raw: &[u8], now: Instant, on_packet_in: &mut dyn FnMut(&mut Session, &PacketInView)) {
        self.counters.rx_messages += 1;
        let h = Header::peek(raw).expect("framer yields whole messages");
        if self.phase == Phase::AwaitHello {
            return self.on_hello(raw, h);
        }
        // Hot path first: PACKET_IN of the negotiated version.
        if self.phase == Phase::Ready && h.version == self.version && h.msg_type == 10 && !self.cfg.packet_ins_as_events
        {
            match PacketInView::parse(raw) {
                Ok(pi) => return on_packet_in(self, &pi),
                Err(e) => return self.reply_error(self.version, h.xid, &e, raw),
            }
        }
        let msg = match ofwire::decode_in_session(raw, self.version) {
            Ok(m) => m,
            Err(e) => {
                // A version the session did not negotiate is answered in ours.
                return self.reply_error(self.version, h.xid, &e, raw);
            }
        };
        match &msg.body {
            Body::V10(v10::Body::EchoRequest(d)) => {
                let r = Message::v10(msg.xid, v10::Body::EchoReply(d.clone()));
                self.queue(&r);
            }
            Body::V13(v13::Body::EchoRequest(d)) => {
                let r = Message::v13(msg.xid, v13::Body::EchoReply(d.clone()));
                self.queue(&r);
            }
            Body::V10(v10::Body::EchoReply(_)) | Body::V13(v13::Body::EchoReply(_)) => {}
            Body::Hello(_) => {} // a repeated HELLO is harmless
            _ => match self.phase {
                Phase::AwaitFeatures | Phase::AwaitPortDesc => self.on_handshake_message(msg, now),
                _ => self.events.push_back(Event::Message(msg)),
            },
        }
    }

    fn on_hello(&mut self, raw: &[u8], h: Header) {
        if h.msg_type != 0 {
            let what = format!("{} arrived before HELLO", ofwire::msg_type_name(h.version, h.msg_type));
            let e = DecodeError::new(
                ErrorCode::HelloFailed(ofwire::error::HelloFailedCode::Eperm),
                what.clone(),
            );
            let v = if self.cfg.versions.contains(&h.version) {
                h.version
            } else {
                ofwire::OFP10_VERSION
            };
            self.reply_error(v, h.xid, &e, raw);
            return self.close(CloseReason::MessageBeforeHello(what));
        }
        let hello = match ofwire::decode(raw) {
            Ok(Message {
                body: Body::Hello(hello),
                ..
            }) => hello,
            Ok(_) => unreachable!("type 0 decodes as HELLO"),
            Err(e) => {
                self.reply_error(lowest_common(h.version), h.xid, &e, raw);
                return self.close(CloseReason::NoCommonVersion(e.what));
            }
        };
        match ofwire::negotiate_version(&self.cfg.versions, h.version, &hello) {
            Ok(v) => {
                self.version = v;
                self.phase = Phase::AwaitFeatures;
                match v {
                    ofwire::OFP10_VERSION => self.send10(v10::Body::FeaturesRequest),
                    _ => self.send13(v13::Body::FeaturesRequest),
                };
            }
            Err(e) => {
                self.reply_error(lowest_common(h.version), h.xid, &e, raw);
                self.close(CloseReason::NoCommonVersion(e.what));
            }
        }
    }

    fn on_handshake_message(&mut self, msg: Message, now: Instant) {
        let _ = now;
        match msg.body {
            Body::V10(v10::Body::FeaturesReply(f)) if self.phase == Phase::AwaitFeatures => {
                self.info = Some(SwitchInfo {
                    datapath_id: f.datapath_id,
                    version: self.version,
                    n_tables: f.n_tables,
                    n_buffers: f.n_buffers,
                    ports: f
                        .ports
                        .iter()
                        .map(|p| PortInfo {
                            port_no: if p.port_no >= v10::port::MAX {
                                p.port_no as u32 | 0xffff_0000
                            } else {
                                p.port_no as u32
                            },
                            name: p.name.clone(),
                            hw_addr: p.hw_addr,
                            link_up: p.state & 1 == 0,
                        })
                        .collect(),
                });
                self.finish_handshake();
            }
            Body::V13(v13::Body::FeaturesReply(f)) if self.phase == Phase::AwaitFeatures => {
                self.info = Some(SwitchInfo {
                    datapath_id: f.datapath_id,
                    version: self.version,
                    n_tables: f.n_tables,
                    n_buffers: f.n_buffers,
                    ports: Vec::new(),
                });
                self.phase = Phase::AwaitPortDesc;
                self.send13(v13::Body::MultipartRequest(v13::MultipartRequest {
                    flags: 0,
                    body: v13::MultipartRequestBody::PortDesc,
                }));
            }
            Body::V13(v13::Body::MultipartReply(r)) if self.phase == Phase::AwaitPortDesc => {
                if let v13::MultipartReplyBody::PortDesc(ports) = &r.body {
                    if let Some(info) = &mut self.info {
                        info.ports.extend(ports.iter().map(|p| PortInfo {
                            port_no: p.port_no,
                            name: p.name.clone(),
                            hw_addr: p.hw_addr,
                            link_up: p.state & 1 == 0,
                        }));
                    }
                    if r.flags & v13::MULTIPART_MORE == 0 {
                        self.finish_handshake();
                    }
                } else {
                    self.events
                        .push_back(Event::Message(Message::v13(msg.xid, v13::Body::MultipartReply(r))));
                }
            }
            other => {
                // Anything else during the handshake (PORT_STATUS, ERROR...) goes to the apps.
                self.events.push_back(Event::Message(Message {
                    version: msg.version,
                    xid: msg.xid,
                    body: other,
                }));
            }
        }
    }

    fn finish_handshake(&mut self) {
        let cfg = ofwire::SwitchConfig {
            flags: 0,
            miss_send_len: self.cfg.miss_send_len,
        };
        match self.version {
            ofwire::OFP10_VERSION => self.send10(v10::Body::SetConfig(cfg)),
            _ => self.send13(v13::Body::SetConfig(cfg)),
        };
        self.phase = Phase::Ready;
        self.hold = true;
        let info = self.info.clone().expect("features arrived");
        self.events.push_back(Event::Up(info));
    }

    /// Advances timers: echo keepalive, dead-peer detection, handshake timeout.
    /// Returns when it next needs to be called.
    pub fn on_timer(&mut self, now: Instant) -> Option<Instant> {
        let finish_by = self.partial_since.map(|t| t + self.cfg.message_timeout);
        if finish_by.is_some_and(|t| now >= t) && self.phase != Phase::Closed {
            self.close(CloseReason::MessageTimeout);
            return None;
        }
        let next = self.timers(now);
        match (next, finish_by) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b).filter(|_| self.phase != Phase::Closed),
        }
    }

    fn timers(&mut self, now: Instant) -> Option<Instant> {
        match self.phase {
            Phase::Closed => return None,
            Phase::Ready => {}
            p => {
                let deadline = self.started + self.cfg.handshake_timeout;
                if now >= deadline {
                    self.close(CloseReason::HandshakeTimeout(p));
                    return None;
                }
                return Some(deadline);
            }
        }
        if let Some((_, sent)) = self.echo_sent {
            let deadline = sent + self.cfg.echo_timeout;
            if now >= deadline {
                self.close(CloseReason::EchoTimeout);
                return None;
            }
            return Some(deadline);
        }
        let due = self.last_rx + self.cfg.echo_interval;
        if now >= due {
            let xid = match self.version {
                ofwire::OFP10_VERSION => self.send10(v10::Body::EchoRequest(ofwire::Bytes::default())),
                _ => self.send13(v13::Body::EchoRequest(ofwire::Bytes::default())),
            };
            self.echo_sent = Some((xid, now));
            self.counters.echoes_sent += 1;
            return Some(now + self.cfg.echo_timeout);
        }
        Some(due)
    }
}

/// The version a HELLO's error is told in: the lowest either side speaks
/// (1.0 for a peer at or below it, else 1.3), so the peer can read it.
fn lowest_common(peer: u8) -> u8 {
    if peer <= ofwire::OFP10_VERSION {
        ofwire::OFP10_VERSION
    } else {
        ofwire::OFP13_VERSION
    }
}

#[cfg(test)]
mod tests;
