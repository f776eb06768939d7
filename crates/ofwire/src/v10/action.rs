//! OpenFlow 1.0's actions (`ofp_action_*`): decode and encode side by side.

use super::*;

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

pub(super) fn bad_action(code: BadActionCode) -> ErrorCode {
    ErrorCode::BadAction(code)
}

impl Action {
    /// Decodes an action list that fills the reader.
    pub(crate) fn decode_list(r: &mut Reader) -> Result<Vec<Action>, DecodeError> {
        r.until_empty(Action::decode)
    }

    pub(super) fn decode(r: &mut Reader) -> Result<Action, DecodeError> {
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

pub(super) fn put_u16_action(out: &mut Vec<u8>, ty: u16, v: u16) {
    out.put_u16(ty);
    out.put_u16(8);
    out.put_u16(v);
    out.put_zeros(2);
}

pub(super) fn put_u8_action(out: &mut Vec<u8>, ty: u16, v: u8) {
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
