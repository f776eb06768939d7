//! Message bodies whose layout is the same in OpenFlow 1.0 and 1.3.

use crate::codec::{Put, Reader};
use crate::error::{DecodeError, ErrorCode, OFPET_EXPERIMENTER};
use crate::types::Bytes;
use crate::wire_enum::wire_enum;

/// OFPT_ERROR.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ErrorMsg {
    pub code: ErrorCode,
    /// At least the first 64 bytes of the failed request, by the specs.
    pub data: Bytes,
}

impl ErrorMsg {
    pub(crate) fn decode(version: u8, r: &mut Reader) -> Result<ErrorMsg, DecodeError> {
        let ty = r.u16()?;
        let code = r.u16()?;
        let experimenter = if ty == OFPET_EXPERIMENTER && version != crate::OFP10_VERSION {
            r.u32()?
        } else {
            0
        };
        Ok(ErrorMsg {
            code: ErrorCode::from_wire(version, ty, code, experimenter),
            data: Bytes::from(r.rest()),
        })
    }

    pub(crate) fn encode(&self, version: u8, out: &mut Vec<u8>) {
        let (ty, code) = self.code.to_wire(version);
        out.put_u16(ty);
        out.put_u16(code);
        if let ErrorCode::Experimenter { experimenter, .. } = self.code {
            if version != crate::OFP10_VERSION {
                out.put_u32(experimenter);
            }
        }
        out.put_slice(&self.data.0);
    }

    /// The error answering a failed decode: code from the error, and the
    /// first 64 bytes of the offending message as data, as the specs require.
    pub fn for_decode_error(e: &DecodeError, offending: &[u8]) -> ErrorMsg {
        ErrorMsg {
            code: e.code,
            data: Bytes::from(&offending[..offending.len().min(64)]),
        }
    }
}

/// `ofp_switch_config` (GET_CONFIG_REPLY, SET_CONFIG).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SwitchConfig {
    /// OFPC_FRAG_* bits.
    pub flags: u16,
    pub miss_send_len: u16,
}

impl SwitchConfig {
    pub(crate) fn decode(r: &mut Reader) -> Result<SwitchConfig, DecodeError> {
        let c = SwitchConfig {
            flags: r.u16()?,
            miss_send_len: r.u16()?,
        };
        r.finish()?;
        Ok(c)
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.flags);
        out.put_u16(self.miss_send_len);
    }
}

wire_enum! {
    /// `ofp_packet_in_reason` (INVALID_TTL is 1.3 only).
    pub enum PacketInReason: u8 {
        NoMatch = 0 => "NO_MATCH",
        Action = 1 => "ACTION",
        InvalidTtl = 2 => "INVALID_TTL",
    }
}

wire_enum! {
    /// `ofp_flow_removed_reason` (GROUP_DELETE is 1.3 only).
    pub enum FlowRemovedReason: u8 {
        IdleTimeout = 0 => "IDLE_TIMEOUT",
        HardTimeout = 1 => "HARD_TIMEOUT",
        Delete = 2 => "DELETE",
        GroupDelete = 3 => "GROUP_DELETE",
    }
}

wire_enum! {
    /// `ofp_port_reason`.
    pub enum PortReason: u8 {
        Add = 0 => "ADD",
        Delete = 1 => "DELETE",
        Modify = 2 => "MODIFY",
    }
}

/// `ofp_desc_stats` / `ofp_desc` (identical in 1.0 and 1.3).
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct DescStats {
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
}

impl DescStats {
    pub const LEN: usize = 1056;
    pub(crate) fn decode(r: &mut Reader) -> Result<DescStats, DecodeError> {
        let d = DescStats {
            mfr_desc: r.fixed_str::<256>("mfr_desc")?,
            hw_desc: r.fixed_str::<256>("hw_desc")?,
            sw_desc: r.fixed_str::<256>("sw_desc")?,
            serial_num: r.fixed_str::<32>("serial_num")?,
            dp_desc: r.fixed_str::<256>("dp_desc")?,
        };
        r.finish()?;
        Ok(d)
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_fixed_str(&self.mfr_desc, 256);
        out.put_fixed_str(&self.hw_desc, 256);
        out.put_fixed_str(&self.sw_desc, 256);
        out.put_fixed_str(&self.serial_num, 32);
        out.put_fixed_str(&self.dp_desc, 256);
    }
}

/// `ofp_aggregate_stats_reply` (identical in 1.0 and 1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct AggregateStats {
    pub packet_count: u64,
    pub byte_count: u64,
    pub flow_count: u32,
}

impl AggregateStats {
    pub(crate) fn decode(r: &mut Reader) -> Result<AggregateStats, DecodeError> {
        let a = AggregateStats {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
            flow_count: r.u32()?,
        };
        r.pad(4)?;
        r.finish()?;
        Ok(a)
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.flow_count);
        out.put_zeros(4);
    }
}

/// The twelve per-port counters of port statistics (same order in 1.0 and 1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
}

