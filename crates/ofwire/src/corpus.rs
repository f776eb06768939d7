//! A broad corpus of valid messages: every message type of both versions,
//! every action, instruction and OXM field, every multipart type. Used by
//! the round-trip tests, the independent-oracle tests (ovs-ofctl, tshark),
//! the fuzzer's seed corpus and `sdnlab ofp` demos.

use crate::common::*;
use crate::error::*;
use crate::oxm::{Match as Match13, Oxm};
use crate::types::{Bytes, MacAddr};
use crate::{v10, v13, Body, Hello, Message};
use std::net::{Ipv4Addr, Ipv6Addr};

const MAC1: MacAddr = MacAddr([0x00, 0x1b, 0x21, 0x0a, 0x00, 0x01]);
const MAC2: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]);

/// A small Ethernet/IPv4/UDP frame.
pub fn sample_frame() -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&MAC2.0);
    f.extend_from_slice(&MAC1.0);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&[
        0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 80, 0, 12, 0, 0, b'h', b'i',
        b'!', b'!',
    ]);
    f
}

fn desc() -> DescStats {
    DescStats {
        mfr_desc: "sdnlab".into(),
        hw_desc: "emulated".into(),
        sw_desc: "0.1".into(),
        serial_num: "42".into(),
        dp_desc: "corpus switch".into(),
    }
}

fn phy_port(no: u16) -> v10::PhyPort {
    v10::PhyPort {
        curr: 0x2c0,
        ..v10::PhyPort::new(no, MAC1, format!("eth{no}"))
    }
}

fn port13(no: u32) -> v13::Port {
    v13::Port {
        state: 4,
        curr: 0x2820,
        curr_speed: 10_000_000,
        ..v13::Port::new(no, MAC1, format!("p{no}"))
    }
}

fn match10() -> v10::Match {
    let mut m = v10::Match::all();
    m.wildcards &=
        !(v10::wildcards::IN_PORT | v10::wildcards::DL_TYPE | v10::wildcards::NW_PROTO | v10::wildcards::TP_DST);
    m.in_port = 1;
    m.dl_type = 0x0800;
    m.nw_proto = 6;
    m.tp_dst = 80;
    m.set_nw_dst_prefix(Ipv4Addr::new(10, 0, 0, 0), 24);
    m
}

/// Every 1.0 action, each valid on its own.
pub fn all_actions10() -> Vec<v10::Action> {
    use v10::Action::*;
    vec![
        Output { port: 2, max_len: 0 },
        Output {
            port: v10::port::CONTROLLER,
            max_len: 128,
        },
        SetVlanVid(10),
        SetVlanPcp(3),
        StripVlan,
        SetDlSrc(MAC1),
        SetDlDst(MAC2),
        SetNwSrc(Ipv4Addr::new(10, 0, 0, 1)),
        SetNwDst(Ipv4Addr::new(10, 0, 0, 2)),
        SetNwTos(0x28),
        SetTpSrc(1234),
        SetTpDst(80),
        Enqueue { port: 1, queue_id: 7 },
    ]
}

/// Every 1.3 action.
pub fn all_actions13() -> Vec<v13::Action> {
    use v13::Action::*;
    // Ordered so each action is consistent with the packet the previous ones
    // leave (a TCP/IPv4 packet), as a real switch checks.
    vec![
        Output { port: 2, max_len: 0 },
        Output {
            port: v13::port::CONTROLLER,
            max_len: v13::CONTROLLER_MAX_LEN_NO_BUFFER,
        },
        PushVlan(0x8100),
        SetField(Oxm::VlanVid(0x1000 | 5, None)),
        PopVlan,
        SetQueue(3),
        Group(1),
        SetNwTtl(12),
        DecNwTtl,
        SetField(Oxm::EthDst(MAC2, None)),
        SetField(Oxm::Ipv4Src(Ipv4Addr::new(192, 168, 1, 1), None)),
        SetField(Oxm::TcpDst(8080)),
        PushMpls(0x8847),
        SetMplsTtl(9),
        DecMplsTtl,
        PopMpls(0x0800),
    ]
}

/// The 1.3 actions Open vSwitch does not implement (TTL copy, PBB).
pub fn ovs_unsupported_actions13() -> Vec<v13::Action> {
    use v13::Action::*;
    vec![CopyTtlOut, CopyTtlIn, PushPbb(0x88e7), PopPbb]
}

