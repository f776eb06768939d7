//! OpenFlow 1.3 (wire version 0x04): every message of the specification.
//!
//! Layout follows the 1.3.5 specification. `Body::decode` validates
//! lengths, padding, enumerations, actions, instructions and OXM matches,
//! returning 1.3 error codes; `Body::encode` writes the exact bytes back.

use crate::codec::{align8, Put, Reader, Tlv8};
use crate::common::*;
use crate::error::*;
use crate::oxm::{Match, Oxm};
use crate::types::{Bytes, MacAddr};
use crate::v10::fixed_list;
pub use crate::v10::FlowModCommand;
use crate::wire_enum::wire_enum;

mod action;
mod flow;
mod group_meter;
mod multipart;
mod port_msgs;
mod table_features;
pub use action::*;
pub use flow::*;
pub use group_meter::*;
pub use multipart::*;
pub use port_msgs::*;
pub use table_features::*;

/// Message type numbers of OpenFlow 1.3.
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
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
    pub const GROUP_MOD: u8 = 15;
    pub const PORT_MOD: u8 = 16;
    pub const TABLE_MOD: u8 = 17;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
    pub const GET_ASYNC_REQUEST: u8 = 26;
    pub const GET_ASYNC_REPLY: u8 = 27;
    pub const SET_ASYNC: u8 = 28;
    pub const METER_MOD: u8 = 29;

    /// The spec's name of a 1.3 message type.
    pub fn name(t: u8) -> &'static str {
        const NAMES: [&str; 30] = [
            "HELLO",
            "ERROR",
            "ECHO_REQUEST",
            "ECHO_REPLY",
            "EXPERIMENTER",
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
            "GROUP_MOD",
            "PORT_MOD",
            "TABLE_MOD",
            "MULTIPART_REQUEST",
            "MULTIPART_REPLY",
            "BARRIER_REQUEST",
            "BARRIER_REPLY",
            "QUEUE_GET_CONFIG_REQUEST",
            "QUEUE_GET_CONFIG_REPLY",
            "ROLE_REQUEST",
            "ROLE_REPLY",
            "GET_ASYNC_REQUEST",
            "GET_ASYNC_REPLY",
            "SET_ASYNC",
            "METER_MOD",
        ];
        NAMES.get(t as usize).copied().unwrap_or("UNKNOWN")
    }
}

/// Reserved port numbers of 1.3.
pub mod port {
    pub const MAX: u32 = 0xffff_ff00;
    pub const IN_PORT: u32 = 0xffff_fff8;
    pub const TABLE: u32 = 0xffff_fff9;
    pub const NORMAL: u32 = 0xffff_fffa;
    pub const FLOOD: u32 = 0xffff_fffb;
    pub const ALL: u32 = 0xffff_fffc;
    pub const CONTROLLER: u32 = 0xffff_fffd;
    pub const LOCAL: u32 = 0xffff_fffe;
    pub const ANY: u32 = 0xffff_ffff;
}

pub const NO_BUFFER: u32 = 0xffff_ffff;
/// OFPG_ANY and OFPG_ALL.
pub const GROUP_ANY: u32 = 0xffff_ffff;
pub const GROUP_ALL: u32 = 0xffff_fffc;
/// OFPTT_ALL.
pub const TABLE_ALL: u8 = 0xff;
/// OFPCML_NO_BUFFER: send the whole packet to the controller.
pub const CONTROLLER_MAX_LEN_NO_BUFFER: u16 = 0xffff;

/// `ofp_flow_mod_flags` of 1.3.
pub mod flow_mod_flags {
    pub const SEND_FLOW_REM: u16 = 1;
    pub const CHECK_OVERLAP: u16 = 2;
    pub const RESET_COUNTS: u16 = 4;
    pub const NO_PKT_COUNTS: u16 = 8;
    pub const NO_BYT_COUNTS: u16 = 16;
}

/// OFPMPF_REQ_MORE / OFPMPF_REPLY_MORE.
pub const MULTIPART_MORE: u16 = 1;

fn bad_len() -> ErrorCode {
    ErrorCode::BadRequest(BadRequestCode::BadLen)
}
fn bad_action(c: BadActionCode) -> ErrorCode {
    ErrorCode::BadAction(c)
}
fn bad_inst(c: BadInstructionCode) -> ErrorCode {
    ErrorCode::BadInstruction(c)
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    pub capabilities: u32,
    pub reserved: u32,
}

// ------------------------------------------------------ other messages

/// `ofp_packet_queue` of 1.3.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueGetConfigReply {
    pub port: u32,
    pub queues: Vec<PacketQueue>,
}

wire_enum! {
    /// `ofp_controller_role`.
    pub enum ControllerRole: u32 {
        NoChange = 0 => "NOCHANGE",
        Equal = 1 => "EQUAL",
        Master = 2 => "MASTER",
        Slave = 3 => "SLAVE",
    }
}

/// ROLE_REQUEST and ROLE_REPLY.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Role {
    pub role: ControllerRole,
    pub generation_id: u64,
}

