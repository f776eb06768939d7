//! OpenFlow 1.3's flow-table messages: PACKET_IN, FLOW_REMOVED, PACKET_OUT,
//! FLOW_MOD and TABLE_MOD, and the hot path's encoders of their bodies.

use super::*;

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

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableMod {
    pub table_id: u8,
    pub config: u32,
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

impl PacketIn {
    #[inline]
    pub(super) fn decode(r: &mut Reader) -> Result<PacketIn, DecodeError> {
        let buffer_id = r.u32()?;
        let total_len = r.u16()?;
        let reason = r.u8()?.into();
        let table_id = r.u8()?;
        let cookie = r.u64()?;
        let match_ = Match::decode(r)?;
        r.pad(2)?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            match_,
            data: Bytes::from(r.rest()),
        })
    }
}

impl FlowRemoved {
    pub(super) fn decode(r: &mut Reader) -> Result<FlowRemoved, DecodeError> {
        Ok(FlowRemoved {
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
            match_: Match::decode(r)?,
        })
    }
}

impl PacketOut {
    #[inline]
    pub(super) fn decode(r: &mut Reader) -> Result<PacketOut, DecodeError> {
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
        Ok(PacketOut {
            buffer_id,
            in_port,
            actions,
            data: Bytes::from(r.rest()),
        })
    }
}

impl FlowMod {
    #[inline]
    pub(super) fn decode(r: &mut Reader) -> Result<FlowMod, DecodeError> {
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
        let match_ = Match::decode(r)?;
        let mut ir = r.sub_with(
            r.remaining(),
            bad_inst(BadInstructionCode::BadLen),
            "FLOW_MOD instructions",
        )?;
        Ok(FlowMod {
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
}