/// A match per prerequisite chain, covering every basic OXM field, masked where allowed.
pub fn all_matches13() -> Vec<Match13> {
    let v6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    vec![
        Match13::new(vec![
            Oxm::InPort(1),
            Oxm::Metadata(0x1200, Some(0xff00)),
            Oxm::EthDst(MacAddr([2, 0, 0, 0, 0, 0]), Some(MacAddr([0xff, 0xff, 0xff, 0, 0, 0]))),
            Oxm::EthSrc(MAC1, None),
            Oxm::EthType(0x0800),
            Oxm::VlanVid(0x1000 | 10, None),
            Oxm::VlanPcp(5),
            Oxm::IpDscp(46),
            Oxm::IpEcn(1),
            Oxm::IpProto(6),
            Oxm::Ipv4Src(Ipv4Addr::new(10, 0, 0, 0), Some(Ipv4Addr::new(255, 255, 255, 0))),
            Oxm::Ipv4Dst(Ipv4Addr::new(10, 0, 1, 2), None),
            Oxm::TcpSrc(1234),
            Oxm::TcpDst(80),
            Oxm::TunnelId(0x55, Some(0xff)),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x0800),
            Oxm::IpProto(17),
            Oxm::UdpSrc(53),
            Oxm::UdpDst(5353),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x0800),
            Oxm::IpProto(132),
            Oxm::SctpSrc(9),
            Oxm::SctpDst(10),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x0800),
            Oxm::IpProto(1),
            Oxm::Icmpv4Type(8),
            Oxm::Icmpv4Code(0),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x0806),
            Oxm::ArpOp(1),
            Oxm::ArpSpa(Ipv4Addr::new(10, 0, 0, 1), None),
            Oxm::ArpTpa(Ipv4Addr::new(10, 0, 0, 0), Some(Ipv4Addr::new(255, 255, 0, 0))),
            Oxm::ArpSha(MAC1, None),
            Oxm::ArpTha(MacAddr::ZERO, Some(MacAddr([0xff; 6]))),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x86dd),
            Oxm::Ipv6Src(v6("2001:db8::"), Some(v6("ffff:ffff::"))),
            Oxm::Ipv6Dst(v6("2001:db8::2"), None),
            Oxm::Ipv6Flabel(0x12345, None),
            Oxm::IpProto(58),
            Oxm::Icmpv6Type(135),
            Oxm::Icmpv6Code(0),
            Oxm::Ipv6NdTarget(v6("2001:db8::7")),
            Oxm::Ipv6NdSll(MAC1),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x86dd),
            Oxm::IpProto(58),
            Oxm::Icmpv6Type(136),
            Oxm::Ipv6NdTarget(v6("2001:db8::8")),
            Oxm::Ipv6NdTll(MAC2),
        ]),
        Match13::new(vec![
            Oxm::EthType(0x8847),
            Oxm::MplsLabel(0x12345),
            Oxm::MplsTc(3),
            Oxm::MplsBos(1),
        ]),
        Match13::new(vec![Oxm::EthType(0x88e7), Oxm::PbbIsid(0xabcd00, Some(0xffff00))]),
        Match13::new(vec![]),
        Match13::new(vec![Oxm::InPort(1), Oxm::InPhyPort(1)]),
        Match13::new(vec![Oxm::EthType(0x86dd), Oxm::Ipv6Exthdr(0x40, Some(0x1c0))]),
    ]
}

fn flow_stats_request10() -> v10::FlowStatsRequest {
    v10::FlowStatsRequest {
        match_: v10::Match::all(),
        table_id: 0xff,
        out_port: v10::port::NONE,
    }
}

fn flow_stats_request13(m: Match13) -> v13::FlowStatsRequest {
    v13::FlowStatsRequest {
        table_id: v13::TABLE_ALL,
        out_port: v13::port::ANY,
        out_group: v13::GROUP_ANY,
        cookie: 0x10,
        cookie_mask: 0xff,
        match_: m,
    }
}

/// Every 1.0 message type, several shapes each.
pub fn v10_messages() -> Vec<(&'static str, v10::Body)> {
    let mut v = v10_messages_but_stats();
    v.extend(v10_stats());
    v
}

