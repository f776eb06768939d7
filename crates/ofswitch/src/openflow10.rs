//! OpenFlow 1.0 as a view of the 1.3 pipeline: 1.0 matches, actions, ports
//! and FLOW_MODs translated to their 1.3 equivalents on the way in, and
//! back for statistics and asynchronous messages. A 1.0 controller sees
//! table 0. As 1.0 says, match fields whose prerequisites are wildcarded
//! (nw_src without dl_type=IPv4, tp_dst without nw_proto) are ignored, not
//! refused.

use ofwire::error::{BadActionCode, FlowModFailed10Code, FlowModFailedCode};
use ofwire::oxm::{Match, Oxm, OFPVID_PRESENT};
use ofwire::v10::{self, wildcards as w};
use ofwire::v13::{self, Action, Instruction};
use ofwire::{ErrorCode, MacAddr};
use std::net::Ipv4Addr;

/// A 1.0 port number as 1.3 numbers it (reserved ports move to the top).
pub fn port_in(p: u16) -> u32 {
    if p >= v10::port::MAX {
        p as u32 | 0xffff_0000
    } else {
        p as u32
    }
}

/// A 1.3 port number as 1.0 numbers it.
pub fn port_out(p: u32) -> u16 {
    if p >= v13::port::MAX {
        (p & 0xffff) as u16
    } else {
        p.min(v10::port::MAX as u32 - 1) as u16
    }
}

fn prefix_mask(len: u8) -> Ipv4Addr {
    Ipv4Addr::from(if len == 0 {
        0
    } else {
        u32::MAX << (32 - len.min(32) as u32)
    })
}

/// The 1.3 match a 1.0 match stands for.
pub fn match_in(m: &v10::Match) -> Match {
    let wc = m.wildcards;
    let exact = |bit: u32| wc & bit == 0;
    let mut f = Vec::new();
    if exact(w::IN_PORT) {
        f.push(Oxm::InPort(port_in(m.in_port)));
    }
    if exact(w::DL_SRC) {
        f.push(Oxm::EthSrc(m.dl_src, None));
    }
    if exact(w::DL_DST) {
        f.push(Oxm::EthDst(m.dl_dst, None));
    }
    // OFP_VLAN_NONE (0xffff) is "untagged".
    let tagged = exact(w::DL_VLAN) && m.dl_vlan != 0xffff;
    if exact(w::DL_VLAN) {
        f.push(Oxm::VlanVid(
            if tagged {
                OFPVID_PRESENT | (m.dl_vlan & 0x0fff)
            } else {
                0
            },
            None,
        ));
    }
    if tagged && exact(w::DL_VLAN_PCP) {
        f.push(Oxm::VlanPcp(m.dl_vlan_pcp & 7));
    }
    let dl_type = exact(w::DL_TYPE).then_some(m.dl_type);
    if let Some(t) = dl_type {
        f.push(Oxm::EthType(t));
    }
    let (src_len, dst_len) = (m.nw_src_prefix_len(), m.nw_dst_prefix_len());
    let addr = |a: Ipv4Addr, len: u8| {
        (
            Ipv4Addr::from(u32::from(a) & u32::from(prefix_mask(len))),
            (len < 32).then(|| prefix_mask(len)),
        )
    };
    match dl_type {
        Some(0x0800) => {
            if exact(w::NW_TOS) {
                f.push(Oxm::IpDscp(m.nw_tos >> 2));
            }
            let proto = exact(w::NW_PROTO).then_some(m.nw_proto);
            if let Some(p) = proto {
                f.push(Oxm::IpProto(p));
            }
            if src_len > 0 {
                let (a, mk) = addr(m.nw_src, src_len);
                f.push(Oxm::Ipv4Src(a, mk));
            }
            if dst_len > 0 {
                let (a, mk) = addr(m.nw_dst, dst_len);
                f.push(Oxm::Ipv4Dst(a, mk));
            }
            match proto {
                Some(6) => {
                    if exact(w::TP_SRC) {
                        f.push(Oxm::TcpSrc(m.tp_src));
                    }
                    if exact(w::TP_DST) {
                        f.push(Oxm::TcpDst(m.tp_dst));
                    }
                }
                Some(17) => {
                    if exact(w::TP_SRC) {
                        f.push(Oxm::UdpSrc(m.tp_src));
                    }
                    if exact(w::TP_DST) {
                        f.push(Oxm::UdpDst(m.tp_dst));
                    }
                }
                Some(1) => {
                    if exact(w::TP_SRC) {
                        f.push(Oxm::Icmpv4Type(m.tp_src as u8));
                    }
                    if exact(w::TP_DST) {
                        f.push(Oxm::Icmpv4Code(m.tp_dst as u8));
                    }
                }
                _ => {}
            }
        }
        Some(0x0806) => {
            // 1.0 carries the ARP opcode's low byte in nw_proto.
            if exact(w::NW_PROTO) {
                f.push(Oxm::ArpOp(m.nw_proto as u16));
            }
            if src_len > 0 {
                let (a, mk) = addr(m.nw_src, src_len);
                f.push(Oxm::ArpSpa(a, mk));
            }
            if dst_len > 0 {
                let (a, mk) = addr(m.nw_dst, dst_len);
                f.push(Oxm::ArpTpa(a, mk));
            }
        }
        _ => {}
    }
    Match::new(f)
}

