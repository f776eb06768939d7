//! The pipeline with no I/O: frames in, frames out. Rewrites are checked
//! field by field and their checksums against etherparse's own
//! computation; groups, fast-failover, meters, timeouts, the action set and
//! multi-table programs against what OpenFlow 1.3.5 says.

use etherparse::{IcmpEchoHeader, Icmpv4Type, PacketBuilder, SlicedPacket, TransportSlice};
use ofswitch::actions::Packet;
use ofswitch::pipeline::{Emitted, Pipeline, PortState};
use ofwire::error::{BadActionCode, GroupModFailedCode};
use ofwire::oxm::{Match, Oxm};
use ofwire::v13::{self, Action, Bucket, FlowMod, GroupMod, GroupModCommand, GroupType, Instruction};
use ofwire::{ErrorCode, MacAddr};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

const H1: [u8; 6] = [2, 0, 0, 0, 0, 1];
const H2: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn pipeline(ports: u32) -> Pipeline {
    let mut p = Pipeline::new(64, 2_000_000);
    for n in 1..=ports {
        p.add_port(PortState::up(
            n,
            format!("p{n}"),
            MacAddr([2, 0xaa, 0, 0, 0, n as u8]),
            10_000_000,
        ));
    }
    p
}

fn flow(priority: u16, fields: Vec<Oxm>, instructions: Vec<Instruction>) -> FlowMod {
    FlowMod {
        match_: Match::new(fields),
        instructions,
        ..FlowMod::add(priority)
    }
}

fn apply(actions: Vec<Action>) -> Instruction {
    Instruction::ApplyActions(actions)
}

fn out(port: u32) -> Action {
    Action::Output { port, max_len: 0 }
}

fn add(p: &mut Pipeline, fm: FlowMod) {
    p.flow_mod(&fm, Instant::now()).expect("flow_mod accepted");
}

fn udp4(src_port: u16, dst_port: u16) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(H1, H2)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(src_port, dst_port)
        .write(&mut v, b"hello, switch")
        .unwrap();
    v
}

fn tcp4() -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(H1, H2)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(40000, 80, 1234, 65535)
        .write(&mut v, b"GET / HTTP/1.1\r\n\r\n")
        .unwrap();
    v
}

fn udp6() -> Vec<u8> {
    let mut v = Vec::new();
    let a: [u8; 16] = "fd00::1".parse::<Ipv6Addr>().unwrap().octets();
    let b: [u8; 16] = "fd00::2".parse::<Ipv6Addr>().unwrap().octets();
    PacketBuilder::ethernet2(H1, H2)
        .ipv6(a, b, 64)
        .udp(1000, 2000)
        .write(&mut v, b"six")
        .unwrap();
    v
}

fn icmp4() -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ethernet2(H1, H2)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .icmpv4(Icmpv4Type::EchoRequest(IcmpEchoHeader { id: 1, seq: 2 }))
        .write(&mut v, b"ping")
        .unwrap();
    v
}

fn send(p: &Pipeline, in_port: u32, frame: Vec<u8>) -> Emitted {
    let mut e = Emitted::default();
    p.forward(&mut Packet::new(frame, in_port), Instant::now(), &mut e);
    e
}

fn ports_of(e: &Emitted) -> Vec<u32> {
    e.outputs.iter().map(|(p, _)| *p).collect()
}

/// Every checksum in the frame is what etherparse computes from scratch.
fn assert_checksums(frame: &[u8]) {
    let s = SlicedPacket::from_ethernet(frame).expect("frame parses");
    let net = s.net.expect("has a network layer");
    match (&net, &s.transport) {
        (etherparse::NetSlice::Ipv4(ip), t) => {
            let h = ip.header().to_header();
            assert_eq!(h.header_checksum, h.calc_header_checksum(), "IPv4 header checksum");
            match t {
                Some(TransportSlice::Udp(u)) => {
                    let want = u.to_header().calc_checksum_ipv4(&h, u.payload()).unwrap();
                    assert_eq!(u.checksum(), want, "UDP checksum");
                }
                Some(TransportSlice::Tcp(tc)) => {
                    let want = tc.to_header().calc_checksum_ipv4(&h, tc.payload()).unwrap();
                    assert_eq!(tc.checksum(), want, "TCP checksum");
                }
                Some(TransportSlice::Icmpv4(ic)) => {
                    let want = ic.icmp_type().calc_checksum(ic.payload());
                    assert_eq!(ic.checksum(), want, "ICMP checksum");
                }
                _ => {}
            }
        }
        (etherparse::NetSlice::Ipv6(ip), Some(TransportSlice::Udp(u))) => {
            let h = ip.header().to_header();
            let want = u.to_header().calc_checksum_ipv6(&h, u.payload()).unwrap();
            assert_eq!(u.checksum(), want, "UDP/IPv6 checksum");
        }
        _ => {}
    }
}

