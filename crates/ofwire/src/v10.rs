//! OpenFlow 1.0 (wire version 0x01): every message of the specification.
//!
//! `Body` is the typed form of each message; `Body::decode` validates
//! lengths, padding and enumerations and returns errors carrying 1.0 error
//! codes; `Body::encode` writes the exact bytes back.

use crate::codec::{Put, Reader, Tlv8};
use crate::common::*;
use crate::error::*;
use crate::types::{Bytes, MacAddr};
use crate::wire_enum::wire_enum;
use std::net::Ipv4Addr;

/// Message type numbers of OpenFlow 1.0.
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const VENDOR: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const PORT_MOD: u8 = 15;
    pub const STATS_REQUEST: u8 = 16;
    pub const STATS_REPLY: u8 = 17;
    pub const BARRIER_REQUEST: u8 = 18;
    pub const BARRIER_REPLY: u8 = 19;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 20;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 21;

    /// The spec's name of a 1.0 message type.
    pub fn name(t: u8) -> &'static str {
        const NAMES: [&str; 22] = [
            "HELLO",
            "ERROR",
            "ECHO_REQUEST",
            "ECHO_REPLY",
            "VENDOR",
            "FEATURES_REQUEST",
            "FEATURES_REPLY",
            "GET_CONFIG_REQUEST",
            "GET_CONFIG_REPLY",
            "SET_CONFIG",
            "PACKET_IN",
            "FLOW_REMOVED",
            "PORT_STATUS",
            "PACKET_OUT",
            "FLOW_MOD",
            "PORT_MOD",
            "STATS_REQUEST",
            "STATS_REPLY",
            "BARRIER_REQUEST",
            "BARRIER_REPLY",
            "QUEUE_GET_CONFIG_REQUEST",
            "QUEUE_GET_CONFIG_REPLY",
        ];
        NAMES.get(t as usize).copied().unwrap_or("UNKNOWN")
    }
}

/// Reserved port numbers (`ofp_port`).
pub mod port {
    pub const MAX: u16 = 0xff00;
    pub const IN_PORT: u16 = 0xfff8;
    pub const TABLE: u16 = 0xfff9;
    pub const NORMAL: u16 = 0xfffa;
    pub const FLOOD: u16 = 0xfffb;
    pub const ALL: u16 = 0xfffc;
    pub const CONTROLLER: u16 = 0xfffd;
    pub const LOCAL: u16 = 0xfffe;
    pub const NONE: u16 = 0xffff;
}

/// `ofp_flow_wildcards` bits.
pub mod wildcards {
    pub const IN_PORT: u32 = 1 << 0;
    pub const DL_VLAN: u32 = 1 << 1;
    pub const DL_SRC: u32 = 1 << 2;
    pub const DL_DST: u32 = 1 << 3;
    pub const DL_TYPE: u32 = 1 << 4;
    pub const NW_PROTO: u32 = 1 << 5;
    pub const TP_SRC: u32 = 1 << 6;
    pub const TP_DST: u32 = 1 << 7;
    pub const NW_SRC_SHIFT: u32 = 8;
    pub const NW_SRC_MASK: u32 = 0x3f << NW_SRC_SHIFT;
    pub const NW_DST_SHIFT: u32 = 14;
    pub const NW_DST_MASK: u32 = 0x3f << NW_DST_SHIFT;
    pub const DL_VLAN_PCP: u32 = 1 << 20;
    pub const NW_TOS: u32 = 1 << 21;
    pub const ALL: u32 = (1 << 22) - 1;
}

pub const NO_BUFFER: u32 = 0xffff_ffff;

/// `ofp_match` (40 bytes). Fields a wildcard bit covers are still carried so
/// the message re-encodes byte-exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Match {
    pub wildcards: u32,
    pub in_port: u16,
    pub dl_src: MacAddr,
    pub dl_dst: MacAddr,
    pub dl_vlan: u16,
    pub dl_vlan_pcp: u8,
    pub dl_type: u16,
    pub nw_tos: u8,
    pub nw_proto: u8,
    pub nw_src: Ipv4Addr,
    pub nw_dst: Ipv4Addr,
    pub tp_src: u16,
    pub tp_dst: u16,
}

impl Default for Match {
    /// Matches everything.
    fn default() -> Self {
        Match::all()
    }
}

impl Match {
    pub const LEN: usize = 40;

    /// The match-everything match.
    pub fn all() -> Match {
        Match {
            wildcards: wildcards::ALL,
            in_port: 0,
            dl_src: MacAddr::ZERO,
            dl_dst: MacAddr::ZERO,
            dl_vlan: 0,
            dl_vlan_pcp: 0,
            dl_type: 0,
            nw_tos: 0,
            nw_proto: 0,
            nw_src: Ipv4Addr::UNSPECIFIED,
            nw_dst: Ipv4Addr::UNSPECIFIED,
            tp_src: 0,
            tp_dst: 0,
        }
    }

    /// How many leading bits of nw_src are matched (0..=32).
    pub fn nw_src_prefix_len(&self) -> u8 {
        32 - ((self.wildcards & wildcards::NW_SRC_MASK) >> wildcards::NW_SRC_SHIFT).min(32) as u8
    }