/// The 1.0 match for a 1.3 match (fields 1.0 cannot say are dropped).
pub fn match_out(m: &Match) -> v10::Match {
    let mut o = v10::Match::all();
    let len = |mask: &Option<Ipv4Addr>| mask.map_or(32, |mk| u32::from(mk).leading_ones() as u8);
    for f in &m.fields {
        match f {
            Oxm::InPort(p) => {
                o.wildcards &= !w::IN_PORT;
                o.in_port = port_out(*p);
            }
            Oxm::EthSrc(a, None) => {
                o.wildcards &= !w::DL_SRC;
                o.dl_src = *a;
            }
            Oxm::EthDst(a, None) => {
                o.wildcards &= !w::DL_DST;
                o.dl_dst = *a;
            }
            Oxm::VlanVid(v, None) => {
                o.wildcards &= !w::DL_VLAN;
                o.dl_vlan = if v & OFPVID_PRESENT != 0 { v & 0x0fff } else { 0xffff };
            }
            Oxm::VlanPcp(p) => {
                o.wildcards &= !w::DL_VLAN_PCP;
                o.dl_vlan_pcp = *p;
            }
            Oxm::EthType(t) => {
                o.wildcards &= !w::DL_TYPE;
                o.dl_type = *t;
            }
            Oxm::IpDscp(d) => {
                o.wildcards &= !w::NW_TOS;
                o.nw_tos = d << 2;
            }
            Oxm::IpProto(p) => {
                o.wildcards &= !w::NW_PROTO;
                o.nw_proto = *p;
            }
            Oxm::ArpOp(op) => {
                o.wildcards &= !w::NW_PROTO;
                o.nw_proto = *op as u8;
            }
            Oxm::Ipv4Src(a, mk) | Oxm::ArpSpa(a, mk) => o.set_nw_src_prefix(*a, len(mk)),
            Oxm::Ipv4Dst(a, mk) | Oxm::ArpTpa(a, mk) => o.set_nw_dst_prefix(*a, len(mk)),
            Oxm::TcpSrc(p) | Oxm::UdpSrc(p) => {
                o.wildcards &= !w::TP_SRC;
                o.tp_src = *p;
            }
            Oxm::TcpDst(p) | Oxm::UdpDst(p) => {
                o.wildcards &= !w::TP_DST;
                o.tp_dst = *p;
            }
            Oxm::Icmpv4Type(t) => {
                o.wildcards &= !w::TP_SRC;
                o.tp_src = *t as u16;
            }
            Oxm::Icmpv4Code(c) => {
                o.wildcards &= !w::TP_DST;
                o.tp_dst = *c as u16;
            }
            _ => {}
        }
    }
    o
}

/// 1.0 actions as a 1.3 action list.
pub fn actions_in(actions: &[v10::Action]) -> Result<Vec<Action>, ErrorCode> {
    let mut out = Vec::with_capacity(actions.len());
    for a in actions {
        out.push(match a {
            v10::Action::Output { port, max_len } => Action::Output {
                port: port_in(*port),
                max_len: *max_len,
            },
            v10::Action::Enqueue { port, .. } => Action::Output {
                port: port_in(*port),
                max_len: 0,
            },
            // 1.0 tags an untagged frame; 1.3's set_field would not.
            v10::Action::SetVlanVid(v) => crate::actions::set_vlan_or_push(*v),
            v10::Action::SetVlanPcp(p) => Action::SetField(Oxm::VlanPcp(p & 7)),
            v10::Action::StripVlan => Action::PopVlan,
            v10::Action::SetDlSrc(m) => Action::SetField(Oxm::EthSrc(*m, None)),
            v10::Action::SetDlDst(m) => Action::SetField(Oxm::EthDst(*m, None)),
            v10::Action::SetNwSrc(a) => Action::SetField(Oxm::Ipv4Src(*a, None)),
            v10::Action::SetNwDst(a) => Action::SetField(Oxm::Ipv4Dst(*a, None)),
            v10::Action::SetNwTos(t) => Action::SetField(Oxm::IpDscp(t >> 2)),
            // The switch rewrites the transport header the frame has.
            v10::Action::SetTpSrc(p) => Action::SetField(Oxm::TcpSrc(*p)),
            v10::Action::SetTpDst(p) => Action::SetField(Oxm::TcpDst(*p)),
            v10::Action::Vendor { .. } => return Err(ErrorCode::BadAction(BadActionCode::BadExperimenter)),
        });
    }
    Ok(out)
}