#[test]
fn an_empty_table_drops_and_a_table_miss_rule_sends_to_the_controller() {
    let mut p = pipeline(2);
    assert!(send(&p, 1, udp4(1, 2)).outputs.is_empty());
    add(
        &mut p,
        flow(
            0,
            vec![],
            vec![apply(vec![Action::Output {
                port: v13::port::CONTROLLER,
                max_len: 128,
            }])],
        ),
    );
    let e = send(&p, 1, udp4(1, 2));
    assert_eq!(e.to_controller.len(), 1);
    assert_eq!(e.to_controller[0].reason, ofwire::PacketInReason::NoMatch);
    assert_eq!(e.to_controller[0].in_port, 1);
    assert_eq!(e.to_controller[0].max_len, 128);
}

#[test]
fn priorities_and_masks_pick_the_right_rule() {
    let mut p = pipeline(4);
    add(&mut p, flow(10, vec![Oxm::EthType(0x0800)], vec![apply(vec![out(2)])]));
    add(
        &mut p,
        flow(
            20,
            vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(Ipv4Addr::new(10, 0, 0, 0), Some(Ipv4Addr::new(255, 255, 255, 0))),
            ],
            vec![apply(vec![out(3)])],
        ),
    );
    add(
        &mut p,
        flow(
            30,
            vec![Oxm::EthType(0x0800), Oxm::IpProto(17), Oxm::UdpDst(53)],
            vec![apply(vec![out(4)])],
        ),
    );
    assert_eq!(ports_of(&send(&p, 1, udp4(1, 53))), [4]);
    assert_eq!(ports_of(&send(&p, 1, udp4(1, 54))), [3]);
    assert_eq!(ports_of(&send(&p, 1, udp6())), Vec::<u32>::new());
    let t0 = &p.tables[0];
    assert_eq!(t0.rules.len(), 3);
    assert_eq!(t0.rules.subtables(), 3);
}

#[test]
fn flood_all_and_in_port_follow_the_spec() {
    let mut p = pipeline(4);
    add(
        &mut p,
        flow(1, vec![Oxm::InPort(1)], vec![apply(vec![out(v13::port::FLOOD)])]),
    );
    add(
        &mut p,
        flow(1, vec![Oxm::InPort(2)], vec![apply(vec![out(v13::port::IN_PORT)])]),
    );
    add(&mut p, flow(1, vec![Oxm::InPort(3)], vec![apply(vec![out(3)])]));
    assert_eq!(ports_of(&send(&p, 1, udp4(1, 2))), [2, 3, 4]);
    assert_eq!(ports_of(&send(&p, 2, udp4(1, 2))), [2]);
    assert!(
        ports_of(&send(&p, 3, udp4(1, 2))).is_empty(),
        "output to the input port needs IN_PORT"
    );
}

fn set(o: Oxm) -> Action {
    Action::SetField(o)
}

#[test]
fn every_ipv4_rewrite_lands_with_correct_checksums() {
    let mut p = pipeline(2);
    add(
        &mut p,
        flow(
            5,
            vec![Oxm::EthType(0x0800), Oxm::IpProto(17)],
            vec![apply(vec![
                set(Oxm::EthSrc(MacAddr([2, 9, 9, 9, 9, 1]), None)),
                set(Oxm::EthDst(MacAddr([2, 9, 9, 9, 9, 2]), None)),
                set(Oxm::Ipv4Src(Ipv4Addr::new(192, 168, 1, 7), None)),
                set(Oxm::Ipv4Dst(Ipv4Addr::new(172, 16, 0, 9), None)),
                set(Oxm::IpDscp(46)),
                set(Oxm::IpEcn(1)),
                set(Oxm::UdpSrc(5555)),
                set(Oxm::UdpDst(6666)),
                Action::DecNwTtl,
                out(2),
            ])],
        ),
    );
    let e = send(&p, 1, udp4(1234, 53));
    let f = &e.outputs[0].1.data;
    let s = SlicedPacket::from_ethernet(f).unwrap();
    let Some(etherparse::LinkSlice::Ethernet2(eth)) = s.link else {
        panic!()
    };
    assert_eq!(eth.source(), [2, 9, 9, 9, 9, 1]);
    assert_eq!(eth.destination(), [2, 9, 9, 9, 9, 2]);
    let Some(etherparse::NetSlice::Ipv4(ip)) = &s.net else {
        panic!()
    };
    let h = ip.header();
    assert_eq!(h.source(), [192, 168, 1, 7]);
    assert_eq!(h.destination(), [172, 16, 0, 9]);
    assert_eq!(h.dcp().value(), 46);
    assert_eq!(h.ecn().value(), 1);
    assert_eq!(h.ttl(), 63);
    let Some(TransportSlice::Udp(u)) = &s.transport else {
        panic!()
    };
    assert_eq!((u.source_port(), u.destination_port()), (5555, 6666));
    assert_checksums(f);

    // TCP and ICMP checksums too.
    let mut p = pipeline(2);
    add(
        &mut p,
        flow(
            5,
            vec![Oxm::EthType(0x0800)],
            vec![apply(vec![set(Oxm::Ipv4Dst(Ipv4Addr::new(10, 7, 7, 7), None)), out(2)])],
        ),
    );
    add(
        &mut p,
        flow(
            6,
            vec![Oxm::EthType(0x0800), Oxm::IpProto(6)],
            vec![apply(vec![
                set(Oxm::TcpSrc(1)),
                set(Oxm::TcpDst(8080)),
                set(Oxm::Ipv4Src(Ipv4Addr::new(1, 2, 3, 4), None)),
                out(2),
            ])],
        ),
    );
    add(
        &mut p,
        flow(
            6,
            vec![Oxm::EthType(0x0800), Oxm::IpProto(1)],
            vec![apply(vec![set(Oxm::Icmpv4Type(0)), set(Oxm::Icmpv4Code(0)), out(2)])],
        ),
    );
    let f = send(&p, 1, tcp4()).outputs.remove(0).1.data;
    assert_checksums(&f);
    let s = SlicedPacket::from_ethernet(&f).unwrap();
    let Some(TransportSlice::Tcp(t)) = &s.transport else {
        panic!()
    };
    assert_eq!((t.source_port(), t.destination_port()), (1, 8080));
    let f = send(&p, 1, icmp4()).outputs.remove(0).1.data;
    assert_checksums(&f);
    let s = SlicedPacket::from_ethernet(&f).unwrap();
    let Some(TransportSlice::Icmpv4(ic)) = &s.transport else {
        panic!()
    };
    assert!(matches!(ic.icmp_type(), Icmpv4Type::EchoReply(_)));
}

