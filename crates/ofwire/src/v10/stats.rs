//! OpenFlow 1.0's statistics requests and replies: each body's structure,
//! decode and encode.

use super::*;

/// Body of OFPST_FLOW and OFPST_AGGREGATE requests.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStatsRequest {
    pub match_: Match,
    /// 0xff for all tables.
    pub table_id: u8,
    pub out_port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StatsRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    Port {
        port_no: u16,
    },
    Queue {
        port_no: u16,
        queue_id: u32,
    },
    /// Open vSwitch's extension: stats type 13 (OFPMP_PORT_DESC of 1.3,
    /// carried in 1.0), no body; `ovs-ofctl dump-ports-desc` and OVS itself
    /// send it on a 1.0 connection.
    PortDesc,
    Vendor {
        vendor: u32,
        data: Bytes,
    },
}

/// Open vSwitch's OpenFlow 1.0 port description stats type (its extension).
pub const STATS_PORT_DESC: u16 = 13;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StatsRequest {
    pub flags: u16,
    pub body: StatsRequestBody,
}

/// `ofp_flow_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStats {
    pub table_id: u8,
    pub match_: Match,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub actions: Vec<Action>,
}

/// `ofp_table_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    pub table_id: u8,
    pub name: String,
    pub wildcards: u32,
    pub max_entries: u32,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

/// `ofp_port_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub port_no: u16,
    pub counters: PortCounters,
}

/// `ofp_queue_stats`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub port_no: u16,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StatsReplyBody {
    Desc(DescStats),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    Port(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    /// Open vSwitch's extension (stats type 13): every port, as in FEATURES_REPLY.
    PortDesc(Vec<PhyPort>),
    Vendor {
        vendor: u32,
        data: Bytes,
    },
}

/// OFPSF_REPLY_MORE.
pub const STATS_REPLY_MORE: u16 = 1;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StatsReply {
    pub flags: u16,
    pub body: StatsReplyBody,
}

impl StatsReply {
    /// The reply cut into parts whose encoded message is at most
    /// `max_message` bytes, in order, OFPSF_REPLY_MORE on all but the last
    /// (which keeps this reply's flag): as `v13::MultipartReply::split`.
    pub fn split(self, max_message: usize) -> Vec<StatsReply> {
        let size = |body: &StatsReplyBody| {
            let mut buf = Vec::new();
            encode_stats_reply_body(body, &mut buf);
            // The OpenFlow header, the type and the flags.
            buf.len() + 12
        };
        let halves = |b: StatsReplyBody| {
            use StatsReplyBody::*;
            crate::common::halve_lists!(b, Flow, Table, Port, Queue, PortDesc)
        };
        crate::common::cut_to_fit(self.body, max_message, &size, &halves)
            .into_iter()
            .map(|(body, more)| StatsReply {
                flags: if more {
                    self.flags | STATS_REPLY_MORE
                } else {
                    self.flags
                },
                body,
            })
            .collect()
    }
}

pub(super) fn decode_flow_stats(r: &mut Reader) -> Result<FlowStats, DecodeError> {
    let len = r.clone().u16()? as usize;
    if len < 88 {
        return Err(r.error(bad_len(), format_args!("flow stats entry length {len} is below 88")));
    }
    let mut e = r.sub(len, "flow stats entry")?;
    e.u16()?;
    let table_id = e.u8()?;
    e.pad(1)?;
    let match_ = Match::decode(&mut e)?;
    let duration_sec = e.u32()?;
    let duration_nsec = e.u32()?;
    let priority = e.u16()?;
    let idle_timeout = e.u16()?;
    let hard_timeout = e.u16()?;
    e.pad(6)?;
    let cookie = e.u64()?;
    let packet_count = e.u64()?;
    let byte_count = e.u64()?;
    let mut ar = e.sub_with(
        e.remaining(),
        ErrorCode::BadAction(BadActionCode::BadLen),
        "flow stats actions",
    )?;
    Ok(FlowStats {
        table_id,
        match_,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        cookie,
        packet_count,
        byte_count,
        actions: Action::decode_list(&mut ar)?,
    })
}

