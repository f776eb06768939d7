//! Property tests: random valid messages round-trip byte-exact; random and
//! mutated bytes never panic the decoder, and whatever it accepts
//! re-encodes to exactly the bytes it was given.

use ofwire::oxm::{Match, Oxm};
use ofwire::{v10, v13, Bytes, MacAddr, Message};
use proptest::prelude::*;
use std::net::{Ipv4Addr, Ipv6Addr};

fn mac() -> impl Strategy<Value = MacAddr> {
    any::<[u8; 6]>().prop_map(MacAddr)
}

/// A value and a mask with no value bit outside the mask.
fn masked_u64(bits: u32) -> impl Strategy<Value = (u64, Option<u64>)> {
    let limit = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (any::<u64>(), proptest::option::of(any::<u64>())).prop_map(move |(v, m)| match m {
        Some(m) => (v & m & limit, Some(m & limit)),
        None => (v & limit, None),
    })
}

fn masked_mac() -> impl Strategy<Value = (MacAddr, Option<MacAddr>)> {
    (mac(), proptest::option::of(mac())).prop_map(|(v, m)| match m {
        Some(m) => {
            let mut vv = v.0;
            for (b, mask) in vv.iter_mut().zip(m.0) {
                *b &= mask;
            }
            (MacAddr(vv), Some(m))
        }
        None => (v, None),
    })
}

fn masked_v6() -> impl Strategy<Value = (Ipv6Addr, Option<Ipv6Addr>)> {
    (any::<u128>(), proptest::option::of(any::<u128>())).prop_map(|(v, m)| match m {
        Some(m) => (Ipv6Addr::from(v & m), Some(Ipv6Addr::from(m))),
        None => (Ipv6Addr::from(v), None),
    })
}

/// Any single OXM TLV the codec accepts on its own (no prerequisites).
fn oxm() -> impl Strategy<Value = Oxm> {
    let v4 = |(v, m): (u64, Option<u64>)| (Ipv4Addr::from(v as u32), m.map(|m| Ipv4Addr::from(m as u32)));
    prop_oneof![
        any::<u32>().prop_map(Oxm::InPort),
        masked_u64(64).prop_map(|(v, m)| Oxm::Metadata(v, m)),
        masked_mac().prop_map(|(v, m)| Oxm::EthDst(v, m)),
        masked_mac().prop_map(|(v, m)| Oxm::EthSrc(v, m)),
        any::<u16>().prop_map(Oxm::EthType),
        masked_u64(13).prop_map(|(v, m)| Oxm::VlanVid(v as u16, m.map(|m| m as u16))),
        masked_u64(32).prop_map(move |x| {
            let (v, m) = v4(x);
            Oxm::Ipv4Src(v, m)
        }),
        masked_u64(32).prop_map(move |x| {
            let (v, m) = v4(x);
            Oxm::ArpTpa(v, m)
        }),
        masked_mac().prop_map(|(v, m)| Oxm::ArpSha(v, m)),
        masked_v6().prop_map(|(v, m)| Oxm::Ipv6Dst(v, m)),
        masked_u64(20).prop_map(|(v, m)| Oxm::Ipv6Flabel(v as u32, m.map(|m| m as u32))),
        any::<u128>().prop_map(|v| Oxm::Ipv6NdTarget(Ipv6Addr::from(v))),
        mac().prop_map(Oxm::Ipv6NdTll),
        (0u32..=0xfffff).prop_map(Oxm::MplsLabel),
        (0u8..=7).prop_map(Oxm::MplsTc),
        (0u8..=1).prop_map(Oxm::MplsBos),
        masked_u64(24).prop_map(|(v, m)| Oxm::PbbIsid(v as u32, m.map(|m| m as u32))),
        masked_u64(64).prop_map(|(v, m)| Oxm::TunnelId(v, m)),
        masked_u64(9).prop_map(|(v, m)| Oxm::Ipv6Exthdr(v as u16, m.map(|m| m as u16))),
        (0u8..=63).prop_map(Oxm::IpDscp),
        any::<u16>().prop_map(Oxm::TcpDst),
        (any::<u8>(), any::<u32>(), proptest::collection::vec(any::<u8>(), 0..8)).prop_map(|(f, e, d)| {
            Oxm::Experimenter {
                field: f & 0x7f,
                has_mask: false,
                experimenter: e,
                data: Bytes(d),
            }
        }),
    ]
}