/// OpenFlow 1.3 section 7.2.5: a set_field whose field's header the
/// match (or an earlier push) does not promise is MATCH_INCONSISTENT, as
/// Open vSwitch answers too; OpenFlow 1.0's set actions have no such rule.
#[test]
fn set_field_needs_its_prerequisites_in_the_match_or_an_earlier_push() {
    use ofwire::error::BadActionCode;
    let mut p = pipeline(2);
    let inconsistent = Err(ErrorCode::BadAction(BadActionCode::MatchInconsistent));
    for (fields, actions) in [
        (
            vec![Oxm::InPort(1)],
            vec![set(Oxm::Ipv4Dst([10, 0, 0, 9].into(), None))],
        ),
        (vec![Oxm::EthType(0x0800)], vec![set(Oxm::UdpDst(53))]),
        (
            vec![Oxm::EthType(0x86dd), Oxm::IpProto(17)],
            vec![set(Oxm::Ipv4Src([10, 0, 0, 9].into(), None))],
        ),
        (vec![Oxm::InPort(1)], vec![set(Oxm::VlanPcp(5))]),
        (vec![Oxm::InPort(1)], vec![set(Oxm::IpDscp(46))]),
        (
            vec![Oxm::InPort(1)],
            vec![Action::PushVlan(0x8100), Action::PopVlan, set(Oxm::VlanPcp(5))],
        ),
    ] {
        let fm = flow(5, fields.clone(), vec![apply(actions.clone())]);
        assert_eq!(
            p.flow_mod(&fm, Instant::now()).map(|_| ()),
            inconsistent,
            "{fields:?} {actions:?}"
        );
    }
    for (fields, actions) in [
        (
            vec![Oxm::EthType(0x0800)],
            vec![set(Oxm::Ipv4Dst([10, 0, 0, 9].into(), None))],
        ),
        (
            vec![Oxm::EthType(0x0800), Oxm::IpProto(17)],
            vec![set(Oxm::UdpDst(53)), set(Oxm::IpDscp(46))],
        ),
        (
            vec![Oxm::InPort(1)],
            vec![Action::PushVlan(0x8100), set(Oxm::VlanPcp(5))],
        ),
        (vec![Oxm::VlanVid(0x1000 | 7, None)], vec![set(Oxm::VlanPcp(5))]),
        (
            vec![Oxm::InPort(1)],
            vec![set(Oxm::EthDst(MacAddr([2, 0, 0, 0, 0, 9]), None))],
        ),
    ] {
        let fm = flow(5, fields.clone(), vec![apply(actions.clone())]);
        assert!(p.flow_mod(&fm, Instant::now()).is_ok(), "{fields:?} {actions:?}");
    }
    // The same rewrite as OpenFlow 1.0 would send it (set_nw_dst on any packet).
    let fm = flow(
        5,
        vec![Oxm::InPort(1)],
        vec![apply(vec![set(Oxm::Ipv4Dst([10, 0, 0, 9].into(), None))])],
    );
    assert!(p.flow_mod_v10(&fm, Instant::now()).is_ok());
}