/// The body of a stats reply (after its type and flags).
pub(super) fn encode_stats_reply_body(body: &StatsReplyBody, out: &mut Vec<u8>) {
    match body {
        StatsReplyBody::Desc(d) => d.encode(out),
        StatsReplyBody::Flow(v) => {
            for f in v {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(f.table_id);
                out.put_u8(0);
                f.match_.encode(out);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.priority);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_zeros(6);
                out.put_u64(f.cookie);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                encode_actions(&f.actions, out);
                let len = (out.len() - start) as u16;
                out.patch_u16(start, len);
            }
        }
        StatsReplyBody::Aggregate(a) => a.encode(out),
        StatsReplyBody::Table(v) => {
            for t in v {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_fixed_str(&t.name, 32);
                out.put_u32(t.wildcards);
                out.put_u32(t.max_entries);
                out.put_u32(t.active_count);
                out.put_u64(t.lookup_count);
                out.put_u64(t.matched_count);
            }
        }
        StatsReplyBody::Port(v) => {
            for p in v {
                out.put_u16(p.port_no);
                out.put_zeros(6);
                p.counters.encode(out);
            }
        }
        StatsReplyBody::Queue(v) => {
            for q in v {
                out.put_u16(q.port_no);
                out.put_zeros(2);
                out.put_u32(q.queue_id);
                out.put_u64(q.tx_bytes);
                out.put_u64(q.tx_packets);
                out.put_u64(q.tx_errors);
            }
        }
        StatsReplyBody::PortDesc(v) => {
            for p in v {
                p.encode(out);
            }
        }
        StatsReplyBody::Vendor { vendor, data } => {
            out.put_u32(*vendor);
            out.put_slice(&data.0);
        }
    }
}

impl StatsRequest {
    pub(super) fn decode(r: &mut Reader) -> Result<StatsRequest, DecodeError> {
        let ty = r.u16()?;
        let flags = r.u16()?;
        let body = match ty {
            0 => StatsRequestBody::Desc,
            1 | 2 => {
                let f = FlowStatsRequest {
                    match_: Match::decode(r)?,
                    table_id: r.u8()?,
                    out_port: {
                        r.pad(1)?;
                        r.u16()?
                    },
                };
                if ty == 1 {
                    StatsRequestBody::Flow(f)
                } else {
                    StatsRequestBody::Aggregate(f)
                }
            }
            3 => StatsRequestBody::Table,
            4 => {
                let port_no = r.u16()?;
                r.pad(6)?;
                StatsRequestBody::Port { port_no }
            }
            5 => {
                let port_no = r.u16()?;
                r.pad(2)?;
                StatsRequestBody::Queue {
                    port_no,
                    queue_id: r.u32()?,
                }
            }
            STATS_PORT_DESC => StatsRequestBody::PortDesc,
            0xffff => StatsRequestBody::Vendor {
                vendor: r.u32()?,
                data: Bytes::from(r.rest()),
            },
            other => {
                return Err(r.error(
                    ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                    format_args!("unknown stats type {other}"),
                ))
            }
        };
        Ok(StatsRequest { flags, body })
    }
}

impl StatsReply {
    pub(super) fn decode(r: &mut Reader) -> Result<StatsReply, DecodeError> {
        let ty = r.u16()?;
        let flags = r.u16()?;
        let body = match ty {
            0 => StatsReplyBody::Desc(DescStats::decode(r)?),
            1 => StatsReplyBody::Flow(r.until_empty(decode_flow_stats)?),
            2 => StatsReplyBody::Aggregate(AggregateStats::decode(r)?),
            3 => StatsReplyBody::Table(fixed_list(r, 64, |r| {
                let table_id = r.u8()?;
                r.pad(3)?;
                Ok(TableStats {
                    table_id,
                    name: r.fixed_str::<32>("table name")?,
                    wildcards: r.u32()?,
                    max_entries: r.u32()?,
                    active_count: r.u32()?,
                    lookup_count: r.u64()?,
                    matched_count: r.u64()?,
                })
            })?),
            4 => StatsReplyBody::Port(fixed_list(r, 104, |r| {
                let port_no = r.u16()?;
                r.pad(6)?;
                Ok(PortStats {
                    port_no,
                    counters: PortCounters::decode(r)?,
                })
            })?),
            5 => StatsReplyBody::Queue(fixed_list(r, 32, |r| {
                let port_no = r.u16()?;
                r.pad(2)?;
                Ok(QueueStats {
                    port_no,
                    queue_id: r.u32()?,
                    tx_bytes: r.u64()?,
                    tx_packets: r.u64()?,
                    tx_errors: r.u64()?,
                })
            })?),
            STATS_PORT_DESC => StatsReplyBody::PortDesc(fixed_list(r, 48, PhyPort::decode)?),
            0xffff => StatsReplyBody::Vendor {
                vendor: r.u32()?,
                data: Bytes::from(r.rest()),
            },
            other => {
                return Err(r.error(
                    ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                    format_args!("unknown stats type {other}"),
                ))
            }
        };
        Ok(StatsReply { flags, body })
    }
}
