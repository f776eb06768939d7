//! The allocation-free paths a controller runs per packet: a zero-copy view
//! of PACKET_IN (1.0 and 1.3) and FLOW_MOD / PACKET_OUT writers that append
//! to a caller's reused buffer from borrowed slices.
//!
//! The view validates the structure it exposes (fixed header, match TLV
//! lengths and basic-field widths, the 2-byte pad) but does not build typed
//! OXM values; call `crate::decode` for the full validation of rare messages.

use crate::codec::align8;
use crate::error::{BadMatchCode, BadRequestCode, DecodeError, ErrorCode};
use crate::header::{Header, OFP_HEADER_LEN};
use crate::oxm::{field, Oxm, OFPMT_OXM, OFPXMC_OPENFLOW_BASIC};
use crate::{v10, v13, EncodeError, OFP10_VERSION, OFP13_VERSION};

/// A PACKET_IN read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketInView<'a> {
    pub version: u8,
    pub xid: u32,
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: u8,
    /// 1.3 only (0 for 1.0).
    pub table_id: u8,
    /// 1.3 only (0 for 1.0).
    pub cookie: u64,
    /// From the 1.0 header, or the 1.3 match's IN_PORT (1.0's 0xfff8.. mapped to 1.3 numbering).
    pub in_port: u32,
    /// The OXM TLVs of a 1.3 match (empty for 1.0).
    pub match_fields: &'a [u8],
    pub data: &'a [u8],
}

fn bad_len(what: String) -> DecodeError {
    DecodeError::new(ErrorCode::BadRequest(BadRequestCode::BadLen), what)
}

impl<'a> PacketInView<'a> {
    /// Parses one whole PACKET_IN message (header included).
    #[inline]
    pub fn parse(msg: &'a [u8]) -> Result<PacketInView<'a>, DecodeError> {
        let h = Header::peek(msg).ok_or_else(|| bad_len("PACKET_IN: shorter than a header".into()))?;
        if h.length as usize != msg.len() {
            return Err(bad_len(format!(
                "PACKET_IN: header length {} but {} bytes",
                h.length,
                msg.len()
            )));
        }
        let b = &msg[OFP_HEADER_LEN..];
        let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        match (h.version, h.msg_type) {
            (OFP10_VERSION, v10::msg_type::PACKET_IN) => {
                if b.len() < 10 {
                    return Err(bad_len(format!("PACKET_IN: 1.0 body of {} bytes is below 10", b.len())));
                }
                if b[9] != 0 {
                    return Err(bad_len("PACKET_IN: non-zero padding".into()));
                }
                let port = be16(6);
                Ok(PacketInView {
                    version: h.version,
                    xid: h.xid,
                    buffer_id: be32(0),
                    total_len: be16(4),
                    reason: b[8],
                    table_id: 0,
                    cookie: 0,
                    in_port: if port >= v10::port::MAX {
                        port as u32 | 0xffff_0000
                    } else {
                        port as u32
                    },
                    match_fields: &[],
                    data: &b[10..],
                })
            }
            (OFP13_VERSION, v13::msg_type::PACKET_IN) => {
                if b.len() < 16 + 4 {
                    return Err(bad_len(format!(
                        "PACKET_IN: 1.3 body of {} bytes is too short",
                        b.len()
                    )));
                }
                let match_type = be16(16);
                let match_len = be16(18) as usize;
                if match_type != OFPMT_OXM || match_len < 4 {
                    return Err(DecodeError::new(
                        ErrorCode::BadMatch(BadMatchCode::BadType),
                        format!("PACKET_IN: match type {match_type} length {match_len}"),
                    ));
                }
                let match_end = 16 + align8(match_len);
                if b.len() < match_end + 2 {
                    return Err(bad_len(format!(
                        "PACKET_IN: match of {match_len} bytes runs past the message"
                    )));
                }
                if b[16 + match_len..match_end + 2].iter().any(|&x| x != 0) {
                    return Err(bad_len("PACKET_IN: non-zero padding after the match".into()));
                }
                let fields = &b[20..16 + match_len];
                let in_port = scan_in_port(fields)?;
                Ok(PacketInView {
                    version: h.version,
                    xid: h.xid,
                    buffer_id: be32(0),
                    total_len: be16(4),
                    reason: b[6],
                    table_id: b[7],
                    cookie: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
                    in_port: in_port.ok_or_else(|| {
                        DecodeError::new(
                            ErrorCode::BadMatch(BadMatchCode::BadPrereq),
                            "PACKET_IN: match has no IN_PORT",
                        )
                    })?,
                    match_fields: fields,
                    data: &b[match_end + 2..],
                })
            }
            (v, t) => Err(DecodeError::new(
                ErrorCode::BadRequest(BadRequestCode::BadType),
                format!("not a PACKET_IN: version {v:#04x} type {t}"),
            )),
        }
    }
}

/// Walks OXM TLVs checking their lengths; returns IN_PORT if present.
#[inline]
fn scan_in_port(mut fields: &[u8]) -> Result<Option<u32>, DecodeError> {
    let mut in_port = None;
    while !fields.is_empty() {
        if fields.len() < 4 {
            return Err(DecodeError::new(
                ErrorCode::BadMatch(BadMatchCode::BadLen),
                "PACKET_IN: truncated OXM header",
            ));
        }
        let header = u32::from_be_bytes([fields[0], fields[1], fields[2], fields[3]]);
        let len = (header & 0xff) as usize;
        if fields.len() < 4 + len {
            return Err(DecodeError::new(
                ErrorCode::BadMatch(BadMatchCode::BadLen),
                format!("PACKET_IN: OXM {header:#010x} runs past the match"),
            ));
        }
        if (header >> 16) as u16 == OFPXMC_OPENFLOW_BASIC {
            let f = ((header >> 9) & 0x7f) as usize;
            let has_mask = header & 0x100 != 0;
            let ok = f < field::WIDTH.len() && field::WIDTH[f] as usize * (1 + has_mask as usize) == len;
            if !ok {
                return Err(DecodeError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadLen),
                    format!("PACKET_IN: OXM field {f} with length {len}"),
                ));
            }
            if f == field::IN_PORT as usize {
                in_port = Some(u32::from_be_bytes([fields[4], fields[5], fields[6], fields[7]]));
            }
        }
        fields = &fields[4 + len..];
    }
    Ok(in_port)
}

