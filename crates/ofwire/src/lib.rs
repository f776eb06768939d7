//! OpenFlow 1.0 and 1.3 wire format: decode, validate, encode. No I/O.
//!
//! * [`decode`] turns one whole message into a typed [`Message`], validating
//!   every length, padding, enumeration and OXM rule; failures are
//!   [`DecodeError`]s that carry the OpenFlow error a peer should receive.
//! * [`Message::encode`] writes the exact bytes back (decode then encode is
//!   byte-identical for every message we accept).
//! * [`Framer`] splits a TCP byte stream into messages.
//! * [`hot`] has the allocation-free paths: PACKET_IN views and FLOW_MOD /
//!   PACKET_OUT writers into a reused buffer.
//! * [`vnet`] is the virtio-net header Linux puts before a frame on
//!   AF_PACKET and TAP (checksum and segmentation left undone): the ports
//!   (`packetio`) read it and the switch's packets (`ofswitch`) carry it.

#[cfg(feature = "capture")]
pub mod capture;
pub mod codec;
pub mod common;
// A message of every type, both versions: the tests', fuzzers' and
// benchmarks' data, not the library's (feature `corpus`).
#[cfg(any(test, feature = "corpus"))]
pub mod corpus;
pub mod error;
pub mod header;
pub mod hot;
pub mod oxm;
pub mod types;
pub mod v10;
pub mod v13;
pub mod vnet;
mod wire_enum;

pub use common::*;
pub use error::{DecodeError, ErrorCode};
pub use header::{frame_len, negotiate_version, Framer, Header, Hello, HelloElement, OFP_HEADER_LEN};
pub use types::{Bytes, MacAddr};

/// Wire version byte of OpenFlow 1.0.
pub const OFP10_VERSION: u8 = 0x01;
/// Wire version byte of OpenFlow 1.3.
pub const OFP13_VERSION: u8 = 0x04;

/// One OpenFlow message: header fields plus typed body.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Message {
    pub version: u8,
    pub xid: u32,
    pub body: Body,
}

/// The body of a message of any supported version.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Body {
    /// HELLO decodes for every version, since negotiation needs it.
    Hello(Hello),
    V10(v10::Body),
    V13(v13::Body),
}

impl Body {
    /// The header's message type this body is sent as.
    pub fn msg_type(&self) -> u8 {
        match self {
            Body::Hello(_) => header::OFPT_HELLO,
            Body::V10(b) => b.msg_type(),
            Body::V13(b) => b.msg_type(),
        }
    }
}

/// Why a message could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The message would exceed the 65535 bytes a header length can say.
    TooLong(usize),
    /// The body's version does not match `Message::version`.
    VersionMismatch { version: u8, body: u8 },
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::TooLong(n) => write!(f, "message of {n} bytes exceeds the 65535-byte OpenFlow limit"),
            EncodeError::VersionMismatch { version, body } => {
                write!(f, "message version {version:#04x} but body is for version {body:#04x}")
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// The spec's name of a message type in a version ("FLOW_MOD").
pub fn msg_type_name(version: u8, msg_type: u8) -> &'static str {
    match version {
        OFP10_VERSION => v10::msg_type::name(msg_type),
        OFP13_VERSION => v13::msg_type::name(msg_type),
        _ if msg_type == header::OFPT_HELLO => "HELLO",
        _ => "UNKNOWN",
    }
}