/// GET_ASYNC_REPLY and SET_ASYNC: element 0 is for master/equal, 1 for slave.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AsyncConfig {
    pub packet_in_mask: [u32; 2],
    pub port_status_mask: [u32; 2],
    pub flow_removed_mask: [u32; 2],
}

/// Every OpenFlow 1.3 message except HELLO (which is version-independent).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Body {
    Error(ErrorMsg),
    EchoRequest(Bytes),
    EchoReply(Bytes),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
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
    GroupMod(GroupMod),
    PortMod(PortMod),
    TableMod(TableMod),
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest {
        port: u32,
    },
    QueueGetConfigReply(QueueGetConfigReply),
    RoleRequest(Role),
    RoleReply(Role),
    GetAsyncRequest,
    GetAsyncReply(AsyncConfig),
    SetAsync(AsyncConfig),
    MeterMod(MeterMod),
}

impl Body {
    pub fn msg_type(&self) -> u8 {
        use msg_type::*;
        match self {
            Body::Error(_) => ERROR,
            Body::EchoRequest(_) => ECHO_REQUEST,
            Body::EchoReply(_) => ECHO_REPLY,
            Body::Experimenter { .. } => EXPERIMENTER,
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
            Body::GroupMod(_) => GROUP_MOD,
            Body::PortMod(_) => PORT_MOD,
            Body::TableMod(_) => TABLE_MOD,
            Body::MultipartRequest(_) => MULTIPART_REQUEST,
            Body::MultipartReply(_) => MULTIPART_REPLY,
            Body::BarrierRequest => BARRIER_REQUEST,
            Body::BarrierReply => BARRIER_REPLY,
            Body::QueueGetConfigRequest { .. } => QUEUE_GET_CONFIG_REQUEST,
            Body::QueueGetConfigReply(_) => QUEUE_GET_CONFIG_REPLY,
            Body::RoleRequest(_) => ROLE_REQUEST,
            Body::RoleReply(_) => ROLE_REPLY,
            Body::GetAsyncRequest => GET_ASYNC_REQUEST,
            Body::GetAsyncReply(_) => GET_ASYNC_REPLY,
            Body::SetAsync(_) => SET_ASYNC,
            Body::MeterMod(_) => METER_MOD,
        }
    }