#[test]
fn ipv6_rewrites_keep_the_udp_checksum() {
    let mut p = pipeline(2);
    add(
        &mut p,
        flow(
            5,
            vec![Oxm::EthType(0x86dd), Oxm::IpProto(17)],
            vec![apply(vec![
                set(Oxm::Ipv6Src("fd00::99".parse().unwrap(), None)),
                set(Oxm::Ipv6Dst("fd00::100".parse().unwrap(), None)),
                set(Oxm::IpDscp(10)),
                set(Oxm::Ipv6Flabel(0xabcde, None)),
                set(Oxm::UdpDst(4242)),
                out(2),
            ])],
        ),
    );
    let f = send(&p, 1, udp6()).outputs.remove(0).1.data;
    assert_checksums(&f);
    let s = SlicedPacket::from_ethernet(&f).unwrap();
    let Some(etherparse::NetSlice::Ipv6(ip)) = &s.net else {
        panic!()
    };
    let h = ip.header();
    assert_eq!(Ipv6Addr::from(h.source()), "fd00::99".parse::<Ipv6Addr>().unwrap());
    assert_eq!(
        Ipv6Addr::from(h.destination()),
        "fd00::100".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(h.traffic_class() >> 2, 10);
    assert_eq!(h.flow_label().value(), 0xabcde);
}

#[test]
fn vlan_push_set_and_pop() {
    let mut p = pipeline(3);
    add(
        &mut p,
        flow(
            5,
            vec![Oxm::InPort(1)],
            vec![apply(vec![
                Action::PushVlan(0x8100),
                set(Oxm::VlanVid(0x1000 | 42, None)),
                set(Oxm::VlanPcp(5)),
                out(2),
            ])],
        ),
    );
    // Tagged frames are matched by VID and untagged on the way out.
    add(
        &mut p,
        flow(
            5,
            vec![Oxm::InPort(2), Oxm::VlanVid(0x1000 | 42, None)],
            vec![apply(vec![Action::PopVlan, out(3)])],
        ),
    );
    let original = udp4(7, 8);
    let tagged = send(&p, 1, original.clone()).outputs.remove(0).1.data;
    assert_eq!(tagged.len(), original.len() + 4);
    assert_eq!(&tagged[12..14], &[0x81, 0x00]);
    let tci = u16::from_be_bytes([tagged[14], tagged[15]]);
    assert_eq!((tci >> 13, tci & 0xfff), (5, 42));
    assert_eq!(&tagged[16..], &original[12..]);
    let back = send(&p, 2, tagged).outputs.remove(0);
    assert_eq!(back.0, 3);
    assert_eq!(back.1.data, original);
}

#[test]
fn arp_fields_can_be_matched_and_rewritten() {
    let mut p = pipeline(2);
    let mut arp = vec![0xff; 6];
    arp.extend(H1);
    arp.extend([0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    arp.extend(H1);
    arp.extend([10, 0, 0, 1]);
    arp.extend([0; 6]);
    arp.extend([10, 0, 0, 2]);
    add(
        &mut p,
        flow(
            5,
            vec![
                Oxm::EthType(0x0806),
                Oxm::ArpOp(1),
                Oxm::ArpTpa(Ipv4Addr::new(10, 0, 0, 2), None),
            ],
            vec![apply(vec![
                set(Oxm::ArpOp(2)),
                set(Oxm::ArpTha(MacAddr(H2), None)),
                set(Oxm::ArpSpa(Ipv4Addr::new(10, 0, 0, 9), None)),
                out(2),
            ])],
        ),
    );
    let f = send(&p, 1, arp).outputs.remove(0).1.data;
    assert_eq!(&f[20..22], &[0, 2]);
    assert_eq!(&f[28..32], &[10, 0, 0, 9]);
    assert_eq!(&f[32..38], &H2);
}

#[test]
fn tables_metadata_and_the_action_set() {
    let mut p = pipeline(3);
    // Table 0: write metadata, write an output to 2 and a rewrite; go to 1.
    add(
        &mut p,
        flow(
            1,
            vec![Oxm::InPort(1)],
            vec![
                Instruction::WriteMetadata {
                    metadata: 0xab,
                    mask: 0xff,
                },
                Instruction::WriteActions(vec![out(2), set(Oxm::EthDst(MacAddr([2, 5, 5, 5, 5, 5]), None))]),
                Instruction::GotoTable(3),
            ],
        ),
    );
    // Table 3: metadata 0xab with UDP port 99 replaces the output by 3.
    add(
        &mut p,
        FlowMod {
            table_id: 3,
            ..flow(
                1,
                vec![
                    Oxm::Metadata(0xab, None),
                    Oxm::EthType(0x0800),
                    Oxm::IpProto(17),
                    Oxm::UdpDst(99),
                ],
                vec![Instruction::WriteActions(vec![out(3)])],
            )
        },
    );
    // And with port 98 the action set is cleared: nothing goes out.
    add(
        &mut p,
        FlowMod {
            table_id: 3,
            ..flow(
                1,
                vec![
                    Oxm::Metadata(0xab, None),
                    Oxm::EthType(0x0800),
                    Oxm::IpProto(17),
                    Oxm::UdpDst(98),
                ],
                vec![Instruction::ClearActions],
            )
        },
    );
    let e = send(&p, 1, udp4(1, 99));
    assert_eq!(ports_of(&e), [3]);
    assert_eq!(
        &e.outputs[0].1.data[0..6],
        &[2, 5, 5, 5, 5, 5],
        "the set's rewrite runs before its output"
    );
    assert!(send(&p, 1, udp4(1, 98)).outputs.is_empty());
    // A miss in table 3 drops, even with an output in the action set.
    assert!(send(&p, 1, udp4(1, 97)).outputs.is_empty());
    assert_eq!(p.tables[3].lookups.get().packet_count, 3);
    assert_eq!(p.tables[3].matched.get().packet_count, 2);
}

#[test]
fn flow_mod_errors_name_the_problem() {
    let mut p = pipeline(2);
    let now = Instant::now();
    let mut fm = flow(1, vec![], vec![Instruction::GotoTable(0)]);
    assert_eq!(
        p.flow_mod(&fm, now).err(),
        Some(ErrorCode::BadInstruction(ofwire::error::BadInstructionCode::BadTableId))
    );
    fm.instructions = vec![apply(vec![Action::Group(7)])];
    assert_eq!(
        p.flow_mod(&fm, now).err(),
        Some(ErrorCode::BadAction(ofwire::error::BadActionCode::BadOutGroup))
    );
    fm.instructions = vec![apply(vec![out(9)])];
    assert_eq!(
        p.flow_mod(&fm, now).err(),
        Some(ErrorCode::BadAction(ofwire::error::BadActionCode::BadOutPort))
    );
    fm.instructions = vec![Instruction::Meter(3)];
    assert_eq!(
        p.flow_mod(&fm, now).err(),
        Some(ErrorCode::MeterModFailed(
            ofwire::error::MeterModFailedCode::UnknownMeter
        ))
    );
    fm.instructions = vec![];
    fm.table_id = 100;
    assert_eq!(
        p.flow_mod(&fm, now).err(),
        Some(ErrorCode::FlowModFailed(ofwire::error::FlowModFailedCode::BadTableId))
    );
    // CHECK_OVERLAP: same priority, overlapping matches.
    add(&mut p, flow(7, vec![Oxm::InPort(1)], vec![]));
    let mut o = flow(7, vec![Oxm::EthType(0x0800)], vec![]);
    o.flags = v13::flow_mod_flags::CHECK_OVERLAP;
    assert_eq!(
        p.flow_mod(&o, now).err(),
        Some(ErrorCode::FlowModFailed(ofwire::error::FlowModFailedCode::Overlap))
    );
    o.match_ = Match::new(vec![Oxm::InPort(2)]);
    assert!(p.flow_mod(&o, now).is_ok(), "disjoint in_port: no overlap");
}

#[test]
fn modify_and_delete_strict_and_loose_with_cookies() {
    let mut p = pipeline(3);
    for (prio, port, cookie) in [(10, 2, 0x10), (20, 3, 0x20)] {
        let mut fm = flow(
            prio,
            vec![Oxm::InPort(1), Oxm::EthType(0x0800)],
            vec![apply(vec![out(port)])],
        );
        fm.cookie = cookie;
        add(&mut p, fm);
    }
    add(&mut p, flow(5, vec![Oxm::InPort(2)], vec![apply(vec![out(1)])]));
    // Loose modify of everything in_port=1 with cookie 0x10.
    let mut m = flow(0, vec![Oxm::InPort(1)], vec![apply(vec![out(v13::port::FLOOD)])]);
    m.command = v13::FlowModCommand::Modify;
    m.cookie = 0x10;
    m.cookie_mask = 0xff;
    add(&mut p, m);
    let rules: Vec<_> = p.tables[0]
        .rules
        .iter()
        .map(|r| (r.priority, r.instructions.clone()))
        .collect();
    assert!(rules.contains(&(10, vec![apply(vec![out(v13::port::FLOOD)])])));
    assert!(rules.contains(&(20, vec![apply(vec![out(3)])])));
    // Delete by out_port: only the rule sending to 3 goes.
    let mut d = flow(0, vec![], vec![]);
    d.command = v13::FlowModCommand::Delete;
    d.table_id = v13::TABLE_ALL;
    d.out_port = 3;
    let removed = p.flow_mod(&d, Instant::now()).unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].0.priority, 20);
    // Strict delete needs the exact match and priority.
    let mut d = flow(5, vec![Oxm::InPort(2)], vec![]);
    d.command = v13::FlowModCommand::DeleteStrict;
    assert_eq!(p.flow_mod(&d, Instant::now()).unwrap().len(), 1);
    assert_eq!(p.rule_count(), 1);
}

fn group(p: &mut Pipeline, id: u32, kind: GroupType, buckets: Vec<(u16, u32, Vec<Action>)>) {
    let gm = GroupMod {
        command: GroupModCommand::Add,
        group_type: kind,
        group_id: id,
        buckets: buckets
            .into_iter()
            .map(|(weight, watch_port, actions)| Bucket {
                weight,
                watch_port,
                watch_group: v13::GROUP_ANY,
                actions,
            })
            .collect(),
    };
    p.group_mod(&gm, Instant::now()).expect("group accepted");
}

#[test]
fn groups_all_select_indirect_and_fast_failover() {
    let any = v13::port::ANY;
    let mut p = pipeline(4);
    group(
        &mut p,
        1,
        GroupType::All,
        vec![(0, any, vec![out(2)]), (0, any, vec![out(3)])],
    );
    group(
        &mut p,
        2,
        GroupType::Select,
        vec![(1, any, vec![out(2)]), (1, any, vec![out(3)]), (2, any, vec![out(4)])],
    );
    group(
        &mut p,
        3,
        GroupType::Indirect,
        vec![(0, any, vec![set(Oxm::IpDscp(8)), out(4)])],
    );
    group(
        &mut p,
        4,
        GroupType::FastFailover,
        vec![(0, 2, vec![out(2)]), (0, 3, vec![out(3)])],
    );
    for (udp, g) in [(1u16, 1u32), (2, 2), (3, 3), (4, 4)] {
        add(
            &mut p,
            flow(
                5,
                vec![Oxm::EthType(0x0800), Oxm::IpProto(17), Oxm::UdpDst(udp)],
                vec![apply(vec![Action::Group(g)])],
            ),
        );
    }
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 1))), [2, 3]);
    // Select: the same flow always takes the same bucket; many flows use all
    // buckets, roughly by weight.
    let first = ports_of(&send(&p, 1, udp4(777, 2)));
    assert_eq!(first.len(), 1);
    for _ in 0..5 {
        assert_eq!(ports_of(&send(&p, 1, udp4(777, 2))), first);
    }
    let mut hits = [0u32; 5];
    for sport in 0..2000u16 {
        hits[ports_of(&send(&p, 1, udp4(sport, 2)))[0] as usize] += 1;
    }
    assert!(
        hits[2] > 300 && hits[3] > 300 && hits[4] > 700,
        "spread by weight 1:1:2: {hits:?}"
    );
    let f = send(&p, 1, udp4(9, 3)).outputs.remove(0);
    assert_eq!(f.0, 4);
    assert_checksums(&f.1.data);
    // Fast failover: port 2 while live, then port 3.
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 4))), [2]);
    p.set_link(2, false);
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 4))), [3]);
    p.set_link(3, false);
    assert!(send(&p, 1, udp4(9, 4)).outputs.is_empty());
    p.set_link(2, true);
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 4))), [2]);
    // Deleting a group removes the flows that use it.
    let del = GroupMod {
        command: GroupModCommand::Delete,
        group_type: GroupType::All,
        group_id: 1,
        buckets: vec![],
    };
    assert_eq!(p.group_mod(&del, Instant::now()).unwrap().len(), 1);
    assert!(send(&p, 1, udp4(9, 1)).outputs.is_empty());
    let g = &p.groups[&2];
    assert_eq!(g.counter.get().packet_count, 2006);
}

