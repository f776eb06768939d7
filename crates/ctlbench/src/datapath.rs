//! An emulated OpenFlow switch, protocol and data plane, without I/O: feed
//! it the controller's messages and the frames arriving on its ports; it
//! returns effects (messages for the controller, frames leaving by a port).
//! Multi-table flow tables with priorities, goto_table, apply-actions
//! (output including the reserved ports, set eth src/dst), table-miss as
//! the version says (1.0: to the controller; 1.3: drop unless a flow says
//! otherwise), FLOW_MOD add/modify/delete (strict or not, cookie masks),
//! PACKET_OUT (including OFPP_TABLE), flow stats, port status. Match fields
//! modelled: in_port, eth src/dst (exact), eth_type, ip_proto, IPv4 src/dst
//! (masked), TCP/UDP ports. A FLOW_MOD using anything else is refused with
//! the OFPT_ERROR a real switch sends (BAD_MATCH), and counted.
//!
//! Used by the RFC 8456 topology tests (emulated fabrics over TCP) and by
//! the controller's app tests (tests/fakenet, no sockets).

use ofwire::error::{BadActionCode, BadMatchCode, FlowModFailed10Code, FlowModFailedCode};
use ofwire::oxm::Oxm;
use ofwire::{v10, v13, Body, ErrorCode, ErrorMsg, MacAddr, Message, PacketInReason, OFP10_VERSION};
use std::net::Ipv4Addr;

/// What a flow matches (absent: wildcard).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowMatch {
    pub in_port: Option<u32>,
    pub eth_src: Option<MacAddr>,
    pub eth_dst: Option<MacAddr>,
    pub eth_type: Option<u16>,
    pub ip_proto: Option<u8>,
    pub ipv4_src: Option<(Ipv4Addr, Ipv4Addr)>,
    pub ipv4_dst: Option<(Ipv4Addr, Ipv4Addr)>,
    pub tp_src: Option<u16>,
    pub tp_dst: Option<u16>,
}

fn prefix_mask(len: u8) -> Ipv4Addr {
    Ipv4Addr::from(if len == 0 { 0 } else { u32::MAX << (32 - len.min(32)) })
}

/// The fields of a frame the matcher looks at.
#[derive(Clone, Copy, Debug, Default)]
struct Parsed {
    eth_dst: [u8; 6],
    eth_src: [u8; 6],
    eth_type: u16,
    ip_proto: Option<u8>,
    ipv4_src: Option<Ipv4Addr>,
    ipv4_dst: Option<Ipv4Addr>,
    tp_src: Option<u16>,
    tp_dst: Option<u16>,
}

fn parse(frame: &[u8]) -> Option<Parsed> {
    if frame.len() < 14 {
        return None;
    }
    let mut p = Parsed {
        eth_dst: frame[0..6].try_into().ok()?,
        eth_src: frame[6..12].try_into().ok()?,
        eth_type: u16::from_be_bytes([frame[12], frame[13]]),
        ..Default::default()
    };
    if p.eth_type == 0x0800 && frame.len() >= 34 {
        let ihl = ((frame[14] & 0x0f) as usize) * 4;
        p.ip_proto = Some(frame[23]);
        p.ipv4_src = Some(Ipv4Addr::new(frame[26], frame[27], frame[28], frame[29]));
        p.ipv4_dst = Some(Ipv4Addr::new(frame[30], frame[31], frame[32], frame[33]));
        let l4 = 14 + ihl;
        if matches!(frame[23], 6 | 17) && frame.len() >= l4 + 4 {
            p.tp_src = Some(u16::from_be_bytes([frame[l4], frame[l4 + 1]]));
            p.tp_dst = Some(u16::from_be_bytes([frame[l4 + 2], frame[l4 + 3]]));
        }
    }
    Some(p)
}

fn masked(want: Option<(Ipv4Addr, Ipv4Addr)>, have: Option<Ipv4Addr>) -> bool {
    match want {
        None => true,
        Some((addr, mask)) => have.is_some_and(|h| u32::from(h) & u32::from(mask) == u32::from(addr) & u32::from(mask)),
    }
}

