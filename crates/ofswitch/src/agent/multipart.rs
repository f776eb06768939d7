//! The agent's OpenFlow 1.3 multipart requests: descriptions, statistics
//! and table features, each answered from the pipeline (long replies in
//! parts).

use super::*;

impl Agent {
    pub(super) fn multipart(
        &mut self,
        conn: usize,
        m: &Message,
        req: &v13::MultipartRequest,
        now: Instant,
        fx: &mut Effects,
    ) {
        let bodies = {
            let p = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
            replies(&p, &self.id.desc, &req.body, now)
        };
        let bodies = match bodies {
            Ok(b) => b,
            Err(code) => return fx.messages.push((conn, error_for(m, code))),
        };
        // Every reply under the 16-bit message length: each body cut into
        // parts as needed, REPLY_MORE on all parts but the very last.
        let parts: Vec<v13::MultipartReply> = bodies
            .into_iter()
            .flat_map(|body| v13::MultipartReply { flags: 0, body }.split(MAX_REPLY_BYTES))
            .collect();
        let n = parts.len();
        for (i, mut part) in parts.into_iter().enumerate() {
            part.flags = if i + 1 < n { v13::MULTIPART_MORE } else { 0 };
            fx.messages.push((conn, reply(m, B::MultipartReply(part))));
        }
    }
}

/// The time from `t` to `now`, as statistics replies give it.
fn since(now: Instant, t: Instant) -> (u32, u32) {
    let d = now.saturating_duration_since(t);
    (d.as_secs() as u32, d.subsec_nanos())
}

/// The reply bodies to a multipart request, from the pipeline as it is;
/// or the error the request gets.
fn replies(p: &Pipeline, desc: &DescStats, req: &Q, now: Instant) -> Result<Vec<R>, ErrorCode> {
    let one = match req {
        Q::Desc => R::Desc(desc.clone()),
        Q::Flow(f) => return flow_stats(p, f, now),
        Q::Aggregate(f) => R::Aggregate(aggregate(p, f)?),
        Q::Table => R::Table(
            p.tables
                .iter()
                .enumerate()
                .map(|(i, t)| v13::TableStats {
                    table_id: i as u8,
                    active_count: t.rules.len() as u32,
                    lookup_count: t.lookups.get().packet_count,
                    matched_count: t.matched.get().packet_count,
                })
                .collect(),
        ),
        Q::PortStats { port_no } => R::PortStats(port_stats(p, *port_no, now)?),
        Q::Queue { .. } => R::Queue(Vec::new()),
        Q::Group { group_id } => R::Group(group_stats(p, *group_id, now)),
        Q::GroupDesc => {
            let mut groups: Vec<_> = p.groups.values().collect();
            groups.sort_by_key(|g| g.id);
            R::GroupDesc(
                groups
                    .into_iter()
                    .map(|g| v13::GroupDesc {
                        group_type: g.kind,
                        group_id: g.id,
                        buckets: g.buckets.clone(),
                    })
                    .collect(),
            )
        }
        Q::GroupFeatures => R::GroupFeatures(v13::GroupFeatures {
            types: 0b1111,
            // SELECT_WEIGHT | SELECT_LIVENESS | CHAINING | CHAINING_CHECKS
            // (loops refused at GROUP_MOD; chains up to
            // pipeline::MAX_GROUP_CHAIN groups, a depth this reply has
            // no field for: the README states it)
            capabilities: 1 | 2 | 4 | 8,
            max_groups: [65535; 4],
            // OUTPUT, PUSH/POP_VLAN, SET_NW_TTL, DEC_NW_TTL, SET_QUEUE, GROUP, SET_FIELD
            actions: [
                (1 << 0) | (1 << 17) | (1 << 18) | (1 << 23) | (1 << 24) | (1 << 21) | (1 << 22) | (1 << 25),
                0,
                0,
                0,
            ]
            .map(|a| a | (1 << 0)),
        }),
        Q::Meter { meter_id } => R::Meter(meter_stats(p, *meter_id, now)),
        Q::MeterConfig { meter_id } => R::MeterConfig(
            meters(p, *meter_id)
                .into_iter()
                .map(|x| v13::MeterConfig {
                    flags: x.flags,
                    meter_id: x.id,
                    bands: x.bands.clone(),
                })
                .collect(),
        ),
        Q::MeterFeatures => R::MeterFeatures(v13::MeterFeatures {
            max_meter: 65535,
            // DROP and DSCP_REMARK
            band_types: (1 << 1) | (1 << 2),
            // KBPS | PKTPS | BURST | STATS
            capabilities: 0b1111,
            max_bands: 8,
            max_color: 0,
        }),
        Q::TableFeatures(set) if !set.is_empty() => {
            return Err(ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::Eperm))
        }
        Q::TableFeatures(_) => R::TableFeatures(table_features(p)),
        Q::PortDesc => R::PortDesc(p.ports.values().map(|q| q.desc()).collect()),
        Q::Experimenter { .. } => return Err(ErrorCode::BadRequest(BadRequestCode::BadExperimenter)),
    };
    Ok(vec![one])
}