/// The 1.0 actions of a rule's 1.3 instructions (its apply-actions).
pub fn actions_out(insts: &[Instruction]) -> Vec<v10::Action> {
    let mut out = Vec::new();
    for i in insts {
        let Instruction::ApplyActions(list) = i else { continue };
        for a in list {
            out.push(match a {
                Action::Output { port, max_len } => v10::Action::Output {
                    port: port_out(*port),
                    max_len: *max_len,
                },
                Action::PopVlan => v10::Action::StripVlan,
                Action::SetField(Oxm::VlanVid(v, _)) => v10::Action::SetVlanVid(v & 0x0fff),
                Action::SetField(Oxm::VlanPcp(p)) => v10::Action::SetVlanPcp(*p),
                Action::SetField(Oxm::EthSrc(m, _)) => v10::Action::SetDlSrc(*m),
                Action::SetField(Oxm::EthDst(m, _)) => v10::Action::SetDlDst(*m),
                Action::SetField(Oxm::Ipv4Src(a, _)) => v10::Action::SetNwSrc(*a),
                Action::SetField(Oxm::Ipv4Dst(a, _)) => v10::Action::SetNwDst(*a),
                Action::SetField(Oxm::IpDscp(d)) => v10::Action::SetNwTos(d << 2),
                Action::SetField(Oxm::TcpSrc(p)) => v10::Action::SetTpSrc(*p),
                Action::SetField(Oxm::TcpDst(p)) => v10::Action::SetTpDst(*p),
                a @ Action::Experimenter { .. } => match crate::actions::vlan_or_push_vid(a) {
                    Some(vid) => v10::Action::SetVlanVid(vid),
                    None => continue,
                },
                _ => continue,
            });
        }
    }
    out
}

/// A 1.0 FLOW_MOD as the 1.3 FLOW_MOD the pipeline applies (table 0).
pub fn flow_mod_in(fm: &v10::FlowMod) -> Result<v13::FlowMod, ErrorCode> {
    if fm.flags & v10::flow_mod_flags::EMERG != 0 {
        return Err(ErrorCode::FlowModFailed10(FlowModFailed10Code::Unsupported));
    }
    let actions = actions_in(&fm.actions)?;
    Ok(v13::FlowMod {
        cookie: fm.cookie,
        cookie_mask: 0,
        table_id: if matches!(
            fm.command,
            v13::FlowModCommand::Delete | v13::FlowModCommand::DeleteStrict
        ) {
            v13::TABLE_ALL
        } else {
            0
        },
        command: fm.command,
        idle_timeout: fm.idle_timeout,
        hard_timeout: fm.hard_timeout,
        priority: fm.priority,
        buffer_id: fm.buffer_id,
        out_port: if fm.out_port == v10::port::NONE {
            v13::port::ANY
        } else {
            port_in(fm.out_port)
        },
        out_group: v13::GROUP_ANY,
        // SEND_FLOW_REM and CHECK_OVERLAP have the same bits in 1.3.
        flags: fm.flags & 3,
        match_: match_in(&fm.match_),
        instructions: if actions.is_empty() {
            Vec::new()
        } else {
            vec![Instruction::ApplyActions(actions)]
        },
    })
}

/// A pipeline error as 1.0 names it.
pub fn error_out(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::FlowModFailed(c) => ErrorCode::FlowModFailed10(match c {
            FlowModFailedCode::TableFull => FlowModFailed10Code::AllTablesFull,
            FlowModFailedCode::Overlap => FlowModFailed10Code::Overlap,
            FlowModFailedCode::BadCommand => FlowModFailed10Code::BadCommand,
            FlowModFailedCode::Eperm => FlowModFailed10Code::Eperm,
            _ => FlowModFailed10Code::Unsupported,
        }),
        ErrorCode::BadMatch(_) | ErrorCode::BadInstruction(_) | ErrorCode::MeterModFailed(_) => {
            ErrorCode::FlowModFailed10(FlowModFailed10Code::Unsupported)
        }
        ErrorCode::BadAction(c) if u16::from(c) > 8 => ErrorCode::BadAction(BadActionCode::BadArgument),
        other => other,
    }
}