    /// Decodes the body (everything after the 8-byte header) of a message of type `t`.
    pub fn decode(t: u8, body: &[u8]) -> Result<Body, DecodeError> {
        use msg_type::*;
        let mut r = Reader::new(body, bad_len(), msg_type::name(t));
        let empty = |r: &Reader, b: Body| -> Result<Body, DecodeError> {
            r.finish()?;
            Ok(b)
        };
        let role = |r: &mut Reader| -> Result<Role, DecodeError> {
            let role = r.u32()?.into();
            r.pad(4)?;
            Ok(Role {
                role,
                generation_id: r.u64()?,
            })
        };
        let async_config = |r: &mut Reader| -> Result<AsyncConfig, DecodeError> {
            Ok(AsyncConfig {
                packet_in_mask: [r.u32()?, r.u32()?],
                port_status_mask: [r.u32()?, r.u32()?],
                flow_removed_mask: [r.u32()?, r.u32()?],
            })
        };
        let msg = match t {
            ERROR => Body::Error(ErrorMsg::decode(crate::OFP13_VERSION, &mut r)?),
            ECHO_REQUEST => Body::EchoRequest(Bytes::from(r.rest())),
            ECHO_REPLY => Body::EchoReply(Bytes::from(r.rest())),
            EXPERIMENTER => Body::Experimenter {
                experimenter: r.u32()?,
                exp_type: r.u32()?,
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
            GROUP_MOD => Body::GroupMod(GroupMod::decode(&mut r)?),
            PORT_MOD => Body::PortMod(PortMod::decode(&mut r)?),
            TABLE_MOD => {
                let table_id = r.u8()?;
                r.pad(3)?;
                Body::TableMod(TableMod {
                    table_id,
                    config: r.u32()?,
                })
            }
            MULTIPART_REQUEST => Body::MultipartRequest(decode_multipart_request(&mut r)?),
            MULTIPART_REPLY => Body::MultipartReply(decode_multipart_reply(&mut r)?),
            BARRIER_REQUEST => return empty(&r, Body::BarrierRequest),
            BARRIER_REPLY => return empty(&r, Body::BarrierReply),
            QUEUE_GET_CONFIG_REQUEST => {
                let port = r.u32()?;
                r.pad(4)?;
                Body::QueueGetConfigRequest { port }
            }
            QUEUE_GET_CONFIG_REPLY => Body::QueueGetConfigReply(QueueGetConfigReply::decode(&mut r)?),
            ROLE_REQUEST => Body::RoleRequest(role(&mut r)?),
            ROLE_REPLY => Body::RoleReply(role(&mut r)?),
            GET_ASYNC_REQUEST => return empty(&r, Body::GetAsyncRequest),
            GET_ASYNC_REPLY => Body::GetAsyncReply(async_config(&mut r)?),
            SET_ASYNC => Body::SetAsync(async_config(&mut r)?),
            METER_MOD => Body::MeterMod(MeterMod::decode(&mut r)?),
            other => {
                return Err(DecodeError::new(
                    ErrorCode::BadRequest(BadRequestCode::BadType),
                    format!("unknown OpenFlow 1.3 message type {other}"),
                ))
            }
        };
        r.finish()?;
        Ok(msg)
    }

    /// Writes the body (everything after the header).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Body::Error(e) => e.encode(crate::OFP13_VERSION, out),
            Body::EchoRequest(d) | Body::EchoReply(d) => out.put_slice(&d.0),
            Body::Experimenter {
                experimenter,
                exp_type,
                data,
            } => out.put_experimenter(*experimenter, *exp_type, &data.0),
            Body::FeaturesRequest
            | Body::GetConfigRequest
            | Body::BarrierRequest
            | Body::BarrierReply
            | Body::GetAsyncRequest => {}
            Body::FeaturesReply(f) => {
                out.put_u64(f.datapath_id);
                out.put_u32(f.n_buffers);
                out.put_u8(f.n_tables);
                out.put_u8(f.auxiliary_id);
                out.put_zeros(2);
                out.put_u32(f.capabilities);
                out.put_u32(f.reserved);
            }
            Body::GetConfigReply(c) | Body::SetConfig(c) => c.encode(out),
            Body::PacketIn(p) => encode_packet_in_body(out, p, &p.match_.fields, &p.data.0),
            Body::FlowRemoved(f) => {
                out.put_u64(f.cookie);
                out.put_u16(f.priority);
                out.put_u8(f.reason.into());
                out.put_u8(f.table_id);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                f.match_.encode(out);
            }
            Body::PortStatus(p) => {
                out.put_u8(p.reason.into());
                out.put_zeros(7);
                p.desc.encode(out);
            }
            Body::PacketOut(p) => encode_packet_out_body(out, p.buffer_id, p.in_port, &p.actions, &p.data.0),
            Body::FlowMod(f) => encode_flow_mod_body(out, f, &f.match_.fields, &f.instructions),
            Body::GroupMod(g) => {
                out.put_u16(g.command.into());
                out.put_u8(g.group_type.into());
                out.put_u8(0);
                out.put_u32(g.group_id);
                encode_buckets(&g.buckets, out);
            }
            Body::PortMod(p) => {
                out.put_u32(p.port_no);
                out.put_zeros(4);
                out.put_slice(&p.hw_addr.0);
                out.put_zeros(2);
                out.put_u32(p.config);
                out.put_u32(p.mask);
                out.put_u32(p.advertise);
                out.put_zeros(4);
            }
            Body::TableMod(t) => {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_u32(t.config);
            }
            Body::MultipartRequest(m) => encode_multipart_request(m, out),
            Body::MultipartReply(m) => encode_multipart_reply(m, out),
            Body::QueueGetConfigRequest { port } => {
                out.put_u32(*port);
                out.put_zeros(4);
            }
            Body::QueueGetConfigReply(q) => {
                out.put_u32(q.port);
                out.put_zeros(4);
                for queue in &q.queues {
                    let start = out.len();
                    out.put_u32(queue.queue_id);
                    out.put_u32(queue.port);
                    out.put_u16(0);
                    out.put_zeros(6);
                    for p in &queue.properties {
                        p.encode(out);
                    }
                    patch_len_at(out, start, 8);
                }
            }
            Body::RoleRequest(r) | Body::RoleReply(r) => {
                out.put_u32(r.role.into());
                out.put_zeros(4);
                out.put_u64(r.generation_id);
            }
            Body::GetAsyncReply(a) | Body::SetAsync(a) => {
                for v in a
                    .packet_in_mask
                    .iter()
                    .chain(&a.port_status_mask)
                    .chain(&a.flow_removed_mask)
                {
                    out.put_u32(*v);
                }
            }
            Body::MeterMod(m) => {
                out.put_u16(m.command.into());
                out.put_u16(m.flags);
                out.put_u32(m.meter_id);
                encode_bands(&m.bands, out);
            }
        }
    }
}

impl FeaturesReply {
    pub(super) fn decode(r: &mut Reader) -> Result<FeaturesReply, DecodeError> {
        let f = FeaturesReply {
            datapath_id: r.u64()?,
            n_buffers: r.u32()?,
            n_tables: r.u8()?,
            auxiliary_id: r.u8()?,
            capabilities: {
                r.pad(2)?;
                r.u32()?
            },
            reserved: r.u32()?,
        };
        Ok(f)
    }
}

impl QueueGetConfigReply {
    pub(super) fn decode(r: &mut Reader) -> Result<QueueGetConfigReply, DecodeError> {
        let port = r.u32()?;
        r.pad(4)?;
        let queues = length_prefixed_list(r, 16, 8, "packet queue", |q| {
            let queue_id = q.u32()?;
            let port = q.u32()?;
            q.u16()?;
            q.pad(6)?;
            Ok(PacketQueue {
                queue_id,
                port,
                properties: QueueProp::decode_list(q, crate::OFP13_VERSION)?,
            })
        })?;
        Ok(QueueGetConfigReply { port, queues })
    }
}
