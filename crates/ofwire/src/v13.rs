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

// ---------------------------------------------------------------- actions

/// Every 1.3 action (`ofp_action_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Action {
    Output { port: u32, max_len: u16 },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    SetField(Oxm),
    PushPbb(u16),
    PopPbb,
    Experimenter { experimenter: u32, data: Bytes },
}

impl Action {
    pub(crate) fn decode_list(r: &mut Reader) -> Result<Vec<Action>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(Action::decode(r)?);
        }
        Ok(out)
    }

    fn decode(r: &mut Reader) -> Result<Action, DecodeError> {
        let tlv = Tlv8::read(r, bad_action(BadActionCode::BadLen), "action")?;
        let (ty, len, mut a) = (tlv.ty, tlv.len, tlv.body.clone());
        let ethertype = |a: &mut Reader, allowed: &[u16]| -> Result<u16, DecodeError> {
            let t = a.u16()?;
            a.pad(2)?;
            if !allowed.is_empty() && !allowed.contains(&t) {
                return Err(a.error(
                    bad_action(BadActionCode::BadArgument),
                    format_args!("action type {ty}: ethertype {t:#06x} is not one of {allowed:04x?}"),
                ));
            }
            Ok(t)
        };
        let action = match ty {
            0 => {
                tlv.expect_len(16)?;
                let port = a.u32()?;
                if port == port::ANY || (port > port::MAX && port < port::IN_PORT) {
                    return Err(a.error(
                        bad_action(BadActionCode::BadOutPort),
                        format_args!("OUTPUT to invalid port {port:#x}"),
                    ));
                }
                let max_len = a.u16()?;
                a.pad(6)?;
                Action::Output { port, max_len }
            }
            11 | 12 | 16 | 18 | 24 | 27 => {
                tlv.expect_len(8)?;
                a.pad(4)?;
                match ty {
                    11 => Action::CopyTtlOut,
                    12 => Action::CopyTtlIn,
                    16 => Action::DecMplsTtl,
                    18 => Action::PopVlan,
                    24 => Action::DecNwTtl,
                    _ => Action::PopPbb,
                }
            }
            15 | 23 => {
                tlv.expect_len(8)?;
                let ttl = a.u8()?;
                a.pad(3)?;
                if ty == 15 {
                    Action::SetMplsTtl(ttl)
                } else {
                    Action::SetNwTtl(ttl)
                }
            }
            17 => {
                tlv.expect_len(8)?;
                Action::PushVlan(ethertype(&mut a, &[0x8100, 0x88a8])?)
            }
            19 => {
                tlv.expect_len(8)?;
                Action::PushMpls(ethertype(&mut a, &[0x8847, 0x8848])?)
            }
            20 => {
                tlv.expect_len(8)?;
                Action::PopMpls(ethertype(&mut a, &[])?)
            }
            26 => {
                tlv.expect_len(8)?;
                Action::PushPbb(ethertype(&mut a, &[0x88e7])?)
            }
            21 => {
                tlv.expect_len(8)?;
                Action::SetQueue(a.u32()?)
            }
            22 => {
                tlv.expect_len(8)?;
                Action::Group(a.u32()?)
            }
            25 => {
                let oxm = Oxm::decode(&mut a).map_err(|e| {
                    let code = match e.code {
                        ErrorCode::BadMatch(BadMatchCode::BadField) => BadActionCode::BadSetType,
                        ErrorCode::BadMatch(BadMatchCode::BadLen) | ErrorCode::BadAction(BadActionCode::BadLen) => {
                            BadActionCode::BadSetLen
                        }
                        _ => BadActionCode::BadSetArgument,
                    };
                    DecodeError::new(bad_action(code), format!("SET_FIELD: {}", e.what))
                })?;
                if oxm.has_mask() {
                    return Err(a.error(
                        bad_action(BadActionCode::BadSetArgument),
                        "SET_FIELD carries a masked OXM, which 1.3 does not allow",
                    ));
                }
                let used = 4 + oxm.wire_len();
                if align8(used) != len {
                    return Err(a.error(
                        bad_action(BadActionCode::BadSetLen),
                        format_args!("SET_FIELD length {len} is not its OXM padded to 8 ({})", align8(used)),
                    ));
                }
                a.pad(a.remaining())?;
                Action::SetField(oxm)
            }
            0xffff => Action::Experimenter {
                experimenter: a.u32()?,
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

    /// The action's wire type.
    pub fn action_type(&self) -> u16 {
        match self {
            Action::Output { .. } => 0,
            Action::CopyTtlOut => 11,
            Action::CopyTtlIn => 12,
            Action::SetMplsTtl(_) => 15,
            Action::DecMplsTtl => 16,
            Action::PushVlan(_) => 17,
            Action::PopVlan => 18,
            Action::PushMpls(_) => 19,
            Action::PopMpls(_) => 20,
            Action::SetQueue(_) => 21,
            Action::Group(_) => 22,
            Action::SetNwTtl(_) => 23,
            Action::DecNwTtl => 24,
            Action::SetField(_) => 25,
            Action::PushPbb(_) => 26,
            Action::PopPbb => 27,
            Action::Experimenter { .. } => 0xffff,
        }
    }

    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.action_type());
        match self {
            Action::Output { port, max_len } => {
                out.put_u16(16);
                out.put_u32(*port);
                out.put_u16(*max_len);
                out.put_zeros(6);
            }
            Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::DecMplsTtl
            | Action::PopVlan
            | Action::DecNwTtl
            | Action::PopPbb => {
                out.put_u16(8);
                out.put_zeros(4);
            }
            Action::SetMplsTtl(t) | Action::SetNwTtl(t) => {
                out.put_u16(8);
                out.put_u8(*t);
                out.put_zeros(3);
            }
            Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) | Action::PushPbb(e) => {
                out.put_u16(8);
                out.put_u16(*e);
                out.put_zeros(2);
            }
            Action::SetQueue(v) | Action::Group(v) => {
                out.put_u16(8);
                out.put_u32(*v);
            }
            Action::SetField(oxm) => {
                out.put_u16(0);
                oxm.encode(out);
                out.pad_to_8(start);
                let len = (out.len() - start) as u16;
                out.patch_u16(start + 2, len);
            }
            Action::Experimenter { experimenter, data } => {
                out.put_u16(0);
                out.put_u32(*experimenter);
                out.put_slice(&data.0);
                out.pad_to_8(start);
                let len = (out.len() - start) as u16;
                out.patch_u16(start + 2, len);
            }
        }
    }
}

