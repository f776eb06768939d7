//! The switch's OpenFlow agent, without I/O: it takes controller messages
//! (already framed and decoded, per connection) and datapath events, and
//! returns what to send to which connection and which frames to transmit.
//! Every message is applied before the next is looked at, so a
//! BARRIER_REPLY means what came before it is in the tables the datapath
//! reads.

use crate::actions::{self, Packet};
use crate::openflow10 as of10;
use crate::pipeline::{Emitted, Pipeline, Removed, ToController};
use crate::roles::{Async, Roles, Verdict};
use ofwire::error::{BadRequestCode, TableFeaturesFailedCode};
use ofwire::v10::{self, Body as B10};
use ofwire::v13::{self, Body as B, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofwire::{Body, Bytes, DescStats, ErrorCode, ErrorMsg, Message, SwitchConfig, OFP10_VERSION, OFP13_VERSION};
use std::sync::{Arc, RwLock};
use std::time::Instant;

mod multipart;
mod openflow10;

/// Buffered PACKET_IN frames, by buffer id. A slot keeps the id it last
/// held after its frame is used, so the errors say what the spec means:
/// BUFFER_EMPTY for a buffer already used, BUFFER_UNKNOWN for an id this
/// switch never issued or has since given to another frame.
struct Buffers {
    slots: Vec<Option<Slot>>,
    next: u32,
}

/// A buffer id, the frame's input port, and the frame until it is used.
type Slot = (u32, u32, Option<Vec<u8>>);

impl Buffers {
    const N: u32 = 256;

    fn new() -> Buffers {
        Buffers {
            slots: (0..Self::N).map(|_| None).collect(),
            next: 0,
        }
    }

    /// Stores a frame; its buffer id (the slot in the low 8 bits, a
    /// sequence above, so a stale id is recognised).
    fn put(&mut self, in_port: u32, data: Vec<u8>) -> u32 {
        let id = self.next;
        self.next = self.next.wrapping_add(1) & 0x00ff_ffff;
        self.slots[(id % Self::N) as usize] = Some((id, in_port, Some(data)));
        id
    }

    fn take(&mut self, id: u32) -> Result<(u32, Vec<u8>), ErrorCode> {
        if id >= 0x0100_0000 {
            return Err(ErrorCode::BadRequest(BadRequestCode::BufferUnknown));
        }
        match &mut self.slots[(id % Self::N) as usize] {
            Some((held, in_port, data)) if *held == id => match data.take() {
                Some(data) => Ok((*in_port, data)),
                None => Err(ErrorCode::BadRequest(BadRequestCode::BufferEmpty)),
            },
            // Never issued, or overwritten by a later PACKET_IN.
            _ => Err(ErrorCode::BadRequest(BadRequestCode::BufferUnknown)),
        }
    }
}

/// What the agent wants done.
#[derive(Default, Debug)]
pub struct Effects {
    pub messages: Vec<(usize, Message)>,
    pub frames: Vec<(u32, Packet)>,
}

pub struct Identity {
    pub datapath_id: u64,
    pub desc: DescStats,
}

pub struct Agent {
    pub pipeline: Arc<RwLock<Pipeline>>,
    pub roles: Roles,
    versions: Vec<u8>,
    buffers: Buffers,
    id: Identity,
    /// The version each connection negotiated.
    conn_versions: Vec<u8>,
    /// PACKET_INs dropped because no connection wanted them.
    pub packet_ins_unsent: u64,
    /// Multipart requests arriving in parts (REQ_MORE), per connection:
    /// the xid and the table features gathered so far.
    partial_requests: std::collections::HashMap<usize, (u32, Vec<v13::TableFeatures>)>,
}

/// The most table-feature entries a request in parts may gather (a switch
/// has at most 254 tables; this leaves room for repeats) before it gets
/// MULTIPART_BUFFER_OVERFLOW.
const MAX_PARTIAL_ENTRIES: usize = 1024;

fn reply(req: &Message, body: B) -> Message {
    Message::v13(req.xid, body)
}

fn error_for(req: &Message, code: ErrorCode) -> Message {
    let mut data = req.to_bytes().unwrap_or_default();
    data.truncate(64);
    Message::v13(
        req.xid,
        B::Error(ErrorMsg {
            code,
            data: Bytes(data),
        }),
    )
}

/// A multipart reply body's entries are split so no message exceeds this.
/// Flow statistics are cut as they are built (a million flows would be
/// encoded over and over by `MultipartReply::split`'s halving); every
/// other reply is cut by `split`, which leaves those parts as they are.
const MAX_REPLY_BYTES: usize = 60_000;

impl Agent {
    pub fn new(pipeline: Arc<RwLock<Pipeline>>, id: Identity) -> Agent {
        Agent {
            pipeline,
            roles: Roles::new(0),
            versions: vec![OFP10_VERSION, OFP13_VERSION],
            buffers: Buffers::new(),
            id,
            conn_versions: Vec::new(),
            packet_ins_unsent: 0,
            partial_requests: std::collections::HashMap::new(),
        }
    }

    /// The versions offered in HELLO.
    pub fn versions(&self) -> &[u8] {
        &self.versions
    }

    /// Offers only these versions (of 1.0 and 1.3) from the next HELLO on.
    pub fn set_versions(&mut self, versions: &[u8]) {
        self.versions = [OFP10_VERSION, OFP13_VERSION]
            .into_iter()
            .filter(|v| versions.contains(v))
            .collect();
    }

    /// A port joined the switch: the controllers hear PORT_STATUS ADD.
    pub fn add_port(&mut self, port: crate::pipeline::PortState, fx: &mut Effects) {
        let desc = port.desc();
        self.write().add_port(port);
        self.port_status(ofwire::PortReason::Add, desc, fx);
    }

    /// A port left the switch: PORT_STATUS DELETE. False if it was not there.
    pub fn remove_port(&mut self, port_no: u32, fx: &mut Effects) -> bool {
        let Some(gone) = self.write().remove_port(port_no) else {
            return false;
        };
        self.port_status(ofwire::PortReason::Delete, gone.desc(), fx);
        true
    }

    /// A controller connection completed its HELLO exchange with `version`.
    pub fn connect(&mut self, version: u8) -> usize {
        let c = self.roles.add_connection();
        self.conn_versions.resize(c + 1, OFP13_VERSION);
        self.conn_versions[c] = version;
        self.update_miss_to_controller();
        c
    }

    /// Table misses go to the controller while a 1.0 controller is
    /// connected (the plans cached by the datapath are made again).
    fn update_miss_to_controller(&mut self) {
        let any_10 = (0..self.roles_len()).any(|c| self.is_10(c) && self.roles.is_open(c));
        if self.read().miss_to_controller != any_10 {
            let mut p = self.write();
            p.miss_to_controller = any_10;
            p.generation += 1;
        }
    }

    fn is_10(&self, conn: usize) -> bool {
        self.conn_versions.get(conn) == Some(&OFP10_VERSION)
    }

    pub fn disconnect(&mut self, conn: usize) {
        self.roles.close(conn);
        self.partial_requests.remove(&conn);
        self.update_miss_to_controller();
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Pipeline> {
        self.pipeline.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Pipeline> {
        self.pipeline.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Handles one message from connection `conn`.
    pub fn on_message(&mut self, conn: usize, m: &Message, now: Instant, fx: &mut Effects) {
        if let Body::V10(body) = &m.body {
            return self.on_message10(conn, m, body, now, fx);
        }
        match self.roles.on_message(conn, m) {
            Verdict::Answer(a) => return fx.messages.push((conn, a)),
            Verdict::Taken => return,
            Verdict::Pass => {}
        }
        let Body::V13(body) = &m.body else {
            if !matches!(m.body, Body::Hello(_)) {
                fx.messages
                    .push((conn, error_for(m, ErrorCode::BadRequest(BadRequestCode::BadVersion))));
            }
            return;
        };
        let answer = |fx: &mut Effects, b: B| fx.messages.push((conn, reply(m, b)));
        match body {
            B::EchoRequest(d) => answer(fx, B::EchoReply(d.clone())),
            B::EchoReply(_) | B::Error(_) => {}
            B::FeaturesRequest => {
                let n_tables = self.read().tables.len() as u8;
                answer(
                    fx,
                    B::FeaturesReply(v13::FeaturesReply {
                        datapath_id: self.id.datapath_id,
                        n_buffers: Buffers::N,
                        n_tables,
                        auxiliary_id: 0,
                        // FLOW_STATS | TABLE_STATS | PORT_STATS | GROUP_STATS
                        capabilities: 1 | 2 | 4 | 8,
                        reserved: 0,
                    }),
                )
            }
            B::GetConfigRequest => {
                let p = self.read();
                answer(
                    fx,
                    B::GetConfigReply(SwitchConfig {
                        flags: p.config_flags,
                        miss_send_len: p.miss_send_len,
                    }),
                )
            }
            B::SetConfig(c) => self.set_config(c),
            B::BarrierRequest => answer(fx, B::BarrierReply),
            B::FlowMod(fm) => {
                let result = self.write().flow_mod(fm, now);
                match result {
                    Ok(removed) => {
                        self.flow_removed(&removed, fx);
                        if fm.buffer_id != v13::NO_BUFFER
                            && matches!(
                                fm.command,
                                v13::FlowModCommand::Add
                                    | v13::FlowModCommand::Modify
                                    | v13::FlowModCommand::ModifyStrict
                            )
                        {
                            if let Err(code) = self.release_buffered(fm.buffer_id, now, fx) {
                                fx.messages.push((conn, error_for(m, code)));
                            }
                        }
                    }
                    Err(code) => fx.messages.push((conn, error_for(m, code))),
                }
            }
            B::GroupMod(gm) => {
                let result = self.write().group_mod(gm, now);
                match result {
                    Ok(removed) => self.flow_removed(&removed, fx),
                    Err(code) => fx.messages.push((conn, error_for(m, code))),
                }
            }
            B::MeterMod(mm) => {
                let result = self.write().meter_mod(mm, now);
                match result {
                    Ok(removed) => self.flow_removed(&removed, fx),
                    Err(code) => fx.messages.push((conn, error_for(m, code))),
                }
            }
            B::PortMod(pm) => {
                let result = self.write().port_mod(pm);
                match result {
                    Ok(Some(desc)) => self.port_status(ofwire::PortReason::Modify, desc, fx),
                    Ok(None) => {}
                    Err(code) => fx.messages.push((conn, error_for(m, code))),
                }
            }
            B::TableMod(tm) => {
                if let Err(code) = self.read().check_table(tm.table_id) {
                    fx.messages.push((conn, error_for(m, code)));
                }
            }
            B::PacketOut(po) => {
                if let Err(code) = self.packet_out(po, now, fx) {
                    fx.messages.push((conn, error_for(m, code)));
                }
            }
            B::MultipartRequest(req) => {
                if let Some(whole) = self.reassemble(conn, m, req, fx) {
                    self.multipart(conn, m, &whole, now, fx)
                }
            }
            B::QueueGetConfigRequest { port } => answer(
                fx,
                B::QueueGetConfigReply(v13::QueueGetConfigReply {
                    port: *port,
                    queues: Vec::new(),
                }),
            ),
            B::Experimenter { .. } => fx.messages.push((
                conn,
                error_for(m, ErrorCode::BadRequest(BadRequestCode::BadExperimenter)),
            )),
            // Messages a switch sends, not receives.
            _ => fx
                .messages
                .push((conn, error_for(m, ErrorCode::BadRequest(BadRequestCode::BadType)))),
        }
    }
}

impl Agent {
    /// A multipart request that may come in parts (OFPMPF_REQ_MORE on all
    /// but the last, one xid): None while parts are still coming (or when
    /// an error went back), the whole request once the last is in. Only
    /// TABLE_FEATURES requests have a body that can be split; another type
    /// with REQ_MORE gets BAD_MULTIPART, a part with another xid or type
    /// than those before it BAD_MULTIPART too (the parts gathered are
    /// dropped), and more than `MAX_PARTIAL_ENTRIES` entries
    /// MULTIPART_BUFFER_OVERFLOW.
    fn reassemble(
        &mut self,
        conn: usize,
        m: &Message,
        req: &v13::MultipartRequest,
        fx: &mut Effects,
    ) -> Option<v13::MultipartRequest> {
        let more = req.flags & v13::MULTIPART_MORE != 0;
        let pending = self.partial_requests.remove(&conn);
        let bad = |fx: &mut Effects, code| {
            fx.messages.push((conn, error_for(m, ErrorCode::BadRequest(code))));
            None
        };
        match (&req.body, pending) {
            (Q::TableFeatures(part), Some((xid, mut gathered))) if xid == m.xid => {
                gathered.extend(part.iter().cloned());
                if gathered.len() > MAX_PARTIAL_ENTRIES {
                    return bad(fx, BadRequestCode::MultipartBufferOverflow);
                }
                if more {
                    self.partial_requests.insert(conn, (xid, gathered));
                    return None;
                }
                Some(v13::MultipartRequest {
                    flags: 0,
                    body: Q::TableFeatures(gathered),
                })
            }
            (_, Some(_)) => bad(fx, BadRequestCode::BadMultipart),
            (Q::TableFeatures(part), None) if more => {
                if part.len() > MAX_PARTIAL_ENTRIES {
                    return bad(fx, BadRequestCode::MultipartBufferOverflow);
                }
                self.partial_requests.insert(conn, (m.xid, part.clone()));
                None
            }
            (_, None) if more => bad(fx, BadRequestCode::BadMultipart),
            (_, None) => Some(req.clone()),
        }
    }

    fn packet_out(&mut self, po: &v13::PacketOut, now: Instant, fx: &mut Effects) -> Result<(), ErrorCode> {
        let valid_in = {
            let p = self.read();
            po.in_port == v13::port::CONTROLLER
                || po.in_port == v13::port::LOCAL
                || po.in_port == v13::port::ANY
                || p.ports.contains_key(&po.in_port)
        };
        if !valid_in {
            return Err(ErrorCode::BadRequest(BadRequestCode::BadPort));
        }
        let acts = {
            let p = self.read();
            actions::compile(&po.actions, &|q| p.ports.contains_key(&q), None)?
        };
        let (in_port, data) = if po.buffer_id != v13::NO_BUFFER {
            let (_, data) = self.buffers.take(po.buffer_id)?;
            (po.in_port, data)
        } else {
            (po.in_port, po.data.0.clone())
        };
        let mut pkt = Packet::new(data, in_port);
        let mut out = Emitted::default();
        self.read().packet_out(&acts, &mut pkt, now, &mut out);
        self.emit(out, fx);
        Ok(())
    }

    /// The packet held in buffer `id` sent through the tables, as a
    /// FLOW_MOD naming the buffer asks; the error when none is held there.
    fn release_buffered(&mut self, id: u32, now: Instant, fx: &mut Effects) -> Result<(), ErrorCode> {
        let (in_port, data) = self.buffers.take(id)?;
        let mut pkt = Packet::new(data, in_port);
        let mut out = Emitted::default();
        self.read().forward(&mut pkt, now, &mut out);
        self.emit(out, fx);
        Ok(())
    }

    /// Frames and PACKET_INs a pipeline run produced.
    pub fn emit(&mut self, out: Emitted, fx: &mut Effects) {
        fx.frames.extend(out.outputs);
        for tc in out.to_controller {
            self.packet_in(tc, fx);
        }
    }

    /// A frame the datapath sends to the controller.
    pub fn packet_in(&mut self, tc: ToController, fx: &mut Effects) {
        let reason: u8 = tc.reason.into();
        let conns: Vec<usize> = (0..self.roles_len())
            .filter(|&c| self.roles.wants(c, Async::PacketIn { reason }))
            .filter(|&c| !tc.implicit_miss || self.is_10(c))
            .collect();
        if conns.is_empty() {
            self.packet_ins_unsent += 1;
            return;
        }
        let total_len = tc.data.len().min(u16::MAX as usize) as u16;
        let (buffer_id, data) = if tc.max_len == v13::CONTROLLER_MAX_LEN_NO_BUFFER {
            (v13::NO_BUFFER, tc.data)
        } else {
            let keep = (tc.max_len as usize).min(tc.data.len());
            let head = tc.data[..keep].to_vec();
            let id = self.buffers.put(tc.in_port, tc.data);
            (id, head)
        };
        let mut fields = vec![ofwire::oxm::Oxm::InPort(tc.in_port)];
        if tc.metadata != 0 {
            fields.push(ofwire::oxm::Oxm::Metadata(tc.metadata, None));
        }
        let pi = v13::PacketIn {
            buffer_id,
            total_len,
            reason: tc.reason,
            table_id: tc.table_id,
            cookie: tc.cookie,
            match_: ofwire::oxm::Match::new(fields),
            data: Bytes(data),
        };
        for c in conns {
            let msg = if self.is_10(c) {
                Message::v10(
                    0,
                    B10::PacketIn(v10::PacketIn {
                        buffer_id: pi.buffer_id,
                        total_len: pi.total_len,
                        in_port: of10::port_out(tc.in_port),
                        reason: pi.reason,
                        data: pi.data.clone(),
                    }),
                )
            } else {
                Message::v13(0, B::PacketIn(pi.clone()))
            };
            fx.messages.push((c, msg));
        }
    }

    /// SET_CONFIG: fragment handling and how much of a missed frame a
    /// PACKET_IN carries (in the plans of implicit misses: made again).
    fn set_config(&mut self, c: &SwitchConfig) {
        let mut p = self.write();
        p.config_flags = c.flags & 3;
        if p.miss_send_len != c.miss_send_len {
            p.miss_send_len = c.miss_send_len;
            p.generation += 1;
        }
    }

    fn roles_len(&self) -> usize {
        self.roles.connection_count()
    }

    /// FLOW_REMOVED for removed rules that asked for it.
    pub fn flow_removed(&mut self, removed: &Removed, fx: &mut Effects) {
        let now = Instant::now();
        for (r, reason) in removed {
            if r.flags & v13::flow_mod_flags::SEND_FLOW_REM == 0 {
                continue;
            }
            let reason_n: u8 = (*reason).into();
            let d = now.saturating_duration_since(r.created);
            let msg10 = B10::FlowRemoved(v10::FlowRemoved {
                match_: of10::match_out(&r.match_),
                cookie: r.cookie,
                priority: r.priority,
                reason: *reason,
                duration_sec: d.as_secs() as u32,
                duration_nsec: d.subsec_nanos(),
                idle_timeout: r.idle_timeout,
                packet_count: r.packets(),
                byte_count: r.bytes(),
            });
            let msg = B::FlowRemoved(v13::FlowRemoved {
                cookie: r.cookie,
                priority: r.priority,
                reason: *reason,
                table_id: r.table_id,
                duration_sec: d.as_secs() as u32,
                duration_nsec: d.subsec_nanos(),
                idle_timeout: r.idle_timeout,
                hard_timeout: r.hard_timeout,
                packet_count: r.packets(),
                byte_count: r.bytes(),
                match_: r.match_.clone(),
            });
            for c in 0..self.roles_len() {
                if self.roles.wants(c, Async::FlowRemoved { reason: reason_n }) {
                    let m = if self.is_10(c) {
                        Message::v10(0, msg10.clone())
                    } else {
                        Message::v13(0, msg.clone())
                    };
                    fx.messages.push((c, m));
                }
            }
        }
    }

    pub fn port_status(&mut self, reason: ofwire::PortReason, desc: v13::Port, fx: &mut Effects) {
        let r: u8 = reason.into();
        let msg10 = B10::PortStatus(v10::PortStatus {
            reason,
            desc: of10::port_desc_out(&desc),
        });
        let msg = B::PortStatus(v13::PortStatus { reason, desc });
        for c in 0..self.roles_len() {
            if self.roles.wants(c, Async::PortStatus { reason: r }) {
                let m = if self.is_10(c) {
                    Message::v10(0, msg10.clone())
                } else {
                    Message::v13(0, msg.clone())
                };
                fx.messages.push((c, m));
            }
        }
    }

    /// Removes the rules whose timeouts passed; FLOW_REMOVED for them.
    pub fn expire(&mut self, now: Instant, fx: &mut Effects) {
        let expired = self.read().expired(now);
        if expired.is_empty() {
            return;
        }
        self.write().expire(&expired);
        self.flow_removed(&expired, fx);
    }

    /// A port's link went up or down.
    pub fn link_changed(&mut self, port_no: u32, up: bool, fx: &mut Effects) {
        // Polled every tick for every port: only a real change takes the
        // write lock (which holds the datapath threads back).
        if self.read().ports.get(&port_no).is_none_or(|p| p.link_up == up) {
            return;
        }
        let desc = {
            let mut p = self.write();
            if !p.set_link(port_no, up) {
                return;
            }
            p.ports[&port_no].desc()
        };
        self.port_status(ofwire::PortReason::Modify, desc, fx);
    }
}