    /// How many leading bits of nw_dst are matched (0..=32).
    pub fn nw_dst_prefix_len(&self) -> u8 {
        32 - ((self.wildcards & wildcards::NW_DST_MASK) >> wildcards::NW_DST_SHIFT).min(32) as u8
    }

    /// Sets how many leading bits of nw_src are matched.
    pub fn set_nw_src_prefix(&mut self, addr: Ipv4Addr, prefix_len: u8) {
        let wild = 32 - prefix_len.min(32) as u32;
        self.wildcards = (self.wildcards & !wildcards::NW_SRC_MASK) | (wild << wildcards::NW_SRC_SHIFT);
        self.nw_src = addr;
    }

    /// Sets how many leading bits of nw_dst are matched.
    pub fn set_nw_dst_prefix(&mut self, addr: Ipv4Addr, prefix_len: u8) {
        let wild = 32 - prefix_len.min(32) as u32;
        self.wildcards = (self.wildcards & !wildcards::NW_DST_MASK) | (wild << wildcards::NW_DST_SHIFT);
        self.nw_dst = addr;
    }

    pub(crate) fn decode(r: &mut Reader) -> Result<Match, DecodeError> {
        let m = Match {
            wildcards: r.u32()?,
            in_port: r.u16()?,
            dl_src: MacAddr(r.array()?),
            dl_dst: MacAddr(r.array()?),
            dl_vlan: r.u16()?,
            dl_vlan_pcp: r.u8()?,
            dl_type: {
                r.pad(1)?;
                r.u16()?
            },
            nw_tos: r.u8()?,
            nw_proto: r.u8()?,
            nw_src: {
                r.pad(2)?;
                Ipv4Addr::from(r.u32()?)
            },
            nw_dst: Ipv4Addr::from(r.u32()?),
            tp_src: r.u16()?,
            tp_dst: r.u16()?,
        };
        Ok(m)
    }

    #[inline]
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.wildcards);
        out.put_u16(self.in_port);
        out.put_slice(&self.dl_src.0);
        out.put_slice(&self.dl_dst.0);
        out.put_u16(self.dl_vlan);
        out.put_u8(self.dl_vlan_pcp);
        out.put_u8(0);
        out.put_u16(self.dl_type);
        out.put_u8(self.nw_tos);
        out.put_u8(self.nw_proto);
        out.put_u16(0);
        out.put_u32(self.nw_src.into());
        out.put_u32(self.nw_dst.into());
        out.put_u16(self.tp_src);
        out.put_u16(self.tp_dst);
    }
}

/// Every 1.0 action (`ofp_action_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Action {
    Output { port: u16, max_len: u16 },
    SetVlanVid(u16),
    SetVlanPcp(u8),
    StripVlan,
    SetDlSrc(MacAddr),
    SetDlDst(MacAddr),
    SetNwSrc(Ipv4Addr),
    SetNwDst(Ipv4Addr),
    SetNwTos(u8),
    SetTpSrc(u16),
    SetTpDst(u16),
    Enqueue { port: u16, queue_id: u32 },
    Vendor { vendor: u32, data: Bytes },
}

fn bad_action(code: BadActionCode) -> ErrorCode {
    ErrorCode::BadAction(code)
}

