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
                            match self.buffers.take(fm.buffer_id) {
                                Ok((in_port, data)) => {
                                    let mut pkt = Packet::new(data, in_port);
                                    let mut out = Emitted::default();
                                    self.read().forward(&mut pkt, now, &mut out);
                                    self.emit(out, fx);
                                }
                                Err(code) => fx.messages.push((conn, error_for(m, code))),
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

    /// A message from an OpenFlow 1.0 connection: translated onto the same
    /// pipeline (table 0), answered in 1.0.
    fn on_message10(&mut self, conn: usize, m: &Message, body: &B10, now: Instant, fx: &mut Effects) {
        let answer = |fx: &mut Effects, b: B10| fx.messages.push((conn, Message::v10(m.xid, b)));
        let fail = |fx: &mut Effects, code: ErrorCode| {
            let mut data = m.to_bytes().unwrap_or_default();
            data.truncate(64);
            fx.messages.push((
                conn,
                Message::v10(
                    m.xid,
                    B10::Error(ErrorMsg {
                        code: of10::error_out(code),
                        data: Bytes(data),
                    }),
                ),
            ));
        };
        match body {
            B10::EchoRequest(d) => answer(fx, B10::EchoReply(d.clone())),
            B10::EchoReply(_) | B10::Error(_) => {}
            B10::FeaturesRequest => {
                let p = self.read();
                let reply = v10::FeaturesReply {
                    datapath_id: self.id.datapath_id,
                    n_buffers: Buffers::N,
                    n_tables: 1,
                    capabilities: 1 | 2 | 4,
                    // OUTPUT .. SET_TP_DST, ENQUEUE
                    actions: 0xfff,
                    ports: p.ports.values().map(|q| of10::port_desc_out(&q.desc())).collect(),
                };
                drop(p);
                answer(fx, B10::FeaturesReply(reply))
            }
            B10::GetConfigRequest => {
                let p = self.read();
                let c = SwitchConfig {
                    flags: p.config_flags,
                    miss_send_len: p.miss_send_len,
                };
                drop(p);
                answer(fx, B10::GetConfigReply(c))
            }
            B10::SetConfig(c) => self.set_config(c),
            B10::BarrierRequest => answer(fx, B10::BarrierReply),
            B10::FlowMod(fm10) => {
                let fm = match of10::flow_mod_in(fm10) {
                    Ok(f) => f,
                    Err(code) => return fail(fx, code),
                };
                let result = self.write().flow_mod_v10(&fm, now);
                match result {
                    Ok(removed) => {
                        self.flow_removed(&removed, fx);
                        if fm.buffer_id != v13::NO_BUFFER
                            && !matches!(
                                fm.command,
                                v13::FlowModCommand::Delete | v13::FlowModCommand::DeleteStrict
                            )
                        {
                            match self.buffers.take(fm.buffer_id) {
                                Ok((in_port, data)) => {
                                    let mut pkt = Packet::new(data, in_port);
                                    let mut out = Emitted::default();
                                    self.read().forward(&mut pkt, now, &mut out);
                                    self.emit(out, fx);
                                }
                                Err(code) => fail(fx, code),
                            }
                        }
                    }
                    Err(code) => fail(fx, code),
                }
            }
            B10::PacketOut(po) => {
                let po13 = match of10::actions_in(&po.actions) {
                    Ok(actions) => v13::PacketOut {
                        buffer_id: po.buffer_id,
                        in_port: if po.in_port == v10::port::NONE {
                            v13::port::ANY
                        } else {
                            of10::port_in(po.in_port)
                        },
                        actions,
                        data: po.data.clone(),
                    },
                    Err(code) => return fail(fx, code),
                };
                if let Err(code) = self.packet_out(&po13, now, fx) {
                    fail(fx, code);
                }
            }
            B10::PortMod(pm) => {
                let pm13 = v13::PortMod {
                    port_no: of10::port_in(pm.port_no),
                    hw_addr: pm.hw_addr,
                    config: pm.config,
                    mask: pm.mask,
                    advertise: pm.advertise,
                };
                let result = self.write().port_mod(&pm13);
                match result {
                    Ok(Some(desc)) => self.port_status(ofwire::PortReason::Modify, desc, fx),
                    Ok(None) => {}
                    Err(code) => fail(fx, code),
                }
            }
            B10::StatsRequest(req) => self.stats10(conn, m, req, now, fx),
            B10::QueueGetConfigRequest { port } => answer(
                fx,
                B10::QueueGetConfigReply(v10::QueueGetConfigReply {
                    port: *port,
                    queues: Vec::new(),
                }),
            ),
            B10::Vendor { .. } => fail(fx, ErrorCode::BadRequest(BadRequestCode::BadExperimenter)),
            _ => fail(fx, ErrorCode::BadRequest(BadRequestCode::BadType)),
        }
    }

    fn stats10(&mut self, conn: usize, m: &Message, req: &v10::StatsRequest, now: Instant, fx: &mut Effects) {
        use v10::{StatsReplyBody as R10, StatsRequestBody as Q10};
        let p = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
        let since = |t: Instant| {
            let d = now.saturating_duration_since(t);
            (d.as_secs() as u32, d.subsec_nanos())
        };
        let mut bodies = Vec::new();
        match &req.body {
            Q10::Desc => bodies.push(R10::Desc(self.id.desc.clone())),
            Q10::Flow(f) | Q10::Aggregate(f) => {
                let m13 = of10::match_in(&f.match_);
                let (value, mask) = crate::matching::keys_of(&m13).unwrap_or_default();
                let out_port = if f.out_port == v10::port::NONE {
                    v13::port::ANY
                } else {
                    of10::port_in(f.out_port)
                };
                let selected = p.tables[0]
                    .rules
                    .iter()
                    .filter(|_| f.table_id == 0 || f.table_id == 0xff)
                    .filter(|r| r.within(&value, &mask) && r.program.outputs_to(out_port, v13::GROUP_ANY));
                if matches!(req.body, Q10::Aggregate(_)) {
                    let mut a = ofwire::AggregateStats::default();
                    for r in selected {
                        a.packet_count += r.packets();
                        a.byte_count += r.bytes();
                        a.flow_count += 1;
                    }
                    bodies.push(R10::Aggregate(a));
                } else {
                    let mut chunk = Vec::new();
                    let mut size = 0;
                    for r in selected {
                        let actions = of10::actions_out(&r.instructions);
                        let len = 88 + actions.len() * 16;
                        if size + len > MAX_REPLY_BYTES && !chunk.is_empty() {
                            bodies.push(R10::Flow(std::mem::take(&mut chunk)));
                            size = 0;
                        }
                        size += len;
                        let (duration_sec, duration_nsec) = since(r.created);
                        chunk.push(v10::FlowStats {
                            table_id: 0,
                            match_: of10::match_out(&r.match_),
                            duration_sec,
                            duration_nsec,
                            priority: r.priority,
                            idle_timeout: r.idle_timeout,
                            hard_timeout: r.hard_timeout,
                            cookie: r.cookie,
                            packet_count: r.packets(),
                            byte_count: r.bytes(),
                            actions,
                        });
                    }
                    bodies.push(R10::Flow(chunk));
                }
            }
            Q10::Table => {
                let t = &p.tables[0];
                bodies.push(R10::Table(vec![v10::TableStats {
                    table_id: 0,
                    name: "table0".into(),
                    wildcards: v10::wildcards::ALL,
                    max_entries: p.max_rules as u32,
                    active_count: t.rules.len() as u32,
                    lookup_count: t.lookups.get().packet_count,
                    matched_count: t.matched.get().packet_count,
                }]))
            }
            Q10::Port { port_no } => {
                let want = if *port_no == v10::port::NONE {
                    v13::port::ANY
                } else {
                    of10::port_in(*port_no)
                };
                bodies.push(R10::Port(
                    p.ports
                        .values()
                        .filter(|q| want == v13::port::ANY || q.port_no == want)
                        .map(|q| v10::PortStats {
                            port_no: of10::port_out(q.port_no),
                            counters: q.counters.snapshot(),
                        })
                        .collect(),
                ))
            }
            Q10::Queue { .. } => bodies.push(R10::Queue(Vec::new())),
            // Open vSwitch's 1.0 extension, as `ovs-ofctl dump-ports-desc` sends it.
            Q10::PortDesc => bodies.push(R10::PortDesc(
                p.ports.values().map(|q| of10::port_desc_out(&q.desc())).collect(),
            )),
            Q10::Vendor { .. } => {
                drop(p);
                let mut data = m.to_bytes().unwrap_or_default();
                data.truncate(64);
                return fx.messages.push((
                    conn,
                    Message::v10(
                        m.xid,
                        B10::Error(ErrorMsg {
                            code: ErrorCode::BadRequest(BadRequestCode::BadExperimenter),
                            data: Bytes(data),
                        }),
                    ),
                ));
            }
        }
        drop(p);
        let parts: Vec<v10::StatsReply> = bodies
            .into_iter()
            .flat_map(|body| v10::StatsReply { flags: 0, body }.split(MAX_REPLY_BYTES))
            .collect();
        let n = parts.len();
        for (i, mut part) in parts.into_iter().enumerate() {
            part.flags = if i + 1 < n { v10::STATS_REPLY_MORE } else { 0 };
            fx.messages.push((conn, Message::v10(m.xid, B10::StatsReply(part))));
        }
    }

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

    fn multipart(&mut self, conn: usize, m: &Message, req: &v13::MultipartRequest, now: Instant, fx: &mut Effects) {
        let p = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
        let since = |t: Instant| {
            let d = now.saturating_duration_since(t);
            (d.as_secs() as u32, d.subsec_nanos())
        };
        let mut bodies: Vec<R> = Vec::new();
        let err = |code| error_for(m, code);
        match &req.body {
            Q::Desc => bodies.push(R::Desc(self.id.desc.clone())),
            Q::Flow(f) | Q::Aggregate(f) => {
                if let Err(code) = p.check_table(f.table_id) {
                    drop(p);
                    return fx.messages.push((conn, err(code)));
                }
                let (value, mask) = match crate::matching::keys_of(&f.match_) {
                    Ok(k) => k,
                    Err(code) => {
                        drop(p);
                        return fx.messages.push((conn, err(code)));
                    }
                };
                let selected = p
                    .tables
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| f.table_id == v13::TABLE_ALL || *i == f.table_id as usize)
                    .flat_map(|(_, t)| t.rules.iter())
                    .filter(|r| {
                        r.within(&value, &mask)
                            && r.cookie & f.cookie_mask == f.cookie & f.cookie_mask
                            && r.program.outputs_to(f.out_port, f.out_group)
                    });
                if matches!(req.body, Q::Aggregate(_)) {
                    let mut a = ofwire::AggregateStats::default();
                    for r in selected {
                        a.packet_count += r.packets();
                        a.byte_count += r.bytes();
                        a.flow_count += 1;
                    }
                    bodies.push(R::Aggregate(a));
                } else {
                    let mut chunk = Vec::new();
                    let mut size = 0;
                    let mut scratch = Vec::new();
                    for r in selected {
                        scratch.clear();
                        v13::encode_instructions(&r.instructions, &mut scratch);
                        let len = 56 + r.match_.wire_len() + scratch.len();
                        if size + len > MAX_REPLY_BYTES && !chunk.is_empty() {
                            bodies.push(R::Flow(std::mem::take(&mut chunk)));
                            size = 0;
                        }
                        size += len;
                        let (duration_sec, duration_nsec) = since(r.created);
                        chunk.push(v13::FlowStats {
                            table_id: r.table_id,
                            duration_sec,
                            duration_nsec,
                            priority: r.priority,
                            idle_timeout: r.idle_timeout,
                            hard_timeout: r.hard_timeout,
                            flags: r.flags,
                            cookie: r.cookie,
                            packet_count: r.packets(),
                            byte_count: r.bytes(),
                            match_: r.match_.clone(),
                            instructions: r.instructions.clone(),
                        });
                    }
                    bodies.push(R::Flow(chunk));
                }
            }
            Q::Table => bodies.push(R::Table(
                p.tables
                    .iter()
                    .enumerate()
                    .map(|(i, t)| v13::TableStats {
                        table_id: i as u8,
                        active_count: t.rules.len() as u32,
                        lookup_count: t.lookups.get().packet_count,
                        matched_count: t.matched.get().packet_count,
                    })
                    .collect(),
            )),
            Q::PortStats { port_no } => {
                if *port_no != v13::port::ANY && !p.ports.contains_key(port_no) {
                    drop(p);
                    return fx
                        .messages
                        .push((conn, err(ErrorCode::BadRequest(BadRequestCode::BadPort))));
                }
                let started = p.started;
                bodies.push(R::PortStats(
                    p.ports
                        .values()
                        .filter(|q| *port_no == v13::port::ANY || q.port_no == *port_no)
                        .map(|q| {
                            let (duration_sec, duration_nsec) = since(started);
                            v13::PortStats {
                                port_no: q.port_no,
                                counters: q.counters.snapshot(),
                                duration_sec,
                                duration_nsec,
                            }
                        })
                        .collect(),
                ))
            }
            Q::Queue { .. } => bodies.push(R::Queue(Vec::new())),
            Q::Group { group_id } => {
                let mut groups: Vec<_> = p
                    .groups
                    .values()
                    .filter(|g| *group_id == v13::GROUP_ALL || g.id == *group_id)
                    .collect();
                groups.sort_by_key(|g| g.id);
                bodies.push(R::Group(
                    groups
                        .into_iter()
                        .map(|g| {
                            let c = g.counter.get();
                            let (duration_sec, duration_nsec) = since(g.created);
                            let ref_count = p
                                .tables
                                .iter()
                                .map(|t| t.rules.iter().filter(|r| r.program.uses_group(g.id)).count())
                                .sum::<usize>() as u32;
                            v13::GroupStats {
                                group_id: g.id,
                                ref_count,
                                packet_count: c.packet_count,
                                byte_count: c.byte_count,
                                duration_sec,
                                duration_nsec,
                                bucket_stats: g.bucket_counters.iter().map(|b| b.get()).collect(),
                            }
                        })
                        .collect(),
                ))
            }
            Q::GroupDesc => {
                let mut groups: Vec<_> = p.groups.values().collect();
                groups.sort_by_key(|g| g.id);
                bodies.push(R::GroupDesc(
                    groups
                        .into_iter()
                        .map(|g| v13::GroupDesc {
                            group_type: g.kind,
                            group_id: g.id,
                            buckets: g.buckets.clone(),
                        })
                        .collect(),
                ))
            }
            Q::GroupFeatures => bodies.push(R::GroupFeatures(v13::GroupFeatures {
                types: 0b1111,
                // SELECT_WEIGHT | SELECT_LIVENESS | CHAINING | CHAINING_CHECKS
                // (loops refused at GROUP_MOD; chains up to
                // pipeline::MAX_GROUP_CHAIN groups, a depth this reply has
                // no field for: the README states it)
                capabilities: 1 | 2 | 4 | 8,
                max_groups: [65535; 4],
                // OUTPUT, PUSH/POP_VLAN, SET_NW_TTL, DEC_NW_TTL, SET_QUEUE, GROUP, SET_FIELD
                actions: [
                    (1 << 0) | (1 << 17) | (1 << 18) | (1 << 23) | (1 << 24) | (1 << 21) | (1 << 22) | (1 << 25),
                    0,
                    0,
                    0,
                ]
                .map(|a| a | (1 << 0)),
            })),
            Q::Meter { meter_id } | Q::MeterConfig { meter_id } => {
                let mut meters: Vec<_> = p
                    .meters
                    .values()
                    .filter(|x| *meter_id == 0xffff_ffff || x.id == *meter_id)
                    .collect();
                meters.sort_by_key(|x| x.id);
                if matches!(req.body, Q::Meter { .. }) {
                    bodies.push(R::Meter(
                        meters
                            .into_iter()
                            .map(|x| {
                                let c = x.counter.get();
                                let (duration_sec, duration_nsec) = since(x.created);
                                v13::MeterStats {
                                    meter_id: x.id,
                                    flow_count: p
                                        .tables
                                        .iter()
                                        .map(|t| t.rules.iter().filter(|r| r.program.meter == Some(x.id)).count())
                                        .sum::<usize>() as u32,
                                    packet_in_count: c.packet_count,
                                    byte_in_count: c.byte_count,
                                    duration_sec,
                                    duration_nsec,
                                    band_stats: x.band_counters.iter().map(|b| b.get()).collect(),
                                }
                            })
                            .collect(),
                    ))
                } else {
                    bodies.push(R::MeterConfig(
                        meters
                            .into_iter()
                            .map(|x| v13::MeterConfig {
                                flags: x.flags,
                                meter_id: x.id,
                                bands: x.bands.clone(),
                            })
                            .collect(),
                    ))
                }
            }
            Q::MeterFeatures => bodies.push(R::MeterFeatures(v13::MeterFeatures {
                max_meter: 65535,
                // DROP and DSCP_REMARK
                band_types: (1 << 1) | (1 << 2),
                // KBPS | PKTPS | BURST | STATS
                capabilities: 0b1111,
                max_bands: 8,
                max_color: 0,
            })),
            Q::TableFeatures(set) => {
                if !set.is_empty() {
                    drop(p);
                    return fx.messages.push((
                        conn,
                        err(ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::Eperm)),
                    ));
                }
                bodies.push(R::TableFeatures(table_features(&p)));
            }
            Q::PortDesc => bodies.push(R::PortDesc(p.ports.values().map(|q| q.desc()).collect())),
            Q::Experimenter { .. } => {
                drop(p);
                return fx
                    .messages
                    .push((conn, err(ErrorCode::BadRequest(BadRequestCode::BadExperimenter))));
            }
        }
        drop(p);
        // Every reply under the 16-bit message length: each body cut into
        // parts as needed, REPLY_MORE on all parts but the very last.
        let parts: Vec<v13::MultipartReply> = bodies
            .into_iter()
            .flat_map(|body| v13::MultipartReply { flags: 0, body }.split(MAX_REPLY_BYTES))
            .collect();
        let n = parts.len();
        for (i, mut part) in parts.into_iter().enumerate() {
            part.flags = if i + 1 < n { v13::MULTIPART_MORE } else { 0 };
            fx.messages.push((conn, reply(m, B::MultipartReply(part))));
        }
    }
}

