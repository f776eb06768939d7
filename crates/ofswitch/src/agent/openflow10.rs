//! The agent's OpenFlow 1.0 side: each 1.0 message, and the 1.0
//! statistics requests, answered from the one pipeline.

use super::*;

impl Agent {
    /// A message from an OpenFlow 1.0 connection: translated onto the same
    /// pipeline (table 0), answered in 1.0.
    pub(super) fn on_message10(&mut self, conn: usize, m: &Message, body: &B10, now: Instant, fx: &mut Effects) {
        let answer = |fx: &mut Effects, b: B10| fx.messages.push((conn, Message::v10(m.xid, b)));
        let fail = |fx: &mut Effects, code: ErrorCode| {
            let mut data = m.to_bytes().unwrap_or_default();
            data.truncate(64);
            fx.messages.push((
                conn,
                Message::v10(
                    m.xid,
                    B10::Error(ErrorMsg {
                        code: of10::error_out(code),
                        data: Bytes(data),
                    }),
                ),
            ));
        };
        match body {
            B10::EchoRequest(d) => answer(fx, B10::EchoReply(d.clone())),
            B10::EchoReply(_) | B10::Error(_) => {}
            B10::FeaturesRequest => {
                let p = self.read();
                let reply = v10::FeaturesReply {
                    datapath_id: self.id.datapath_id,
                    n_buffers: Buffers::N,
                    n_tables: 1,
                    capabilities: 1 | 2 | 4,
                    // OUTPUT .. SET_TP_DST, ENQUEUE
                    actions: 0xfff,
                    ports: p.ports.values().map(|q| of10::port_desc_out(&q.desc())).collect(),
                };
                drop(p);
                answer(fx, B10::FeaturesReply(reply))
            }
            B10::GetConfigRequest => {
                let p = self.read();
                let c = SwitchConfig {
                    flags: p.config_flags,
                    miss_send_len: p.miss_send_len,
                };
                drop(p);
                answer(fx, B10::GetConfigReply(c))
            }
            B10::SetConfig(c) => self.set_config(c),
            B10::BarrierRequest => answer(fx, B10::BarrierReply),
            B10::FlowMod(fm10) => {
                let fm = match of10::flow_mod_in(fm10) {
                    Ok(f) => f,
                    Err(code) => return fail(fx, code),
                };
                let result = self.write().flow_mod_v10(&fm, now);
                match result {
                    Ok(removed) => {
                        self.flow_removed(&removed, fx);
                        if fm.buffer_id != v13::NO_BUFFER
                            && !matches!(
                                fm.command,
                                v13::FlowModCommand::Delete | v13::FlowModCommand::DeleteStrict
                            )
                        {
                            if let Err(code) = self.release_buffered(fm.buffer_id, now, fx) {
                                fail(fx, code);
                            }
                        }
                    }
                    Err(code) => fail(fx, code),
                }
            }
            B10::PacketOut(po) => {
                let po13 = match of10::actions_in(&po.actions) {
                    Ok(actions) => v13::PacketOut {
                        buffer_id: po.buffer_id,
                        in_port: if po.in_port == v10::port::NONE {
                            v13::port::ANY
                        } else {
                            of10::port_in(po.in_port)
                        },
                        actions,
                        data: po.data.clone(),
                    },
                    Err(code) => return fail(fx, code),
                };
                if let Err(code) = self.packet_out(&po13, now, fx) {
                    fail(fx, code);
                }
            }
            B10::PortMod(pm) => {
                let pm13 = v13::PortMod {
                    port_no: of10::port_in(pm.port_no),
                    hw_addr: pm.hw_addr,
                    config: pm.config,
                    mask: pm.mask,
                    advertise: pm.advertise,
                };
                let result = self.write().port_mod(&pm13);
                match result {
                    Ok(Some(desc)) => self.port_status(ofwire::PortReason::Modify, desc, fx),
                    Ok(None) => {}
                    Err(code) => fail(fx, code),
                }
            }
            B10::StatsRequest(req) => self.stats10(conn, m, req, now, fx),
            B10::QueueGetConfigRequest { port } => answer(
                fx,
                B10::QueueGetConfigReply(v10::QueueGetConfigReply {
                    port: *port,
                    queues: Vec::new(),
                }),
            ),
            B10::Vendor { .. } => fail(fx, ErrorCode::BadRequest(BadRequestCode::BadExperimenter)),
            _ => fail(fx, ErrorCode::BadRequest(BadRequestCode::BadType)),
        }
    }