/// The 1.0 messages other than statistics: symmetric, switch configuration, packets, flows, ports.
fn v10_messages_but_stats() -> Vec<(&'static str, v10::Body)> {
    use v10::Body as B;
    let fm = |command, actions| v10::FlowMod {
        match_: match10(),
        cookie: 0xc0ffee,
        command,
        idle_timeout: 10,
        hard_timeout: 30,
        priority: 100,
        buffer_id: v10::NO_BUFFER,
        out_port: v10::port::NONE,
        flags: v10::flow_mod_flags::SEND_FLOW_REM,
        actions,
    };
    vec![
        (
            "error",
            B::Error(ErrorMsg {
                code: ErrorCode::BadRequest(BadRequestCode::BadType),
                data: Bytes(vec![1, 18, 0, 8, 0, 0, 0, 1]),
            }),
        ),
        (
            "error_flow_mod_failed",
            B::Error(ErrorMsg {
                code: ErrorCode::FlowModFailed10(FlowModFailed10Code::AllTablesFull),
                data: Bytes(vec![1, 5, 0, 8, 0, 0, 0, 2]),
            }),
        ),
        ("echo_request", B::EchoRequest(Bytes(vec![1, 2, 3, 4]))),
        ("echo_reply", B::EchoReply(Bytes(vec![]))),
        (
            "vendor",
            B::Vendor {
                vendor: 0x2320,
                data: Bytes(vec![0, 0, 0, 0x0b, 0, 0, 0, 0]),
            },
        ),
        ("features_request", B::FeaturesRequest),
        (
            "features_reply",
            B::FeaturesReply(v10::FeaturesReply {
                datapath_id: 0x0000_0000_0000_00a1,
                n_buffers: 256,
                n_tables: 1,
                capabilities: 0xc7,
                actions: 0xfff,
                ports: vec![phy_port(1), phy_port(2), phy_port(v10::port::LOCAL)],
            }),
        ),
        ("get_config_request", B::GetConfigRequest),
        (
            "get_config_reply",
            B::GetConfigReply(SwitchConfig {
                flags: 0,
                miss_send_len: 128,
            }),
        ),
        (
            "set_config",
            B::SetConfig(SwitchConfig {
                flags: 1,
                miss_send_len: 0xffff,
            }),
        ),
        (
            "packet_in",
            B::PacketIn(v10::PacketIn {
                buffer_id: 0x100,
                total_len: sample_frame().len() as u16,
                in_port: 3,
                reason: PacketInReason::NoMatch,
                data: Bytes(sample_frame()),
            }),
        ),
        (
            "flow_removed",
            B::FlowRemoved(v10::FlowRemoved {
                match_: match10(),
                cookie: 7,
                priority: 100,
                reason: FlowRemovedReason::IdleTimeout,
                duration_sec: 12,
                duration_nsec: 5000,
                idle_timeout: 10,
                packet_count: 42,
                byte_count: 4200,
            }),
        ),
        (
            "port_status",
            B::PortStatus(v10::PortStatus {
                reason: PortReason::Modify,
                desc: phy_port(2),
            }),
        ),
        (
            "packet_out",
            B::PacketOut(v10::PacketOut {
                buffer_id: v10::NO_BUFFER,
                in_port: 1,
                actions: vec![v10::Action::Output {
                    port: v10::port::FLOOD,
                    max_len: 0,
                }],
                data: Bytes(sample_frame()),
            }),
        ),
        (
            "packet_out_buffered",
            B::PacketOut(v10::PacketOut {
                buffer_id: 0x100,
                in_port: v10::port::NONE,
                actions: vec![v10::Action::Output { port: 2, max_len: 0 }],
                data: Bytes(vec![]),
            }),
        ),
        (
            "flow_mod_add",
            B::FlowMod(fm(
                v10::FlowModCommand::Add,
                vec![v10::Action::Output { port: 2, max_len: 0 }],
            )),
        ),
        (
            "flow_mod_all_actions",
            B::FlowMod(fm(v10::FlowModCommand::Add, all_actions10())),
        ),
        ("flow_mod_modify", B::FlowMod(fm(v10::FlowModCommand::Modify, vec![]))),
        (
            "flow_mod_modify_strict",
            B::FlowMod(fm(v10::FlowModCommand::ModifyStrict, vec![v10::Action::SetTpDst(81)])),
        ),
        ("flow_mod_delete", B::FlowMod(fm(v10::FlowModCommand::Delete, vec![]))),
        (
            "flow_mod_delete_strict",
            B::FlowMod(fm(v10::FlowModCommand::DeleteStrict, vec![])),
        ),
        (
            "port_mod",
            B::PortMod(v10::PortMod {
                port_no: 1,
                hw_addr: MAC1,
                config: 1,
                mask: 1,
                advertise: 0,
            }),
        ),
    ]
}

