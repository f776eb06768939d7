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

mod action;
mod flow;
mod flow_match;
mod port_msgs;
mod stats;
pub use action::*;
pub use flow::*;
pub use flow_match::*;
pub use port_msgs::*;
pub use stats::*;

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

impl FeaturesReply {
    /// A switch `datapath_id` with one table and nothing else said: no
    /// buffers, capabilities, actions or ports (a test's switch).
    pub fn bare(datapath_id: u64) -> FeaturesReply {
        FeaturesReply {
            datapath_id,
            n_buffers: 0,
            n_tables: 1,
            capabilities: 0,
            actions: 0,
            ports: Vec::new(),
        }
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
            FEATURES_REPLY => Body::FeaturesReply(FeaturesReply::decode(&mut r)?),
            GET_CONFIG_REQUEST => return empty(&r, Body::GetConfigRequest),
            GET_CONFIG_REPLY => Body::GetConfigReply(SwitchConfig::decode(&mut r)?),
            SET_CONFIG => Body::SetConfig(SwitchConfig::decode(&mut r)?),
            PACKET_IN => Body::PacketIn(PacketIn::decode(&mut r)?),
            FLOW_REMOVED => Body::FlowRemoved(FlowRemoved::decode(&mut r)?),
            PORT_STATUS => Body::PortStatus(PortStatus::decode(&mut r)?),
            PACKET_OUT => Body::PacketOut(PacketOut::decode(&mut r)?),
            FLOW_MOD => Body::FlowMod(FlowMod::decode(&mut r)?),
            PORT_MOD => Body::PortMod(PortMod::decode(&mut r)?),
            STATS_REQUEST => Body::StatsRequest(StatsRequest::decode(&mut r)?),
            STATS_REPLY => Body::StatsReply(StatsReply::decode(&mut r)?),
            BARRIER_REQUEST => return empty(&r, Body::BarrierRequest),
            BARRIER_REPLY => return empty(&r, Body::BarrierReply),
            QUEUE_GET_CONFIG_REQUEST => {
                let port = r.u16()?;
                r.pad(2)?;
                Body::QueueGetConfigRequest { port }
            }
            QUEUE_GET_CONFIG_REPLY => Body::QueueGetConfigReply(QueueGetConfigReply::decode(&mut r)?),
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

impl FeaturesReply {
    pub(super) fn decode(r: &mut Reader) -> Result<FeaturesReply, DecodeError> {
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
        let ports = r.until_empty(PhyPort::decode)?;
        Ok(FeaturesReply {
            datapath_id,
            n_buffers,
            n_tables,
            capabilities,
            actions,
            ports,
        })
    }
}

impl QueueGetConfigReply {
    pub(super) fn decode(r: &mut Reader) -> Result<QueueGetConfigReply, DecodeError> {
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
        Ok(QueueGetConfigReply { port, queues })
    }
}