/// Decodes exactly one message. The header's length must equal `bytes.len()`.
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    let Some(h) = Header::peek(bytes) else {
        return Err(DecodeError::bad_len(format!(
            "message of {} bytes is shorter than the 8-byte header",
            bytes.len()
        )));
    };
    if h.length as usize != bytes.len() {
        return Err(DecodeError::bad_len(format!(
            "{}: header length field says {} bytes but the message has {}",
            msg_type_name(h.version, h.msg_type),
            h.length,
            bytes.len()
        )));
    }
    let body = &bytes[OFP_HEADER_LEN..];
    let body = if h.msg_type == header::OFPT_HELLO {
        Body::Hello(Hello::decode(h.version, body)?)
    } else {
        match h.version {
            OFP10_VERSION => Body::V10(v10::Body::decode(h.msg_type, body)?),
            OFP13_VERSION => Body::V13(v13::Body::decode(h.msg_type, body)?),
            v => {
                return Err(DecodeError::new(
                    ErrorCode::BadRequest(error::BadRequestCode::BadVersion),
                    format!(
                        "OpenFlow version {v:#04x} is not supported (only 0x01 and 0x04, and HELLO of any version)"
                    ),
                ))
            }
        }
    };
    Ok(Message {
        version: h.version,
        xid: h.xid,
        body,
    })
}

/// Decodes a message inside a session that negotiated `negotiated`: a
/// message of any other version is OFPBRC_BAD_VERSION, as the specs require.
pub fn decode_in_session(bytes: &[u8], negotiated: u8) -> Result<Message, DecodeError> {
    if let Some(h) = Header::peek(bytes) {
        if h.version != negotiated {
            return Err(DecodeError::new(
                ErrorCode::BadRequest(error::BadRequestCode::BadVersion),
                format!(
                    "{} with version {:#04x} in a session that negotiated {negotiated:#04x}",
                    msg_type_name(h.version, h.msg_type),
                    h.version
                ),
            ));
        }
    }
    decode(bytes)
}

impl Message {
    pub fn new(version: u8, xid: u32, body: Body) -> Message {
        Message { version, xid, body }
    }

    pub fn v10(xid: u32, body: v10::Body) -> Message {
        Message {
            version: OFP10_VERSION,
            xid,
            body: Body::V10(body),
        }
    }

    pub fn v13(xid: u32, body: v13::Body) -> Message {
        Message {
            version: OFP13_VERSION,
            xid,
            body: Body::V13(body),
        }
    }

    pub fn msg_type(&self) -> u8 {
        self.body.msg_type()
    }

    pub fn type_name(&self) -> &'static str {
        msg_type_name(self.version, self.msg_type())
    }

    /// Appends the encoded message to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let body_version = match &self.body {
            Body::Hello(_) => self.version,
            Body::V10(_) => OFP10_VERSION,
            Body::V13(_) => OFP13_VERSION,
        };
        if body_version != self.version {
            return Err(EncodeError::VersionMismatch {
                version: self.version,
                body: body_version,
            });
        }
        let start = Header::write(out, self.version, self.msg_type(), self.xid);
        match &self.body {
            Body::Hello(h) => h.encode_body(out),
            Body::V10(b) => b.encode(out),
            Body::V13(b) => b.encode(out),
        }
        let r = Header::finish(out, start);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut v = Vec::new();
        self.encode(&mut v)?;
        Ok(v)
    }
}

