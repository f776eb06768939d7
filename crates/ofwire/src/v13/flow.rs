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