impl FlowMatch {
    /// From a 1.0 match; Err when it uses a field not modelled.
    pub fn from_v10(m: &v10::Match) -> Result<FlowMatch, String> {
        use v10::wildcards as w;
        if m.wildcards & w::DL_VLAN == 0 || m.wildcards & w::DL_VLAN_PCP == 0 || m.wildcards & w::NW_TOS == 0 {
            return Err("VLAN and TOS matches are not modelled".into());
        }
        let src_len = m.nw_src_prefix_len();
        let dst_len = m.nw_dst_prefix_len();
        Ok(FlowMatch {
            in_port: (m.wildcards & w::IN_PORT == 0).then_some(port_from_10(m.in_port)),
            eth_src: (m.wildcards & w::DL_SRC == 0).then_some(m.dl_src),
            eth_dst: (m.wildcards & w::DL_DST == 0).then_some(m.dl_dst),
            eth_type: (m.wildcards & w::DL_TYPE == 0).then_some(m.dl_type),
            ip_proto: (m.wildcards & w::NW_PROTO == 0).then_some(m.nw_proto),
            ipv4_src: (src_len > 0).then_some((m.nw_src, prefix_mask(src_len))),
            ipv4_dst: (dst_len > 0).then_some((m.nw_dst, prefix_mask(dst_len))),
            tp_src: (m.wildcards & w::TP_SRC == 0).then_some(m.tp_src),
            tp_dst: (m.wildcards & w::TP_DST == 0).then_some(m.tp_dst),
        })
    }

    /// From a 1.3 OXM match; Err when it uses a field not modelled.
    pub fn from_v13(m: &ofwire::oxm::Match) -> Result<FlowMatch, String> {
        let mut f = FlowMatch::default();
        for o in &m.fields {
            match o {
                Oxm::InPort(p) => f.in_port = Some(*p),
                Oxm::EthSrc(a, None) => f.eth_src = Some(*a),
                Oxm::EthDst(a, None) => f.eth_dst = Some(*a),
                Oxm::EthType(t) => f.eth_type = Some(*t),
                Oxm::IpProto(p) => f.ip_proto = Some(*p),
                Oxm::Ipv4Src(a, m) => f.ipv4_src = Some((*a, m.unwrap_or(Ipv4Addr::BROADCAST))),
                Oxm::Ipv4Dst(a, m) => f.ipv4_dst = Some((*a, m.unwrap_or(Ipv4Addr::BROADCAST))),
                Oxm::TcpSrc(p) | Oxm::UdpSrc(p) => f.tp_src = Some(*p),
                Oxm::TcpDst(p) | Oxm::UdpDst(p) => f.tp_dst = Some(*p),
                other => return Err(format!("{other:?} is not modelled")),
            }
        }
        Ok(f)
    }

    fn matches(&self, in_port: u32, p: &Parsed) -> bool {
        self.in_port.is_none_or(|x| x == in_port)
            && self.eth_dst.is_none_or(|a| a.0 == p.eth_dst)
            && self.eth_src.is_none_or(|a| a.0 == p.eth_src)
            && self.eth_type.is_none_or(|t| t == p.eth_type)
            && self.ip_proto.is_none_or(|x| Some(x) == p.ip_proto)
            && masked(self.ipv4_src, p.ipv4_src)
            && masked(self.ipv4_dst, p.ipv4_dst)
            && self.tp_src.is_none_or(|x| Some(x) == p.tp_src)
            && self.tp_dst.is_none_or(|x| Some(x) == p.tp_dst)
    }

    /// Non-strict delete or modify: every field the filter sets, the flow sets the same.
    pub fn covers(&self, flow: &FlowMatch) -> bool {
        fn c<T: PartialEq>(f: &Option<T>, e: &Option<T>) -> bool {
            f.is_none() || f == e
        }
        c(&self.in_port, &flow.in_port)
            && c(&self.eth_src, &flow.eth_src)
            && c(&self.eth_dst, &flow.eth_dst)
            && c(&self.eth_type, &flow.eth_type)
            && c(&self.ip_proto, &flow.ip_proto)
            && c(&self.ipv4_src, &flow.ipv4_src)
            && c(&self.ipv4_dst, &flow.ipv4_dst)
            && c(&self.tp_src, &flow.tp_src)
            && c(&self.tp_dst, &flow.tp_dst)
    }
}