#[test]
fn idle_and_hard_timeouts_expire() {
    let mut p = pipeline(2);
    let now = Instant::now();
    let mut idle = flow(1, vec![Oxm::InPort(1)], vec![apply(vec![out(2)])]);
    idle.idle_timeout = 1;
    let mut hard = flow(1, vec![Oxm::InPort(2)], vec![apply(vec![out(1)])]);
    hard.hard_timeout = 2;
    p.flow_mod(&idle, now).unwrap();
    p.flow_mod(&hard, now).unwrap();
    assert!(p.expired(now + Duration::from_millis(900)).is_empty());
    let e = p.expired(now + Duration::from_millis(1100));
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].1, ofwire::FlowRemovedReason::IdleTimeout);
    let e = p.expired(now + Duration::from_millis(2100));
    assert_eq!(e.len(), 2);
    assert!(e.iter().any(|(_, r)| *r == ofwire::FlowRemovedReason::HardTimeout));
    p.expire(&e);
    assert_eq!(p.rule_count(), 0);
}

#[test]
fn a_meter_drops_what_exceeds_its_band() {
    let mut p = pipeline(2);
    let mm = v13::MeterMod {
        command: v13::MeterModCommand::Add,
        flags: v13::meter_flags::PKTPS | v13::meter_flags::BURST,
        meter_id: 1,
        bands: vec![v13::MeterBand::Drop {
            rate: 10,
            burst_size: 10,
        }],
    };
    p.meter_mod(&mm, Instant::now()).unwrap();
    add(
        &mut p,
        flow(
            1,
            vec![Oxm::InPort(1)],
            vec![Instruction::Meter(1), apply(vec![out(2)])],
        ),
    );
    let passed: usize = (0..100).map(|_| send(&p, 1, udp4(1, 2)).outputs.len()).sum();
    assert!((10..=12).contains(&passed), "burst of 10 then ~10 pps: {passed} passed");
    let m = &p.meters[&1];
    assert_eq!(m.counter.get().packet_count, 100);
    assert_eq!(m.band_counters[0].get().packet_count as usize, 100 - passed);
}

