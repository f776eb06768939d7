//! One switch, emulated without I/O: the pipeline and the agent of the
//! switch that runs on real interfaces (`switchd`), fed whole frames by
//! port and decoded controller messages by connection, answering with
//! frames to send by port and messages for each connection. The model
//! behind the controller benchmark's emulated fabrics (`ctlbench`) and
//! the controller's tests (a network with no sockets), so what they
//! measure and check is what sdnlab's switch does: every match field,
//! instruction, group, meter, role, buffer and error of the real agent.
//!
//! What the running switch adds and this leaves out: port I/O, the
//! datapath threads' flow cache and the in-kernel fast path (none of which
//! changes what a frame does), and the connection's HELLO exchange (the
//! caller negotiates the version, then `connect`s).

use crate::actions::Packet;
use crate::agent::{Agent, Effects, Identity};
use crate::flow::Rule;
use crate::pipeline::{Emitted, Pipeline, PortState};
use ofwire::{v10, v13, Body, DescStats, MacAddr, Message};
use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Instant;

/// What the switch does in answer to an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A message for controller connection `conn`.
    ToController { conn: usize, msg: Message },
    /// A frame leaving by a port (towards a neighbour switch or a host).
    Transmit { port: u32, frame: Vec<u8> },
}

/// What the switch did, counted as it went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// PACKET_IN messages sent (one per connection that got it).
    pub packet_ins: u64,
    /// OFPT_ERROR messages sent.
    pub errors: u64,
    pub frames_in: u64,
    pub frames_out: u64,
}

/// The hardware address of an emulated port: `0e` (locally administered),
/// three bytes of the datapath id, two of the port.
pub fn port_mac(dpid: u64, port: u32) -> MacAddr {
    MacAddr([
        0x0e,
        (dpid >> 16) as u8,
        (dpid >> 8) as u8,
        dpid as u8,
        (port >> 8) as u8,
        port as u8,
    ])
}

/// The emulated ports' speed, kbit/s (10 Gb/s).
pub const PORT_SPEED_KBPS: u32 = 10_000_000;

pub struct Emulated {
    pub agent: Agent,
    pub datapath_id: u64,
    pub counters: Counters,
}

impl Emulated {
    /// A switch with ports 1..=`ports` (named `eth1`.., addresses from
    /// `port_mac`, links up) and `n_tables` flow tables, holding at most
    /// `max_rules` rules.
    pub fn new(datapath_id: u64, ports: u32, n_tables: usize, max_rules: usize, desc: DescStats) -> Emulated {
        let mut p = Pipeline::new(n_tables, max_rules);
        for port_no in 1..=ports {
            p.add_port(PortState::up(
                port_no,
                format!("eth{port_no}"),
                port_mac(datapath_id, port_no),
                PORT_SPEED_KBPS,
            ));
        }
        let agent = Agent::new(Arc::new(RwLock::new(p)), Identity { datapath_id, desc });
        Emulated {
            agent,
            datapath_id,
            counters: Counters::default(),
        }
    }

    /// A controller connection that negotiated `version` in its HELLO
    /// exchange; its number for `on_message`.
    pub fn connect(&mut self, version: u8) -> usize {
        self.agent.connect(version)
    }

    /// The connection closed (its role and its 1.0 miss rule go with it).
    pub fn disconnect(&mut self, conn: usize) {
        self.agent.disconnect(conn);
    }

    /// A message from connection `conn`.
    pub fn on_message(&mut self, conn: usize, m: &Message, out: &mut Vec<Effect>) {
        self.run(out, |agent, fx| agent.on_message(conn, m, Instant::now(), fx));
    }

    /// A frame arriving by `in_port`. A port whose link is down receives
    /// nothing.
    pub fn on_frame(&mut self, in_port: u32, frame: Vec<u8>, out: &mut Vec<Effect>) {
        let now = Instant::now();
        let mut emitted = Emitted::default();
        {
            let p = self.agent.pipeline.read().unwrap_or_else(|e| e.into_inner());
            let Some(port) = p.ports.get(&in_port).filter(|q| q.link_up) else {
                return;
            };
            port.counters.rx.add_many(1, frame.len() as u64);
            self.counters.frames_in += 1;
            let mut pkt = Packet::new(frame, in_port);
            p.forward(&mut pkt, now, &mut emitted);
        }
        self.run(out, |agent, fx| agent.emit(emitted, fx));
    }

    /// A port's link goes down or up: the controllers hear PORT_STATUS
    /// (when it changed).
    pub fn set_link(&mut self, port: u32, up: bool, out: &mut Vec<Effect>) {
        self.run(out, |agent, fx| agent.link_changed(port, up, fx));
    }

    /// Removes the rules whose timeouts passed (FLOW_REMOVED for those
    /// that asked).
    pub fn expire(&mut self, now: Instant, out: &mut Vec<Effect>) {
        self.run(out, |agent, fx| agent.expire(now, fx));
    }