/// An action, with ports numbered as in 1.3.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Output(u32),
    SetEthSrc(MacAddr),
    SetEthDst(MacAddr),
}

#[derive(Clone, Debug)]
pub struct Flow {
    pub priority: u16,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub match_: FlowMatch,
    pub actions: Vec<Action>,
    pub goto: Option<u8>,
    pub n_packets: u64,
    pub n_bytes: u64,
}

/// 1.0 port numbers as 1.3 writes them (the switch's own translation).
pub use ofswitch::openflow10::port_in as port_from_10;

fn actions10(actions: &[v10::Action]) -> Result<Vec<Action>, String> {
    actions
        .iter()
        .map(|a| match a {
            v10::Action::Output { port, .. } => Ok(Action::Output(port_from_10(*port))),
            v10::Action::SetDlSrc(m) => Ok(Action::SetEthSrc(*m)),
            v10::Action::SetDlDst(m) => Ok(Action::SetEthDst(*m)),
            other => Err(format!("{other:?} is not modelled")),
        })
        .collect()
}

fn actions13(actions: &[v13::Action]) -> Result<Vec<Action>, String> {
    actions
        .iter()
        .map(|a| match a {
            v13::Action::Output { port, .. } => Ok(Action::Output(*port)),
            v13::Action::SetField(Oxm::EthSrc(m, None)) => Ok(Action::SetEthSrc(*m)),
            v13::Action::SetField(Oxm::EthDst(m, None)) => Ok(Action::SetEthDst(*m)),
            other => Err(format!("{other:?} is not modelled")),
        })
        .collect()
}

/// What the datapath does in answer to an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A message for the controller (its xid chosen by the datapath or echoed).
    ToController(Message),
    /// A frame leaving by a port (towards a neighbour switch or a host).
    Transmit { port: u32, frame: Vec<u8> },
}

/// Counters of what the datapath saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub packet_ins: u64,
    pub packet_outs: u64,
    pub flow_mods: u64,
    pub flow_mods_refused: u64,
    pub frames_in: u64,
    pub frames_out: u64,
}

pub struct Datapath {
    pub id: crate::switch::Identity,
    pub version: u8,
    pub tables: Vec<Vec<Flow>>,
    /// Ports that are down (frames neither leave nor arrive).
    pub down: Vec<u32>,
    pub counters: Counters,
    next_xid: u32,
}

/// OpenFlow pipeline depth limit (goto_table only goes forward; this bounds OFPP_TABLE recursion).
const MAX_DEPTH: u32 = 16;

impl Datapath {
    pub fn new(id: crate::switch::Identity, version: u8, n_tables: usize) -> Datapath {
        Datapath {
            id,
            version,
            tables: vec![Vec::new(); n_tables.max(1)],
            down: Vec::new(),
            counters: Counters::default(),
            next_xid: 0x5d00_0000,
        }
    }