impl Action {
    /// Decodes an action list that fills the reader.
    pub(crate) fn decode_list(r: &mut Reader) -> Result<Vec<Action>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(Action::decode(r)?);
        }
        Ok(out)
    }

    fn decode(r: &mut Reader) -> Result<Action, DecodeError> {
        let tlv = Tlv8::read(r, bad_action(BadActionCode::BadLen), "action")?;
        let (ty, mut a) = (tlv.ty, tlv.body.clone());
        let action = match ty {
            0 => {
                tlv.expect_len(8)?;
                let port = a.u16()?;
                if port == port::NONE || (port > port::MAX && port < port::IN_PORT) {
                    return Err(a.error(
                        bad_action(BadActionCode::BadOutPort),
                        format_args!("OUTPUT to port {port:#x}"),
                    ));
                }
                Action::Output {
                    port,
                    max_len: a.u16()?,
                }
            }
            1 => {
                tlv.expect_len(8)?;
                let vid = a.u16()?;
                a.pad(2)?;
                if vid > 0x0fff {
                    return Err(a.error(
                        bad_action(BadActionCode::BadArgument),
                        format_args!("SET_VLAN_VID {vid} exceeds 12 bits"),
                    ));
                }
                Action::SetVlanVid(vid)
            }
            2 => {
                tlv.expect_len(8)?;
                let pcp = a.u8()?;
                a.pad(3)?;
                if pcp > 7 {
                    return Err(a.error(
                        bad_action(BadActionCode::BadArgument),
                        format_args!("SET_VLAN_PCP {pcp} exceeds 3 bits"),
                    ));
                }
                Action::SetVlanPcp(pcp)
            }
            3 => {
                tlv.expect_len(8)?;
                a.pad(4)?;
                Action::StripVlan
            }
            4 | 5 => {
                tlv.expect_len(16)?;
                let mac = MacAddr(a.array()?);
                a.pad(6)?;
                if ty == 4 {
                    Action::SetDlSrc(mac)
                } else {
                    Action::SetDlDst(mac)
                }
            }
            6 | 7 => {
                tlv.expect_len(8)?;
                let ip = Ipv4Addr::from(a.u32()?);
                if ty == 6 {
                    Action::SetNwSrc(ip)
                } else {
                    Action::SetNwDst(ip)
                }
            }
            8 => {
                tlv.expect_len(8)?;
                let tos = a.u8()?;
                a.pad(3)?;
                if tos & 0x03 != 0 {
                    return Err(a.error(
                        bad_action(BadActionCode::BadArgument),
                        format_args!("SET_NW_TOS {tos:#x} touches the ECN bits"),
                    ));
                }
                Action::SetNwTos(tos)
            }
            9 | 10 => {
                tlv.expect_len(8)?;
                let p = a.u16()?;
                a.pad(2)?;
                if ty == 9 {
                    Action::SetTpSrc(p)
                } else {
                    Action::SetTpDst(p)
                }
            }
            11 => {
                tlv.expect_len(16)?;
                let port = a.u16()?;
                a.pad(6)?;
                Action::Enqueue {
                    port,
                    queue_id: a.u32()?,
                }
            }
            0xffff => Action::Vendor {
                vendor: a.u32()?,
                data: Bytes::from(a.rest()),
            },
            other => {
                return Err(a.error(
                    bad_action(BadActionCode::BadType),
                    format_args!("unknown action type {other}"),
                ))
            }
        };
        a.finish()?;
        Ok(action)
    }

    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        match self {
            Action::Output { port, max_len } => {
                out.put_u16(0);
                out.put_u16(8);
                out.put_u16(*port);
                out.put_u16(*max_len);
            }
            Action::SetVlanVid(v) => put_u16_action(out, 1, *v),
            Action::SetVlanPcp(v) => put_u8_action(out, 2, *v),
            Action::StripVlan => {
                out.put_u16(3);
                out.put_u16(8);
                out.put_zeros(4);
            }
            Action::SetDlSrc(m) | Action::SetDlDst(m) => {
                out.put_u16(if matches!(self, Action::SetDlSrc(_)) { 4 } else { 5 });
                out.put_u16(16);
                out.put_slice(&m.0);
                out.put_zeros(6);
            }
            Action::SetNwSrc(ip) | Action::SetNwDst(ip) => {
                out.put_u16(if matches!(self, Action::SetNwSrc(_)) { 6 } else { 7 });
                out.put_u16(8);
                out.put_u32((*ip).into());
            }
            Action::SetNwTos(v) => put_u8_action(out, 8, *v),
            Action::SetTpSrc(v) => put_u16_action(out, 9, *v),
            Action::SetTpDst(v) => put_u16_action(out, 10, *v),
            Action::Enqueue { port, queue_id } => {
                out.put_u16(11);
                out.put_u16(16);
                out.put_u16(*port);
                out.put_zeros(6);
                out.put_u32(*queue_id);
            }
            Action::Vendor { vendor, data } => {
                out.put_u16(0xffff);
                out.put_u16(0);
                out.put_u32(*vendor);
                out.put_slice(&data.0);
                out.pad_to_8(start);
                let len = (out.len() - start) as u16;
                out.patch_u16(start + 2, len);
            }
        }
    }
}

fn put_u16_action(out: &mut Vec<u8>, ty: u16, v: u16) {
    out.put_u16(ty);
    out.put_u16(8);
    out.put_u16(v);
    out.put_zeros(2);
}

fn put_u8_action(out: &mut Vec<u8>, ty: u16, v: u8) {
    out.put_u16(ty);
    out.put_u16(8);
    out.put_u8(v);
    out.put_zeros(3);
}

pub(crate) fn relabel(mut e: DecodeError, code: ErrorCode) -> DecodeError {
    e.code = code;
    e
}

/// Encodes an action list.
#[inline]
pub fn encode_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        a.encode(out);
    }
}

/// `ofp_phy_port` (48 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PhyPort {
    pub port_no: u16,
    pub hw_addr: MacAddr,
    pub name: String,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
}