/// The rules a flow or aggregate statistics request selects.
fn selected<'p>(
    p: &'p Pipeline,
    f: &'p v13::FlowStatsRequest,
) -> Result<impl Iterator<Item = &'p Arc<crate::flow::Rule>> + 'p, ErrorCode> {
    p.check_table(f.table_id)?;
    let (value, mask) = crate::matching::keys_of(&f.match_)?;
    Ok(p.tables
        .iter()
        .enumerate()
        .filter(|(i, _)| f.table_id == v13::TABLE_ALL || *i == f.table_id as usize)
        .flat_map(|(_, t)| t.rules.iter())
        .filter(move |r| {
            r.within(&value, &mask)
                && r.cookie & f.cookie_mask == f.cookie & f.cookie_mask
                && r.program.outputs_to(f.out_port, f.out_group)
        }))
}

fn aggregate(p: &Pipeline, f: &v13::FlowStatsRequest) -> Result<ofwire::AggregateStats, ErrorCode> {
    let mut a = ofwire::AggregateStats::default();
    for r in selected(p, f)? {
        a.packet_count += r.packets();
        a.byte_count += r.bytes();
        a.flow_count += 1;
    }
    Ok(a)
}

/// Flow statistics, in as many bodies as keep each reply under the
/// message length.
fn flow_stats(p: &Pipeline, f: &v13::FlowStatsRequest, now: Instant) -> Result<Vec<R>, ErrorCode> {
    let mut bodies = Vec::new();
    let mut chunk = Vec::new();
    let mut size = 0;
    let mut scratch = Vec::new();
    for r in selected(p, f)? {
        scratch.clear();
        v13::encode_instructions(&r.instructions, &mut scratch);
        let len = 56 + r.match_.wire_len() + scratch.len();
        if size + len > MAX_REPLY_BYTES && !chunk.is_empty() {
            bodies.push(R::Flow(std::mem::take(&mut chunk)));
            size = 0;
        }
        size += len;
        let (duration_sec, duration_nsec) = since(now, r.created);
        chunk.push(v13::FlowStats {
            table_id: r.table_id,
            duration_sec,
            duration_nsec,
            priority: r.priority,
            idle_timeout: r.idle_timeout,
            hard_timeout: r.hard_timeout,
            flags: r.flags,
            cookie: r.cookie,
            packet_count: r.packets(),
            byte_count: r.bytes(),
            match_: r.match_.clone(),
            instructions: r.instructions.clone(),
        });
    }
    bodies.push(R::Flow(chunk));
    Ok(bodies)
}

fn port_stats(p: &Pipeline, port_no: u32, now: Instant) -> Result<Vec<v13::PortStats>, ErrorCode> {
    if port_no != v13::port::ANY && !p.ports.contains_key(&port_no) {
        return Err(ErrorCode::BadRequest(BadRequestCode::BadPort));
    }
    let (duration_sec, duration_nsec) = since(now, p.started);
    Ok(p.ports
        .values()
        .filter(|q| port_no == v13::port::ANY || q.port_no == port_no)
        .map(|q| v13::PortStats {
            port_no: q.port_no,
            counters: q.counters.snapshot(),
            duration_sec,
            duration_nsec,
        })
        .collect())
}