/// 1.0's statistics requests and replies, and its barrier and queue messages.
fn v10_stats() -> Vec<(&'static str, v10::Body)> {
    use v10::Body as B;
    let stats_req = |body| B::StatsRequest(v10::StatsRequest { flags: 0, body });
    let stats_reply = |body| B::StatsReply(v10::StatsReply { flags: 0, body });
    vec![
        ("stats_request_desc", stats_req(v10::StatsRequestBody::Desc)),
        (
            "stats_request_flow",
            stats_req(v10::StatsRequestBody::Flow(flow_stats_request10())),
        ),
        (
            "stats_request_aggregate",
            stats_req(v10::StatsRequestBody::Aggregate(flow_stats_request10())),
        ),
        ("stats_request_table", stats_req(v10::StatsRequestBody::Table)),
        (
            "stats_request_port",
            stats_req(v10::StatsRequestBody::Port {
                port_no: v10::port::NONE,
            }),
        ),
        (
            "stats_request_queue",
            stats_req(v10::StatsRequestBody::Queue {
                port_no: 1,
                queue_id: 0xffff_ffff,
            }),
        ),
        (
            "stats_request_vendor",
            stats_req(v10::StatsRequestBody::Vendor {
                vendor: 0x2320,
                data: Bytes(vec![0, 0, 0, 0xff, 0, 0, 0, 0]),
            }),
        ),
        ("stats_reply_desc", stats_reply(v10::StatsReplyBody::Desc(desc()))),
        (
            "stats_reply_flow",
            B::StatsReply(v10::StatsReply {
                flags: v10::STATS_REPLY_MORE,
                body: v10::StatsReplyBody::Flow(vec![v10::FlowStats {
                    table_id: 0,
                    match_: match10(),
                    duration_sec: 3,
                    duration_nsec: 100,
                    priority: 100,
                    idle_timeout: 10,
                    hard_timeout: 0,
                    cookie: 5,
                    packet_count: 10,
                    byte_count: 1000,
                    actions: vec![v10::Action::Output { port: 2, max_len: 0 }],
                }]),
            }),
        ),
        (
            "stats_reply_aggregate",
            stats_reply(v10::StatsReplyBody::Aggregate(AggregateStats {
                packet_count: 10,
                byte_count: 1000,
                flow_count: 2,
            })),
        ),
        (
            "stats_reply_table",
            stats_reply(v10::StatsReplyBody::Table(vec![v10::TableStats {
                table_id: 0,
                name: "classifier".into(),
                wildcards: v10::wildcards::ALL,
                max_entries: 1_000_000,
                active_count: 3,
                lookup_count: 100,
                matched_count: 90,
            }])),
        ),
        (
            "stats_reply_port",
            stats_reply(v10::StatsReplyBody::Port(vec![v10::PortStats {
                port_no: 1,
                counters: PortCounters {
                    rx_packets: 5,
                    tx_packets: 6,
                    rx_bytes: 500,
                    tx_bytes: 600,
                    ..Default::default()
                },
            }])),
        ),
        (
            "stats_reply_queue",
            stats_reply(v10::StatsReplyBody::Queue(vec![v10::QueueStats {
                port_no: 1,
                queue_id: 1,
                tx_bytes: 10,
                tx_packets: 1,
                tx_errors: 0,
            }])),
        ),
        ("barrier_request", B::BarrierRequest),
        ("barrier_reply", B::BarrierReply),
        ("queue_get_config_request", B::QueueGetConfigRequest { port: 1 }),
        (
            "queue_get_config_reply",
            B::QueueGetConfigReply(v10::QueueGetConfigReply {
                port: 1,
                queues: vec![v10::PacketQueue {
                    queue_id: 1,
                    properties: vec![QueueProp::MinRate(500)],
                }],
            }),
        ),
    ]
}

fn flow_mod13(command: v10::FlowModCommand, m: Match13, instructions: Vec<v13::Instruction>) -> v13::FlowMod {
    v13::FlowMod {
        cookie: 0xc0ffee,
        cookie_mask: 0,
        table_id: 0,
        command,
        idle_timeout: 10,
        hard_timeout: 30,
        priority: 100,
        buffer_id: v13::NO_BUFFER,
        out_port: v13::port::ANY,
        out_group: v13::GROUP_ANY,
        flags: v13::flow_mod_flags::SEND_FLOW_REM,
        match_: m,
        instructions,
    }
}

/// A table-features entry exercising every property type.
pub fn sample_table_features() -> v13::TableFeatures {
    use crate::oxm::{field, oxm_header, OFPXMC_OPENFLOW_BASIC};
    use v13::TableFeatureProp::*;
    let oxm_ids = |fs: &[u8]| -> Vec<v13::OxmId> {
        fs.iter()
            .map(|&f| v13::OxmId {
                header: oxm_header(OFPXMC_OPENFLOW_BASIC, f, false, field::WIDTH[f as usize]),
                experimenter: None,
            })
            .collect()
    };
    let inst_ids: Vec<v13::TypeId> = (1..=6)
        .map(|t| v13::TypeId {
            id_type: t,
            data: Bytes(vec![]),
        })
        .collect();
    let action_ids: Vec<v13::TypeId> = [0u16, 17, 18, 22, 25]
        .iter()
        .map(|&t| v13::TypeId {
            id_type: t,
            data: Bytes(vec![]),
        })
        .collect();
    v13::TableFeatures {
        table_id: 0,
        name: "table0".into(),
        metadata_match: u64::MAX,
        metadata_write: u64::MAX,
        config: 0,
        max_entries: 1_000_000,
        properties: vec![
            Instructions(inst_ids.clone()),
            InstructionsMiss(inst_ids),
            NextTables(vec![1, 2, 3]),
            NextTablesMiss(vec![1]),
            WriteActions(action_ids.clone()),
            WriteActionsMiss(action_ids.clone()),
            ApplyActions(action_ids.clone()),
            ApplyActionsMiss(action_ids),
            Match(oxm_ids(&[0, 3, 4, 5, 11, 12])),
            Wildcards(oxm_ids(&[3, 4, 11, 12])),
            WriteSetfield(oxm_ids(&[3, 4])),
            WriteSetfieldMiss(oxm_ids(&[3])),
            ApplySetfield(oxm_ids(&[3, 4, 11])),
            ApplySetfieldMiss(oxm_ids(&[3])),
        ],
    }
}