impl PhyPort {
    pub const LEN: usize = 48;
    pub(crate) fn decode(r: &mut Reader) -> Result<PhyPort, DecodeError> {
        Ok(PhyPort {
            port_no: r.u16()?,
            hw_addr: MacAddr(r.array()?),
            name: r.fixed_str::<16>("port name")?,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
        })
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.port_no);
        out.put_slice(&self.hw_addr.0);
        out.put_fixed_str(&self.name, 16);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
        ] {
            out.put_u32(v);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub capabilities: u32,
    /// Bitmap of supported `ofp_action_type`s.
    pub actions: u32,
    pub ports: Vec<PhyPort>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub in_port: u16,
    pub reason: PacketInReason,
    pub data: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowRemoved {
    pub match_: Match,
    pub cookie: u64,
    pub priority: u16,
    pub reason: FlowRemovedReason,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStatus {
    pub reason: PortReason,
    pub desc: PhyPort,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u16,
    pub actions: Vec<Action>,
    pub data: Bytes,
}

wire_enum! {
    /// `ofp_flow_mod_command` (same numbers in 1.0 and 1.3).
    pub enum FlowModCommand: u8 {
        Add = 0 => "ADD",
        Modify = 1 => "MODIFY",
        ModifyStrict = 2 => "MODIFY_STRICT",
        Delete = 3 => "DELETE",
        DeleteStrict = 4 => "DELETE_STRICT",
    }
}

/// `ofp_flow_mod_flags` of 1.0.
pub mod flow_mod_flags {
    pub const SEND_FLOW_REM: u16 = 1;
    pub const CHECK_OVERLAP: u16 = 2;
    pub const EMERG: u16 = 4;
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowMod {
    pub match_: Match,
    pub cookie: u64,
    pub command: FlowModCommand,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u16,
    pub flags: u16,
    pub actions: Vec<Action>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortMod {
    pub port_no: u16,
    pub hw_addr: MacAddr,
    pub config: u32,
    pub mask: u32,
    pub advertise: u32,
}

/// Body of OFPST_FLOW and OFPST_AGGREGATE requests.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStatsRequest {
    pub match_: Match,
    /// 0xff for all tables.
    pub table_id: u8,
    pub out_port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StatsRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    Port {
        port_no: u16,
    },
    Queue {
        port_no: u16,
        queue_id: u32,
    },
    /// Open vSwitch's extension: stats type 13 (OFPMP_PORT_DESC of 1.3,
    /// carried in 1.0), no body; `ovs-ofctl dump-ports-desc` and OVS itself
    /// send it on a 1.0 connection.
    PortDesc,
    Vendor {
        vendor: u32,
        data: Bytes,
    },
}

/// Open vSwitch's OpenFlow 1.0 port description stats type (its extension).
pub const STATS_PORT_DESC: u16 = 13;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StatsRequest {
    pub flags: u16,
    pub body: StatsRequestBody,
}

/// `ofp_flow_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStats {
    pub table_id: u8,
    pub match_: Match,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub actions: Vec<Action>,
}

/// `ofp_table_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    pub table_id: u8,
    pub name: String,
    pub wildcards: u32,
    pub max_entries: u32,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

/// `ofp_port_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub port_no: u16,
    pub counters: PortCounters,
}

/// `ofp_queue_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub port_no: u16,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StatsReplyBody {
    Desc(DescStats),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    Port(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    /// Open vSwitch's extension (stats type 13): every port, as in FEATURES_REPLY.
    PortDesc(Vec<PhyPort>),
    Vendor {
        vendor: u32,
        data: Bytes,
    },
}

/// OFPSF_REPLY_MORE.
pub const STATS_REPLY_MORE: u16 = 1;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StatsReply {
    pub flags: u16,
    pub body: StatsReplyBody,
}

impl StatsReply {
    /// The reply cut into parts whose encoded message is at most
    /// `max_message` bytes, in order, OFPSF_REPLY_MORE on all but the last
    /// (which keeps this reply's flag): as `v13::MultipartReply::split`.
    pub fn split(self, max_message: usize) -> Vec<StatsReply> {
        let size = |body: &StatsReplyBody| {
            let mut buf = Vec::new();
            encode_stats_reply_body(body, &mut buf);
            // The OpenFlow header, the type and the flags.
            buf.len() + 12
        };
        let halves = |b: StatsReplyBody| {
            use StatsReplyBody::*;
            crate::common::halve_lists!(b, Flow, Table, Port, Queue, PortDesc)
        };
        crate::common::cut_to_fit(self.body, max_message, &size, &halves)
            .into_iter()
            .map(|(body, more)| StatsReply {
                flags: if more {
                    self.flags | STATS_REPLY_MORE
                } else {
                    self.flags
                },
                body,
            })
            .collect()
    }
}

/// `ofp_packet_queue` of 1.0.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub properties: Vec<QueueProp>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueGetConfigReply {
    pub port: u16,
    pub queues: Vec<PacketQueue>,
}

/// Every OpenFlow 1.0 message except HELLO (which is version-independent).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Body {
    Error(ErrorMsg),
    EchoRequest(Bytes),
    EchoReply(Bytes),
    Vendor { vendor: u32, data: Bytes },
    FeaturesRequest,
    FeaturesReply(FeaturesReply),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    PortMod(PortMod),
    StatsRequest(StatsRequest),
    StatsReply(StatsReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest { port: u16 },
    QueueGetConfigReply(QueueGetConfigReply),
}

fn bad_len() -> ErrorCode {
    ErrorCode::BadRequest(BadRequestCode::BadLen)
}

