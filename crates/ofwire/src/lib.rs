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

pub mod codec;
pub mod common;
pub mod error;
pub mod header;
pub mod hot;
pub mod oxm;
pub mod types;
pub mod v10;
pub mod v13;

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
                    format!("OpenFlow version {v:#04x} is not supported (only 0x01 and 0x04, and HELLO of any version)"),
                ))
            }
        }
    };
    Ok(Message { version: h.version, xid: h.xid, body })
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
        Message { version: OFP10_VERSION, xid, body: Body::V10(body) }
    }

    pub fn v13(xid: u32, body: v13::Body) -> Message {
        Message { version: OFP13_VERSION, xid, body: Body::V13(body) }
    }

    pub fn msg_type(&self) -> u8 {
        match &self.body {
            Body::Hello(_) => header::OFPT_HELLO,
            Body::V10(b) => b.msg_type(),
            Body::V13(b) => b.msg_type(),
        }
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
            return Err(EncodeError::VersionMismatch { version: self.version, body: body_version });
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