fn bucket(weight: u16, watch_port: u32, out: u32) -> v13::Bucket {
    v13::Bucket {
        weight,
        watch_port,
        watch_group: v13::GROUP_ANY,
        actions: vec![v13::Action::Output { port: out, max_len: 0 }],
    }
}

/// Every 1.3 message type, several shapes each.
pub fn v13_messages() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    let apply = |a: Vec<v13::Action>| vec![v13::Instruction::ApplyActions(a)];
    let mut v = v13_basic();
    v.extend(v13_flows_groups_meters());
    v.extend(v13_groups_ports_meters());
    v.extend(v13_multipart());
    v.extend(v13_multipart_replies());
    v.extend(v13_other());
    for (i, m) in all_matches13().into_iter().enumerate() {
        const NAMES: [&str; 12] = [
            "flow_mod_match_l4tcp",
            "flow_mod_match_udp",
            "flow_mod_match_sctp",
            "flow_mod_match_icmp",
            "flow_mod_match_arp",
            "flow_mod_match_ipv6_nd_sll",
            "flow_mod_match_ipv6_nd_tll",
            "flow_mod_match_mpls",
            "flow_mod_match_pbb",
            "flow_mod_match_empty",
            "flow_mod_match_in_phy_port",
            "flow_mod_match_ipv6_exthdr",
        ];
        v.push((
            NAMES[i],
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Add,
                m,
                apply(vec![v13::Action::Output { port: 1, max_len: 0 }]),
            )),
        ));
    }
    v
}

/// 1.3's symmetric, switch configuration and packet messages.
fn v13_basic() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    vec![
        (
            "error",
            B::Error(ErrorMsg {
                code: ErrorCode::BadMatch(BadMatchCode::BadPrereq),
                data: Bytes(vec![4, 20, 0, 8, 0, 0, 0, 1]),
            }),
        ),
        (
            "error_experimenter",
            B::Error(ErrorMsg {
                code: ErrorCode::Experimenter {
                    exp_type: 2300,
                    experimenter: 0x4f4e4600,
                },
                data: Bytes(vec![4, 20, 0, 8, 0, 0, 0, 1]),
            }),
        ),
        ("echo_request", B::EchoRequest(Bytes(vec![0xde, 0xad]))),
        ("echo_reply", B::EchoReply(Bytes(vec![0xde, 0xad]))),
        (
            "experimenter",
            B::Experimenter {
                experimenter: 0x4f4e4600,
                exp_type: 1,
                data: Bytes(vec![0, 0, 0, 0]),
            },
        ),
        ("features_request", B::FeaturesRequest),
        (
            "features_reply",
            B::FeaturesReply(v13::FeaturesReply {
                datapath_id: 0xa1,
                n_buffers: 0,
                n_tables: 254,
                auxiliary_id: 0,
                capabilities: 0x4f,
                reserved: 0,
            }),
        ),
        ("get_config_request", B::GetConfigRequest),
        (
            "get_config_reply",
            B::GetConfigReply(SwitchConfig {
                flags: 0,
                miss_send_len: 0xffff,
            }),
        ),
        (
            "set_config",
            B::SetConfig(SwitchConfig {
                flags: 0,
                miss_send_len: 128,
            }),
        ),
        (
            "packet_in",
            B::PacketIn(v13::PacketIn {
                buffer_id: v13::NO_BUFFER,
                total_len: sample_frame().len() as u16,
                reason: PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0,
                match_: Match13::new(vec![Oxm::InPort(3)]),
                data: Bytes(sample_frame()),
            }),
        ),
        (
            "packet_in_action_metadata",
            B::PacketIn(v13::PacketIn {
                buffer_id: 0x200,
                total_len: 1500,
                reason: PacketInReason::Action,
                table_id: 2,
                cookie: 0xabc,
                match_: Match13::new(vec![Oxm::InPort(1), Oxm::Metadata(0x99, None), Oxm::TunnelId(7, None)]),
                data: Bytes(sample_frame()),
            }),
        ),
        (
            "flow_removed",
            B::FlowRemoved(v13::FlowRemoved {
                cookie: 7,
                priority: 100,
                reason: FlowRemovedReason::HardTimeout,
                table_id: 0,
                duration_sec: 30,
                duration_nsec: 1,
                idle_timeout: 0,
                hard_timeout: 30,
                packet_count: 9,
                byte_count: 900,
                match_: all_matches13()[1].clone(),
            }),
        ),
        (
            "port_status",
            B::PortStatus(v13::PortStatus {
                reason: PortReason::Add,
                desc: port13(5),
            }),
        ),
        (
            "packet_out",
            B::PacketOut(v13::PacketOut {
                buffer_id: v13::NO_BUFFER,
                in_port: v13::port::CONTROLLER,
                actions: vec![v13::Action::Output {
                    port: v13::port::FLOOD,
                    max_len: 0,
                }],
                data: Bytes(sample_frame()),
            }),
        ),
    ]
}