impl Body {
    pub fn msg_type(&self) -> u8 {
        use msg_type::*;
        match self {
            Body::Error(_) => ERROR,
            Body::EchoRequest(_) => ECHO_REQUEST,
            Body::EchoReply(_) => ECHO_REPLY,
            Body::Vendor { .. } => VENDOR,
            Body::FeaturesRequest => FEATURES_REQUEST,
            Body::FeaturesReply(_) => FEATURES_REPLY,
            Body::GetConfigRequest => GET_CONFIG_REQUEST,
            Body::GetConfigReply(_) => GET_CONFIG_REPLY,
            Body::SetConfig(_) => SET_CONFIG,
            Body::PacketIn(_) => PACKET_IN,
            Body::FlowRemoved(_) => FLOW_REMOVED,
            Body::PortStatus(_) => PORT_STATUS,
            Body::PacketOut(_) => PACKET_OUT,
            Body::FlowMod(_) => FLOW_MOD,
            Body::PortMod(_) => PORT_MOD,
            Body::StatsRequest(_) => STATS_REQUEST,
            Body::StatsReply(_) => STATS_REPLY,
            Body::BarrierRequest => BARRIER_REQUEST,
            Body::BarrierReply => BARRIER_REPLY,
            Body::QueueGetConfigRequest { .. } => QUEUE_GET_CONFIG_REQUEST,
            Body::QueueGetConfigReply(_) => QUEUE_GET_CONFIG_REPLY,
        }
    }