#[inline]
pub fn encode_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        a.encode(out);
    }
}

// ----------------------------------------------------------- instructions

/// Every 1.3 instruction. Generic over how action lists are held, so the
/// hot path can encode borrowed slices (`Instruction<&[Action]>`) without
/// allocating; decoding yields `Instruction<Vec<Action>>`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Instruction<A = Vec<Action>> {
    GotoTable(u8),
    WriteMetadata { metadata: u64, mask: u64 },
    WriteActions(A),
    ApplyActions(A),
    ClearActions,
    Meter(u32),
    Experimenter { experimenter: u32, data: Bytes },
}

impl Instruction {
    pub(crate) fn decode_list(r: &mut Reader) -> Result<Vec<Instruction>, DecodeError> {
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(Instruction::decode(r)?);
        }
        Ok(out)
    }

    fn decode(r: &mut Reader) -> Result<Instruction, DecodeError> {
        let tlv = Tlv8::read(r, bad_inst(BadInstructionCode::BadLen), "instruction")?;
        let (ty, mut i) = (tlv.ty, tlv.body.clone());
        let inst = match ty {
            1 => {
                tlv.expect_len(8)?;
                let t = i.u8()?;
                i.pad(3)?;
                Instruction::GotoTable(t)
            }
            2 => {
                tlv.expect_len(24)?;
                i.pad(4)?;
                Instruction::WriteMetadata {
                    metadata: i.u64()?,
                    mask: i.u64()?,
                }
            }
            3 | 4 => {
                i.pad(4)?;
                let mut ar = i.sub_with(i.remaining(), bad_action(BadActionCode::BadLen), "instruction actions")?;
                let actions = Action::decode_list(&mut ar)?;
                if ty == 3 {
                    Instruction::WriteActions(actions)
                } else {
                    Instruction::ApplyActions(actions)
                }
            }
            5 => {
                tlv.expect_len(8)?;
                i.pad(4)?;
                Instruction::ClearActions
            }
            6 => {
                tlv.expect_len(8)?;
                Instruction::Meter(i.u32()?)
            }
            0xffff => Instruction::Experimenter {
                experimenter: i.u32()?,
                data: Bytes::from(i.rest()),
            },
            other => {
                return Err(i.error(
                    bad_inst(BadInstructionCode::UnknownInst),
                    format_args!("unknown instruction type {other}"),
                ))
            }
        };
        i.finish()?;
        Ok(inst)
    }
}

impl<A: AsRef<[Action]>> Instruction<A> {
    pub fn instruction_type(&self) -> u16 {
        match self {
            Instruction::GotoTable(_) => 1,
            Instruction::WriteMetadata { .. } => 2,
            Instruction::WriteActions(_) => 3,
            Instruction::ApplyActions(_) => 4,
            Instruction::ClearActions => 5,
            Instruction::Meter(_) => 6,
            Instruction::Experimenter { .. } => 0xffff,
        }
    }

    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.instruction_type());
        out.put_u16(0);
        match self {
            Instruction::GotoTable(t) => {
                out.put_u8(*t);
                out.put_zeros(3);
            }
            Instruction::WriteMetadata { metadata, mask } => {
                out.put_zeros(4);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                out.put_zeros(4);
                encode_actions(a.as_ref(), out);
            }
            Instruction::ClearActions => out.put_zeros(4),
            Instruction::Meter(m) => out.put_u32(*m),
            Instruction::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_slice(&data.0);
                out.pad_to_8(start);
            }
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start + 2, len);
    }
}

#[inline]
pub fn encode_instructions<A: AsRef<[Action]>>(insts: &[Instruction<A>], out: &mut Vec<u8>) {
    for i in insts {
        i.encode(out);
    }
}

// ------------------------------------------------------------ structures

