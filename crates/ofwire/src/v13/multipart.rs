//! OpenFlow 1.3's multipart (statistics) requests and replies: each body's
//! structure, decode and encode.

use super::*;

// -------------------------------------------------------------- multipart

/// Body of OFPMP_FLOW and OFPMP_AGGREGATE requests.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub match_: Match,
}

impl FlowStatsRequest {
    /// Every flow of every table: no port, group, cookie or match to narrow it.
    pub fn all() -> FlowStatsRequest {
        FlowStatsRequest {
            table_id: TABLE_ALL,
            out_port: port::ANY,
            out_group: GROUP_ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Match::default(),
        }
    }
}

/// `ofp_flow_stats` of 1.3.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    pub port_no: u32,
    pub counters: PortCounters,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// Packet and byte counters of a bucket or meter band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Counter {
    pub packet_count: u64,
    pub byte_count: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub bucket_stats: Vec<Counter>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupFeatures {
    pub types: u32,
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    pub actions: [u32; 4],
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub band_stats: Vec<Counter>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterConfig {
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MeterFeatures {
    pub max_meter: u32,
    pub band_types: u32,
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    PortStats {
        port_no: u32,
    },
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    Meter {
        meter_id: u32,
    },
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// Empty to query, or a full list to set the tables' features.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MultipartRequest {
    /// OFPMPF_REQ_MORE.
    pub flags: u16,
    pub body: MultipartRequestBody,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MultipartReplyBody {
    Desc(DescStats),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<Port>),
    Experimenter {
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MultipartReply {
    /// OFPMPF_REPLY_MORE.
    pub flags: u16,
    pub body: MultipartReplyBody,
}

impl MultipartRequestBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartRequestBody::*;
        match self {
            Desc => 0,
            Flow(_) => 1,
            Aggregate(_) => 2,
            Table => 3,
            PortStats { .. } => 4,
            Queue { .. } => 5,
            Group { .. } => 6,
            GroupDesc => 7,
            GroupFeatures => 8,
            Meter { .. } => 9,
            MeterConfig { .. } => 10,
            MeterFeatures => 11,
            TableFeatures(_) => 12,
            PortDesc => 13,
            Experimenter { .. } => 0xffff,
        }
    }
}

impl MultipartReplyBody {
    pub fn multipart_type(&self) -> u16 {
        use MultipartReplyBody::*;
        match self {
            Desc(_) => 0,
            Flow(_) => 1,
            Aggregate(_) => 2,
            Table(_) => 3,
            PortStats(_) => 4,
            Queue(_) => 5,
            Group(_) => 6,
            GroupDesc(_) => 7,
            GroupFeatures(_) => 8,
            Meter(_) => 9,
            MeterConfig(_) => 10,
            MeterFeatures(_) => 11,
            TableFeatures(_) => 12,
            PortDesc(_) => 13,
            Experimenter { .. } => 0xffff,
        }
    }

    /// A list body in two, for `MultipartReply::split`.
    pub(super) fn halves(self) -> Result<(MultipartReplyBody, MultipartReplyBody), MultipartReplyBody> {
        use MultipartReplyBody::*;
        crate::common::halve_lists!(
            self,
            Flow,
            Table,
            PortStats,
            Queue,
            Group,
            GroupDesc,
            Meter,
            MeterConfig,
            TableFeatures,
            PortDesc
        )
    }
}

impl MultipartReply {
    /// The reply cut into parts whose encoded message is at most
    /// `max_message` bytes (a message's length is 16 bits: at most 65,535),
    /// in order, with OFPMPF_REPLY_MORE on every part but the last (which
    /// keeps this reply's own flag). A list is halved until each part
    /// fits; an entry too large alone stays alone (and its encoding fails
    /// as it would have).
    pub fn split(self, max_message: usize) -> Vec<MultipartReply> {
        let size = |body: &MultipartReplyBody| {
            let mut buf = Vec::new();
            encode_multipart_reply_body(body, &mut buf);
            buf.len() + 16
        };
        crate::common::cut_to_fit(self.body, max_message, &size, &MultipartReplyBody::halves)
            .into_iter()
            .map(|(body, more)| MultipartReply {
                flags: if more { self.flags | MULTIPART_MORE } else { self.flags },
                body,
            })
            .collect()
    }
}

pub(super) fn unknown_multipart(r: &Reader, t: u16) -> DecodeError {
    r.error(
        ErrorCode::BadRequest(BadRequestCode::BadMultipart),
        format_args!("unknown multipart type {t}"),
    )
}

pub(super) fn decode_flow_stats_request(r: &mut Reader) -> Result<FlowStatsRequest, DecodeError> {
    let table_id = r.u8()?;
    r.pad(3)?;
    let out_port = r.u32()?;
    let out_group = r.u32()?;
    r.pad(4)?;
    Ok(FlowStatsRequest {
        table_id,
        out_port,
        out_group,
        cookie: r.u64()?,
        cookie_mask: r.u64()?,
        match_: Match::decode(r)?,
    })
}

pub(super) fn encode_flow_stats_request(f: &FlowStatsRequest, out: &mut Vec<u8>) {
    out.put_u8(f.table_id);
    out.put_zeros(3);
    out.put_u32(f.out_port);
    out.put_u32(f.out_group);
    out.put_zeros(4);
    out.put_u64(f.cookie);
    out.put_u64(f.cookie_mask);
    f.match_.encode(out);
}

pub(super) fn decode_multipart_request(r: &mut Reader) -> Result<MultipartRequest, DecodeError> {
    use MultipartRequestBody as B;
    let ty = r.u16()?;
    let flags = r.u16()?;
    r.pad(4)?;
    let id_and_pad = |r: &mut Reader| -> Result<u32, DecodeError> {
        let v = r.u32()?;
        r.pad(4)?;
        Ok(v)
    };
    let body = match ty {
        0 => B::Desc,
        1 => B::Flow(decode_flow_stats_request(r)?),
        2 => B::Aggregate(decode_flow_stats_request(r)?),
        3 => B::Table,
        4 => B::PortStats {
            port_no: id_and_pad(r)?,
        },
        5 => B::Queue {
            port_no: r.u32()?,
            queue_id: r.u32()?,
        },
        6 => B::Group {
            group_id: id_and_pad(r)?,
        },
        7 => B::GroupDesc,
        8 => B::GroupFeatures,
        9 => B::Meter {
            meter_id: id_and_pad(r)?,
        },
        10 => B::MeterConfig {
            meter_id: id_and_pad(r)?,
        },
        11 => B::MeterFeatures,
        12 => B::TableFeatures(decode_table_features_list(r)?),
        13 => B::PortDesc,
        0xffff => B::Experimenter {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: Bytes::from(r.rest()),
        },
        other => return Err(unknown_multipart(r, other)),
    };
    Ok(MultipartRequest { flags, body })
}

pub(super) fn encode_multipart_request(m: &MultipartRequest, out: &mut Vec<u8>) {
    use MultipartRequestBody as B;
    out.put_u16(m.body.multipart_type());
    out.put_u16(m.flags);
    out.put_zeros(4);
    match &m.body {
        B::Desc | B::Table | B::GroupDesc | B::GroupFeatures | B::MeterFeatures | B::PortDesc => {}
        B::Flow(f) | B::Aggregate(f) => encode_flow_stats_request(f, out),
        B::PortStats { port_no: v }
        | B::Group { group_id: v }
        | B::Meter { meter_id: v }
        | B::MeterConfig { meter_id: v } => {
            out.put_u32(*v);
            out.put_zeros(4);
        }
        B::Queue { port_no, queue_id } => {
            out.put_u32(*port_no);
            out.put_u32(*queue_id);
        }
        B::TableFeatures(list) => encode_table_features_list(list, out),
        B::Experimenter {
            experimenter,
            exp_type,
            data,
        } => out.put_experimenter(*experimenter, *exp_type, &data.0),
    }
}

/// Decodes a list of entries that start with a u16 length of their own.
pub(super) fn length_prefixed_list<T>(
    r: &mut Reader,
    min: usize,
    at: usize,
    ctx: &'static str,
    mut f: impl FnMut(&mut Reader) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut out = Vec::new();
    while !r.is_empty() {
        let mut peek = r.clone();
        peek.bytes(at)?;
        let len = peek.u16()? as usize;
        if len < min {
            return Err(r.error(bad_len(), format_args!("{ctx} length {len} is below {min}")));
        }
        let mut e = r.sub(len, ctx)?;
        out.push(f(&mut e)?);
        e.finish()?;
    }
    Ok(out)
}

pub(super) fn counters(r: &mut Reader) -> Result<Vec<Counter>, DecodeError> {
    if !r.remaining().is_multiple_of(16) {
        return Err(r.error(
            bad_len(),
            format_args!("{} bytes of counters is not a multiple of 16", r.remaining()),
        ));
    }
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Counter {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
        });
    }
    Ok(v)
}