    /// Decodes the body (everything after the 8-byte header) of a message of type `t`.
    pub fn decode(t: u8, body: &[u8]) -> Result<Body, DecodeError> {
        use msg_type::*;
        let ctx = msg_type::name(t);
        let mut r = Reader::new(body, bad_len(), ctx);
        let empty = |r: &Reader, b: Body| -> Result<Body, DecodeError> {
            r.finish()?;
            Ok(b)
        };
        let msg = match t {
            ERROR => Body::Error(ErrorMsg::decode(crate::OFP10_VERSION, &mut r)?),
            ECHO_REQUEST => Body::EchoRequest(Bytes::from(r.rest())),
            ECHO_REPLY => Body::EchoReply(Bytes::from(r.rest())),
            VENDOR => Body::Vendor {
                vendor: r.u32()?,
                data: Bytes::from(r.rest()),
            },
            FEATURES_REQUEST => return empty(&r, Body::FeaturesRequest),
            FEATURES_REPLY => {
                let datapath_id = r.u64()?;
                let n_buffers = r.u32()?;
                let n_tables = r.u8()?;
                r.pad(3)?;
                let capabilities = r.u32()?;
                let actions = r.u32()?;
                if !r.remaining().is_multiple_of(PhyPort::LEN) {
                    return Err(r.error(
                        bad_len(),
                        format_args!("port list of {} bytes is not a multiple of 48", r.remaining()),
                    ));
                }
                let mut ports = Vec::with_capacity(r.remaining() / PhyPort::LEN);
                while !r.is_empty() {
                    ports.push(PhyPort::decode(&mut r)?);
                }
                Body::FeaturesReply(FeaturesReply {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    capabilities,
                    actions,
                    ports,
                })
            }
            GET_CONFIG_REQUEST => return empty(&r, Body::GetConfigRequest),
            GET_CONFIG_REPLY => Body::GetConfigReply(SwitchConfig::decode(&mut r)?),
            SET_CONFIG => Body::SetConfig(SwitchConfig::decode(&mut r)?),
            PACKET_IN => {
                let buffer_id = r.u32()?;
                let total_len = r.u16()?;
                let in_port = r.u16()?;
                let reason = r.u8()?.into();
                r.pad(1)?;
                Body::PacketIn(PacketIn {
                    buffer_id,
                    total_len,
                    in_port,
                    reason,
                    data: Bytes::from(r.rest()),
                })
            }
            FLOW_REMOVED => {
                let match_ = Match::decode(&mut r)?;
                let cookie = r.u64()?;
                let priority = r.u16()?;
                let reason = r.u8()?.into();
                r.pad(1)?;
                let duration_sec = r.u32()?;
                let duration_nsec = r.u32()?;
                let idle_timeout = r.u16()?;
                r.pad(2)?;
                Body::FlowRemoved(FlowRemoved {
                    match_,
                    cookie,
                    priority,
                    reason,
                    duration_sec,
                    duration_nsec,
                    idle_timeout,
                    packet_count: r.u64()?,
                    byte_count: r.u64()?,
                })
            }
            PORT_STATUS => {
                let reason = r.u8()?.into();
                r.pad(7)?;
                Body::PortStatus(PortStatus {
                    reason,
                    desc: PhyPort::decode(&mut r)?,
                })
            }
            PACKET_OUT => {
                let buffer_id = r.u32()?;
                let in_port = r.u16()?;
                let actions_len = r.u16()? as usize;
                if actions_len > r.remaining() {
                    return Err(r.error(
                        bad_len(),
                        format_args!("actions_len {actions_len} exceeds the {} bytes left", r.remaining()),
                    ));
                }
                let mut ar = r.sub_with(
                    actions_len,
                    ErrorCode::BadAction(BadActionCode::BadLen),
                    "PACKET_OUT actions",
                )?;
                let actions = Action::decode_list(&mut ar)?;
                Body::PacketOut(PacketOut {
                    buffer_id,
                    in_port,
                    actions,
                    data: Bytes::from(r.rest()),
                })
            }
            FLOW_MOD => {
                let match_ = Match::decode(&mut r)?;
                let cookie = r.u64()?;
                let cmd = r.u16()?;
                let command = FlowModCommand::from(cmd.min(0xff) as u8);
                if cmd > 4 {
                    return Err(r.error(
                        ErrorCode::FlowModFailed10(FlowModFailed10Code::BadCommand),
                        format_args!("unknown command {cmd}"),
                    ));
                }
                let idle_timeout = r.u16()?;
                let hard_timeout = r.u16()?;
                let priority = r.u16()?;
                let buffer_id = r.u32()?;
                let out_port = r.u16()?;
                let flags = r.u16()?;
                let mut ar = r.sub_with(
                    r.remaining(),
                    ErrorCode::BadAction(BadActionCode::BadLen),
                    "FLOW_MOD actions",
                )?;
                Body::FlowMod(FlowMod {
                    match_,
                    cookie,
                    command,
                    idle_timeout,
                    hard_timeout,
                    priority,
                    buffer_id,
                    out_port,
                    flags,
                    actions: Action::decode_list(&mut ar)?,
                })
            }
            PORT_MOD => {
                let port_no = r.u16()?;
                let hw_addr = MacAddr(r.array()?);
                let config = r.u32()?;
                let mask = r.u32()?;
                let advertise = r.u32()?;
                r.pad(4)?;
                Body::PortMod(PortMod {
                    port_no,
                    hw_addr,
                    config,
                    mask,
                    advertise,
                })
            }
            STATS_REQUEST => {
                let ty = r.u16()?;
                let flags = r.u16()?;
                let body = match ty {
                    0 => StatsRequestBody::Desc,
                    1 | 2 => {
                        let f = FlowStatsRequest {
                            match_: Match::decode(&mut r)?,
                            table_id: r.u8()?,
                            out_port: {
                                r.pad(1)?;
                                r.u16()?
                            },
                        };
                        if ty == 1 {
                            StatsRequestBody::Flow(f)
                        } else {
                            StatsRequestBody::Aggregate(f)
                        }
                    }
                    3 => StatsRequestBody::Table,
                    4 => {
                        let port_no = r.u16()?;
                        r.pad(6)?;
                        StatsRequestBody::Port { port_no }
                    }
                    5 => {
                        let port_no = r.u16()?;
                        r.pad(2)?;
                        StatsRequestBody::Queue {
                            port_no,
                            queue_id: r.u32()?,
                        }
                    }
                    STATS_PORT_DESC => StatsRequestBody::PortDesc,
                    0xffff => StatsRequestBody::Vendor {
                        vendor: r.u32()?,
                        data: Bytes::from(r.rest()),
                    },
                    other => {
                        return Err(r.error(
                            ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                            format_args!("unknown stats type {other}"),
                        ))
                    }
                };
                Body::StatsRequest(StatsRequest { flags, body })
            }
            STATS_REPLY => {
                let ty = r.u16()?;
                let flags = r.u16()?;
                let body = match ty {
                    0 => StatsReplyBody::Desc(DescStats::decode(&mut r)?),
                    1 => {
                        let mut v = Vec::new();
                        while !r.is_empty() {
                            v.push(decode_flow_stats(&mut r)?);
                        }
                        StatsReplyBody::Flow(v)
                    }
                    2 => StatsReplyBody::Aggregate(AggregateStats::decode(&mut r)?),
                    3 => StatsReplyBody::Table(fixed_list(&mut r, 64, |r| {
                        let table_id = r.u8()?;
                        r.pad(3)?;
                        Ok(TableStats {
                            table_id,
                            name: r.fixed_str::<32>("table name")?,
                            wildcards: r.u32()?,
                            max_entries: r.u32()?,
                            active_count: r.u32()?,
                            lookup_count: r.u64()?,
                            matched_count: r.u64()?,
                        })
                    })?),
                    4 => StatsReplyBody::Port(fixed_list(&mut r, 104, |r| {
                        let port_no = r.u16()?;
                        r.pad(6)?;
                        Ok(PortStats {
                            port_no,
                            counters: PortCounters::decode(r)?,
                        })
                    })?),
                    5 => StatsReplyBody::Queue(fixed_list(&mut r, 32, |r| {
                        let port_no = r.u16()?;
                        r.pad(2)?;
                        Ok(QueueStats {
                            port_no,
                            queue_id: r.u32()?,
                            tx_bytes: r.u64()?,
                            tx_packets: r.u64()?,
                            tx_errors: r.u64()?,
                        })
                    })?),
                    STATS_PORT_DESC => StatsReplyBody::PortDesc(fixed_list(&mut r, 48, PhyPort::decode)?),
                    0xffff => StatsReplyBody::Vendor {
                        vendor: r.u32()?,
                        data: Bytes::from(r.rest()),
                    },
                    other => {
                        return Err(r.error(
                            ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                            format_args!("unknown stats type {other}"),
                        ))
                    }
                };
                Body::StatsReply(StatsReply { flags, body })
            }
            BARRIER_REQUEST => return empty(&r, Body::BarrierRequest),
            BARRIER_REPLY => return empty(&r, Body::BarrierReply),
            QUEUE_GET_CONFIG_REQUEST => {
                let port = r.u16()?;
                r.pad(2)?;
                Body::QueueGetConfigRequest { port }
            }
            QUEUE_GET_CONFIG_REPLY => {
                let port = r.u16()?;
                r.pad(6)?;
                let mut queues = Vec::new();
                while !r.is_empty() {
                    let queue_id = r.u32()?;
                    let len = r.u16()? as usize;
                    r.pad(2)?;
                    if len < 8 {
                        return Err(r.error(bad_len(), format_args!("queue length {len} is below 8")));
                    }
                    let mut q = r.sub(len - 8, "packet queue")?;
                    queues.push(PacketQueue {
                        queue_id,
                        properties: QueueProp::decode_list(&mut q, crate::OFP10_VERSION)?,
                    });
                }
                Body::QueueGetConfigReply(QueueGetConfigReply { port, queues })
            }
            other => {
                return Err(DecodeError::new(
                    ErrorCode::BadRequest(BadRequestCode::BadType),
                    format!("unknown OpenFlow 1.0 message type {other}"),
                ))
            }
        };
        r.finish()?;
        Ok(msg)
    }