fn group_stats(p: &Pipeline, group_id: u32, now: Instant) -> Vec<v13::GroupStats> {
    let mut groups: Vec<_> = p
        .groups
        .values()
        .filter(|g| group_id == v13::GROUP_ALL || g.id == group_id)
        .collect();
    groups.sort_by_key(|g| g.id);
    groups
        .into_iter()
        .map(|g| {
            let c = g.counter.get();
            let (duration_sec, duration_nsec) = since(now, g.created);
            let ref_count = p
                .tables
                .iter()
                .map(|t| t.rules.iter().filter(|r| r.program.uses_group(g.id)).count())
                .sum::<usize>() as u32;
            v13::GroupStats {
                group_id: g.id,
                ref_count,
                packet_count: c.packet_count,
                byte_count: c.byte_count,
                duration_sec,
                duration_nsec,
                bucket_stats: g.bucket_counters.iter().map(|b| b.get()).collect(),
            }
        })
        .collect()
}

/// The meters a request names (all of them for 0xffffffff), by id.
fn meters(p: &Pipeline, meter_id: u32) -> Vec<&Arc<crate::flow::Meter>> {
    let mut meters: Vec<_> = p
        .meters
        .values()
        .filter(|x| meter_id == 0xffff_ffff || x.id == meter_id)
        .collect();
    meters.sort_by_key(|x| x.id);
    meters
}

fn meter_stats(p: &Pipeline, meter_id: u32, now: Instant) -> Vec<v13::MeterStats> {
    meters(p, meter_id)
        .into_iter()
        .map(|x| {
            let c = x.counter.get();
            let (duration_sec, duration_nsec) = since(now, x.created);
            v13::MeterStats {
                meter_id: x.id,
                flow_count: p
                    .tables
                    .iter()
                    .map(|t| t.rules.iter().filter(|r| r.program.meter == Some(x.id)).count())
                    .sum::<usize>() as u32,
                packet_in_count: c.packet_count,
                byte_in_count: c.byte_count,
                duration_sec,
                duration_nsec,
                band_stats: x.band_counters.iter().map(|b| b.get()).collect(),
            }
        })
        .collect()
}

pub(super) fn table_features(p: &Pipeline) -> Vec<v13::TableFeatures> {
    use v13::{OxmId, TableFeatureProp as P, TypeId};
    let n = p.tables.len();
    let fields: Vec<OxmId> = (0..40u8)
        .filter(|&f| crate::matching::supported(f))
        .map(|f| OxmId {
            header: ofwire::oxm::oxm_header(
                ofwire::oxm::OFPXMC_OPENFLOW_BASIC,
                f,
                false,
                ofwire::oxm::field::WIDTH[f as usize],
            ),
            experimenter: None,
        })
        .collect();
    let ids = |v: &[u16]| -> Vec<TypeId> {
        v.iter()
            .map(|&t| TypeId {
                id_type: t,
                data: Bytes(Vec::new()),
            })
            .collect()
    };
    let instructions = ids(&[1, 2, 3, 4, 5, 6]);
    let acts = ids(&[0, 17, 18, 22, 21, 23, 24, 25]);
    (0..n)
        .map(|t| {
            let next: Vec<u8> = ((t + 1)..n).map(|x| x as u8).collect();
            v13::TableFeatures {
                table_id: t as u8,
                name: format!("table{t}"),
                metadata_match: u64::MAX,
                metadata_write: u64::MAX,
                config: 0,
                max_entries: p.max_rules as u32,
                properties: vec![
                    P::Instructions(instructions.clone()),
                    P::NextTables(next),
                    P::WriteActions(acts.clone()),
                    P::ApplyActions(acts.clone()),
                    P::Match(fields.clone()),
                    P::Wildcards(fields.clone()),
                    P::WriteSetfield(fields.clone()),
                    P::ApplySetfield(fields.clone()),
                ],
            }
        })
        .collect()
}