    fn ports(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=self.id.ports).filter(|p| !self.down.contains(p))
    }

    fn xid(&mut self) -> u32 {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.next_xid
    }

    fn error(&self, xid: u32, code: ErrorCode, offending: &Message) -> Effect {
        let mut data = offending.to_bytes().unwrap_or_default();
        data.truncate(64);
        let body = ErrorMsg {
            code,
            data: ofwire::Bytes(data),
        };
        let body = if self.version == OFP10_VERSION {
            Body::V10(v10::Body::Error(body))
        } else {
            Body::V13(v13::Body::Error(body))
        };
        Effect::ToController(Message {
            version: self.version,
            xid,
            body,
        })
    }

    /// A message from the controller.
    pub fn on_message(&mut self, m: &Message, out: &mut Vec<Effect>) {
        match &m.body {
            Body::V10(v10::Body::FlowMod(fm)) => {
                let flow = FlowMatch::from_v10(&fm.match_).and_then(|match_| {
                    Ok(Flow {
                        priority: fm.priority,
                        cookie: fm.cookie,
                        idle_timeout: fm.idle_timeout,
                        hard_timeout: fm.hard_timeout,
                        match_,
                        actions: actions10(&fm.actions)?,
                        goto: None,
                        n_packets: 0,
                        n_bytes: 0,
                    })
                });
                self.flow_mod(m, 0, fm.command, flow, 0, fm.buffer_id, out);
            }
            Body::V13(v13::Body::FlowMod(fm)) => {
                let flow = FlowMatch::from_v13(&fm.match_).and_then(|match_| {
                    let mut actions = Vec::new();
                    let mut goto = None;
                    for ins in &fm.instructions {
                        match ins {
                            v13::Instruction::ApplyActions(a) | v13::Instruction::WriteActions(a) => {
                                actions.extend(actions13(a)?)
                            }
                            v13::Instruction::GotoTable(t) => goto = Some(*t),
                            other => return Err(format!("{other:?} is not modelled")),
                        }
                    }
                    Ok(Flow {
                        priority: fm.priority,
                        cookie: fm.cookie,
                        idle_timeout: fm.idle_timeout,
                        hard_timeout: fm.hard_timeout,
                        match_,
                        actions,
                        goto,
                        n_packets: 0,
                        n_bytes: 0,
                    })
                });
                self.flow_mod(m, fm.table_id, fm.command, flow, fm.cookie_mask, fm.buffer_id, out);
            }
            Body::V10(v10::Body::PacketOut(po)) => {
                self.counters.packet_outs += 1;
                match actions10(&po.actions) {
                    Ok(acts) => {
                        self.apply(port_from_10(po.in_port), po.data.0.clone(), &acts, 0, out);
                    }
                    Err(_) => out.push(self.error(m.xid, ErrorCode::BadAction(BadActionCode::BadType), m)),
                }
            }
            Body::V13(v13::Body::PacketOut(po)) => {
                self.counters.packet_outs += 1;
                match actions13(&po.actions) {
                    Ok(acts) => {
                        self.apply(po.in_port, po.data.0.clone(), &acts, 0, out);
                    }
                    Err(_) => out.push(self.error(m.xid, ErrorCode::BadAction(BadActionCode::BadType), m)),
                }
            }
            _ => {
                for r in crate::switch::replies(self.id, m) {
                    out.push(Effect::ToController(r));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn flow_mod(
        &mut self,
        m: &Message,
        table: u8,
        command: v10::FlowModCommand,
        flow: Result<Flow, String>,
        cookie_mask: u64,
        buffer_id: u32,
        out: &mut Vec<Effect>,
    ) {
        use v10::FlowModCommand as C;
        self.counters.flow_mods += 1;
        let flow = match flow {
            Ok(f) => f,
            Err(_) => {
                self.counters.flow_mods_refused += 1;
                let code = if self.version == OFP10_VERSION {
                    ErrorCode::FlowModFailed10(FlowModFailed10Code::Unsupported)
                } else {
                    ErrorCode::BadMatch(BadMatchCode::BadField)
                };
                out.push(self.error(m.xid, code, m));
                return;
            }
        };
        let tables: Vec<usize> = if table == v13::TABLE_ALL {
            (0..self.tables.len()).collect()
        } else if (table as usize) < self.tables.len() {
            vec![table as usize]
        } else {
            self.counters.flow_mods_refused += 1;
            let code = if self.version == OFP10_VERSION {
                ErrorCode::FlowModFailed10(FlowModFailed10Code::Unsupported)
            } else {
                ErrorCode::FlowModFailed(FlowModFailedCode::BadTableId)
            };
            out.push(self.error(m.xid, code, m));
            return;
        };
        for t in tables {
            let entries = &mut self.tables[t];
            let cookie_ok = |f: &Flow| f.cookie & cookie_mask == flow.cookie & cookie_mask;
            match command {
                C::Add => {
                    entries.retain(|f| !(f.priority == flow.priority && f.match_ == flow.match_));
                    entries.push(flow.clone());
                }
                C::Delete => entries.retain(|f| !(flow.match_.covers(&f.match_) && cookie_ok(f))),
                C::DeleteStrict => {
                    entries.retain(|f| !(f.priority == flow.priority && f.match_ == flow.match_ && cookie_ok(f)))
                }
                C::Modify | C::ModifyStrict => {
                    let strict = command == C::ModifyStrict;
                    for f in entries.iter_mut().filter(|f| {
                        if strict {
                            f.priority == flow.priority && f.match_ == flow.match_
                        } else {
                            flow.match_.covers(&f.match_)
                        }
                    }) {
                        f.actions = flow.actions.clone();
                        f.goto = flow.goto;
                    }
                }
                C::Unknown(_) => {}
            }
        }
        // This datapath buffers nothing: a FLOW_MOD naming a buffer has nothing to release.
        let _ = buffer_id;
    }

    /// A frame arriving by `in_port`.
    pub fn on_frame(&mut self, in_port: u32, frame: Vec<u8>, out: &mut Vec<Effect>) {
        if self.down.contains(&in_port) {
            return;
        }
        self.counters.frames_in += 1;
        self.pipeline(in_port, frame, 0, 0, out);
    }

    fn pipeline(&mut self, in_port: u32, frame: Vec<u8>, table: u8, depth: u32, out: &mut Vec<Effect>) {
        let Some(parsed) = parse(&frame) else { return };
        let Some(entries) = self.tables.get_mut(table as usize) else {
            return;
        };
        let best = entries
            .iter_mut()
            .filter(|f| f.match_.matches(in_port, &parsed))
            .max_by_key(|f| f.priority);
        let Some(flow) = best else {
            // A 1.0 table miss goes to the controller; 1.3 drops it.
            if self.version == OFP10_VERSION {
                self.packet_in(in_port, &frame, PacketInReason::NoMatch, table, out);
            }
            return;
        };
        flow.n_packets += 1;
        flow.n_bytes += frame.len() as u64;
        let (acts, goto) = (flow.actions.clone(), flow.goto);
        let frame = self.apply(in_port, frame, &acts, depth, out);
        if let Some(t) = goto.filter(|t| *t > table) {
            self.pipeline(in_port, frame, t, depth, out);
        }
    }

    /// Applies actions; returns the frame as modified.
    fn apply(
        &mut self,
        in_port: u32,
        mut frame: Vec<u8>,
        acts: &[Action],
        depth: u32,
        out: &mut Vec<Effect>,
    ) -> Vec<u8> {
        for a in acts {
            match a {
                Action::SetEthDst(m) if frame.len() >= 6 => frame[0..6].copy_from_slice(&m.0),
                Action::SetEthSrc(m) if frame.len() >= 12 => frame[6..12].copy_from_slice(&m.0),
                Action::SetEthDst(_) | Action::SetEthSrc(_) => {}
                Action::Output(port) => match *port {
                    v13::port::CONTROLLER => self.packet_in(in_port, &frame, PacketInReason::Action, 0, out),
                    v13::port::FLOOD | v13::port::ALL => {
                        let ports: Vec<u32> = self.ports().filter(|p| *p != in_port).collect();
                        for p in ports {
                            self.counters.frames_out += 1;
                            out.push(Effect::Transmit {
                                port: p,
                                frame: frame.clone(),
                            });
                        }
                    }
                    v13::port::IN_PORT => {
                        self.counters.frames_out += 1;
                        out.push(Effect::Transmit {
                            port: in_port,
                            frame: frame.clone(),
                        });
                    }
                    v13::port::TABLE if depth < MAX_DEPTH => self.pipeline(in_port, frame.clone(), 0, depth + 1, out),
                    p if p < v13::port::MAX && p != in_port && !self.down.contains(&p) && p <= self.id.ports => {
                        self.counters.frames_out += 1;
                        out.push(Effect::Transmit {
                            port: p,
                            frame: frame.clone(),
                        });
                    }
                    // OpenFlow: output to the input port needs IN_PORT; LOCAL, NORMAL and absent ports go nowhere here.
                    _ => {}
                },
            }
        }
        frame
    }

    fn packet_in(&mut self, in_port: u32, frame: &[u8], reason: PacketInReason, table: u8, out: &mut Vec<Effect>) {
        self.counters.packet_ins += 1;
        let xid = self.xid();
        let data = ofwire::Bytes(frame.to_vec());
        let body = if self.version == OFP10_VERSION {
            Body::V10(v10::Body::PacketIn(v10::PacketIn {
                buffer_id: v10::NO_BUFFER,
                total_len: frame.len() as u16,
                in_port: if in_port >= v13::port::MAX {
                    (in_port & 0xffff) as u16
                } else {
                    in_port as u16
                },
                reason,
                data,
            }))
        } else {
            Body::V13(v13::Body::PacketIn(v13::PacketIn {
                buffer_id: v13::NO_BUFFER,
                total_len: frame.len() as u16,
                reason,
                table_id: table,
                cookie: 0,
                match_: ofwire::oxm::Match::new(vec![Oxm::InPort(in_port)]),
                data,
            }))
        };
        out.push(Effect::ToController(Message {
            version: self.version,
            xid,
            body,
        }));
    }

    /// A port's link going down or up: the PORT_STATUS the controller gets.
    pub fn set_port(&mut self, port: u32, up: bool) -> Message {
        self.down.retain(|p| *p != port);
        if !up {
            self.down.push(port);
        }
        let xid = self.xid();
        let hw_addr = crate::switch::port_mac(self.id.datapath_id, port);
        let name = format!("eth{port}");
        let state = u32::from(!up);
        let body = if self.version == OFP10_VERSION {
            Body::V10(v10::Body::PortStatus(v10::PortStatus {
                reason: ofwire::PortReason::Modify,
                desc: v10::PhyPort {
                    port_no: port as u16,
                    hw_addr,
                    name,
                    config: 0,
                    state,
                    curr: 0,
                    advertised: 0,
                    supported: 0,
                    peer: 0,
                },
            }))
        } else {
            Body::V13(v13::Body::PortStatus(v13::PortStatus {
                reason: ofwire::PortReason::Modify,
                desc: v13::Port {
                    port_no: port,
                    hw_addr,
                    name,
                    config: 0,
                    state,
                    curr: 0,
                    advertised: 0,
                    supported: 0,
                    peer: 0,
                    curr_speed: 0,
                    max_speed: 0,
                },
            }))
        };
        Message {
            version: self.version,
            xid,
            body,
        }
    }

    /// Flows of table 0 with this cookie.
    pub fn flows_with_cookie(&self, cookie: u64) -> Vec<&Flow> {
        self.tables[0].iter().filter(|f| f.cookie == cookie).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::Identity;

    fn dp(version: u8) -> Datapath {
        Datapath::new(
            Identity {
                datapath_id: 9,
                ports: 4,
            },
            version,
            4,
        )
    }

    /// An IPv4/UDP frame 10.0.0.1 -> 10.0.1.2, ports 1000 -> 53.
    fn udp() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2]);
        f.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 8, 0, 0]);
        f
    }

    fn flow13(table: u8, priority: u16, fields: Vec<Oxm>, ins: Vec<v13::Instruction>) -> Message {
        let mut fm = v13::FlowMod::add(priority);
        fm.table_id = table;
        fm.match_ = ofwire::oxm::Match::new(fields);
        fm.instructions = ins;
        Message::v13(1, v13::Body::FlowMod(fm))
    }

    fn outputs(effects: &[Effect]) -> Vec<u32> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Transmit { port, .. } => Some(*port),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn masked_ipv4_and_transport_ports_match_across_tables() {
        let mut d = dp(ofwire::OFP13_VERSION);
        let mut out = Vec::new();
        d.on_message(&flow13(0, 1, vec![], vec![v13::Instruction::GotoTable(1)]), &mut out);
        let prefix = Oxm::Ipv4Dst(Ipv4Addr::new(10, 0, 1, 0), Some(Ipv4Addr::new(255, 255, 255, 0)));
        let fields = vec![Oxm::EthType(0x0800), prefix, Oxm::IpProto(17), Oxm::UdpDst(53)];
        let to3 = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
            port: 3,
            max_len: 0,
        }])];
        d.on_message(&flow13(1, 10, fields, to3), &mut out);
        assert!(out.is_empty(), "{out:?}");
        d.on_frame(1, udp(), &mut out);
        assert_eq!(outputs(&out), vec![3]);
        // Another destination misses table 1: a 1.3 miss is dropped.
        out.clear();
        let mut other = udp();
        other[32] = 9;
        d.on_frame(1, other, &mut out);
        assert!(out.is_empty());
        assert_eq!(d.tables[1][0].n_packets, 1);
    }

    #[test]
    fn unmodelled_fields_are_refused_like_a_switch_would() {
        let mut d = dp(ofwire::OFP13_VERSION);
        let mut out = Vec::new();
        d.on_message(&flow13(0, 1, vec![Oxm::VlanPcp(3)], vec![]), &mut out);
        let [Effect::ToController(m)] = out.as_slice() else {
            panic!("{out:?}")
        };
        let Body::V13(v13::Body::Error(e)) = &m.body else {
            panic!("{m}")
        };
        assert_eq!(e.code, ErrorCode::BadMatch(BadMatchCode::BadField));
        assert_eq!(d.counters.flow_mods_refused, 1);
        out.clear();
        d.on_message(&flow13(7, 1, vec![], vec![]), &mut out);
        assert_eq!(out.len(), 1, "table 7 does not exist");
    }

    #[test]
    fn one_zero_misses_go_to_the_controller_and_packet_outs_run_the_table() {
        let mut d = dp(OFP10_VERSION);
        let mut out = Vec::new();
        d.on_frame(2, udp(), &mut out);
        let [Effect::ToController(m)] = out.as_slice() else {
            panic!("{out:?}")
        };
        let Body::V10(v10::Body::PacketIn(pi)) = &m.body else {
            panic!()
        };
        assert_eq!((pi.in_port, pi.reason), (2, PacketInReason::NoMatch));
        // A flow, then a PACKET_OUT to OFPP_TABLE goes through it; FLOOD skips the input port.
        let mut fm = v10::FlowMod {
            match_: v10::Match::all(),
            cookie: 7,
            command: v10::FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 5,
            buffer_id: v10::NO_BUFFER,
            out_port: v10::port::NONE,
            flags: 0,
            actions: vec![v10::Action::Output {
                port: v10::port::FLOOD,
                max_len: 0,
            }],
        };
        fm.match_.wildcards &= !v10::wildcards::DL_TYPE;
        fm.match_.dl_type = 0x0800;
        out.clear();
        d.on_message(&Message::v10(2, v10::Body::FlowMod(fm.clone())), &mut out);
        let po = v10::PacketOut {
            buffer_id: v10::NO_BUFFER,
            in_port: 1,
            actions: vec![v10::Action::Output {
                port: v10::port::TABLE,
                max_len: 0,
            }],
            data: ofwire::Bytes(udp()),
        };
        d.on_message(&Message::v10(3, v10::Body::PacketOut(po)), &mut out);
        assert_eq!(outputs(&out), vec![2, 3, 4]);
        // A port down neither sends nor receives; its PORT_STATUS says LINK_DOWN.
        let ps = d.set_port(3, false);
        let Body::V10(v10::Body::PortStatus(p)) = &ps.body else {
            panic!()
        };
        assert_eq!(p.desc.state & 1, 1);
        out.clear();
        d.on_frame(1, udp(), &mut out);
        assert_eq!(outputs(&out), vec![2, 4]);
        // Delete by cookie-less non-strict match removes it.
        fm.command = v10::FlowModCommand::Delete;
        fm.match_ = v10::Match::all();
        d.on_message(&Message::v10(4, v10::Body::FlowMod(fm)), &mut out);
        assert!(d.tables[0].is_empty());
    }
}