    /// Writes the body (everything after the header).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Body::Error(e) => e.encode(crate::OFP10_VERSION, out),
            Body::EchoRequest(d) | Body::EchoReply(d) => out.put_slice(&d.0),
            Body::Vendor { vendor, data } => {
                out.put_u32(*vendor);
                out.put_slice(&data.0);
            }
            Body::FeaturesRequest | Body::GetConfigRequest | Body::BarrierRequest | Body::BarrierReply => {}
            Body::FeaturesReply(f) => {
                out.put_u64(f.datapath_id);
                out.put_u32(f.n_buffers);
                out.put_u8(f.n_tables);
                out.put_zeros(3);
                out.put_u32(f.capabilities);
                out.put_u32(f.actions);
                for p in &f.ports {
                    p.encode(out);
                }
            }
            Body::GetConfigReply(c) | Body::SetConfig(c) => c.encode(out),
            Body::PacketIn(p) => {
                out.put_u32(p.buffer_id);
                out.put_u16(p.total_len);
                out.put_u16(p.in_port);
                out.put_u8(p.reason.into());
                out.put_u8(0);
                out.put_slice(&p.data.0);
            }
            Body::FlowRemoved(f) => {
                f.match_.encode(out);
                out.put_u64(f.cookie);
                out.put_u16(f.priority);
                out.put_u8(f.reason.into());
                out.put_u8(0);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.idle_timeout);
                out.put_zeros(2);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
            }
            Body::PortStatus(p) => {
                out.put_u8(p.reason.into());
                out.put_zeros(7);
                p.desc.encode(out);
            }
            Body::PacketOut(p) => encode_packet_out_body(out, p.buffer_id, p.in_port, &p.actions, &p.data.0),
            Body::FlowMod(f) => encode_flow_mod_body(out, f, &f.actions),
            Body::PortMod(p) => {
                out.put_u16(p.port_no);
                out.put_slice(&p.hw_addr.0);
                out.put_u32(p.config);
                out.put_u32(p.mask);
                out.put_u32(p.advertise);
                out.put_zeros(4);
            }
            Body::StatsRequest(s) => {
                let ty: u16 = match &s.body {
                    StatsRequestBody::Desc => 0,
                    StatsRequestBody::Flow(_) => 1,
                    StatsRequestBody::Aggregate(_) => 2,
                    StatsRequestBody::Table => 3,
                    StatsRequestBody::Port { .. } => 4,
                    StatsRequestBody::Queue { .. } => 5,
                    StatsRequestBody::PortDesc => STATS_PORT_DESC,
                    StatsRequestBody::Vendor { .. } => 0xffff,
                };
                out.put_u16(ty);
                out.put_u16(s.flags);
                match &s.body {
                    StatsRequestBody::Desc | StatsRequestBody::Table | StatsRequestBody::PortDesc => {}
                    StatsRequestBody::Flow(f) | StatsRequestBody::Aggregate(f) => {
                        f.match_.encode(out);
                        out.put_u8(f.table_id);
                        out.put_u8(0);
                        out.put_u16(f.out_port);
                    }
                    StatsRequestBody::Port { port_no } => {
                        out.put_u16(*port_no);
                        out.put_zeros(6);
                    }
                    StatsRequestBody::Queue { port_no, queue_id } => {
                        out.put_u16(*port_no);
                        out.put_zeros(2);
                        out.put_u32(*queue_id);
                    }
                    StatsRequestBody::Vendor { vendor, data } => {
                        out.put_u32(*vendor);
                        out.put_slice(&data.0);
                    }
                }
            }
            Body::StatsReply(s) => {
                let ty: u16 = match &s.body {
                    StatsReplyBody::Desc(_) => 0,
                    StatsReplyBody::Flow(_) => 1,
                    StatsReplyBody::Aggregate(_) => 2,
                    StatsReplyBody::Table(_) => 3,
                    StatsReplyBody::Port(_) => 4,
                    StatsReplyBody::Queue(_) => 5,
                    StatsReplyBody::PortDesc(_) => STATS_PORT_DESC,
                    StatsReplyBody::Vendor { .. } => 0xffff,
                };
                out.put_u16(ty);
                out.put_u16(s.flags);
                encode_stats_reply_body(&s.body, out);
            }
            Body::QueueGetConfigRequest { port } => {
                out.put_u16(*port);
                out.put_zeros(2);
            }
            Body::QueueGetConfigReply(q) => {
                out.put_u16(q.port);
                out.put_zeros(6);
                for queue in &q.queues {
                    let start = out.len();
                    out.put_u32(queue.queue_id);
                    out.put_u16(0);
                    out.put_zeros(2);
                    for p in &queue.properties {
                        p.encode(out);
                    }
                    let len = (out.len() - start) as u16;
                    out.patch_u16(start + 4, len);
                }
            }
        }
    }
}