#[test]
fn counters_follow_hits() {
    let mut p = pipeline(2);
    add(&mut p, flow(1, vec![Oxm::InPort(1)], vec![apply(vec![out(2)])]));
    let f = udp4(1, 2);
    for _ in 0..3 {
        send(&p, 1, f.clone());
    }
    let r = p.tables[0].rules.iter().next().unwrap().clone();
    assert_eq!((r.packets(), r.bytes()), (3, 3 * f.len() as u64));
}

/// The datapath counts a batch at once for plans that allow it: the same
/// frames counted per packet and in bulk leave the same rule and table
/// counters; plans with meters, TTL or groups are never counted in bulk.
#[test]
fn bulk_counting_equals_per_packet_counting() {
    let program = |p: &mut Pipeline| {
        add(p, flow(5, vec![Oxm::InPort(1)], vec![Instruction::GotoTable(1)]));
        add(
            p,
            FlowMod {
                table_id: 1,
                ..flow(5, vec![Oxm::EthType(0x0800)], vec![apply(vec![out(2)])])
            },
        );
    };
    let (mut a, mut b) = (pipeline(2), pipeline(2));
    program(&mut a);
    program(&mut b);
    let frames: Vec<Vec<u8>> = (0..10u16).map(|i| udp4(1000 + i, 2000)).collect();
    let now = Instant::now();
    let mut emitted = Emitted::default();
    for f in &frames {
        a.forward(&mut Packet::new(f.clone(), 1), now, &mut emitted);
    }
    let mut total = 0u64;
    let plan = b.plan(&Packet::new(frames[0].clone(), 1).key);
    assert!(Pipeline::counts_in_bulk(&plan));
    for f in &frames {
        let mut pkt = Packet::new(f.clone(), 1);
        total += pkt.data.len() as u64;
        Pipeline::execute_counting(&plan, &mut pkt, b.now_ms(now), now, &mut emitted, false);
    }
    b.count_bulk(&plan, frames.len() as u64, total, b.now_ms(now));
    for t in 0..2 {
        for (x, y) in [
            (&a.tables[t].lookups, &b.tables[t].lookups),
            (&a.tables[t].matched, &b.tables[t].matched),
        ] {
            let (x, y) = (x.get(), y.get());
            assert_eq!(
                (x.packet_count, x.byte_count),
                (y.packet_count, y.byte_count),
                "table {t}"
            );
        }
        let (ra, rb) = (
            a.tables[t].rules.iter().next().unwrap().clone(),
            b.tables[t].rules.iter().next().unwrap().clone(),
        );
        assert_eq!((ra.packets(), ra.bytes()), (rb.packets(), rb.bytes()));
        assert_eq!(ra.packets(), 10);
    }
    // A TTL decrement can drop a packet half way: counted per packet.
    add(
        &mut b,
        flow(9, vec![Oxm::InPort(2)], vec![apply(vec![Action::DecNwTtl, out(1)])]),
    );
    assert!(!Pipeline::counts_in_bulk(
        &b.plan(&Packet::new(frames[0].clone(), 2).key)
    ));
}