pub(super) fn encode_counters(list: &[Counter], out: &mut Vec<u8>) {
    for c in list {
        out.put_u64(c.packet_count);
        out.put_u64(c.byte_count);
    }
}

pub(super) fn decode_multipart_reply(r: &mut Reader) -> Result<MultipartReply, DecodeError> {
    use MultipartReplyBody as B;
    let ty = r.u16()?;
    let flags = r.u16()?;
    r.pad(4)?;
    let body = match ty {
        0 => B::Desc(DescStats::decode(r)?),
        1 => B::Flow(length_prefixed_list(r, 56, 0, "flow stats entry", flow_stats_entry)?),
        2 => B::Aggregate(AggregateStats::decode(r)?),
        3 => B::Table(fixed_list(r, 24, |e| {
            let table_id = e.u8()?;
            e.pad(3)?;
            Ok(TableStats {
                table_id,
                active_count: e.u32()?,
                lookup_count: e.u64()?,
                matched_count: e.u64()?,
            })
        })?),
        4 => B::PortStats(fixed_list(r, 112, |e| {
            let port_no = e.u32()?;
            e.pad(4)?;
            Ok(PortStats {
                port_no,
                counters: PortCounters::decode(e)?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
            })
        })?),
        5 => B::Queue(fixed_list(r, 40, |e| {
            Ok(QueueStats {
                port_no: e.u32()?,
                queue_id: e.u32()?,
                tx_bytes: e.u64()?,
                tx_packets: e.u64()?,
                tx_errors: e.u64()?,
                duration_sec: e.u32()?,
                duration_nsec: e.u32()?,
            })
        })?),
        6 => B::Group(length_prefixed_list(r, 40, 0, "group stats entry", group_stats_entry)?),
        7 => B::GroupDesc(length_prefixed_list(r, 8, 0, "group desc entry", |e| {
            e.u16()?;
            let group_type = e.u8()?.into();
            e.pad(1)?;
            let group_id = e.u32()?;
            Ok(GroupDesc {
                group_type,
                group_id,
                buckets: decode_buckets(e)?,
            })
        })?),
        8 => B::GroupFeatures(group_features(r)?),
        9 => B::Meter(length_prefixed_list(r, 40, 4, "meter stats entry", meter_stats_entry)?),
        10 => B::MeterConfig(length_prefixed_list(r, 8, 0, "meter config entry", |e| {
            e.u16()?;
            let flags = e.u16()?;
            let meter_id = e.u32()?;
            Ok(MeterConfig {
                flags,
                meter_id,
                bands: decode_bands(e)?,
            })
        })?),
        11 => B::MeterFeatures(meter_features(r)?),
        12 => B::TableFeatures(decode_table_features_list(r)?),
        13 => B::PortDesc(fixed_list(r, Port::LEN, Port::decode)?),
        0xffff => B::Experimenter {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: Bytes::from(r.rest()),
        },
        other => return Err(unknown_multipart(r, other)),
    };
    Ok(MultipartReply { flags, body })
}