fn decode_flow_stats(r: &mut Reader) -> Result<FlowStats, DecodeError> {
    let len = r.clone().u16()? as usize;
    if len < 88 {
        return Err(r.error(bad_len(), format_args!("flow stats entry length {len} is below 88")));
    }
    let mut e = r.sub(len, "flow stats entry")?;
    e.u16()?;
    let table_id = e.u8()?;
    e.pad(1)?;
    let match_ = Match::decode(&mut e)?;
    let duration_sec = e.u32()?;
    let duration_nsec = e.u32()?;
    let priority = e.u16()?;
    let idle_timeout = e.u16()?;
    let hard_timeout = e.u16()?;
    e.pad(6)?;
    let cookie = e.u64()?;
    let packet_count = e.u64()?;
    let byte_count = e.u64()?;
    let mut ar = e.sub_with(
        e.remaining(),
        ErrorCode::BadAction(BadActionCode::BadLen),
        "flow stats actions",
    )?;
    Ok(FlowStats {
        table_id,
        match_,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        cookie,
        packet_count,
        byte_count,
        actions: Action::decode_list(&mut ar)?,
    })
}

/// Decodes a list of fixed-size entries filling the reader.
pub(crate) fn fixed_list<T>(
    r: &mut Reader,
    size: usize,
    mut f: impl FnMut(&mut Reader) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    if !r.remaining().is_multiple_of(size) {
        return Err(r.error(
            ErrorCode::BadRequest(BadRequestCode::BadLen),
            format_args!(
                "list of {} bytes is not a multiple of the {size}-byte entry",
                r.remaining()
            ),
        ));
    }
    let mut v = Vec::with_capacity(r.remaining() / size);
    while !r.is_empty() {
        let mut e = r.sub(size, r.ctx())?;
        v.push(f(&mut e)?);
        e.finish()?;
    }
    Ok(v)
}

/// Writes a FLOW_MOD body with `actions` (shared by the typed and hot paths).
#[inline]
pub fn encode_flow_mod_body(out: &mut Vec<u8>, f: &FlowMod, actions: &[Action]) {
    f.match_.encode(out);
    out.put_u64(f.cookie);
    out.put_u16(u8::from(f.command) as u16);
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u16(f.priority);
    out.put_u32(f.buffer_id);
    out.put_u16(f.out_port);
    out.put_u16(f.flags);
    encode_actions(actions, out);
}

/// Writes a PACKET_OUT body (shared by the typed and hot paths).
#[inline]
pub fn encode_packet_out_body(out: &mut Vec<u8>, buffer_id: u32, in_port: u16, actions: &[Action], data: &[u8]) {
    out.put_u32(buffer_id);
    out.put_u16(in_port);
    let len_at = out.len();
    out.put_u16(0);
    let start = out.len();
    encode_actions(actions, out);
    let actions_len = (out.len() - start) as u16;
    out.patch_u16(len_at, actions_len);
    out.put_slice(data);
}

/// The body of a stats reply (after its type and flags).
fn encode_stats_reply_body(body: &StatsReplyBody, out: &mut Vec<u8>) {
    match body {
        StatsReplyBody::Desc(d) => d.encode(out),
        StatsReplyBody::Flow(v) => {
            for f in v {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(f.table_id);
                out.put_u8(0);
                f.match_.encode(out);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.priority);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_zeros(6);
                out.put_u64(f.cookie);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                encode_actions(&f.actions, out);
                let len = (out.len() - start) as u16;
                out.patch_u16(start, len);
            }
        }
        StatsReplyBody::Aggregate(a) => a.encode(out),
        StatsReplyBody::Table(v) => {
            for t in v {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_fixed_str(&t.name, 32);
                out.put_u32(t.wildcards);
                out.put_u32(t.max_entries);
                out.put_u32(t.active_count);
                out.put_u64(t.lookup_count);
                out.put_u64(t.matched_count);
            }
        }
        StatsReplyBody::Port(v) => {
            for p in v {
                out.put_u16(p.port_no);
                out.put_zeros(6);
                p.counters.encode(out);
            }
        }
        StatsReplyBody::Queue(v) => {
            for q in v {
                out.put_u16(q.port_no);
                out.put_zeros(2);
                out.put_u32(q.queue_id);
                out.put_u64(q.tx_bytes);
                out.put_u64(q.tx_packets);
                out.put_u64(q.tx_errors);
            }
        }
        StatsReplyBody::PortDesc(v) => {
            for p in v {
                p.encode(out);
            }
        }
        StatsReplyBody::Vendor { vendor, data } => {
            out.put_u32(*vendor);
            out.put_slice(&data.0);
        }
    }
}