/// A match whose fields are all distinct and need no prerequisites.
fn match13() -> impl Strategy<Value = Match> {
    let standalone = prop_oneof![
        any::<u32>().prop_map(Oxm::InPort),
        masked_u64(64).prop_map(|(v, m)| Oxm::Metadata(v, m)),
        masked_mac().prop_map(|(v, m)| Oxm::EthDst(v, m)),
        masked_mac().prop_map(|(v, m)| Oxm::EthSrc(v, m)),
        any::<u16>().prop_map(Oxm::EthType),
        masked_u64(13).prop_map(|(v, m)| Oxm::VlanVid(v as u16, m.map(|m| m as u16))),
        masked_u64(64).prop_map(|(v, m)| Oxm::TunnelId(v, m)),
    ];
    proptest::collection::vec(standalone, 0..6).prop_map(|mut v| {
        let mut seen = std::collections::HashSet::new();
        v.retain(|o| seen.insert(o.field()));
        Match::new(v)
    })
}

fn action13() -> impl Strategy<Value = v13::Action> {
    use v13::Action::*;
    prop_oneof![
        (
            any::<u32>().prop_filter("valid port", |p| *p <= v13::port::MAX
                || *p >= v13::port::IN_PORT && *p != v13::port::ANY),
            any::<u16>()
        )
            .prop_map(|(port, max_len)| Output { port, max_len }),
        Just(CopyTtlOut),
        Just(PopVlan),
        any::<u8>().prop_map(SetNwTtl),
        prop_oneof![Just(0x8100u16), Just(0x88a8)].prop_map(PushVlan),
        any::<u16>().prop_map(PopMpls),
        any::<u32>().prop_map(SetQueue),
        any::<u32>().prop_map(Group),
        oxm()
            .prop_filter("set-field has no mask", |o| !o.has_mask())
            .prop_map(SetField),
        // Experimenter bodies keep the action a multiple of 8 bytes long.
        (any::<u32>(), proptest::collection::vec(any::<[u8; 8]>(), 0..3)).prop_map(|(experimenter, words)| {
            Experimenter {
                experimenter,
                data: Bytes(words.concat()),
            }
        }),
    ]
}

fn instruction13() -> impl Strategy<Value = v13::Instruction> {
    use v13::Instruction::*;
    prop_oneof![
        any::<u8>().prop_map(GotoTable),
        (any::<u64>(), any::<u64>()).prop_map(|(metadata, mask)| WriteMetadata { metadata, mask }),
        proptest::collection::vec(action13(), 0..4).prop_map(WriteActions),
        proptest::collection::vec(action13(), 0..4).prop_map(ApplyActions),
        Just(ClearActions),
        any::<u32>().prop_map(Meter),
    ]
}

fn flow_mod13() -> impl Strategy<Value = v13::Body> {
    (
        any::<(u64, u64, u8, u16, u16, u16, u32, u32, u32, u16)>(),
        0u8..=4,
        match13(),
        proptest::collection::vec(instruction13(), 0..4),
    )
        .prop_map(
            |((cookie, cookie_mask, table_id, idle, hard, prio, buf, op, og, flags), cmd, m, insts)| {
                v13::Body::FlowMod(v13::FlowMod {
                    cookie,
                    cookie_mask,
                    table_id,
                    command: cmd.into(),
                    idle_timeout: idle,
                    hard_timeout: hard,
                    priority: prio,
                    buffer_id: buf,
                    out_port: op,
                    out_group: og,
                    flags,
                    match_: m,
                    instructions: insts,
                })
            },
        )
}

fn action10() -> impl Strategy<Value = v10::Action> {
    use v10::Action::*;
    prop_oneof![
        (
            any::<u16>().prop_filter("valid port", |p| *p <= v10::port::MAX
                || (*p >= v10::port::IN_PORT && *p != v10::port::NONE)),
            any::<u16>()
        )
            .prop_map(|(port, max_len)| Output { port, max_len }),
        (0u16..=0xfff).prop_map(SetVlanVid),
        (0u8..=7).prop_map(SetVlanPcp),
        Just(StripVlan),
        mac().prop_map(SetDlSrc),
        any::<u32>().prop_map(|a| SetNwDst(a.into())),
        (0u8..64).prop_map(|d| SetNwTos(d << 2)),
        any::<u16>().prop_map(SetTpSrc),
        (any::<u16>(), any::<u32>()).prop_map(|(port, queue_id)| Enqueue { port, queue_id }),
    ]
}

fn match10() -> impl Strategy<Value = v10::Match> {
    (
        any::<(u32, u16, [u8; 6], [u8; 6], u16, u8, u16)>(),
        any::<(u8, u8, u32, u32, u16, u16)>(),
    )
        .prop_map(
            |((w, ip, s, d, vl, pcp, ty), (tos, proto, ns, nd, ts, td))| v10::Match {
                wildcards: w,
                in_port: ip,
                dl_src: MacAddr(s),
                dl_dst: MacAddr(d),
                dl_vlan: vl,
                dl_vlan_pcp: pcp,
                dl_type: ty,
                nw_tos: tos,
                nw_proto: proto,
                nw_src: ns.into(),
                nw_dst: nd.into(),
                tp_src: ts,
                tp_dst: td,
            },
        )
}