impl PortCounters {
    pub(crate) fn decode(r: &mut Reader) -> Result<PortCounters, DecodeError> {
        Ok(PortCounters {
            rx_packets: r.u64()?,
            tx_packets: r.u64()?,
            rx_bytes: r.u64()?,
            tx_bytes: r.u64()?,
            rx_dropped: r.u64()?,
            tx_dropped: r.u64()?,
            rx_errors: r.u64()?,
            tx_errors: r.u64()?,
            rx_frame_err: r.u64()?,
            rx_over_err: r.u64()?,
            rx_crc_err: r.u64()?,
            collisions: r.u64()?,
        })
    }
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ] {
            out.put_u64(v);
        }
    }
}

/// A queue property (`ofp_queue_prop_*`); the 8-byte property header is the
/// same in 1.0 and 1.3.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum QueueProp {
    /// OFPQT_NONE (1.0 only): a property with no body.
    None_,
    /// OFPQT_MIN_RATE, in 1/10 of a percent.
    MinRate(u16),
    /// OFPQT_MAX_RATE (1.3), in 1/10 of a percent.
    MaxRate(u16),
    /// OFPQT_EXPERIMENTER (1.3).
    Experimenter { experimenter: u32, data: Bytes },
}

impl QueueProp {
    pub(crate) fn decode_list(r: &mut Reader, version: u8) -> Result<Vec<QueueProp>, DecodeError> {
        let mut props = Vec::new();
        while !r.is_empty() {
            let prop = r.u16()?;
            let len = r.u16()? as usize;
            if len < 8 {
                return Err(r.error(
                    crate::error::ErrorCode::BadRequest(crate::error::BadRequestCode::BadLen),
                    format_args!("queue property length {len} is below 8"),
                ));
            }
            r.pad(4)?;
            let mut p = r.sub(len - 8, "queue property")?;
            let expect_rate = |p: &mut Reader| -> Result<u16, DecodeError> {
                let rate = p.u16()?;
                p.pad(6)?;
                p.finish()?;
                Ok(rate)
            };
            props.push(match prop {
                0 if version == crate::OFP10_VERSION => {
                    p.finish()?;
                    QueueProp::None_
                }
                1 => QueueProp::MinRate(expect_rate(&mut p)?),
                2 if version != crate::OFP10_VERSION => QueueProp::MaxRate(expect_rate(&mut p)?),
                0xffff if version != crate::OFP10_VERSION => {
                    let experimenter = p.u32()?;
                    p.pad(4)?;
                    QueueProp::Experimenter {
                        experimenter,
                        data: Bytes::from(p.rest()),
                    }
                }
                other => {
                    return Err(p.error(
                        crate::error::ErrorCode::QueueOpFailed(crate::error::QueueOpFailedCode::BadQueue),
                        format_args!("unknown queue property type {other}"),
                    ))
                }
            });
        }
        Ok(props)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let ty: u16 = match self {
            QueueProp::None_ => 0,
            QueueProp::MinRate(_) => 1,
            QueueProp::MaxRate(_) => 2,
            QueueProp::Experimenter { .. } => 0xffff,
        };
        out.put_u16(ty);
        out.put_u16(0);
        out.put_zeros(4);
        match self {
            QueueProp::None_ => {}
            QueueProp::MinRate(rate) | QueueProp::MaxRate(rate) => {
                out.put_u16(*rate);
                out.put_zeros(6);
            }
            QueueProp::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_zeros(4);
                out.put_slice(&data.0);
            }
        }
        let len = (out.len() - start) as u16;
        out.patch_u16(start + 2, len);
    }
}

/// A multipart (1.3) or stats (1.0) reply's bodies cut to fit messages:
/// `body` as is when its message (`size`, OpenFlow header included) is at
/// most `max` bytes, else its list halved (`halves`) and each half cut the
/// same way, in order. An entry too large alone stays alone. Returns the
/// bodies and whether each is followed by another (REPLY_MORE).
pub(crate) fn cut_to_fit<B>(
    body: B,
    max: usize,
    size: &dyn Fn(&B) -> usize,
    halves: &dyn Fn(B) -> Result<(B, B), B>,
) -> Vec<(B, bool)> {
    fn parts<B>(
        body: B,
        max: usize,
        size: &dyn Fn(&B) -> usize,
        halves: &dyn Fn(B) -> Result<(B, B), B>,
        out: &mut Vec<B>,
    ) {
        if size(&body) <= max {
            return out.push(body);
        }
        match halves(body) {
            Ok((a, b)) => {
                parts(a, max, size, halves, out);
                parts(b, max, size, halves, out);
            }
            Err(whole) => out.push(whole),
        }
    }
    let mut out = Vec::new();
    parts(body, max, size, halves, &mut out);
    let n = out.len();
    out.into_iter().enumerate().map(|(i, b)| (b, i + 1 < n)).collect()
}

/// A list body in two (the first half of its entries, then the rest), for
/// `cut_to_fit`; the body back when it is not a list or has one entry.
macro_rules! halve_lists {
    ($body:expr, $($variant:path),+) => {
        match $body {
            $($variant(l) if l.len() >= 2 => {
                let mut a = l;
                let b = a.split_off(a.len() / 2);
                Ok(($variant(a), $variant(b)))
            })+
            other => Err(other),
        }
    };
}
pub(crate) use halve_lists;