fn table_features(p: &Pipeline) -> Vec<v13::TableFeatures> {
    use v13::{OxmId, TableFeatureProp as P, TypeId};
    let n = p.tables.len();
    let fields: Vec<OxmId> = (0..40u8)
        .filter(|&f| crate::matching::supported(f))
        .map(|f| OxmId {
            header: ofwire::oxm::oxm_header(
                ofwire::oxm::OFPXMC_OPENFLOW_BASIC,
                f,
                false,
                ofwire::oxm::field::WIDTH[f as usize],
            ),
            experimenter: None,
        })
        .collect();
    let ids = |v: &[u16]| -> Vec<TypeId> {
        v.iter()
            .map(|&t| TypeId {
                id_type: t,
                data: Bytes(Vec::new()),
            })
            .collect()
    };
    let instructions = ids(&[1, 2, 3, 4, 5, 6]);
    let acts = ids(&[0, 17, 18, 22, 21, 23, 24, 25]);
    (0..n)
        .map(|t| {
            let next: Vec<u8> = ((t + 1)..n).map(|x| x as u8).collect();
            v13::TableFeatures {
                table_id: t as u8,
                name: format!("table{t}"),
                metadata_match: u64::MAX,
                metadata_write: u64::MAX,
                config: 0,
                max_entries: p.max_rules as u32,
                properties: vec![
                    P::Instructions(instructions.clone()),
                    P::NextTables(next),
                    P::WriteActions(acts.clone()),
                    P::ApplyActions(acts.clone()),
                    P::Match(fields.clone()),
                    P::Wildcards(fields.clone()),
                    P::WriteSetfield(fields.clone()),
                    P::ApplySetfield(fields.clone()),
                ],
            }
        })
        .collect()
}