fn v10_body() -> impl Strategy<Value = v10::Body> {
    prop_oneof![
        (
            match10(),
            any::<(u64, u16, u16, u16, u32, u16, u16)>(),
            0u8..=4,
            proptest::collection::vec(action10(), 0..5)
        )
            .prop_map(
                |(m, (cookie, idle, hard, prio, buf, op, flags), cmd, actions)| v10::Body::FlowMod(v10::FlowMod {
                    match_: m,
                    cookie,
                    command: cmd.into(),
                    idle_timeout: idle,
                    hard_timeout: hard,
                    priority: prio,
                    buffer_id: buf,
                    out_port: op,
                    flags,
                    actions,
                })
            ),
        (
            any::<(u32, u16, u16, u8)>(),
            proptest::collection::vec(any::<u8>(), 0..200)
        )
            .prop_map(|((b, t, p, r), d)| v10::Body::PacketIn(v10::PacketIn {
                buffer_id: b,
                total_len: t,
                in_port: p,
                reason: r.into(),
                data: Bytes(d)
            })),
        (
            any::<(u32, u16)>(),
            proptest::collection::vec(action10(), 0..4),
            proptest::collection::vec(any::<u8>(), 0..100)
        )
            .prop_map(|((b, p), actions, d)| v10::Body::PacketOut(v10::PacketOut {
                buffer_id: b,
                in_port: p,
                actions,
                data: Bytes(d)
            })),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|d| v10::Body::EchoRequest(Bytes(d))),
    ]
}

