//! OpenFlow 1.0's flow-table messages: PACKET_IN, FLOW_REMOVED, PACKET_OUT
//! and FLOW_MOD, and the encoders of their bodies the hot path shares.

use super::*;

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

impl PacketIn {
    #[inline]
    pub(super) fn decode(r: &mut Reader) -> Result<PacketIn, DecodeError> {
        let buffer_id = r.u32()?;
        let total_len = r.u16()?;
        let in_port = r.u16()?;
        let reason = r.u8()?.into();
        r.pad(1)?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            in_port,
            reason,
            data: Bytes::from(r.rest()),
        })
    }
}

impl FlowRemoved {
    pub(super) fn decode(r: &mut Reader) -> Result<FlowRemoved, DecodeError> {
        let match_ = Match::decode(r)?;
        let cookie = r.u64()?;
        let priority = r.u16()?;
        let reason = r.u8()?.into();
        r.pad(1)?;
        let duration_sec = r.u32()?;
        let duration_nsec = r.u32()?;
        let idle_timeout = r.u16()?;
        r.pad(2)?;
        Ok(FlowRemoved {
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
}

impl PacketOut {
    #[inline]
    pub(super) fn decode(r: &mut Reader) -> Result<PacketOut, DecodeError> {
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
        let match_ = Match::decode(r)?;
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
        Ok(FlowMod {
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
}