/// 1.3's FLOW_MODs, each shape.
fn v13_flows_groups_meters() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    let apply = |a: Vec<v13::Action>| vec![v13::Instruction::ApplyActions(a)];
    vec![
        (
            "flow_mod_add",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Add,
                all_matches13()[1].clone(),
                apply(vec![v13::Action::Output { port: 2, max_len: 0 }]),
            )),
        ),
        (
            "flow_mod_all_actions",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Add,
                Match13::new(vec![Oxm::InPort(1), Oxm::EthType(0x0800), Oxm::IpProto(6)]),
                apply(all_actions13()),
            )),
        ),
        (
            "flow_mod_ttl_pbb_actions",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Add,
                Match13::new(vec![Oxm::InPort(1)]),
                apply(ovs_unsupported_actions13()),
            )),
        ),
        (
            "flow_mod_all_instructions",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Add,
                Match13::new(vec![Oxm::InPort(1)]),
                vec![
                    v13::Instruction::Meter(1),
                    v13::Instruction::ApplyActions(vec![v13::Action::Output { port: 4, max_len: 0 }]),
                    v13::Instruction::ClearActions,
                    v13::Instruction::WriteActions(vec![v13::Action::Output { port: 3, max_len: 0 }]),
                    v13::Instruction::WriteMetadata {
                        metadata: 0x10,
                        mask: 0xff,
                    },
                    v13::Instruction::GotoTable(1),
                ],
            )),
        ),
        (
            "flow_mod_modify",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::Modify,
                Match13::default(),
                apply(vec![]),
            )),
        ),
        (
            "flow_mod_modify_strict",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::ModifyStrict,
                all_matches13()[2].clone(),
                apply(vec![]),
            )),
        ),
        (
            "flow_mod_delete",
            B::FlowMod({
                let mut f = flow_mod13(v10::FlowModCommand::Delete, Match13::default(), vec![]);
                f.table_id = v13::TABLE_ALL;
                f.cookie_mask = 0xffff;
                f
            }),
        ),
        (
            "flow_mod_delete_strict",
            B::FlowMod(flow_mod13(
                v10::FlowModCommand::DeleteStrict,
                all_matches13()[3].clone(),
                vec![],
            )),
        ),
    ]
}

/// 1.3's GROUP_MOD, PORT_MOD, TABLE_MOD and METER_MOD.
fn v13_groups_ports_meters() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    vec![
        (
            "group_mod_all",
            B::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Add,
                group_type: v13::GroupType::All,
                group_id: 1,
                buckets: vec![bucket(0, v13::port::ANY, 2), bucket(0, v13::port::ANY, 3)],
            }),
        ),
        (
            "group_mod_select",
            B::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Add,
                group_type: v13::GroupType::Select,
                group_id: 2,
                buckets: vec![bucket(3, v13::port::ANY, 2), bucket(1, v13::port::ANY, 3)],
            }),
        ),
        (
            "group_mod_indirect",
            B::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Modify,
                group_type: v13::GroupType::Indirect,
                group_id: 3,
                buckets: vec![bucket(0, v13::port::ANY, 2)],
            }),
        ),
        (
            "group_mod_ff",
            B::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Add,
                group_type: v13::GroupType::FastFailover,
                group_id: 4,
                buckets: vec![bucket(0, 2, 2), bucket(0, 3, 3)],
            }),
        ),
        (
            "group_mod_delete",
            B::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Delete,
                group_type: v13::GroupType::All,
                group_id: v13::GROUP_ALL,
                buckets: vec![],
            }),
        ),
        (
            "port_mod",
            B::PortMod(v13::PortMod {
                port_no: 1,
                hw_addr: MAC1,
                config: 1,
                mask: 1,
                advertise: 0,
            }),
        ),
        ("table_mod", B::TableMod(v13::TableMod { table_id: 0, config: 0 })),
        (
            "meter_mod_drop",
            B::MeterMod(v13::MeterMod {
                command: v13::MeterModCommand::Add,
                flags: v13::meter_flags::KBPS | v13::meter_flags::STATS,
                meter_id: 1,
                bands: vec![v13::MeterBand::Drop {
                    rate: 1000,
                    burst_size: 0,
                }],
            }),
        ),
        (
            "meter_mod_dscp",
            B::MeterMod(v13::MeterMod {
                command: v13::MeterModCommand::Modify,
                flags: v13::meter_flags::PKTPS | v13::meter_flags::BURST,
                meter_id: 2,
                bands: vec![v13::MeterBand::DscpRemark {
                    rate: 100,
                    burst_size: 10,
                    prec_level: 1,
                }],
            }),
        ),
        (
            "meter_mod_experimenter",
            B::MeterMod(v13::MeterMod {
                command: v13::MeterModCommand::Add,
                flags: v13::meter_flags::KBPS,
                meter_id: 3,
                bands: vec![v13::MeterBand::Experimenter {
                    rate: 5,
                    burst_size: 0,
                    experimenter: 0x4f4e4600,
                    data: Bytes(vec![]),
                }],
            }),
        ),
        (
            "meter_mod_delete",
            B::MeterMod(v13::MeterMod {
                command: v13::MeterModCommand::Delete,
                flags: 0,
                meter_id: 1,
                bands: vec![],
            }),
        ),
    ]
}