    pub(super) fn stats10(
        &mut self,
        conn: usize,
        m: &Message,
        req: &v10::StatsRequest,
        now: Instant,
        fx: &mut Effects,
    ) {
        use v10::{StatsReplyBody as R10, StatsRequestBody as Q10};
        let p = self.pipeline.read().unwrap_or_else(|e| e.into_inner());
        let since = |t: Instant| {
            let d = now.saturating_duration_since(t);
            (d.as_secs() as u32, d.subsec_nanos())
        };
        let mut bodies = Vec::new();
        match &req.body {
            Q10::Desc => bodies.push(R10::Desc(self.id.desc.clone())),
            Q10::Flow(f) | Q10::Aggregate(f) => {
                let m13 = of10::match_in(&f.match_);
                let (value, mask) = crate::matching::keys_of(&m13).unwrap_or_default();
                let out_port = if f.out_port == v10::port::NONE {
                    v13::port::ANY
                } else {
                    of10::port_in(f.out_port)
                };
                let selected = p.tables[0]
                    .rules
                    .iter()
                    .filter(|_| f.table_id == 0 || f.table_id == 0xff)
                    .filter(|r| r.within(&value, &mask) && r.program.outputs_to(out_port, v13::GROUP_ANY));
                if matches!(req.body, Q10::Aggregate(_)) {
                    let mut a = ofwire::AggregateStats::default();
                    for r in selected {
                        a.packet_count += r.packets();
                        a.byte_count += r.bytes();
                        a.flow_count += 1;
                    }
                    bodies.push(R10::Aggregate(a));
                } else {
                    let mut chunk = Vec::new();
                    let mut size = 0;
                    for r in selected {
                        let actions = of10::actions_out(&r.instructions);
                        let len = 88 + actions.len() * 16;
                        if size + len > MAX_REPLY_BYTES && !chunk.is_empty() {
                            bodies.push(R10::Flow(std::mem::take(&mut chunk)));
                            size = 0;
                        }
                        size += len;
                        let (duration_sec, duration_nsec) = since(r.created);
                        chunk.push(v10::FlowStats {
                            table_id: 0,
                            match_: of10::match_out(&r.match_),
                            duration_sec,
                            duration_nsec,
                            priority: r.priority,
                            idle_timeout: r.idle_timeout,
                            hard_timeout: r.hard_timeout,
                            cookie: r.cookie,
                            packet_count: r.packets(),
                            byte_count: r.bytes(),
                            actions,
                        });
                    }
                    bodies.push(R10::Flow(chunk));
                }
            }
            Q10::Table => {
                let t = &p.tables[0];
                bodies.push(R10::Table(vec![v10::TableStats {
                    table_id: 0,
                    name: "table0".into(),
                    wildcards: v10::wildcards::ALL,
                    max_entries: p.max_rules as u32,
                    active_count: t.rules.len() as u32,
                    lookup_count: t.lookups.get().packet_count,
                    matched_count: t.matched.get().packet_count,
                }]))
            }
            Q10::Port { port_no } => {
                let want = if *port_no == v10::port::NONE {
                    v13::port::ANY
                } else {
                    of10::port_in(*port_no)
                };
                bodies.push(R10::Port(
                    p.ports
                        .values()
                        .filter(|q| want == v13::port::ANY || q.port_no == want)
                        .map(|q| v10::PortStats {
                            port_no: of10::port_out(q.port_no),
                            counters: q.counters.snapshot(),
                        })
                        .collect(),
                ))
            }
            Q10::Queue { .. } => bodies.push(R10::Queue(Vec::new())),
            // Open vSwitch's 1.0 extension, as `ovs-ofctl dump-ports-desc` sends it.
            Q10::PortDesc => bodies.push(R10::PortDesc(
                p.ports.values().map(|q| of10::port_desc_out(&q.desc())).collect(),
            )),
            Q10::Vendor { .. } => {
                drop(p);
                let mut data = m.to_bytes().unwrap_or_default();
                data.truncate(64);
                return fx.messages.push((
                    conn,
                    Message::v10(
                        m.xid,
                        B10::Error(ErrorMsg {
                            code: ErrorCode::BadRequest(BadRequestCode::BadExperimenter),
                            data: Bytes(data),
                        }),
                    ),
                ));
            }
        }
        drop(p);
        let parts: Vec<v10::StatsReply> = bodies
            .into_iter()
            .flat_map(|body| v10::StatsReply { flags: 0, body }.split(MAX_REPLY_BYTES))
            .collect();
        let n = parts.len();
        for (i, mut part) in parts.into_iter().enumerate() {
            part.flags = if i + 1 < n { v10::STATS_REPLY_MORE } else { 0 };
            fx.messages.push((conn, Message::v10(m.xid, B10::StatsReply(part))));
        }
    }
}