impl std::fmt::Display for Message {
    /// One line: `v1.3 FLOW_MOD xid=7 FlowMod { ... }`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self.version {
            OFP10_VERSION => "1.0".to_string(),
            OFP13_VERSION => "1.3".to_string(),
            other => format!("{other:#04x}"),
        };
        let body = match &self.body {
            Body::Hello(h) => format!("{h:?}"),
            Body::V10(b) => format!("{b:?}"),
            Body::V13(b) => format!("{b:?}"),
        };
        write!(f, "v{v} {} xid={} {body}", self.type_name(), self.xid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_corpus_message_round_trips_byte_exact() {
        for (name, msg) in corpus::all() {
            let bytes = msg.to_bytes().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(Header::peek(&bytes).unwrap().length as usize, bytes.len(), "{name}");
            let back = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}\n{}", types::to_hex(&bytes)));
            assert_eq!(back, msg, "{name}");
            assert_eq!(back.to_bytes().unwrap(), bytes, "{name}");
        }
    }

    /// Byte arrays produced by an independent implementation (Open vSwitch
    /// 3.1's ovs-ofctl and ovs-vswitchd), recorded by scripts/record-vectors.sh.
    #[test]
    fn vectors_from_real_open_vswitch_decode_and_reencode_byte_exact() {
        let mut types = BTreeSet::new();
        for line in include_str!("../tests/vectors/ovs.txt")
            .lines()
            .filter(|l| !l.starts_with('#'))
        {
            let (source, hex) = line.split_once(' ').unwrap();
            let bytes = types::from_hex(hex).unwrap();
            let msg = decode(&bytes).unwrap_or_else(|e| panic!("{source}: {e}\n{hex}"));
            assert_eq!(msg.to_bytes().unwrap(), bytes, "{source}: {msg}");
            types.insert((msg.version, msg.msg_type()));
        }
        assert!(types.len() >= 40, "vectors cover only {} message types", types.len());
    }

    #[test]
    fn corpus_covers_every_message_type_of_both_versions() {
        let mut seen10 = BTreeSet::new();
        let mut seen13 = BTreeSet::new();
        for (_, m) in corpus::all() {
            match m.version {
                OFP10_VERSION => seen10.insert(m.msg_type()),
                OFP13_VERSION => seen13.insert(m.msg_type()),
                _ => false,
            };
        }
        assert_eq!(seen10, (0..=21).collect::<BTreeSet<u8>>());
        assert_eq!(seen13, (0..=29).collect::<BTreeSet<u8>>());
        let mut mp_req = BTreeSet::new();
        let mut mp_rep = BTreeSet::new();
        for (_, b) in corpus::v13_messages() {
            match b {
                v13::Body::MultipartRequest(r) => mp_req.insert(r.body.multipart_type()),
                v13::Body::MultipartReply(r) => mp_rep.insert(r.body.multipart_type()),
                _ => false,
            };
        }
        let want: BTreeSet<u16> = (0..=13).chain([0xffff]).collect();
        assert_eq!(mp_req, want);
        assert_eq!(mp_rep, want);
    }

    #[test]
    fn every_truncation_of_every_message_is_an_error_not_a_panic() {
        for (name, msg) in corpus::all() {
            let bytes = msg.to_bytes().unwrap();
            for cut in 0..bytes.len() {
                // Honest header length over a truncated body.
                let mut b = bytes[..cut].to_vec();
                if b.len() >= 4 {
                    b[2..4].copy_from_slice(&(cut as u16).to_be_bytes());
                }
                if let Ok(m) = decode(&b) {
                    // Only messages with trailing opaque data can still decode.
                    assert_eq!(m.msg_type(), msg.msg_type(), "{name} cut at {cut}");
                }
                // Header length that disagrees with the bytes.
                assert_eq!(
                    decode(&bytes[..cut]).unwrap_err().code,
                    ErrorCode::BadRequest(BadRequestCode::BadLen),
                    "{name} cut at {cut}"
                );
            }
        }
    }

    #[test]
    fn length_fields_that_disagree_are_bad_len() {
        let mut b = Message::v13(1, v13::Body::BarrierRequest).to_bytes().unwrap();
        b.push(0);
        b[3] = 9; // honest about the trailing byte, but BARRIER has no body
        let e = decode(&b).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadLen));
        assert!(e.what.contains("trailing"), "{e}");
        // FEATURES_REQUEST type with a FLOW_MOD body: type does not match body.
        let fm = corpus::v13_messages()
            .into_iter()
            .find(|(n, _)| *n == "flow_mod_add")
            .unwrap()
            .1;
        let mut b = Message::v13(1, fm).to_bytes().unwrap();
        b[1] = v13::msg_type::FEATURES_REQUEST;
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::BadRequest(BadRequestCode::BadLen)
        );
    }

    #[test]
    fn versions_types_and_padding_are_checked() {
        let e = decode(&[0x02, 5, 0, 8, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadVersion));
        // HELLO of any version decodes.
        assert!(decode(&[0x06, 0, 0, 8, 0, 0, 0, 1]).is_ok());
        assert!(decode(&[0x02, 0, 0, 8, 0, 0, 0, 1]).is_ok());
        let e = decode(&[0x01, 22, 0, 8, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadType));
        let e = decode(&[0x04, 30, 0, 8, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadType));
        // A session that negotiated 1.3 receiving a 1.0 message.
        let e = decode_in_session(&[0x01, 18, 0, 8, 0, 0, 0, 1], OFP13_VERSION).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::BadVersion));
        // Non-zero padding in a 1.3 TABLE_MOD.
        let e = decode(&[4, 17, 0, 16, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.what.contains("padding"), "{e}");
        // Port name without NUL in a 1.0 PORT_STATUS.
        let ps = corpus::v10_messages()
            .into_iter()
            .find(|(n, _)| *n == "port_status")
            .unwrap()
            .1;
        let mut b = Message::v10(1, ps).to_bytes().unwrap();
        let name_at = 8 + 8 + 2 + 6;
        b[name_at..name_at + 16].copy_from_slice(b"ABCDEFGHIJKLMNOP");
        let e = decode(&b).unwrap_err();
        assert!(e.what.contains("NUL"), "{e}");
    }

    #[test]
    fn bad_actions_instructions_and_commands_map_to_their_codes() {
        let fm = corpus::v13_messages()
            .into_iter()
            .find(|(n, _)| *n == "flow_mod_add")
            .unwrap()
            .1;
        let good = Message::v13(1, fm).to_bytes().unwrap();
        // The instruction starts right after the 48-byte fixed part and the 32-byte match.
        let inst_at = 8 + 40 + 32;
        assert_eq!(&good[inst_at..inst_at + 2], &[0, 4]);
        let mut b = good.clone();
        b[inst_at + 1] = 9;
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::BadInstruction(BadInstructionCode::UnknownInst)
        );
        let mut b = good.clone();
        b[inst_at + 8 + 1] = 99; // action type
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadType)
        );
        let mut b = good.clone();
        b[inst_at + 8 + 3] = 12; // action length not a multiple of 8
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadLen)
        );
        let mut b = good.clone();
        b[8 + 17] = 7; // command
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::FlowModFailed(FlowModFailedCode::BadCommand)
        );
        let mut b = good;
        b[inst_at + 8 + 4..inst_at + 8 + 8].copy_from_slice(&v13::port::ANY.to_be_bytes());
        assert_eq!(
            decode(&b).unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadOutPort)
        );
    }

    #[test]
    fn error_messages_of_every_code_round_trip() {
        for version in [OFP10_VERSION, OFP13_VERSION] {
            let mut codes = ErrorCode::all_defined(version);
            if version == OFP13_VERSION {
                codes.push(ErrorCode::Experimenter {
                    exp_type: 1,
                    experimenter: 0x2320,
                });
            }
            for code in codes {
                let e = ErrorMsg {
                    code,
                    data: Bytes(vec![1, 2, 3]),
                };
                let msg = match version {
                    OFP10_VERSION => Message::v10(1, v10::Body::Error(e)),
                    _ => Message::v13(1, v13::Body::Error(e)),
                };
                let bytes = msg.to_bytes().unwrap();
                assert_eq!(decode(&bytes).unwrap(), msg, "{code}");
            }
        }
    }

    #[test]
    fn encode_refuses_oversize_and_mismatched_versions() {
        let big = Message::v13(1, v13::Body::EchoRequest(Bytes(vec![0; 70_000])));
        let mut out = vec![9];
        assert!(matches!(big.encode(&mut out), Err(EncodeError::TooLong(_))));
        assert_eq!(out, vec![9]);
        let wrong = Message {
            version: OFP10_VERSION,
            xid: 1,
            body: Body::V13(v13::Body::BarrierRequest),
        };
        assert!(matches!(wrong.to_bytes(), Err(EncodeError::VersionMismatch { .. })));
    }
}