/// One entry of a flow statistics reply.
fn flow_stats_entry(e: &mut Reader) -> Result<FlowStats, DecodeError> {
    e.u16()?;
    let table_id = e.u8()?;
    e.pad(1)?;
    let duration_sec = e.u32()?;
    let duration_nsec = e.u32()?;
    let priority = e.u16()?;
    let idle_timeout = e.u16()?;
    let hard_timeout = e.u16()?;
    let flags = e.u16()?;
    e.pad(4)?;
    let cookie = e.u64()?;
    let packet_count = e.u64()?;
    let byte_count = e.u64()?;
    let match_ = Match::decode(e)?;
    let mut ir = e.sub_with(
        e.remaining(),
        bad_inst(BadInstructionCode::BadLen),
        "flow stats instructions",
    )?;
    Ok(FlowStats {
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags,
        cookie,
        packet_count,
        byte_count,
        match_,
        instructions: Instruction::decode_list(&mut ir)?,
    })
}

/// One entry of a group statistics reply.
fn group_stats_entry(e: &mut Reader) -> Result<GroupStats, DecodeError> {
    e.u16()?;
    e.pad(2)?;
    let group_id = e.u32()?;
    let ref_count = e.u32()?;
    e.pad(4)?;
    Ok(GroupStats {
        group_id,
        ref_count,
        packet_count: e.u64()?,
        byte_count: e.u64()?,
        duration_sec: e.u32()?,
        duration_nsec: e.u32()?,
        bucket_stats: counters(e)?,
    })
}

/// One entry of a meter statistics reply.
fn meter_stats_entry(e: &mut Reader) -> Result<MeterStats, DecodeError> {
    let meter_id = e.u32()?;
    e.u16()?;
    e.pad(6)?;
    Ok(MeterStats {
        meter_id,
        flow_count: e.u32()?,
        packet_in_count: e.u64()?,
        byte_in_count: e.u64()?,
        duration_sec: e.u32()?,
        duration_nsec: e.u32()?,
        band_stats: counters(e)?,
    })
}

/// A group features reply.
fn group_features(r: &mut Reader) -> Result<GroupFeatures, DecodeError> {
    let types = r.u32()?;
    let capabilities = r.u32()?;
    let mut max_groups = [0u32; 4];
    for g in &mut max_groups {
        *g = r.u32()?;
    }
    let mut actions = [0u32; 4];
    for a in &mut actions {
        *a = r.u32()?;
    }
    Ok(GroupFeatures {
        types,
        capabilities,
        max_groups,
        actions,
    })
}