#[test]
fn a_million_rules_fit_and_each_is_matched() {
    let mut p = pipeline(2);
    let now = Instant::now();
    let n = 1_000_000u32;
    for i in 0..n {
        let fm = flow(
            100,
            vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(Ipv4Addr::from(0x0a00_0000 + i), None),
            ],
            vec![apply(vec![out(2)])],
        );
        p.flow_mod(&fm, now).unwrap();
    }
    add(&mut p, flow(0, vec![], vec![apply(vec![out(1)])]));
    assert_eq!(p.rule_count(), n as usize + 1);
    // A sample across the range hits its own rule, and a miss hits the
    // table-miss rule.
    for i in (0..n).step_by(9973) {
        let mut v = Vec::new();
        PacketBuilder::ethernet2(H1, H2)
            .ipv4([10, 200, 0, 1], Ipv4Addr::from(0x0a00_0000 + i).octets(), 64)
            .udp(1, 2)
            .write(&mut v, b"x")
            .unwrap();
        assert_eq!(ports_of(&send(&p, 1, v)), [2], "rule {i}");
    }
    let mut v = Vec::new();
    PacketBuilder::ethernet2(H1, H2)
        .ipv4([10, 200, 0, 1], [11, 0, 0, 1], 64)
        .udp(1, 2)
        .write(&mut v, b"x")
        .unwrap();
    assert_eq!(ports_of(&send(&p, 2, v)), [1]);
}

/// A GROUP_MOD of one bucket with `actions` (an indirect group).
fn group_mod(p: &mut Pipeline, command: GroupModCommand, id: u32, actions: Vec<Action>) -> Result<(), ErrorCode> {
    let gm = GroupMod {
        command,
        group_type: GroupType::Indirect,
        group_id: id,
        buckets: vec![Bucket {
            weight: 0,
            watch_port: v13::port::ANY,
            watch_group: v13::GROUP_ANY,
            actions,
        }],
    };
    p.group_mod(&gm, Instant::now()).map(|_| ())
}

/// Loops are refused however they are made: in two steps (ADD 1 -> out,
/// ADD 2 -> 1, MODIFY 1 -> 2) and in three; the switch is unchanged after
/// a refusal and still forwards through the chain it had.
#[test]
fn group_loops_are_refused_whatever_their_length() {
    use GroupModCommand::{Add, Modify};
    let lp = Err(ErrorCode::GroupModFailed(GroupModFailedCode::Loop));
    let mut p = pipeline(4);
    group_mod(&mut p, Add, 1, vec![out(2)]).unwrap();
    group_mod(&mut p, Add, 2, vec![Action::Group(1)]).unwrap();
    assert_eq!(group_mod(&mut p, Modify, 1, vec![Action::Group(2)]), lp);
    assert_eq!(group_mod(&mut p, Modify, 1, vec![Action::Group(1)]), lp, "itself");
    group_mod(&mut p, Add, 3, vec![Action::Group(2)]).unwrap();
    assert_eq!(group_mod(&mut p, Modify, 1, vec![Action::Group(3)]), lp, "three steps");
    add(
        &mut p,
        flow(5, vec![Oxm::InPort(1)], vec![apply(vec![Action::Group(3)])]),
    );
    assert_eq!(
        ports_of(&send(&p, 1, udp4(9, 1))),
        [2],
        "3 -> 2 -> 1 -> port 2, as before"
    );
}

