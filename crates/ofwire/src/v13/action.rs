//! OpenFlow 1.3's actions and instructions (`ofp_action_*`, `ofp_instruction_*`):
//! each one's decode and encode side by side.

use super::*;

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
        r.until_empty(Action::decode)
    }

    pub(super) fn decode(r: &mut Reader) -> Result<Action, DecodeError> {
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
        r.until_empty(Instruction::decode)
    }

    pub(super) fn decode(r: &mut Reader) -> Result<Instruction, DecodeError> {
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