/// `ofp_port` of 1.3 (64 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: MacAddr,
    pub name: String,
    pub config: u32,
    pub state: u32,
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl Port {
    pub const LEN: usize = 64;
    fn decode(r: &mut Reader) -> Result<Port, DecodeError> {
        let port_no = r.u32()?;
        r.pad(4)?;
        let hw_addr = MacAddr(r.array()?);
        r.pad(2)?;
        Ok(Port {
            port_no,
            hw_addr,
            name: r.fixed_str::<16>("port name")?,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
            curr_speed: r.u32()?,
            max_speed: r.u32()?,
        })
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        out.put_slice(&self.hw_addr.0);
        out.put_zeros(2);
        out.put_fixed_str(&self.name, 16);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
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
    pub auxiliary_id: u8,
    pub capabilities: u32,
    pub reserved: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub match_: Match,
    pub data: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowRemoved {
    pub cookie: u64,
    pub priority: u16,
    pub reason: FlowRemovedReason,
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStatus {
    pub reason: PortReason,
    pub desc: Port,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    pub data: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: FlowModCommand,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: u16,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowMod {
    /// An ADD in table 0 with no match and no instructions, for building on.
    pub fn add(priority: u16) -> FlowMod {
        FlowMod {
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            command: FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority,
            buffer_id: NO_BUFFER,
            out_port: port::ANY,
            out_group: GROUP_ANY,
            flags: 0,
            match_: Match::default(),
            instructions: Vec::new(),
        }
    }
}

wire_enum! {
    /// `ofp_group_mod_command`.
    pub enum GroupModCommand: u16 {
        Add = 0 => "ADD",
        Modify = 1 => "MODIFY",
        Delete = 2 => "DELETE",
    }
}

wire_enum! {
    /// `ofp_group_type`.
    pub enum GroupType: u8 {
        All = 0 => "ALL",
        Select = 1 => "SELECT",
        Indirect = 2 => "INDIRECT",
        FastFailover = 3 => "FF",
    }
}

/// `ofp_bucket`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

fn decode_buckets(r: &mut Reader) -> Result<Vec<Bucket>, DecodeError> {
    let bad_bucket = ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket);
    let mut out = Vec::new();
    while !r.is_empty() {
        let len = r.clone().u16()? as usize;
        if len < 16 || !len.is_multiple_of(8) {
            return Err(r.error(
                bad_bucket,
                format_args!("bucket length {len} is below 16 or not a multiple of 8"),
            ));
        }
        let mut b = r.sub_with(len, bad_bucket, "bucket")?;
        b.u16()?;
        let weight = b.u16()?;
        let watch_port = b.u32()?;
        let watch_group = b.u32()?;
        b.pad(4)?;
        let mut ar = b.sub_with(b.remaining(), bad_action(BadActionCode::BadLen), "bucket actions")?;
        out.push(Bucket {
            weight,
            watch_port,
            watch_group,
            actions: Action::decode_list(&mut ar)?,
        });
    }
    Ok(out)
}

fn encode_buckets(buckets: &[Bucket], out: &mut Vec<u8>) {
    for b in buckets {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(b.weight);
        out.put_u32(b.watch_port);
        out.put_u32(b.watch_group);
        out.put_zeros(4);
        encode_actions(&b.actions, out);
        let len = (out.len() - start) as u16;
        out.patch_u16(start, len);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortMod {
    pub port_no: u32,
    pub hw_addr: MacAddr,
    pub config: u32,
    pub mask: u32,
    pub advertise: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableMod {
    pub table_id: u8,
    pub config: u32,
}

wire_enum! {
    /// `ofp_meter_mod_command`.
    pub enum MeterModCommand: u16 {
        Add = 0 => "ADD",
        Modify = 1 => "MODIFY",
        Delete = 2 => "DELETE",
    }
}

/// `ofp_meter_flags`.
pub mod meter_flags {
    pub const KBPS: u16 = 1;
    pub const PKTPS: u16 = 2;
    pub const BURST: u16 = 4;
    pub const STATS: u16 = 8;
}

/// A meter band (`ofp_meter_band_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MeterBand {
    Drop {
        rate: u32,
        burst_size: u32,
    },
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Bytes,
    },
}

fn decode_bands(r: &mut Reader) -> Result<Vec<MeterBand>, DecodeError> {
    let bad_band = ErrorCode::MeterModFailed(MeterModFailedCode::BadBand);
    let mut out = Vec::new();
    while !r.is_empty() {
        let mut h = r.clone();
        let ty = h.u16()?;
        let len = h.u16()? as usize;
        if len < 16 || !len.is_multiple_of(8) {
            return Err(r.error(
                bad_len(),
                format_args!("meter band length {len} is below 16 or not a multiple of 8"),
            ));
        }
        let mut b = r.sub(len, "meter band")?;
        b.u32()?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        let band = match ty {
            1 => {
                b.pad(4)?;
                MeterBand::Drop { rate, burst_size }
            }
            2 => {
                let prec_level = b.u8()?;
                b.pad(3)?;
                MeterBand::DscpRemark {
                    rate,
                    burst_size,
                    prec_level,
                }
            }
            0xffff => MeterBand::Experimenter {
                rate,
                burst_size,
                experimenter: b.u32()?,
                data: Bytes::from(b.rest()),
            },
            other => return Err(b.error(bad_band, format_args!("unknown meter band type {other}"))),
        };
        b.finish()?;
        out.push(band);
    }
    Ok(out)
}

fn encode_bands(bands: &[MeterBand], out: &mut Vec<u8>) {
    for band in bands {
        let start = out.len();
        let (ty, rate, burst) = match band {
            MeterBand::Drop { rate, burst_size } => (1u16, rate, burst_size),
            MeterBand::DscpRemark { rate, burst_size, .. } => (2, rate, burst_size),
            MeterBand::Experimenter { rate, burst_size, .. } => (0xffff, rate, burst_size),
        };
        out.put_u16(ty);
        out.put_u16(0);
        out.put_u32(*rate);
        out.put_u32(*burst);
        match band {
            MeterBand::Drop { .. } => out.put_zeros(4),
            MeterBand::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                out.put_zeros(3);
            }
            MeterBand::Experimenter { experimenter, data, .. } => {
                out.put_u32(*experimenter);
                out.put_slice(&data.0);
                out.pad_to_8(start);
            }
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start + 2, len);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterMod {
    pub command: MeterModCommand,
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

// -------------------------------------------------------------- multipart

/// Body of OFPMP_FLOW and OFPMP_AGGREGATE requests.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub match_: Match,
}

/// `ofp_flow_stats` of 1.3.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub port_no: u32,
    pub counters: PortCounters,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// Packet and byte counters of a bucket or meter band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Counter {
    pub packet_count: u64,
    pub byte_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub bucket_stats: Vec<Counter>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupFeatures {
    pub types: u32,
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    pub actions: [u32; 4],
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub band_stats: Vec<Counter>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterConfig {
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterFeatures {
    pub max_meter: u32,
    pub band_types: u32,
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

/// An instruction or action id in a table-features property: the element's
/// type and whatever follows its 4-byte header (experimenter ids have more).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TypeId {
    pub id_type: u16,
    pub data: Bytes,
}

/// An OXM id: a 32-bit header, plus the experimenter id for class 0xFFFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OxmId {
    pub header: u32,
    pub experimenter: Option<u32>,
}

/// A table-features property (`ofp_table_feature_prop_*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TableFeatureProp {
    Instructions(Vec<TypeId>),
    InstructionsMiss(Vec<TypeId>),
    NextTables(Vec<u8>),
    NextTablesMiss(Vec<u8>),
    WriteActions(Vec<TypeId>),
    WriteActionsMiss(Vec<TypeId>),
    ApplyActions(Vec<TypeId>),
    ApplyActionsMiss(Vec<TypeId>),
    Match(Vec<OxmId>),
    Wildcards(Vec<OxmId>),
    WriteSetfield(Vec<OxmId>),
    WriteSetfieldMiss(Vec<OxmId>),
    ApplySetfield(Vec<OxmId>),
    ApplySetfieldMiss(Vec<OxmId>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
    ExperimenterMiss {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

impl TableFeatureProp {
    pub fn prop_type(&self) -> u16 {
        use TableFeatureProp::*;
        match self {
            Instructions(_) => 0,
            InstructionsMiss(_) => 1,
            NextTables(_) => 2,
            NextTablesMiss(_) => 3,
            WriteActions(_) => 4,
            WriteActionsMiss(_) => 5,
            ApplyActions(_) => 6,
            ApplyActionsMiss(_) => 7,
            Match(_) => 8,
            Wildcards(_) => 10,
            WriteSetfield(_) => 12,
            WriteSetfieldMiss(_) => 13,
            ApplySetfield(_) => 14,
            ApplySetfieldMiss(_) => 15,
            Experimenter { .. } => 0xfffe,
            ExperimenterMiss { .. } => 0xffff,
        }
    }
}

/// `ofp_table_features`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableFeatures {
    pub table_id: u8,
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

fn tf_err(c: TableFeaturesFailedCode) -> ErrorCode {
    ErrorCode::TableFeaturesFailed(c)
}

fn decode_table_features_list(r: &mut Reader) -> Result<Vec<TableFeatures>, DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let len = r.clone().u16()? as usize;
        if len < 64 || !len.is_multiple_of(8) {
            return Err(r.error(
                tf_err(TableFeaturesFailedCode::BadLen),
                format_args!("table features length {len} is below 64 or not a multiple of 8"),
            ));
        }
        let mut t = r.sub_with(len, tf_err(TableFeaturesFailedCode::BadLen), "table features")?;
        t.u16()?;
        let table_id = t.u8()?;
        t.pad(5)?;
        let name = t.fixed_str::<32>("table name")?;
        let metadata_match = t.u64()?;
        let metadata_write = t.u64()?;
        let config = t.u32()?;
        let max_entries = t.u32()?;
        let mut properties = Vec::new();
        while !t.is_empty() {
            properties.push(decode_table_feature_prop(&mut t)?);
        }
        out.push(TableFeatures {
            table_id,
            name,
            metadata_match,
            metadata_write,
            config,
            max_entries,
            properties,
        });
    }
    Ok(out)
}

fn decode_table_feature_prop(t: &mut Reader) -> Result<TableFeatureProp, DecodeError> {
    use TableFeatureProp::*;
    let ty = t.u16()?;
    let len = t.u16()? as usize;
    if len < 4 {
        return Err(t.error(
            tf_err(TableFeaturesFailedCode::BadLen),
            format_args!("property length {len} is below 4"),
        ));
    }
    let mut p = t.sub(len - 4, "table feature property")?;
    t.pad(align8(len) - len)?;
    let type_ids = |p: &mut Reader| -> Result<Vec<TypeId>, DecodeError> {
        let mut v = Vec::new();
        while !p.is_empty() {
            let id_type = p.u16()?;
            let l = p.u16()? as usize;
            if l < 4 {
                return Err(p.error(
                    tf_err(TableFeaturesFailedCode::BadLen),
                    format_args!("id length {l} is below 4"),
                ));
            }
            v.push(TypeId {
                id_type,
                data: Bytes::from(p.bytes(l - 4)?),
            });
        }
        Ok(v)
    };
    let oxm_ids = |p: &mut Reader| -> Result<Vec<OxmId>, DecodeError> {
        let mut v = Vec::new();
        while !p.is_empty() {
            let header = p.u32()?;
            let experimenter = if header >> 16 == 0xffff { Some(p.u32()?) } else { None };
            v.push(OxmId { header, experimenter });
        }
        Ok(v)
    };
    Ok(match ty {
        0 => Instructions(type_ids(&mut p)?),
        1 => InstructionsMiss(type_ids(&mut p)?),
        2 => NextTables(p.rest().to_vec()),
        3 => NextTablesMiss(p.rest().to_vec()),
        4 => WriteActions(type_ids(&mut p)?),
        5 => WriteActionsMiss(type_ids(&mut p)?),
        6 => ApplyActions(type_ids(&mut p)?),
        7 => ApplyActionsMiss(type_ids(&mut p)?),
        8 => Match(oxm_ids(&mut p)?),
        10 => Wildcards(oxm_ids(&mut p)?),
        12 => WriteSetfield(oxm_ids(&mut p)?),
        13 => WriteSetfieldMiss(oxm_ids(&mut p)?),
        14 => ApplySetfield(oxm_ids(&mut p)?),
        15 => ApplySetfieldMiss(oxm_ids(&mut p)?),
        0xfffe | 0xffff => {
            let experimenter = p.u32()?;
            let exp_type = p.u32()?;
            let data = Bytes::from(p.rest());
            if ty == 0xfffe {
                Experimenter {
                    experimenter,
                    exp_type,
                    data,
                }
            } else {
                ExperimenterMiss {
                    experimenter,
                    exp_type,
                    data,
                }
            }
        }
        other => {
            return Err(p.error(
                tf_err(TableFeaturesFailedCode::BadType),
                format_args!("unknown table feature property type {other}"),
            ))
        }
    })
}

fn encode_table_features_list(list: &[TableFeatures], out: &mut Vec<u8>) {
    use TableFeatureProp::*;
    for t in list {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(t.table_id);
        out.put_zeros(5);
        out.put_fixed_str(&t.name, 32);
        out.put_u64(t.metadata_match);
        out.put_u64(t.metadata_write);
        out.put_u32(t.config);
        out.put_u32(t.max_entries);
        for p in &t.properties {
            let ps = out.len();
            out.put_u16(p.prop_type());
            out.put_u16(0);
            match p {
                Instructions(ids)
                | InstructionsMiss(ids)
                | WriteActions(ids)
                | WriteActionsMiss(ids)
                | ApplyActions(ids)
                | ApplyActionsMiss(ids) => {
                    for id in ids {
                        out.put_u16(id.id_type);
                        out.put_u16((4 + id.data.len()) as u16);
                        out.put_slice(&id.data.0);
                    }
                }
                NextTables(ids) | NextTablesMiss(ids) => out.put_slice(ids),
                Match(ids)
                | Wildcards(ids)
                | WriteSetfield(ids)
                | WriteSetfieldMiss(ids)
                | ApplySetfield(ids)
                | ApplySetfieldMiss(ids) => {
                    for id in ids {
                        out.put_u32(id.header);
                        if let Some(e) = id.experimenter {
                            out.put_u32(e);
                        }
                    }
                }
                Experimenter {
                    experimenter,
                    exp_type,
                    data,
                }
                | ExperimenterMiss {
                    experimenter,
                    exp_type,
                    data,
                } => {
                    out.put_u32(*experimenter);
                    out.put_u32(*exp_type);
                    out.put_slice(&data.0);
                }
            }
            let plen = (out.len() - ps) as u16;
            out.patch_u16(ps + 2, plen);
            out.pad_to_8(ps);
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start, len);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    PortStats {
        port_no: u32,
    },
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    Meter {
        meter_id: u32,
    },
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// Empty to query, or a full list to set the tables' features.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MultipartRequest {
    /// OFPMPF_REQ_MORE.
    pub flags: u16,
    pub body: MultipartRequestBody,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MultipartReplyBody {
    Desc(DescStats),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<Port>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MultipartReply {
    /// OFPMPF_REPLY_MORE.
    pub flags: u16,
    pub body: MultipartReplyBody,
}

impl MultipartRequestBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartRequestBody::*;
        match self {
            Desc => 0,
            Flow(_) => 1,
            Aggregate(_) => 2,
            Table => 3,
            PortStats { .. } => 4,
            Queue { .. } => 5,
            Group { .. } => 6,
            GroupDesc => 7,
            GroupFeatures => 8,
            Meter { .. } => 9,
            MeterConfig { .. } => 10,
            MeterFeatures => 11,
            TableFeatures(_) => 12,
            PortDesc => 13,
            Experimenter { .. } => 0xffff,
        }
    }
}

impl MultipartReplyBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartReplyBody::*;
        match self {
            Desc(_) => 0,
            Flow(_) => 1,
            Aggregate(_) => 2,
            Table(_) => 3,
            PortStats(_) => 4,
            Queue(_) => 5,
            Group(_) => 6,
            GroupDesc(_) => 7,
            GroupFeatures(_) => 8,
            Meter(_) => 9,
            MeterConfig(_) => 10,
            MeterFeatures(_) => 11,
            TableFeatures(_) => 12,
            PortDesc(_) => 13,
            Experimenter { .. } => 0xffff,
        }
    }

    /// A list body in two, for `MultipartReply::split`.
    fn halves(self) -> Result<(MultipartReplyBody, MultipartReplyBody), MultipartReplyBody> {
        use MultipartReplyBody::*;
        crate::common::halve_lists!(
            self,
            Flow,
            Table,
            PortStats,
            Queue,
            Group,
            GroupDesc,
            Meter,
            MeterConfig,
            TableFeatures,
            PortDesc
        )
    }
}

impl MultipartReply {
    /// The reply cut into parts whose encoded message is at most
    /// `max_message` bytes (a message's length is 16 bits: at most 65,535),
    /// in order, with OFPMPF_REPLY_MORE on every part but the last (which
    /// keeps this reply's own flag). A list is halved until each part
    /// fits; an entry too large alone stays alone (and its encoding fails
    /// as it would have).
    pub fn split(self, max_message: usize) -> Vec<MultipartReply> {
        let size = |body: &MultipartReplyBody| {
            let mut buf = Vec::new();
            encode_multipart_reply_body(body, &mut buf);
            buf.len() + 16
        };
        crate::common::cut_to_fit(self.body, max_message, &size, &MultipartReplyBody::halves)
            .into_iter()
            .map(|(body, more)| MultipartReply {
                flags: if more { self.flags | MULTIPART_MORE } else { self.flags },
                body,
            })
            .collect()
    }
}

fn unknown_multipart(r: &Reader, t: u16) -> DecodeError {
    r.error(
        ErrorCode::BadRequest(BadRequestCode::BadMultipart),
        format_args!("unknown multipart type {t}"),
    )
}

fn decode_flow_stats_request(r: &mut Reader) -> Result<FlowStatsRequest, DecodeError> {
    let table_id = r.u8()?;
    r.pad(3)?;
    let out_port = r.u32()?;
    let out_group = r.u32()?;
    r.pad(4)?;
    Ok(FlowStatsRequest {
        table_id,
        out_port,
        out_group,
        cookie: r.u64()?,
        cookie_mask: r.u64()?,
        match_: Match::decode(r)?,
    })
}

fn encode_flow_stats_request(f: &FlowStatsRequest, out: &mut Vec<u8>) {
    out.put_u8(f.table_id);
    out.put_zeros(3);
    out.put_u32(f.out_port);
    out.put_u32(f.out_group);
    out.put_zeros(4);
    out.put_u64(f.cookie);
    out.put_u64(f.cookie_mask);
    f.match_.encode(out);
}

fn decode_multipart_request(r: &mut Reader) -> Result<MultipartRequest, DecodeError> {
    use MultipartRequestBody as B;
    let ty = r.u16()?;
    let flags = r.u16()?;
    r.pad(4)?;
    let id_and_pad = |r: &mut Reader| -> Result<u32, DecodeError> {
        let v = r.u32()?;
        r.pad(4)?;
        Ok(v)
    };
    let body = match ty {
        0 => B::Desc,
        1 => B::Flow(decode_flow_stats_request(r)?),
        2 => B::Aggregate(decode_flow_stats_request(r)?),
        3 => B::Table,
        4 => B::PortStats {
            port_no: id_and_pad(r)?,
        },
        5 => B::Queue {
            port_no: r.u32()?,
            queue_id: r.u32()?,
        },
        6 => B::Group {
            group_id: id_and_pad(r)?,
        },
        7 => B::GroupDesc,
        8 => B::GroupFeatures,
        9 => B::Meter {
            meter_id: id_and_pad(r)?,
        },
        10 => B::MeterConfig {
            meter_id: id_and_pad(r)?,
        },
        11 => B::MeterFeatures,
        12 => B::TableFeatures(decode_table_features_list(r)?),
        13 => B::PortDesc,
        0xffff => B::Experimenter {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: Bytes::from(r.rest()),
        },
        other => return Err(unknown_multipart(r, other)),
    };
    Ok(MultipartRequest { flags, body })
}

fn encode_multipart_request(m: &MultipartRequest, out: &mut Vec<u8>) {
    use MultipartRequestBody as B;
    out.put_u16(m.body.multipart_type());
    out.put_u16(m.flags);
    out.put_zeros(4);
    match &m.body {
        B::Desc | B::Table | B::GroupDesc | B::GroupFeatures | B::MeterFeatures | B::PortDesc => {}
        B::Flow(f) | B::Aggregate(f) => encode_flow_stats_request(f, out),
        B::PortStats { port_no: v }
        | B::Group { group_id: v }
        | B::Meter { meter_id: v }
        | B::MeterConfig { meter_id: v } => {
            out.put_u32(*v);
            out.put_zeros(4);
        }
        B::Queue { port_no, queue_id } => {
            out.put_u32(*port_no);
            out.put_u32(*queue_id);
        }
        B::TableFeatures(list) => encode_table_features_list(list, out),
        B::Experimenter {
            experimenter,
            exp_type,
            data,
        } => {
            out.put_u32(*experimenter);
            out.put_u32(*exp_type);
            out.put_slice(&data.0);
        }
    }
}

/// Decodes a list of entries that start with a u16 length of their own.
fn length_prefixed_list<T>(
    r: &mut Reader,
    min: usize,
    at: usize,
    ctx: &'static str,
    mut f: impl FnMut(&mut Reader) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let mut peek = r.clone();
        peek.bytes(at)?;
        let len = peek.u16()? as usize;
        if len < min {
            return Err(r.error(bad_len(), format_args!("{ctx} length {len} is below {min}")));
        }
        let mut e = r.sub(len, ctx)?;
        out.push(f(&mut e)?);
        e.finish()?;
    }
    Ok(out)
}

fn counters(r: &mut Reader) -> Result<Vec<Counter>, DecodeError> {
    if !r.remaining().is_multiple_of(16) {
        return Err(r.error(
            bad_len(),
            format_args!("{} bytes of counters is not a multiple of 16", r.remaining()),
        ));
    }
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Counter {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
        });
    }
    Ok(v)
}

fn encode_counters(list: &[Counter], out: &mut Vec<u8>) {
    for c in list {
        out.put_u64(c.packet_count);
        out.put_u64(c.byte_count);
    }
}

fn decode_multipart_reply(r: &mut Reader) -> Result<MultipartReply, DecodeError> {
    use MultipartReplyBody as B;
    let ty = r.u16()?;
    let flags = r.u16()?;
    r.pad(4)?;
    let body = match ty {
        0 => B::Desc(DescStats::decode(r)?),
        1 => B::Flow(length_prefixed_list(r, 56, 0, "flow stats entry", |e| {
            e.u16()?;
            let table_id = e.u8()?;
            e.pad(1)?;
            let duration_sec = e.u32()?;
            let duration_nsec = e.u32()?;
            let priority = e.u16()?;
            let idle_timeout = e.u16()?;
            let hard_timeout = e.u16()?;
            let flags = e.u16()?;
            e.pad(4)?;
            let cookie = e.u64()?;
            let packet_count = e.u64()?;
            let byte_count = e.u64()?;
            let match_ = Match::decode(e)?;
            let mut ir = e.sub_with(
                e.remaining(),
                bad_inst(BadInstructionCode::BadLen),
                "flow stats instructions",
            )?;
            Ok(FlowStats {
                table_id,
                duration_sec,
                duration_nsec,
                priority,
                idle_timeout,
                hard_timeout,
                flags,
                cookie,
                packet_count,
                byte_count,
                match_,
                instructions: Instruction::decode_list(&mut ir)?,
            })
        })?),
        2 => B::Aggregate(AggregateStats::decode(r)?),
        3 => B::Table(fixed_list(r, 24, |e| {
            let table_id = e.u8()?;
            e.pad(3)?;
            Ok(TableStats {
                table_id,
                active_count: e.u32()?,
                lookup_count: e.u64()?,
                matched_count: e.u64()?,
            })
        })?),
        4 => B::PortStats(fixed_list(r, 112, |e| {
            let port_no = e.u32()?;
            e.pad(4)?;
            Ok(PortStats {
                port_no,
                counters: PortCounters::decode(e)?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
            })
        })?),
        5 => B::Queue(fixed_list(r, 40, |e| {
            Ok(QueueStats {
                port_no: e.u32()?,
                queue_id: e.u32()?,
                tx_bytes: e.u64()?,
                tx_packets: e.u64()?,
                tx_errors: e.u64()?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
            })
        })?),
        6 => B::Group(length_prefixed_list(r, 40, 0, "group stats entry", |e| {
            e.u16()?;
            e.pad(2)?;
            let group_id = e.u32()?;
            let ref_count = e.u32()?;
            e.pad(4)?;
            Ok(GroupStats {
                group_id,
                ref_count,
                packet_count: e.u64()?,
                byte_count: e.u64()?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
                bucket_stats: counters(e)?,
            })
        })?),
        7 => B::GroupDesc(length_prefixed_list(r, 8, 0, "group desc entry", |e| {
            e.u16()?;
            let group_type = e.u8()?.into();
            e.pad(1)?;
            let group_id = e.u32()?;
            Ok(GroupDesc {
                group_type,
                group_id,
                buckets: decode_buckets(e)?,
            })
        })?),
        8 => {
            let types = r.u32()?;
            let capabilities = r.u32()?;
            let mut max_groups = [0u32; 4];
            for g in &mut max_groups {
                *g = r.u32()?;
            }
            let mut actions = [0u32; 4];
            for a in &mut actions {
                *a = r.u32()?;
            }
            B::GroupFeatures(GroupFeatures {
                types,
                capabilities,
                max_groups,
                actions,
            })
        }
        9 => B::Meter(length_prefixed_list(r, 40, 4, "meter stats entry", |e| {
            let meter_id = e.u32()?;
            e.u16()?;
            e.pad(6)?;
            Ok(MeterStats {
                meter_id,
                flow_count: e.u32()?,
                packet_in_count: e.u64()?,
                byte_in_count: e.u64()?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
                band_stats: counters(e)?,
            })
        })?),
        10 => B::MeterConfig(length_prefixed_list(r, 8, 0, "meter config entry", |e| {
            e.u16()?;
            let flags = e.u16()?;
            let meter_id = e.u32()?;
            Ok(MeterConfig {
                flags,
                meter_id,
                bands: decode_bands(e)?,
            })
        })?),
        11 => {
            let f = MeterFeatures {
                max_meter: r.u32()?,
                band_types: r.u32()?,
                capabilities: r.u32()?,
                max_bands: r.u8()?,
                max_color: r.u8()?,
            };
            r.pad(2)?;
            B::MeterFeatures(f)
        }
        12 => B::TableFeatures(decode_table_features_list(r)?),
        13 => B::PortDesc(fixed_list(r, Port::LEN, Port::decode)?),
        0xffff => B::Experimenter {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: Bytes::from(r.rest()),
        },
        other => return Err(unknown_multipart(r, other)),
    };
    Ok(MultipartReply { flags, body })
}

fn patch_len_at(out: &mut Vec<u8>, start: usize, at: usize) {
    let len = (out.len() - start) as u16;
    out.patch_u16(start + at, len);
}

fn encode_multipart_reply(m: &MultipartReply, out: &mut Vec<u8>) {
    out.put_u16(m.body.multipart_type());
    out.put_u16(m.flags);
    out.put_zeros(4);
    encode_multipart_reply_body(&m.body, out);
}

fn encode_multipart_reply_body(body: &MultipartReplyBody, out: &mut Vec<u8>) {
    use MultipartReplyBody as B;
    match body {
        B::Desc(d) => d.encode(out),
        B::Flow(list) => {
            for f in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(f.table_id);
                out.put_u8(0);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.priority);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u16(f.flags);
                out.put_zeros(4);
                out.put_u64(f.cookie);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                f.match_.encode(out);
                encode_instructions(&f.instructions, out);
                patch_len_at(out, start, 0);
            }
        }
        B::Aggregate(a) => a.encode(out),
        B::Table(list) => {
            for t in list {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_u32(t.active_count);
                out.put_u64(t.lookup_count);
                out.put_u64(t.matched_count);
            }
        }
        B::PortStats(list) => {
            for p in list {
                out.put_u32(p.port_no);
                out.put_zeros(4);
                p.counters.encode(out);
                out.put_u32(p.duration_sec);
                out.put_u32(p.duration_nsec);
            }
        }
        B::Queue(list) => {
            for q in list {
                out.put_u32(q.port_no);
                out.put_u32(q.queue_id);
                out.put_u64(q.tx_bytes);
                out.put_u64(q.tx_packets);
                out.put_u64(q.tx_errors);
                out.put_u32(q.duration_sec);
                out.put_u32(q.duration_nsec);
            }
        }
        B::Group(list) => {
            for g in list {
                let start = out.len();
                out.put_u16(0);
                out.put_zeros(2);
                out.put_u32(g.group_id);
                out.put_u32(g.ref_count);
                out.put_zeros(4);
                out.put_u64(g.packet_count);
                out.put_u64(g.byte_count);
                out.put_u32(g.duration_sec);
                out.put_u32(g.duration_nsec);
                encode_counters(&g.bucket_stats, out);
                patch_len_at(out, start, 0);
            }
        }
        B::GroupDesc(list) => {
            for g in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(g.group_type.into());
                out.put_u8(0);
                out.put_u32(g.group_id);
                encode_buckets(&g.buckets, out);
                patch_len_at(out, start, 0);
            }
        }
        B::GroupFeatures(g) => {
            out.put_u32(g.types);
            out.put_u32(g.capabilities);
            for v in g.max_groups.iter().chain(g.actions.iter()) {
                out.put_u32(*v);
            }
        }
        B::Meter(list) => {
            for m in list {
                let start = out.len();
                out.put_u32(m.meter_id);
                out.put_u16(0);
                out.put_zeros(6);
                out.put_u32(m.flow_count);
                out.put_u64(m.packet_in_count);
                out.put_u64(m.byte_in_count);
                out.put_u32(m.duration_sec);
                out.put_u32(m.duration_nsec);
                encode_counters(&m.band_stats, out);
                patch_len_at(out, start, 4);
            }
        }
        B::MeterConfig(list) => {
            for m in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u16(m.flags);
                out.put_u32(m.meter_id);
                encode_bands(&m.bands, out);
                patch_len_at(out, start, 0);
            }
        }
        B::MeterFeatures(f) => {
            out.put_u32(f.max_meter);
            out.put_u32(f.band_types);
            out.put_u32(f.capabilities);
            out.put_u8(f.max_bands);
            out.put_u8(f.max_color);
            out.put_zeros(2);
        }
        B::TableFeatures(list) => encode_table_features_list(list, out),
        B::PortDesc(list) => {
            for p in list {
                p.encode(out);
            }
        }
        B::Experimenter {
            experimenter,
            exp_type,
            data,
        } => {
            out.put_u32(*experimenter);
            out.put_u32(*exp_type);
            out.put_slice(&data.0);
        }
    }
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
            FEATURES_REPLY => {
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
                Body::FeaturesReply(f)
            }
            GET_CONFIG_REQUEST => return empty(&r, Body::GetConfigRequest),
            GET_CONFIG_REPLY => Body::GetConfigReply(SwitchConfig::decode(&mut r)?),
            SET_CONFIG => Body::SetConfig(SwitchConfig::decode(&mut r)?),
            PACKET_IN => {
                let buffer_id = r.u32()?;
                let total_len = r.u16()?;
                let reason = r.u8()?.into();
                let table_id = r.u8()?;
                let cookie = r.u64()?;
                let match_ = Match::decode(&mut r)?;
                r.pad(2)?;
                Body::PacketIn(PacketIn {
                    buffer_id,
                    total_len,
                    reason,
                    table_id,
                    cookie,
                    match_,
                    data: Bytes::from(r.rest()),
                })
            }
            FLOW_REMOVED => Body::FlowRemoved(FlowRemoved {
                cookie: r.u64()?,
                priority: r.u16()?,
                reason: r.u8()?.into(),
                table_id: r.u8()?,
                duration_sec: r.u32()?,
                duration_nsec: r.u32()?,
                idle_timeout: r.u16()?,
                hard_timeout: r.u16()?,
                packet_count: r.u64()?,
                byte_count: r.u64()?,
                match_: Match::decode(&mut r)?,
            }),
            PORT_STATUS => {
                let reason = r.u8()?.into();
                r.pad(7)?;
                Body::PortStatus(PortStatus {
                    reason,
                    desc: Port::decode(&mut r)?,
                })
            }
            PACKET_OUT => {
                let buffer_id = r.u32()?;
                let in_port = r.u32()?;
                let actions_len = r.u16()? as usize;
                r.pad(6)?;
                if actions_len > r.remaining() {
                    return Err(r.error(
                        bad_len(),
                        format_args!("actions_len {actions_len} exceeds the {} bytes left", r.remaining()),
                    ));
                }
                let mut ar = r.sub_with(actions_len, bad_action(BadActionCode::BadLen), "PACKET_OUT actions")?;
                let actions = Action::decode_list(&mut ar)?;
                Body::PacketOut(PacketOut {
                    buffer_id,
                    in_port,
                    actions,
                    data: Bytes::from(r.rest()),
                })
            }
            FLOW_MOD => {
                let cookie = r.u64()?;
                let cookie_mask = r.u64()?;
                let table_id = r.u8()?;
                let cmd = r.u8()?;
                if cmd > 4 {
                    return Err(r.error(
                        ErrorCode::FlowModFailed(FlowModFailedCode::BadCommand),
                        format_args!("unknown command {cmd}"),
                    ));
                }
                let idle_timeout = r.u16()?;
                let hard_timeout = r.u16()?;
                let priority = r.u16()?;
                let buffer_id = r.u32()?;
                let out_port = r.u32()?;
                let out_group = r.u32()?;
                let flags = r.u16()?;
                r.pad(2)?;
                let match_ = Match::decode(&mut r)?;
                let mut ir = r.sub_with(
                    r.remaining(),
                    bad_inst(BadInstructionCode::BadLen),
                    "FLOW_MOD instructions",
                )?;
                Body::FlowMod(FlowMod {
                    cookie,
                    cookie_mask,
                    table_id,
                    command: cmd.into(),
                    idle_timeout,
                    hard_timeout,
                    priority,
                    buffer_id,
                    out_port,
                    out_group,
                    flags,
                    match_,
                    instructions: Instruction::decode_list(&mut ir)?,
                })
            }
            GROUP_MOD => {
                let command = GroupModCommand::from(r.u16()?);
                if let GroupModCommand::Unknown(c) = command {
                    return Err(r.error(
                        ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand),
                        format_args!("unknown group command {c}"),
                    ));
                }
                let group_type = GroupType::from(r.u8()?);
                if let GroupType::Unknown(t) = group_type {
                    return Err(r.error(
                        ErrorCode::GroupModFailed(GroupModFailedCode::BadType),
                        format_args!("unknown group type {t}"),
                    ));
                }
                r.pad(1)?;
                let group_id = r.u32()?;
                Body::GroupMod(GroupMod {
                    command,
                    group_type,
                    group_id,
                    buckets: decode_buckets(&mut r)?,
                })
            }
            PORT_MOD => {
                let port_no = r.u32()?;
                r.pad(4)?;
                let hw_addr = MacAddr(r.array()?);
                r.pad(2)?;
                let p = PortMod {
                    port_no,
                    hw_addr,
                    config: r.u32()?,
                    mask: r.u32()?,
                    advertise: r.u32()?,
                };
                r.pad(4)?;
                Body::PortMod(p)
            }
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
            QUEUE_GET_CONFIG_REPLY => {
                let port = r.u32()?;
                r.pad(4)?;
                let queues = length_prefixed_list(&mut r, 16, 8, "packet queue", |q| {
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
                Body::QueueGetConfigReply(QueueGetConfigReply { port, queues })
            }
            ROLE_REQUEST => Body::RoleRequest(role(&mut r)?),
            ROLE_REPLY => Body::RoleReply(role(&mut r)?),
            GET_ASYNC_REQUEST => return empty(&r, Body::GetAsyncRequest),
            GET_ASYNC_REPLY => Body::GetAsyncReply(async_config(&mut r)?),
            SET_ASYNC => Body::SetAsync(async_config(&mut r)?),
            METER_MOD => {
                let command = MeterModCommand::from(r.u16()?);
                if let MeterModCommand::Unknown(c) = command {
                    return Err(r.error(
                        ErrorCode::MeterModFailed(MeterModFailedCode::BadCommand),
                        format_args!("unknown meter command {c}"),
                    ));
                }
                let flags = r.u16()?;
                let meter_id = r.u32()?;
                Body::MeterMod(MeterMod {
                    command,
                    flags,
                    meter_id,
                    bands: decode_bands(&mut r)?,
                })
            }
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
            } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.put_slice(&data.0);
            }
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