    /// The pipeline, to read (tables, rules, ports, counters).
    pub fn pipeline(&self) -> RwLockReadGuard<'_, Pipeline> {
        self.agent.pipeline.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The rules of table `table`, highest priority first.
    pub fn rules(&self, table: u8) -> Vec<Arc<Rule>> {
        let p = self.pipeline();
        let mut rules: Vec<Arc<Rule>> = p
            .tables
            .get(table as usize)
            .map(|t| t.rules.iter().cloned().collect())
            .unwrap_or_default();
        rules.sort_by_key(|r| std::cmp::Reverse(r.priority));
        rules
    }

    /// Rules in all tables.
    pub fn rule_count(&self) -> usize {
        self.pipeline().rule_count()
    }

    /// Has the agent do `f`, then turns what it wants done into effects:
    /// frames for ports whose link is up (counted), messages as they are.
    fn run(&mut self, out: &mut Vec<Effect>, f: impl FnOnce(&mut Agent, &mut Effects)) {
        let mut fx = Effects::default();
        f(&mut self.agent, &mut fx);
        {
            let p = self.agent.pipeline.read().unwrap_or_else(|e| e.into_inner());
            for (port, pkt) in fx.frames {
                // A frame for a port whose link is down goes nowhere.
                let Some(q) = p.ports.get(&port).filter(|q| q.link_up) else {
                    continue;
                };
                q.counters.tx.add_many(1, pkt.data.len() as u64);
                self.counters.frames_out += 1;
                out.push(Effect::Transmit { port, frame: pkt.data });
            }
        }
        for (conn, msg) in fx.messages {
            match &msg.body {
                Body::V10(v10::Body::PacketIn(_)) | Body::V13(v13::Body::PacketIn(_)) => self.counters.packet_ins += 1,
                Body::V10(v10::Body::Error(_)) | Body::V13(v13::Body::Error(_)) => self.counters.errors += 1,
                _ => {}
            }
            out.push(Effect::ToController { conn, msg });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofwire::error::FlowModFailedCode;
    use ofwire::oxm::{Match, Oxm};
    use ofwire::{ErrorCode, PacketInReason, OFP10_VERSION, OFP13_VERSION};
    use std::net::Ipv4Addr;

    fn switch() -> Emulated {
        Emulated::new(9, 4, 4, 1000, DescStats::default())
    }

    /// An IPv4/UDP frame 10.0.0.1 -> 10.0.1.2, ports 1000 -> 53.
    fn udp() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2]);
        f.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 8, 0, 0]);
        f
    }

    fn flow13(table: u8, priority: u16, fields: Vec<Oxm>, ins: Vec<v13::Instruction>) -> Message {
        let mut fm = v13::FlowMod::add(priority);
        fm.table_id = table;
        fm.match_ = Match::new(fields);
        fm.instructions = ins;
        Message::v13(1, v13::Body::FlowMod(fm))
    }

    fn outputs(effects: &[Effect]) -> Vec<u32> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Transmit { port, .. } => Some(*port),
                _ => None,
            })
            .collect()
    }

    fn packet_ins(effects: &[Effect]) -> Vec<(usize, &Message)> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::ToController { conn, msg }
                    if matches!(
                        msg.body,
                        Body::V10(v10::Body::PacketIn(_)) | Body::V13(v13::Body::PacketIn(_))
                    ) =>
                {
                    Some((*conn, msg))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn masked_ipv4_and_transport_ports_match_across_tables() {
        let mut s = switch();
        let c = s.connect(OFP13_VERSION);
        let mut out = Vec::new();
        s.on_message(c, &flow13(0, 1, vec![], vec![v13::Instruction::GotoTable(1)]), &mut out);
        let prefix = Oxm::Ipv4Dst(Ipv4Addr::new(10, 0, 1, 0), Some(Ipv4Addr::new(255, 255, 255, 0)));
        let fields = vec![Oxm::EthType(0x0800), prefix, Oxm::IpProto(17), Oxm::UdpDst(53)];
        let to3 = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
            port: 3,
            max_len: 0,
        }])];
        s.on_message(c, &flow13(1, 10, fields, to3), &mut out);
        assert!(out.is_empty(), "{out:?}");
        s.on_frame(1, udp(), &mut out);
        assert_eq!(outputs(&out), vec![3]);
        // Another destination misses table 1: a 1.3 miss is dropped.
        out.clear();
        let mut other = udp();
        other[32] = 9;
        s.on_frame(1, other, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(s.rules(1)[0].packets(), 1);
        assert_eq!((s.counters.frames_in, s.counters.frames_out), (2, 1));
        // A table the switch does not have: the error the spec names.
        s.on_message(c, &flow13(7, 1, vec![], vec![]), &mut out);
        let [Effect::ToController { msg, .. }] = out.as_slice() else {
            panic!("{out:?}")
        };
        let Body::V13(v13::Body::Error(e)) = &msg.body else {
            panic!("{msg}")
        };
        assert_eq!(e.code, ErrorCode::FlowModFailed(FlowModFailedCode::BadTableId));
        assert_eq!(s.counters.errors, 1);
    }

    #[test]
    fn one_zero_misses_go_to_the_controller_and_packet_outs_run_the_table() {
        let mut s = switch();
        let c = s.connect(OFP10_VERSION);
        let mut out = Vec::new();
        s.on_frame(2, udp(), &mut out);
        let [(0, m)] = packet_ins(&out)[..] else {
            panic!("{out:?}")
        };
        let Body::V10(v10::Body::PacketIn(pi)) = &m.body else {
            panic!()
        };
        assert_eq!((pi.in_port, pi.reason), (2, PacketInReason::NoMatch));
        assert_eq!(pi.data.0, udp(), "a frame under miss_send_len whole");
        // A flow, then a PACKET_OUT to OFPP_TABLE goes through it; FLOOD skips the input port.
        let mut fm = v10::FlowMod {
            match_: v10::Match::all(),
            cookie: 7,
            command: v10::FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 5,
            buffer_id: v10::NO_BUFFER,
            out_port: v10::port::NONE,
            flags: 0,
            actions: vec![v10::Action::Output {
                port: v10::port::FLOOD,
                max_len: 0,
            }],
        };
        fm.match_.wildcards &= !v10::wildcards::DL_TYPE;
        fm.match_.dl_type = 0x0800;
        out.clear();
        s.on_message(c, &Message::v10(2, v10::Body::FlowMod(fm.clone())), &mut out);
        let po = v10::PacketOut {
            buffer_id: v10::NO_BUFFER,
            in_port: 1,
            actions: vec![v10::Action::Output {
                port: v10::port::TABLE,
                max_len: 0,
            }],
            data: ofwire::Bytes(udp()),
        };
        s.on_message(c, &Message::v10(3, v10::Body::PacketOut(po)), &mut out);
        assert_eq!(outputs(&out), vec![2, 3, 4]);
        // A port down neither sends nor receives; its PORT_STATUS says LINK_DOWN.
        out.clear();
        s.set_link(3, false, &mut out);
        let [Effect::ToController { msg, .. }] = out.as_slice() else {
            panic!("{out:?}")
        };
        let Body::V10(v10::Body::PortStatus(p)) = &msg.body else {
            panic!("{msg}")
        };
        assert_eq!((p.desc.port_no, p.desc.state & 1), (3, 1));
        out.clear();
        s.on_frame(1, udp(), &mut out);
        assert_eq!(outputs(&out), vec![2, 4]);
        out.clear();
        s.on_frame(3, udp(), &mut out);
        assert!(out.is_empty(), "{out:?}");
        // A non-strict delete matching everything removes it.
        fm.command = v10::FlowModCommand::Delete;
        fm.match_ = v10::Match::all();
        s.on_message(c, &Message::v10(4, v10::Body::FlowMod(fm)), &mut out);
        assert_eq!(s.rule_count(), 0);
    }

    /// OpenFlow 1.0 sends a miss to the controller, 1.3 drops it unless a
    /// table-miss rule says otherwise: with both kinds of controller
    /// connected, only the 1.0 ones get it (as Open vSwitch does).
    #[test]
    fn a_miss_goes_to_one_zero_controllers_only() {
        let mut s = switch();
        let c13 = s.connect(OFP13_VERSION);
        let mut out = Vec::new();
        s.on_frame(1, udp(), &mut out);
        assert!(out.is_empty(), "1.3 alone: dropped: {out:?}");
        let c10 = s.connect(OFP10_VERSION);
        s.on_frame(1, udp(), &mut out);
        let got: Vec<usize> = packet_ins(&out).iter().map(|(c, _)| *c).collect();
        assert_eq!(got, vec![c10]);
        // An explicit table-miss rule reaches the 1.3 controller too.
        out.clear();
        let to_controller = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
            port: v13::port::CONTROLLER,
            max_len: v13::CONTROLLER_MAX_LEN_NO_BUFFER,
        }])];
        s.on_message(c13, &flow13(0, 0, vec![], to_controller), &mut out);
        s.on_frame(1, udp(), &mut out);
        let mut got: Vec<usize> = packet_ins(&out).iter().map(|(c, _)| *c).collect();
        got.sort();
        assert_eq!(got, vec![c13, c10]);
        // The 1.0 controller gone, the 1.3 one's rule deleted: dropped again.
        s.disconnect(c10);
        let mut del = v13::FlowMod::add(0);
        del.command = v13::FlowModCommand::Delete;
        del.table_id = v13::TABLE_ALL;
        out.clear();
        s.on_message(c13, &Message::v13(2, v13::Body::FlowMod(del)), &mut out);
        s.on_frame(1, udp(), &mut out);
        assert!(packet_ins(&out).is_empty(), "{out:?}");
        assert!(!s.pipeline().miss_to_controller);
    }
}