/// Patches the length, or removes the partial message if it is too long.
#[inline]
fn finish_or_undo(out: &mut Vec<u8>, start: usize) -> Result<(), EncodeError> {
    let r = Header::finish(out, start);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Appends a 1.0 FLOW_MOD. `fm.actions` is ignored; `actions` is encoded
/// instead so callers can pass a stack slice and keep `fm.actions` empty.
#[inline]
pub fn write_flow_mod10(
    out: &mut Vec<u8>,
    xid: u32,
    fm: &v10::FlowMod,
    actions: &[v10::Action],
) -> Result<(), EncodeError> {
    let start = Header::write(out, OFP10_VERSION, v10::msg_type::FLOW_MOD, xid);
    v10::encode_flow_mod_body(out, fm, actions);
    finish_or_undo(out, start)
}

/// Appends a 1.3 FLOW_MOD with `fields` as match and `instructions`
/// (`fm.match_` and `fm.instructions` are ignored).
#[inline]
pub fn write_flow_mod13<A: AsRef<[v13::Action]>>(
    out: &mut Vec<u8>,
    xid: u32,
    fm: &v13::FlowMod,
    fields: &[Oxm],
    instructions: &[v13::Instruction<A>],
) -> Result<(), EncodeError> {
    let start = Header::write(out, OFP13_VERSION, v13::msg_type::FLOW_MOD, xid);
    v13::encode_flow_mod_body(out, fm, fields, instructions);
    finish_or_undo(out, start)
}

/// Appends a 1.0 PACKET_OUT.
#[inline]
pub fn write_packet_out10(
    out: &mut Vec<u8>,
    xid: u32,
    buffer_id: u32,
    in_port: u16,
    actions: &[v10::Action],
    data: &[u8],
) -> Result<(), EncodeError> {
    let start = Header::write(out, OFP10_VERSION, v10::msg_type::PACKET_OUT, xid);
    v10::encode_packet_out_body(out, buffer_id, in_port, actions, data);
    finish_or_undo(out, start)
}

/// Appends a 1.3 PACKET_OUT.
#[inline]
pub fn write_packet_out13(
    out: &mut Vec<u8>,
    xid: u32,
    buffer_id: u32,
    in_port: u32,
    actions: &[v13::Action],
    data: &[u8],
) -> Result<(), EncodeError> {
    let start = Header::write(out, OFP13_VERSION, v13::msg_type::PACKET_OUT, xid);
    v13::encode_packet_out_body(out, buffer_id, in_port, actions, data);
    finish_or_undo(out, start)
}

/// A learning switch's answer, encoded once: a FLOW_MOD (1.0 or 1.3)
/// matching in port, source and destination MAC (every other field as in
/// the FLOW_MOD it was made from) with one output action. `write` appends
/// it with the per-packet fields patched in place: one copy and six stores
/// instead of encoding some thirty fields per PACKET_IN. The offsets are
/// the spec's layout (`ofp_flow_mod` and, in 1.3, three OXMs then one
/// APPLY_ACTIONS); a test holds them equal to the general encoder's output.
#[derive(Clone, Debug)]
pub struct LearntFlow {
    bytes: Vec<u8>,
    at: LearntFlowOffsets,
}

/// What a learnt flow says for one packet.
#[derive(Clone, Copy, Debug)]
pub struct Learnt {
    pub in_port: u32,
    pub eth_src: crate::MacAddr,
    pub eth_dst: crate::MacAddr,
    pub buffer_id: u32,
    pub out_port: u32,
}

#[derive(Clone, Copy, Debug)]
struct LearntFlowOffsets {
    in_port: usize,
    /// 2 bytes in 1.0, 4 in 1.3 (as in_port).
    port_len: usize,
    eth_src: usize,
    eth_dst: usize,
    buffer_id: usize,
    out_port: usize,
}

impl LearntFlow {
    /// From a 1.0 FLOW_MOD (its match's in_port, dl_src and dl_dst and its
    /// buffer id are filled per packet; its actions are replaced).
    pub fn v10(fm: &v10::FlowMod) -> LearntFlow {
        let mut bytes = Vec::with_capacity(80);
        let _ = write_flow_mod10(&mut bytes, 0, fm, &[v10::Action::Output { port: 0, max_len: 0 }]);
        LearntFlow {
            bytes,
            at: LearntFlowOffsets {
                // ofp_match from byte 8: wildcards(4) in_port(2) dl_src(6) dl_dst(6)
                in_port: 12,
                port_len: 2,
                eth_src: 14,
                eth_dst: 20,
                // after the match (48): cookie(8) command(2) idle(2) hard(2) priority(2)
                buffer_id: 64,
                // actions from 72: type(2) len(2) port(2)
                out_port: 76,
            },
        }
    }

    /// From a 1.3 FLOW_MOD (its match becomes IN_PORT, ETH_DST, ETH_SRC;
    /// its buffer id is filled per packet; its instructions are replaced by
    /// APPLY_ACTIONS with one output).
    pub fn v13(fm: &v13::FlowMod) -> LearntFlow {
        let mut bytes = Vec::with_capacity(104);
        let zero = crate::MacAddr::ZERO;
        let actions = [v13::Action::Output { port: 0, max_len: 0 }];
        let _ = write_flow_mod13(
            &mut bytes,
            0,
            fm,
            &[Oxm::InPort(0), Oxm::EthDst(zero, None), Oxm::EthSrc(zero, None)],
            &[v13::Instruction::ApplyActions(&actions[..])],
        );
        LearntFlow {
            bytes,
            at: LearntFlowOffsets {
                // ofp_match from byte 48: type(2) length(2), then each OXM's 4-byte header
                in_port: 56,
                port_len: 4,
                eth_dst: 64,
                eth_src: 74,
                // cookie(8) cookie_mask(8) table(1) command(1) idle(2) hard(2) priority(2)
                buffer_id: 32,
                // instructions from 80: type(2) len(2) pad(4), then the action: type(2) len(2) port(4)
                out_port: 92,
            },
        }
    }

    /// Appends the FLOW_MOD for one packet.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>, xid: u32, f: &Learnt) {
        let Learnt {
            in_port,
            eth_src,
            eth_dst,
            buffer_id,
            out_port,
        } = *f;
        let a = self.at;
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        let m = &mut out[start..];
        m[4..8].copy_from_slice(&xid.to_be_bytes());
        let port = |p: u32, b: &mut [u8]| match a.port_len {
            2 => b[..2].copy_from_slice(&(p as u16).to_be_bytes()),
            _ => b[..4].copy_from_slice(&p.to_be_bytes()),
        };
        port(in_port, &mut m[a.in_port..]);
        m[a.eth_src..a.eth_src + 6].copy_from_slice(&eth_src.0);
        m[a.eth_dst..a.eth_dst + 6].copy_from_slice(&eth_dst.0);
        m[a.buffer_id..a.buffer_id + 4].copy_from_slice(&buffer_id.to_be_bytes());
        port(out_port, &mut m[a.out_port..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Bytes;

    /// The template writes exactly what the general encoder writes, in both
    /// versions, for fields that differ in every byte.
    #[test]
    fn a_learnt_flow_is_what_the_encoder_writes() {
        use crate::MacAddr;
        let mut fm10 = v10::FlowMod {
            match_: v10::Match::all(),
            cookie: 0x5d1a,
            command: v10::FlowModCommand::Add,
            idle_timeout: 60,
            hard_timeout: 7,
            priority: 100,
            buffer_id: v10::NO_BUFFER,
            out_port: v10::port::NONE,
            flags: 1,
            actions: Vec::new(),
        };
        fm10.match_.wildcards &= !(v10::wildcards::IN_PORT | v10::wildcards::DL_SRC | v10::wildcards::DL_DST);
        let mut fm13 = v13::FlowMod::add(100);
        fm13.idle_timeout = 60;
        fm13.cookie = 0x5d1a;
        let t10 = LearntFlow::v10(&fm10);
        let t13 = LearntFlow::v13(&fm13);
        for (i, seed) in [0x0102_0304u32, 0xa1b2_c3d4, 0xfffe_fdfc].into_iter().enumerate() {
            let b = seed.to_be_bytes();
            let src = MacAddr([b[0], b[1], b[2], b[3], 0x11, i as u8]);
            let dst = MacAddr([b[3], b[2], b[1], b[0], 0x22, i as u8]);
            let (xid, in_port, buffer, out_port) = (seed ^ 0x55, seed >> 16, seed.rotate_left(8), seed & 0xfeff);
            let mut want = Vec::new();
            let mut m = fm10.clone();
            m.match_.in_port = in_port as u16;
            m.match_.dl_src = src;
            m.match_.dl_dst = dst;
            m.buffer_id = buffer;
            let act = [v10::Action::Output {
                port: out_port as u16,
                max_len: 0,
            }];
            write_flow_mod10(&mut want, xid, &m, &act).unwrap();
            let mut got = vec![0xee];
            let f = Learnt {
                in_port: in_port & 0xffff,
                eth_src: src,
                eth_dst: dst,
                buffer_id: buffer,
                out_port: out_port & 0xffff,
            };
            t10.write(&mut got, xid, &f);
            assert_eq!(got[1..], want[..], "1.0");
            let mut want = Vec::new();
            let mut m = fm13.clone();
            m.buffer_id = buffer;
            let act = [v13::Action::Output {
                port: out_port,
                max_len: 0,
            }];
            write_flow_mod13(
                &mut want,
                xid,
                &m,
                &[Oxm::InPort(in_port), Oxm::EthDst(dst, None), Oxm::EthSrc(src, None)],
                &[v13::Instruction::ApplyActions(&act[..])],
            )
            .unwrap();
            let mut got = Vec::new();
            let f = Learnt {
                in_port,
                eth_src: src,
                eth_dst: dst,
                buffer_id: buffer,
                out_port,
            };
            t13.write(&mut got, xid, &f);
            assert_eq!(got, want, "1.3");
        }
    }

    #[test]
    fn packet_in_view_agrees_with_the_typed_decoder_in_both_versions() {
        for (_, msg) in crate::corpus::all() {
            let bytes = msg.to_bytes().unwrap();
            let is_pi = matches!(
                &msg.body,
                crate::Body::V10(v10::Body::PacketIn(_)) | crate::Body::V13(v13::Body::PacketIn(_))
            );
            if !is_pi {
                assert!(PacketInView::parse(&bytes).is_err());
                continue;
            }
            let view = PacketInView::parse(&bytes).unwrap();
            match &msg.body {
                crate::Body::V10(v10::Body::PacketIn(p)) => {
                    assert_eq!(view.in_port, p.in_port as u32);
                    assert_eq!(view.data, p.data.as_slice());
                    assert_eq!(view.buffer_id, p.buffer_id);
                }
                crate::Body::V13(v13::Body::PacketIn(p)) => {
                    assert_eq!(Some(view.in_port), p.match_.in_port());
                    assert_eq!(view.data, p.data.as_slice());
                    assert_eq!(view.cookie, p.cookie);
                    assert_eq!(view.table_id, p.table_id);
                }
                _ => unreachable!(),
            }
        }
    }

    #[test]
    fn packet_in_view_rejects_truncation_and_bad_oxm_lengths() {
        let msg = crate::Message::v13(
            1,
            v13::Body::PacketIn(v13::PacketIn {
                buffer_id: v13::NO_BUFFER,
                total_len: 4,
                reason: crate::PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0,
                match_: crate::oxm::Match::new(vec![Oxm::InPort(3)]),
                data: Bytes(vec![1, 2, 3, 4]),
            }),
        );
        let bytes = msg.to_bytes().unwrap();
        assert_eq!(PacketInView::parse(&bytes).unwrap().in_port, 3);
        for cut in 8..bytes.len() {
            let mut b = bytes[..cut].to_vec();
            b[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
            let _ = PacketInView::parse(&b); // must not panic
        }
        let mut bad = bytes.clone();
        bad[8 + 16 + 4 + 3] = 8; // IN_PORT OXM length 8 instead of 4
        assert_eq!(
            PacketInView::parse(&bad).unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadLen)
        );
    }

    #[test]
    fn an_oversize_message_is_refused_and_leaves_the_buffer_as_it_was() {
        let mut out = vec![7u8];
        let big = vec![0u8; 65535];
        assert!(write_packet_out13(&mut out, 1, v13::NO_BUFFER, 1, &[], &big).is_err());
        assert_eq!(out, vec![7u8]);
    }

    #[test]
    fn hot_writers_produce_the_same_bytes_as_the_typed_encoder() {
        let mut fm = v13::FlowMod::add(10);
        fm.idle_timeout = 5;
        let fields = [Oxm::InPort(1), Oxm::EthDst(crate::MacAddr([2, 0, 0, 0, 0, 1]), None)];
        let actions = [v13::Action::Output { port: 2, max_len: 0 }];
        let insts = [v13::Instruction::ApplyActions(&actions[..])];
        let mut hot = Vec::new();
        write_flow_mod13(&mut hot, 9, &fm, &fields, &insts).unwrap();
        let mut typed = fm.clone();
        typed.match_.fields = fields.to_vec();
        typed.instructions = vec![v13::Instruction::ApplyActions(actions.to_vec())];
        assert_eq!(
            hot,
            crate::Message::v13(9, v13::Body::FlowMod(typed)).to_bytes().unwrap()
        );

        let mut hot = Vec::new();
        write_packet_out10(
            &mut hot,
            3,
            v10::NO_BUFFER,
            1,
            &[v10::Action::Output { port: 2, max_len: 0 }],
            &[9; 60],
        )
        .unwrap();
        let typed = crate::Message::v10(
            3,
            v10::Body::PacketOut(v10::PacketOut {
                buffer_id: v10::NO_BUFFER,
                in_port: 1,
                actions: vec![v10::Action::Output { port: 2, max_len: 0 }],
                data: Bytes(vec![9; 60]),
            }),
        );
        assert_eq!(hot, typed.to_bytes().unwrap());
    }
}