/// A meter features reply.
fn meter_features(r: &mut Reader) -> Result<MeterFeatures, DecodeError> {
    let f = MeterFeatures {
        max_meter: r.u32()?,
        band_types: r.u32()?,
        capabilities: r.u32()?,
        max_bands: r.u8()?,
        max_color: r.u8()?,
    };
    r.pad(2)?;
    Ok(f)
}

pub(super) fn patch_len_at(out: &mut Vec<u8>, start: usize, at: usize) {
    let len = (out.len() - start) as u16;
    out.patch_u16(start + at, len);
}

pub(super) fn encode_multipart_reply(m: &MultipartReply, out: &mut Vec<u8>) {
    out.put_u16(m.body.multipart_type());
    out.put_u16(m.flags);
    out.put_zeros(4);
    encode_multipart_reply_body(&m.body, out);
}

pub(super) fn encode_multipart_reply_body(body: &MultipartReplyBody, out: &mut Vec<u8>) {
    use MultipartReplyBody as B;
    match body {
        B::Desc(d) => d.encode(out),
        B::Flow(list) => {
            for f in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(f.table_id);
                out.put_u8(0);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.priority);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u16(f.flags);
                out.put_zeros(4);
                out.put_u64(f.cookie);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                f.match_.encode(out);
                encode_instructions(&f.instructions, out);
                patch_len_at(out, start, 0);
            }
        }
        B::Aggregate(a) => a.encode(out),
        B::Table(list) => {
            for t in list {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_u32(t.active_count);
                out.put_u64(t.lookup_count);
                out.put_u64(t.matched_count);
            }
        }
        B::PortStats(list) => {
            for p in list {
                out.put_u32(p.port_no);
                out.put_zeros(4);
                p.counters.encode(out);
                out.put_u32(p.duration_sec);
                out.put_u32(p.duration_nsec);
            }
        }
        B::Queue(list) => {
            for q in list {
                out.put_u32(q.port_no);
                out.put_u32(q.queue_id);
                out.put_u64(q.tx_bytes);
                out.put_u64(q.tx_packets);
                out.put_u64(q.tx_errors);
                out.put_u32(q.duration_sec);
                out.put_u32(q.duration_nsec);
            }
        }
        B::Group(list) => {
            for g in list {
                let start = out.len();
                out.put_u16(0);
                out.put_zeros(2);
                out.put_u32(g.group_id);
                out.put_u32(g.ref_count);
                out.put_zeros(4);
                out.put_u64(g.packet_count);
                out.put_u64(g.byte_count);
                out.put_u32(g.duration_sec);
                out.put_u32(g.duration_nsec);
                encode_counters(&g.bucket_stats, out);
                patch_len_at(out, start, 0);
            }
        }
        B::GroupDesc(list) => {
            for g in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u8(g.group_type.into());
                out.put_u8(0);
                out.put_u32(g.group_id);
                encode_buckets(&g.buckets, out);
                patch_len_at(out, start, 0);
            }
        }
        B::GroupFeatures(g) => {
            out.put_u32(g.types);
            out.put_u32(g.capabilities);
            for v in g.max_groups.iter().chain(g.actions.iter()) {
                out.put_u32(*v);
            }
        }
        B::Meter(list) => {
            for m in list {
                let start = out.len();
                out.put_u32(m.meter_id);
                out.put_u16(0);
                out.put_zeros(6);
                out.put_u32(m.flow_count);
                out.put_u64(m.packet_in_count);
                out.put_u64(m.byte_in_count);
                out.put_u32(m.duration_sec);
                out.put_u32(m.duration_nsec);
                encode_counters(&m.band_stats, out);
                patch_len_at(out, start, 4);
            }
        }
        B::MeterConfig(list) => {
            for m in list {
                let start = out.len();
                out.put_u16(0);
                out.put_u16(m.flags);
                out.put_u32(m.meter_id);
                encode_bands(&m.bands, out);
                patch_len_at(out, start, 0);
            }
        }
        B::MeterFeatures(f) => {
            out.put_u32(f.max_meter);
            out.put_u32(f.band_types);
            out.put_u32(f.capabilities);
            out.put_u8(f.max_bands);
            out.put_u8(f.max_color);
            out.put_zeros(2);
        }
        B::TableFeatures(list) => encode_table_features_list(list, out),
        B::PortDesc(list) => {
            for p in list {
                p.encode(out);
            }
        }
        B::Experimenter {
            experimenter,
            exp_type,
            data,
        } => out.put_experimenter(*experimenter, *exp_type, &data.0),
    }
}