/// 1.3's multipart requests and replies, every type.
fn v13_multipart() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    use v13::MultipartReplyBody as R;
    use v13::MultipartRequestBody as Q;
    let req = |body| B::MultipartRequest(v13::MultipartRequest { flags: 0, body });
    let rep = |body| B::MultipartReply(v13::MultipartReply { flags: 0, body });
    let apply = |a: Vec<v13::Action>| vec![v13::Instruction::ApplyActions(a)];
    vec![
        ("mp_request_desc", req(Q::Desc)),
        (
            "mp_request_flow",
            req(Q::Flow(flow_stats_request13(Match13::default()))),
        ),
        (
            "mp_request_flow_match",
            req(Q::Flow(flow_stats_request13(all_matches13()[1].clone()))),
        ),
        (
            "mp_request_aggregate",
            req(Q::Aggregate(flow_stats_request13(Match13::default()))),
        ),
        ("mp_request_table", req(Q::Table)),
        (
            "mp_request_port_stats",
            req(Q::PortStats {
                port_no: v13::port::ANY,
            }),
        ),
        (
            "mp_request_queue",
            req(Q::Queue {
                port_no: v13::port::ANY,
                queue_id: 0xffff_ffff,
            }),
        ),
        (
            "mp_request_group",
            req(Q::Group {
                group_id: v13::GROUP_ALL,
            }),
        ),
        ("mp_request_group_desc", req(Q::GroupDesc)),
        ("mp_request_group_features", req(Q::GroupFeatures)),
        ("mp_request_meter", req(Q::Meter { meter_id: 0xffff_ffff })),
        ("mp_request_meter_config", req(Q::MeterConfig { meter_id: 0xffff_ffff })),
        ("mp_request_meter_features", req(Q::MeterFeatures)),
        ("mp_request_table_features", req(Q::TableFeatures(vec![]))),
        ("mp_request_port_desc", req(Q::PortDesc)),
        (
            "mp_request_experimenter",
            req(Q::Experimenter {
                experimenter: 0x4f4e4600,
                exp_type: 1,
                data: Bytes(vec![]),
            }),
        ),
        ("mp_reply_desc", rep(R::Desc(desc()))),
        (
            "mp_reply_flow",
            B::MultipartReply(v13::MultipartReply {
                flags: v13::MULTIPART_MORE,
                body: R::Flow(vec![v13::FlowStats {
                    table_id: 0,
                    duration_sec: 1,
                    duration_nsec: 2,
                    priority: 100,
                    idle_timeout: 10,
                    hard_timeout: 0,
                    flags: 1,
                    cookie: 5,
                    packet_count: 10,
                    byte_count: 1000,
                    match_: all_matches13()[1].clone(),
                    instructions: apply(vec![v13::Action::Output { port: 2, max_len: 0 }]),
                }]),
            }),
        ),
        (
            "mp_reply_aggregate",
            rep(R::Aggregate(AggregateStats {
                packet_count: 1,
                byte_count: 2,
                flow_count: 3,
            })),
        ),
        (
            "mp_reply_table",
            rep(R::Table(vec![v13::TableStats {
                table_id: 0,
                active_count: 4,
                lookup_count: 10,
                matched_count: 8,
            }])),
        ),
    ]
}