fn v13_body() -> impl Strategy<Value = v13::Body> {
    prop_oneof![
        flow_mod13(),
        (
            any::<(u32, u16, u8, u8, u64)>(),
            match13(),
            proptest::collection::vec(any::<u8>(), 0..200)
        )
            .prop_map(|((b, t, r, tid, c), m, d)| {
                v13::Body::PacketIn(v13::PacketIn {
                    buffer_id: b,
                    total_len: t,
                    reason: r.into(),
                    table_id: tid,
                    cookie: c,
                    match_: m,
                    data: Bytes(d),
                })
            }),
        (
            any::<(u32, u32)>(),
            proptest::collection::vec(action13(), 0..4),
            proptest::collection::vec(any::<u8>(), 0..100)
        )
            .prop_map(|((b, p), actions, d)| v13::Body::PacketOut(v13::PacketOut {
                buffer_id: b,
                in_port: p,
                actions,
                data: Bytes(d)
            })),
        (
            0u16..=2,
            0u8..=3,
            any::<u32>(),
            proptest::collection::vec(
                (any::<(u16, u32, u32)>(), proptest::collection::vec(action13(), 0..3)),
                0..4
            )
        )
            .prop_map(|(cmd, ty, id, buckets)| v13::Body::GroupMod(v13::GroupMod {
                command: cmd.into(),
                group_type: ty.into(),
                group_id: id,
                buckets: buckets
                    .into_iter()
                    .map(|((weight, watch_port, watch_group), actions)| v13::Bucket {
                        weight,
                        watch_port,
                        watch_group,
                        actions
                    })
                    .collect(),
            })),
        (
            0u16..=2,
            any::<(u16, u32)>(),
            proptest::collection::vec(any::<(bool, u32, u32, u8)>(), 0..4)
        )
            .prop_map(|(cmd, (flags, id), bands)| {
                v13::Body::MeterMod(v13::MeterMod {
                    command: cmd.into(),
                    flags,
                    meter_id: id,
                    bands: bands
                        .into_iter()
                        .map(|(drop, rate, burst_size, prec_level)| {
                            if drop {
                                v13::MeterBand::Drop { rate, burst_size }
                            } else {
                                v13::MeterBand::DscpRemark {
                                    rate,
                                    burst_size,
                                    prec_level,
                                }
                            }
                        })
                        .collect(),
                })
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_valid_v10_messages_round_trip_byte_exact(xid in any::<u32>(), body in v10_body()) {
        let msg = Message::v10(xid, body);
        let bytes = msg.to_bytes().unwrap();
        let back = ofwire::decode(&bytes).map_err(|e| TestCaseError::fail(format!("{e}: {msg}")))?;
        prop_assert_eq!(&back, &msg);
        prop_assert_eq!(back.to_bytes().unwrap(), bytes);
    }

    #[test]
    fn random_valid_v13_messages_round_trip_byte_exact(xid in any::<u32>(), body in v13_body()) {
        let msg = Message::v13(xid, body);
        let bytes = msg.to_bytes().unwrap();
        let back = ofwire::decode(&bytes).map_err(|e| TestCaseError::fail(format!("{e}: {msg}")))?;
        prop_assert_eq!(&back, &msg);
        prop_assert_eq!(back.to_bytes().unwrap(), bytes);
    }

    #[test]
    fn random_bytes_never_panic(version in prop_oneof![Just(1u8), Just(4u8), any::<u8>()], ty in 0u8..32, body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut msg = vec![version, ty, 0, 0, 0, 0, 0, 1];
        msg.extend_from_slice(&body);
        let len = msg.len() as u16;
        msg[2..4].copy_from_slice(&len.to_be_bytes());
        if let Ok(m) = ofwire::decode(&msg) {
            prop_assert_eq!(&m.to_bytes().unwrap(), &msg);
        }
        let _ = ofwire::hot::PacketInView::parse(&msg);
    }

    #[test]
    fn mutated_corpus_messages_never_panic_and_reencode_exactly(index in any::<prop::sample::Index>(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let corpus = ofwire::corpus::all();
        let (_, msg) = &corpus[index.index(corpus.len())];
        let mut bytes = msg.to_bytes().unwrap();
        for (at, val) in flips {
            let i = at.index(bytes.len());
            if i >= 4 { bytes[i] = val; } // keep version/type/length honest
        }
        if let Ok(m) = ofwire::decode(&bytes) {
            prop_assert_eq!(&m.to_bytes().unwrap(), &bytes);
        }
        let _ = ofwire::hot::PacketInView::parse(&bytes);
    }
}

fn port13() -> impl Strategy<Value = v13::Port> {
    (any::<u32>(), mac(), "[a-z0-9]{0,15}", any::<u32>()).prop_map(|(port_no, hw_addr, name, curr_speed)| v13::Port {
        curr_speed,
        max_speed: curr_speed,
        ..v13::Port::new(port_no, hw_addr, name)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A reply cut into parts: every part encodes within the bound, every
    /// part but the last says REPLY_MORE, each decodes back, and the parts'
    /// entries in order are the reply's.
    #[test]
    fn multipart_replies_split_into_parts_that_fit(ports in proptest::collection::vec(port13(), 0..3000), max in 200usize..65_535) {
        let whole = v13::MultipartReply { flags: 0, body: v13::MultipartReplyBody::PortDesc(ports.clone()) };
        let parts = whole.split(max);
        prop_assert!(!parts.is_empty());
        let mut back = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let more = i + 1 < parts.len();
            prop_assert_eq!(p.flags, if more { v13::MULTIPART_MORE } else { 0 });
            let bytes = Message::v13(7, v13::Body::MultipartReply(p.clone())).to_bytes().unwrap();
            prop_assert!(bytes.len() <= max, "{} > {max}", bytes.len());
            match ofwire::decode(&bytes).unwrap().body {
                ofwire::Body::V13(v13::Body::MultipartReply(r)) => match r.body {
                    v13::MultipartReplyBody::PortDesc(l) => back.extend(l),
                    other => prop_assert!(false, "{other:?}"),
                },
                other => prop_assert!(false, "{other:?}"),
            }
        }
        prop_assert_eq!(back, ports);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// The same for OpenFlow 1.0's stats replies (port statistics of up
    /// to 2,000 ports: 208 KB in one piece).
    #[test]
    fn v10_stats_replies_split_into_parts_that_fit(ports in proptest::collection::vec((any::<u16>(), any::<u64>()), 0..2000), max in 200usize..65_535) {
        let stats: Vec<v10::PortStats> = ports
            .iter()
            .map(|&(port_no, rx_packets)| v10::PortStats {
                port_no,
                counters: ofwire::PortCounters { rx_packets, ..Default::default() },
            })
            .collect();
        let parts = v10::StatsReply { flags: 0, body: v10::StatsReplyBody::Port(stats.clone()) }.split(max);
        let mut back = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            prop_assert_eq!(p.flags, if i + 1 < parts.len() { v10::STATS_REPLY_MORE } else { 0 });
            let bytes = Message::v10(7, v10::Body::StatsReply(p.clone())).to_bytes().unwrap();
            prop_assert!(bytes.len() <= max, "{} > {max}", bytes.len());
            match ofwire::decode(&bytes).unwrap().body {
                ofwire::Body::V10(v10::Body::StatsReply(r)) => match r.body {
                    v10::StatsReplyBody::Port(l) => back.extend(l),
                    other => prop_assert!(false, "{other:?}"),
                },
                other => prop_assert!(false, "{other:?}"),
            }
        }
        prop_assert_eq!(back, stats);
    }
}