/// Writes a PACKET_IN body with the given match fields and data.
#[inline]
pub fn encode_packet_in_body(out: &mut Vec<u8>, p: &PacketIn, fields: &[Oxm], data: &[u8]) {
    out.put_u32(p.buffer_id);
    out.put_u16(p.total_len);
    out.put_u8(p.reason.into());
    out.put_u8(p.table_id);
    out.put_u64(p.cookie);
    crate::oxm::encode_match_fields(fields, out);
    out.put_zeros(2);
    out.put_slice(data);
}

/// Writes a FLOW_MOD body: the scalar fields of `f`, then `fields` as the
/// match and `instructions` (the hot path passes borrowed slices here and
/// leaves `f.match_`/`f.instructions` empty).
#[inline]
pub fn encode_flow_mod_body<A: AsRef<[Action]>>(
    out: &mut Vec<u8>,
    f: &FlowMod,
    fields: &[Oxm],
    instructions: &[Instruction<A>],
) {
    out.put_u64(f.cookie);
    out.put_u64(f.cookie_mask);
    out.put_u8(f.table_id);
    out.put_u8(f.command.into());
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u16(f.priority);
    out.put_u32(f.buffer_id);
    out.put_u32(f.out_port);
    out.put_u32(f.out_group);
    out.put_u16(f.flags);
    out.put_zeros(2);
    crate::oxm::encode_match_fields(fields, out);
    encode_instructions(instructions, out);
}

/// Writes a PACKET_OUT body.
#[inline]
pub fn encode_packet_out_body(out: &mut Vec<u8>, buffer_id: u32, in_port: u32, actions: &[Action], data: &[u8]) {
    out.put_u32(buffer_id);
    out.put_u32(in_port);
    let len_at = out.len();
    out.put_u16(0);
    out.put_zeros(6);
    let start = out.len();
    encode_actions(actions, out);
    let actions_len = (out.len() - start) as u16;
    out.patch_u16(len_at, actions_len);
    out.put_slice(data);
}