/// A chain of `MAX_GROUP_CHAIN` groups forwards; one group more, added
/// on top or by a MODIFY at the bottom, is refused; a group another
/// forwards to cannot be deleted alone; a bucket naming no group gets
/// BAD_OUT_GROUP, as a flow would.
#[test]
fn group_chains_forward_to_the_limit_and_no_further() {
    use GroupModCommand::{Add, Delete, Modify};
    let max = ofswitch::pipeline::MAX_GROUP_CHAIN as u32;
    let too_long = Err(ErrorCode::GroupModFailed(GroupModFailedCode::ChainingUnsupported));
    let mut p = pipeline(4);
    // max -> port 2; k -> k + 1.
    group_mod(&mut p, Add, max, vec![out(2)]).unwrap();
    for k in (1..max).rev() {
        group_mod(&mut p, Add, k, vec![Action::Group(k + 1)]).unwrap();
    }
    add(
        &mut p,
        flow(5, vec![Oxm::InPort(1)], vec![apply(vec![Action::Group(1)])]),
    );
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 1))), [2], "through {max} groups");
    assert_eq!(p.groups[&max].counter.get().packet_count, 1);
    // One more on top.
    assert_eq!(group_mod(&mut p, Add, 100, vec![Action::Group(1)]), too_long);
    // One more below, by lengthening the bottom: the chains above count.
    group_mod(&mut p, Add, 101, vec![out(3)]).unwrap();
    assert_eq!(group_mod(&mut p, Modify, max, vec![Action::Group(101)]), too_long);
    // The same group below the second group of the chain is within the limit.
    group_mod(&mut p, Modify, 2, vec![Action::Group(101)]).unwrap();
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 1))), [3]);
    // Deleting a group another forwards to is refused; the chain still forwards.
    assert_eq!(
        group_mod(&mut p, Delete, 101, vec![]),
        Err(ErrorCode::GroupModFailed(GroupModFailedCode::ChainedGroup))
    );
    assert_eq!(ports_of(&send(&p, 1, udp4(9, 1))), [3]);
    // A bucket naming a group that does not exist.
    assert_eq!(
        group_mod(&mut p, Add, 102, vec![Action::Group(999)]),
        Err(ErrorCode::BadAction(BadActionCode::BadOutGroup))
    );
    // Everything at once goes.
    group_mod(&mut p, Delete, v13::GROUP_ALL, vec![]).unwrap();
    assert!(p.groups.is_empty());
}

/// Every reserved identifier where the specification does not allow it:
/// meters 0, SLOWPATH, CONTROLLER, and ALL but in a DELETE; groups ALL
/// and ANY but a DELETE of ALL; an output to ANY or NORMAL (this switch
/// has no NORMAL pipeline); a goto to a table it does not have (64 of
/// them: 0 to 63); a PORT_MOD
/// of a reserved port.
#[test]
fn reserved_identifiers_are_refused_with_the_specs_errors() {
    use ofwire::error::{BadInstructionCode, MeterModFailedCode, PortModFailedCode};
    let mut p = pipeline(2);
    let meter = |id: u32, command: v13::MeterModCommand| v13::MeterMod {
        command,
        flags: v13::meter_flags::PKTPS,
        meter_id: id,
        bands: vec![v13::MeterBand::Drop {
            rate: 10,
            burst_size: 0,
        }],
    };
    let invalid_meter = Err(ErrorCode::MeterModFailed(MeterModFailedCode::InvalidMeter));
    for id in [0, 0xffff_fffd, 0xffff_fffe, 0xffff_ffff] {
        for command in [v13::MeterModCommand::Add, v13::MeterModCommand::Modify] {
            assert_eq!(
                p.meter_mod(&meter(id, command), Instant::now()).map(|_| ()),
                invalid_meter,
                "meter {id:#x} {command:?}"
            );
        }
    }
    p.meter_mod(&meter(0xffff_0000, v13::MeterModCommand::Add), Instant::now())
        .expect("OFPM_MAX is a meter");
    p.meter_mod(&meter(0xffff_ffff, v13::MeterModCommand::Delete), Instant::now())
        .expect("a DELETE of OFPM_ALL");
    assert!(p.meters.is_empty());

    let invalid_group = Err(ErrorCode::GroupModFailed(GroupModFailedCode::InvalidGroup));
    for id in [v13::GROUP_ALL, v13::GROUP_ANY] {
        assert_eq!(
            group_mod(&mut p, GroupModCommand::Add, id, vec![out(2)]),
            invalid_group,
            "group {id:#x}"
        );
    }
    for port in [v13::port::ANY, v13::port::NORMAL, 7] {
        let r = p.flow_mod(&flow(1, vec![], vec![apply(vec![out(port)])]), Instant::now());
        assert_eq!(
            r.map(|_| ()),
            Err(ErrorCode::BadAction(BadActionCode::BadOutPort)),
            "output to {port:#x}"
        );
    }
    let r = p.flow_mod(&flow(1, vec![], vec![Instruction::GotoTable(64)]), Instant::now());
    assert_eq!(
        r.map(|_| ()),
        Err(ErrorCode::BadInstruction(BadInstructionCode::BadTableId))
    );
    let pm = v13::PortMod {
        port_no: v13::port::LOCAL,
        hw_addr: MacAddr([0; 6]),
        config: 0,
        mask: 0,
        advertise: 0,
    };
    assert_eq!(
        p.port_mod(&pm).map(|_| ()),
        Err(ErrorCode::PortModFailed(PortModFailedCode::BadPort))
    );
}