/// 1.3's multipart replies from the port statistics on.
fn v13_multipart_replies() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    use v13::MultipartReplyBody as R;
    let rep = |body| B::MultipartReply(v13::MultipartReply { flags: 0, body });
    vec![
        (
            "mp_reply_port_stats",
            rep(R::PortStats(vec![v13::PortStats {
                port_no: 1,
                counters: PortCounters {
                    rx_packets: 1,
                    tx_packets: 2,
                    rx_bytes: 3,
                    tx_bytes: 4,
                    ..Default::default()
                },
                duration_sec: 5,
                duration_nsec: 6,
            }])),
        ),
        (
            "mp_reply_queue",
            rep(R::Queue(vec![v13::QueueStats {
                port_no: 1,
                queue_id: 2,
                tx_bytes: 3,
                tx_packets: 4,
                tx_errors: 0,
                duration_sec: 5,
                duration_nsec: 6,
            }])),
        ),
        (
            "mp_reply_group",
            rep(R::Group(vec![v13::GroupStats {
                group_id: 1,
                ref_count: 2,
                packet_count: 3,
                byte_count: 4,
                duration_sec: 5,
                duration_nsec: 6,
                bucket_stats: vec![
                    v13::Counter {
                        packet_count: 1,
                        byte_count: 2,
                    },
                    v13::Counter {
                        packet_count: 2,
                        byte_count: 2,
                    },
                ],
            }])),
        ),
        (
            "mp_reply_group_desc",
            rep(R::GroupDesc(vec![v13::GroupDesc {
                group_type: v13::GroupType::Select,
                group_id: 2,
                buckets: vec![bucket(1, v13::port::ANY, 2)],
            }])),
        ),
        (
            "mp_reply_group_features",
            rep(R::GroupFeatures(v13::GroupFeatures {
                types: 0xf,
                capabilities: 0x7,
                max_groups: [16, 16, 16, 16],
                actions: [0x1, 0x1, 0x1, 0x1],
            })),
        ),
        (
            "mp_reply_meter",
            rep(R::Meter(vec![v13::MeterStats {
                meter_id: 1,
                flow_count: 2,
                packet_in_count: 3,
                byte_in_count: 4,
                duration_sec: 5,
                duration_nsec: 6,
                band_stats: vec![v13::Counter {
                    packet_count: 7,
                    byte_count: 8,
                }],
            }])),
        ),
        (
            "mp_reply_meter_config",
            rep(R::MeterConfig(vec![v13::MeterConfig {
                flags: v13::meter_flags::KBPS,
                meter_id: 1,
                bands: vec![v13::MeterBand::Drop {
                    rate: 1000,
                    burst_size: 0,
                }],
            }])),
        ),
        (
            "mp_reply_meter_features",
            rep(R::MeterFeatures(v13::MeterFeatures {
                max_meter: 100,
                band_types: 3,
                capabilities: 0xf,
                max_bands: 4,
                max_color: 0,
            })),
        ),
        (
            "mp_reply_table_features",
            rep(R::TableFeatures(vec![sample_table_features()])),
        ),
        (
            "mp_reply_port_desc",
            rep(R::PortDesc(vec![port13(1), port13(2), port13(v13::port::LOCAL)])),
        ),
        (
            "mp_reply_experimenter",
            rep(R::Experimenter {
                experimenter: 0x4f4e4600,
                exp_type: 1,
                data: Bytes(vec![9, 9, 9, 9]),
            }),
        ),
    ]
}

/// 1.3's barrier, queue, role and asynchronous-configuration messages.
fn v13_other() -> Vec<(&'static str, v13::Body)> {
    use v13::Body as B;
    vec![
        ("barrier_request", B::BarrierRequest),
        ("barrier_reply", B::BarrierReply),
        ("queue_get_config_request", B::QueueGetConfigRequest { port: 1 }),
        (
            "queue_get_config_reply",
            B::QueueGetConfigReply(v13::QueueGetConfigReply {
                port: 1,
                queues: vec![v13::PacketQueue {
                    queue_id: 1,
                    port: 1,
                    properties: vec![QueueProp::MinRate(100), QueueProp::MaxRate(900)],
                }],
            }),
        ),
        (
            "role_request",
            B::RoleRequest(v13::Role {
                role: v13::ControllerRole::Master,
                generation_id: 7,
            }),
        ),
        (
            "role_reply",
            B::RoleReply(v13::Role {
                role: v13::ControllerRole::Slave,
                generation_id: 8,
            }),
        ),
        ("get_async_request", B::GetAsyncRequest),
        (
            "get_async_reply",
            B::GetAsyncReply(v13::AsyncConfig {
                packet_in_mask: [3, 0],
                port_status_mask: [7, 7],
                flow_removed_mask: [15, 0],
            }),
        ),
        (
            "set_async",
            B::SetAsync(v13::AsyncConfig {
                packet_in_mask: [1, 0],
                port_status_mask: [7, 7],
                flow_removed_mask: [1, 0],
            }),
        ),
    ]
}

/// The whole corpus as messages, with HELLOs of several versions.
pub fn all() -> Vec<(String, Message)> {
    let mut out = vec![
        (
            "hello_v10".to_string(),
            Message::new(crate::OFP10_VERSION, 1, Body::Hello(Hello::default())),
        ),
        (
            "hello_v13_bitmap".to_string(),
            Message::new(crate::OFP13_VERSION, 2, Body::Hello(Hello::with_versions(&[1, 4]))),
        ),
        (
            "hello_v15_bitmap".to_string(),
            Message::new(6, 3, Body::Hello(Hello::with_versions(&[1, 4, 5, 6]))),
        ),
    ];
    for (i, (name, b)) in v10_messages().into_iter().enumerate() {
        out.push((format!("v10_{name}"), Message::v10(100 + i as u32, b)));
    }
    for (i, (name, b)) in v13_messages().into_iter().enumerate() {
        out.push((format!("v13_{name}"), Message::v13(1000 + i as u32, b)));
    }
    out
}