/// A 1.3 port description as 1.0's `ofp_phy_port`.
pub fn port_desc_out(p: &v13::Port) -> v10::PhyPort {
    v10::PhyPort {
        port_no: port_out(p.port_no),
        hw_addr: p.hw_addr,
        name: p.name.clone(),
        // PORT_DOWN, NO_RECV, NO_FWD, NO_PACKET_IN keep their bits.
        config: p.config,
        // LINK_DOWN is bit 0 in both.
        state: p.state & 1,
        curr: 1 << 6, // OFPPF_10GB_FD
        advertised: 0,
        supported: 0,
        peer: 0,
    }
}

/// A placeholder hardware address for messages that need one.
pub const NO_MAC: MacAddr = MacAddr([0; 6]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1_0_match_round_trips_through_1_3() {
        let mut m = v10::Match::all();
        m.wildcards &= !(w::IN_PORT | w::DL_TYPE | w::NW_PROTO | w::TP_DST | w::DL_DST);
        m.in_port = 3;
        m.dl_type = 0x0800;
        m.nw_proto = 17;
        m.tp_dst = 53;
        m.dl_dst = MacAddr([2, 0, 0, 0, 0, 9]);
        m.set_nw_dst_prefix(Ipv4Addr::new(10, 1, 0, 0), 16);
        let m13 = match_in(&m);
        assert!(m13.fields.contains(&Oxm::UdpDst(53)));
        assert!(m13.fields.contains(&Oxm::Ipv4Dst(
            Ipv4Addr::new(10, 1, 0, 0),
            Some(Ipv4Addr::new(255, 255, 0, 0))
        )));
        crate::matching::keys_of(&m13).expect("valid 1.3 match");
        let back = match_out(&m13);
        assert_eq!(back.wildcards, m.wildcards);
        assert_eq!(
            (back.in_port, back.tp_dst, back.nw_dst),
            (3, 53, Ipv4Addr::new(10, 1, 0, 0))
        );
    }

    #[test]
    fn set_vlan_vid_tags_untagged_frames_and_retags_tagged_ones() {
        use crate::actions::Packet;
        use crate::pipeline::{Emitted, Pipeline, PortState};
        let mut p = Pipeline::new(4, 100);
        for n in 1..=2 {
            p.add_port(PortState::up(n, format!("p{n}"), NO_MAC, 1));
        }
        let fm = v10::FlowMod {
            match_: v10::Match::all(),
            cookie: 0,
            command: v13::FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 1,
            buffer_id: v10::NO_BUFFER,
            out_port: v10::port::NONE,
            flags: 0,
            actions: vec![v10::Action::SetVlanVid(42), v10::Action::Output { port: 2, max_len: 0 }],
        };
        p.flow_mod_v10(&flow_mod_in(&fm).unwrap(), std::time::Instant::now())
            .unwrap();
        let mut untagged = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x06];
        untagged.resize(60, 0);
        let mut out = Emitted::default();
        p.forward(
            &mut Packet::new(untagged.clone(), 1),
            std::time::Instant::now(),
            &mut out,
        );
        let f = &out.outputs[0].1.data;
        assert_eq!(&f[12..16], &[0x81, 0x00, 0x00, 42], "a tag was pushed");
        let mut out = Emitted::default();
        p.forward(&mut Packet::new(f.clone(), 1), std::time::Instant::now(), &mut out);
        assert_eq!(
            out.outputs[0].1.data.len(),
            f.len(),
            "a tagged frame is retagged, not tagged twice"
        );
        let stored = &p.tables[0].rules.iter().next().unwrap().instructions;
        assert_eq!(actions_out(stored)[0], v10::Action::SetVlanVid(42));
    }

    #[test]
    fn fields_without_their_prerequisites_are_ignored() {
        let mut m = v10::Match::all();
        m.wildcards &= !(w::TP_DST | w::NW_PROTO);
        m.nw_proto = 6;
        m.tp_dst = 80;
        assert!(
            match_in(&m).fields.is_empty(),
            "no dl_type: IP and TCP fields do not apply"
        );
        assert_eq!(port_in(v10::port::CONTROLLER), v13::port::CONTROLLER);
        assert_eq!(port_out(v13::port::FLOOD), v10::port::FLOOD);
    }
}
