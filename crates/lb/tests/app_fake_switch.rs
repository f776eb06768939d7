//! The `lb` app against a fake OpenFlow 1.3 switch with no sockets (in the
//! manner of Faucet's fake table): a real `ofconn::Session` carries the
//! app's messages through the real encoding; the fake switch decodes them,
//! keeps the FLOW_MODs in a priority table, applies their set-field and
//! output actions to the frames hosts send, and hands table misses to the
//! app as PACKET_INs. Statistics, FLOW_REMOVEDs and health answers are
//! scripted.

use controller::app::SwitchApp;
use lb::{Config, Lb};
use ofconn::Session;
use ofwire::oxm::Oxm;
use ofwire::{v13, Body, MacAddr, Message};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);
const VIP_MAC: MacAddr = MacAddr([2, 0, 0, 0, 1, 0]);
/// Clients on ports 1 and 2, replicas 10.0.0.11..14 on ports 11..14.
const CLIENT_PORTS: [u32; 2] = [1, 2];

fn client_ip(i: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i)
}
fn client_mac(i: u8) -> MacAddr {
    MacAddr([2, 0, 0, 0, 0, i])
}
fn replica_ip(r: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 11 + r as u8)
}
fn replica_mac(r: usize) -> MacAddr {
    MacAddr([2, 0, 0, 0, 0, 11 + r as u8])
}

fn config(extra: &str) -> Config {
    let mut t = format!("{extra}\n[vip]\nip = \"{VIP}\"\nmac = \"{VIP_MAC}\"\n");
    for r in 0..4 {
        t += &format!(
            "[[replica]]\nip = \"{}\"\nmac = \"{}\"\nport = {}\nmgmt = \"127.0.0.{}\"\n",
            replica_ip(r),
            replica_mac(r),
            11 + r,
            11 + r
        );
    }
    Config::parse(&t).unwrap()
}

struct Rule {
    priority: u16,
    cookie: u64,
    fields: Vec<Oxm>,
    actions: Vec<v13::Action>,
}

struct FakeSwitch {
    session: Session,
    app: Box<dyn SwitchApp>,
    rules: Vec<Rule>,
    groups: Vec<v13::GroupMod>,
    /// Frames that left the switch: (port, frame).
    out: Vec<(u32, Vec<u8>)>,
    /// Every message the app sent, in order.
    log: Vec<v13::Body>,
    packet_ins: usize,
    now: Instant,
}

fn drain(s: &mut Session) -> Vec<Message> {
    lb::offline::drain(s)
}

impl FakeSwitch {
    /// The OpenFlow 1.3 handshake, then the app's `switch_up`.
    fn connect(lb: &Arc<Lb>) -> FakeSwitch {
        FakeSwitch::connect_app(Box::new(lb.app()))
    }

    fn connect_app(app: Box<dyn SwitchApp>) -> FakeSwitch {
        let (s, info) = lb::offline::ready_session();
        let now = Instant::now();
        let mut sw = FakeSwitch {
            session: s,
            app,
            rules: Vec::new(),
            groups: Vec::new(),
            out: Vec::new(),
            log: Vec::new(),
            packet_ins: 0,
            now,
        };
        sw.app.switch_up(&mut sw.session, &info);
        sw.apply_messages();
        sw
    }

    /// Carries out what the app sent.
    fn apply_messages(&mut self) {
        for m in drain(&mut self.session) {
            let Body::V13(body) = m.body else { panic!("{m:?}") };
            match &body {
                v13::Body::FlowMod(fm) => match fm.command {
                    v13::FlowModCommand::Add => {
                        let actions = match fm.instructions.as_slice() {
                            [v13::Instruction::ApplyActions(a)] => a.clone(),
                            other => panic!("{other:?}"),
                        };
                        self.rules.push(Rule {
                            priority: fm.priority,
                            cookie: fm.cookie,
                            fields: fm.match_.fields.clone(),
                            actions,
                        });
                    }
                    v13::FlowModCommand::Delete => self.rules.clear(),
                    c => panic!("{c:?}"),
                },
                v13::Body::PacketOut(po) => {
                    let frame = po.data.0.clone();
                    self.run_actions(&po.actions, frame);
                }
                v13::Body::GroupMod(gm) => {
                    self.groups.retain(|g| g.group_id != gm.group_id);
                    if gm.command != v13::GroupModCommand::Delete {
                        self.groups.push(gm.clone());
                    }
                }
                _ => {}
            }
            self.log.push(body);
        }
    }

    fn run_actions(&mut self, actions: &[v13::Action], mut frame: Vec<u8>) {
        for a in actions {
            match a {
                v13::Action::SetField(f) => set_field(&mut frame, f),
                v13::Action::Output { port, .. } => self.out.push((*port, frame.clone())),
                v13::Action::Group(g) => {
                    let group = self
                        .groups
                        .iter()
                        .find(|x| x.group_id == *g)
                        .expect("group exists")
                        .clone();
                    // A select group: a bucket from the frame's ports.
                    let b = &group.buckets[(frame[35] as usize) % group.buckets.len()];
                    self.run_actions(&b.actions, frame.clone());
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// A frame arriving on `port`: forwarded by the best rule, or given to the app.
    fn send(&mut self, port: u32, frame: Vec<u8>) {
        let best = self
            .rules
            .iter()
            .filter(|r| r.fields.iter().all(|f| matches(f, port, &frame)))
            .max_by_key(|r| r.priority);
        let to_controller = |r: &Rule| {
            r.actions
                .iter()
                .any(|a| matches!(a, v13::Action::Output { port, .. } if *port == v13::port::CONTROLLER))
        };
        if let Some(r) = best.filter(|r| !to_controller(r)) {
            let actions = r.actions.clone();
            self.run_actions(&actions, frame);
            return;
        }
        self.packet_ins += 1;
        let _ = lb::offline::packet_in(self.app.as_mut(), &mut self.session, port, &frame);
        self.apply_messages();
    }

    fn deliver(&mut self, m: v13::Body) {
        self.app.message(&mut self.session, &Message::v13(0, m));
        self.apply_messages();
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.app.on_timer(&mut self.session, self.now);
        self.apply_messages();
    }

    fn take_out(&mut self) -> Vec<(u32, Vec<u8>)> {
        std::mem::take(&mut self.out)
    }

    /// The replica port a new flow from client `c`, source port `sport`, went out of.
    fn new_flow(&mut self, c: u8, sport: u16) -> u32 {
        self.send(
            CLIENT_PORTS[(c % 2) as usize],
            tcp(client_mac(c), VIP_MAC, client_ip(c), VIP, sport, 80),
        );
        let out = self.take_out();
        assert_eq!(out.len(), 1, "{out:?}");
        out[0].0
    }
}

fn field_ip(frame: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3])
}

fn matches(f: &Oxm, port: u32, frame: &[u8]) -> bool {
    let u16_at = |i: usize| u16::from_be_bytes([frame[i], frame[i + 1]]);
    match f {
        Oxm::InPort(p) => *p == port,
        Oxm::EthType(t) => u16_at(12) == *t,
        Oxm::IpProto(p) => frame[23] == *p,
        Oxm::Ipv4Src(ip, None) => field_ip(frame, 26) == *ip,
        Oxm::Ipv4Dst(ip, None) => field_ip(frame, 30) == *ip,
        Oxm::TcpSrc(p) => u16_at(34) == *p,
        Oxm::TcpDst(p) => u16_at(36) == *p,
        other => panic!("the app matched on {other:?}"),
    }
}

fn set_field(frame: &mut [u8], f: &Oxm) {
    match f {
        Oxm::EthDst(m, None) => frame[0..6].copy_from_slice(&m.0),
        Oxm::EthSrc(m, None) => frame[6..12].copy_from_slice(&m.0),
        Oxm::Ipv4Src(ip, None) => frame[26..30].copy_from_slice(&ip.octets()),
        Oxm::Ipv4Dst(ip, None) => frame[30..34].copy_from_slice(&ip.octets()),
        other => panic!("the app rewrote {other:?}"),
    }
}

fn tcp(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 20 + 6];
    f[0..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&src_mac.0);
    f[12..14].copy_from_slice(&[8, 0]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&46u16.to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&src.octets());
    f[30..34].copy_from_slice(&dst.octets());
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f[54..60].copy_from_slice(b"GET / ");
    f
}

fn arp(op: u16, sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
    let a = lb::packet::Arp {
        op,
        sha,
        spa,
        tha: MacAddr::ZERO,
        tpa,
    };
    lb::packet::arp_frame(if op == 1 { MacAddr::BROADCAST } else { VIP_MAC }, &a)
}

fn port_stats(rx: [u64; 4]) -> v13::Body {
    let stats = (0..4)
        .map(|r| v13::PortStats {
            port_no: 11 + r as u32,
            counters: ofwire::PortCounters {
                rx_bytes: rx[r],
                tx_bytes: 7,
                ..Default::default()
            },
            duration_sec: 0,
            duration_nsec: 0,
        })
        .collect();
    v13::Body::MultipartReply(v13::MultipartReply {
        flags: 0,
        body: v13::MultipartReplyBody::PortStats(stats),
    })
}

#[test]
fn on_connect_the_table_is_cleared_and_arp_for_the_vip_is_answered() {
    let lb = Lb::new(config("health = { kind = \"off\" }"));
    let mut sw = FakeSwitch::connect(&lb);
    assert!(
        matches!(&sw.log[0], v13::Body::FlowMod(fm) if fm.command == v13::FlowModCommand::Delete && fm.table_id == v13::TABLE_ALL),
        "{:?}",
        sw.log
    );
    assert!(
        matches!(&sw.log[1], v13::Body::GroupMod(g) if g.command == v13::GroupModCommand::Delete && g.group_id == v13::GROUP_ALL)
    );
    sw.send(1, arp(1, client_mac(1), client_ip(1), VIP));
    let out = sw.take_out();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 1, "answered on the asking port");
    let lb::packet::Frame::Arp(a) = lb::packet::parse(&out[0].1) else {
        panic!()
    };
    assert_eq!(
        (a.op, a.sha, a.spa, a.tha, a.tpa),
        (2, VIP_MAC, VIP, client_mac(1), client_ip(1))
    );
    assert_eq!(&out[0].1[0..6], &client_mac(1).0);
    // ARP for anyone else is not the app's.
    sw.send(1, arp(1, client_mac(1), client_ip(1), client_ip(2)));
    assert!(sw.take_out().is_empty());
}

#[test]
fn rewrites_in_both_directions_are_exact_and_the_rules_carry_the_flow() {
    let lb = Lb::new(config("policy = \"round-robin\"\nhealth = { kind = \"off\" }"));
    let mut sw = FakeSwitch::connect(&lb);
    let first = tcp(client_mac(1), VIP_MAC, client_ip(1), VIP, 40000, 80);
    sw.send(1, first.clone());
    let out = sw.take_out();
    assert_eq!(out.len(), 1);
    let (port, got) = &out[0];
    assert_eq!(*port, 11, "round-robin starts at the lowest address");
    let mut want = first.clone();
    want[0..6].copy_from_slice(&replica_mac(0).0);
    want[30..34].copy_from_slice(&replica_ip(0).octets());
    assert_eq!(got, &want, "only the destination MAC and IP change");
    // The next segment of the same flow is the switch's: no PACKET_IN.
    sw.send(1, first.clone());
    assert_eq!((sw.packet_ins, sw.take_out()[0].1.clone()), (1, want.clone()));
    // The response, rewritten back to the VIP, to the client's port.
    let reply = tcp(replica_mac(0), client_mac(1), replica_ip(0), client_ip(1), 80, 40000);
    sw.send(11, reply.clone());
    let out = sw.take_out();
    let mut want = reply.clone();
    want[6..12].copy_from_slice(&VIP_MAC.0);
    want[26..30].copy_from_slice(&VIP.octets());
    assert_eq!(out, vec![(1, want)]);
    assert_eq!(sw.packet_ins, 1);
    // Exactly one rule pair, with the idle timeout, forward one asking for FLOW_REMOVED.
    let pair: Vec<&v13::FlowMod> = sw
        .log
        .iter()
        .filter_map(|b| match b {
            v13::Body::FlowMod(fm) if fm.command == v13::FlowModCommand::Add => Some(fm),
            _ => None,
        })
        .collect();
    assert_eq!(pair.len(), 2);
    assert!(pair.iter().all(|fm| fm.idle_timeout == 10));
    assert_eq!(
        pair.iter()
            .filter(|fm| fm.flags & v13::flow_mod_flags::SEND_FLOW_REM != 0)
            .count(),
        1
    );
    // Another flow from the same client goes to the next replica.
    assert_eq!(sw.new_flow(1, 40001), 12);
}

#[test]
fn a_returning_flow_goes_back_to_its_replica_after_its_rules_expired() {
    let lb = Lb::new(config("policy = \"round-robin\"\nhealth = { kind = \"off\" }"));
    let mut sw = FakeSwitch::connect(&lb);
    assert_eq!(sw.new_flow(1, 50000), 11);
    assert_eq!(sw.new_flow(2, 50000), 12);
    // The switch expires client 1's rules and says so.
    let fwd = sw
        .rules
        .iter()
        .position(|r| r.cookie & 1 == 0 && r.fields.contains(&Oxm::Ipv4Src(client_ip(1), None)))
        .unwrap();
    let r = sw.rules.remove(fwd);
    sw.rules
        .retain(|x| !x.fields.contains(&Oxm::Ipv4Dst(client_ip(1), None)));
    sw.deliver(v13::Body::FlowRemoved(v13::FlowRemoved {
        cookie: r.cookie,
        priority: r.priority,
        reason: ofwire::FlowRemovedReason::IdleTimeout,
        table_id: 0,
        duration_sec: 10,
        duration_nsec: 0,
        idle_timeout: 10,
        hard_timeout: 0,
        packet_count: 1,
        byte_count: 60,
        match_: ofwire::oxm::Match::new(r.fields.clone()),
    }));
    assert_eq!(lb.snapshot().rules_live, 1);
    // Round-robin would now say replica 3 (port 13): memory wins.
    assert_eq!(sw.new_flow(1, 50000), 11);
    let m = lb.snapshot();
    assert_eq!((m.returning, m.new_flows, m.rules_live), (1, 2, 2));
    assert_eq!(sw.new_flow(1, 50001), 13, "a new flow still follows the policy");
}

#[test]
fn load_follows_the_port_statistics_and_prev_delta_charges_until_the_next() {
    let lb = Lb::new(config(
        "policy = \"load-prev-delta\"\nalpha = 1.0\ndelta = 1000\nhealth = { kind = \"off\" }",
    ));
    let mut sw = FakeSwitch::connect(&lb);
    // The app polls PortStats on its timer.
    sw.advance(Duration::from_millis(1));
    assert!(sw.log.iter().any(|b| matches!(b, v13::Body::MultipartRequest(r) if r.body == v13::MultipartRequestBody::PortStats { port_no: v13::port::ANY })));
    sw.deliver(port_stats([0, 0, 0, 0]));
    std::thread::sleep(Duration::from_millis(100));
    // rx bytes (the responses) over ~0.1 s: replica 2 (port 13) idle, the others busy.
    sw.deliver(port_stats([10_000_000, 10_000_000, 0, 20_000_000]));
    let loads = lb.snapshot();
    assert_eq!(loads.delta, 1000.0);
    // Loads of ~100 MB/s dwarf the 1000 B/s charged per flow: all to port 13.
    for sport in 0..3 {
        assert_eq!(sw.new_flow(1, 1000 + sport), 13);
    }
    let m = lb.snapshot();
    assert!(
        m.stats_age_ms_mean.is_some(),
        "the statistics' age is recorded at each decision"
    );
    // Equal statistics: the charges decide, and reset at the next reply.
    sw.deliver(port_stats([20_000_000, 20_000_000, 10_000_000, 30_000_000]));
    std::thread::sleep(Duration::from_millis(100));
    sw.deliver(port_stats([20_000_000, 20_000_000, 10_000_000, 30_000_000]));
    assert_eq!(sw.new_flow(2, 1), 11, "all idle: the lowest address");
    assert_eq!(sw.new_flow(2, 2), 12, "port 11 carries one charge now");
    assert_eq!(sw.new_flow(2, 3), 13);
    sw.deliver(port_stats([20_000_000, 20_000_000, 10_000_000, 30_000_000]));
    assert_eq!(sw.new_flow(2, 4), 11, "the charges were reset");
}

#[test]
fn the_tx_counter_is_an_option_and_measures_the_requests() {
    let lb = Lb::new(config(
        "policy = \"load\"\nload_counter = \"tx\"\nhealth = { kind = \"off\" }",
    ));
    let mut sw = FakeSwitch::connect(&lb);
    sw.deliver(port_stats([0, 0, 0, 0]));
    std::thread::sleep(Duration::from_millis(20));
    // rx differs a lot, tx (7 on every port) not at all: a tie, lowest address.
    sw.deliver(port_stats([1 << 30, 0, 1 << 30, 1 << 30]));
    assert_eq!(sw.new_flow(1, 9), 11);
}

#[test]
fn a_dead_replica_gets_no_new_flows_and_comes_back() {
    let lb = Lb::new(config(
        "policy = \"round-robin\"\nhealth = { kind = \"arp\", interval_ms = 100, failures = 2 }",
    ));
    let mut sw = FakeSwitch::connect(&lb);
    // Each probe round asks every replica on its own port; 11, 12 and 14 answer.
    for _ in 0..3 {
        sw.advance(Duration::from_millis(150));
        let probes = sw.take_out();
        assert_eq!(probes.iter().map(|p| p.0).collect::<Vec<_>>(), vec![11, 12, 13, 14]);
        for r in [0, 1, 3] {
            sw.send(11 + r as u32, arp(2, replica_mac(r), replica_ip(r), VIP));
        }
    }
    assert!(!lb.is_alive(2) && lb.is_alive(0) && lb.is_alive(3));
    let ports: Vec<u32> = (0..6).map(|s| sw.new_flow(1, 2000 + s)).collect();
    assert_eq!(ports, [11, 12, 14, 11, 12, 14]);
    // It answers again: back in.
    sw.send(13, arp(2, replica_mac(2), replica_ip(2), VIP));
    assert!(lb.is_alive(2));
    assert!((0..4).map(|s| sw.new_flow(2, 3000 + s)).any(|p| p == 13));
    let events = lb.snapshot().health_events;
    assert_eq!(
        events.iter().map(|e| (e.1, e.2)).collect::<Vec<_>>(),
        vec![(2, false), (2, true)]
    );
}

#[test]
fn every_policy_places_flows_through_the_app() {
    for policy in lb::config::POLICIES {
        if matches!(policy, "txbytes" | "cpuq-load") {
            continue; // they ask agents: see the end-to-end test
        }
        let lb = Lb::new(config(&format!("policy = \"{policy}\"\nhealth = {{ kind = \"off\" }}")));
        let mut sw = FakeSwitch::connect(&lb);
        let ports: Vec<u32> = (0..40).map(|s| sw.new_flow(1 + (s % 2) as u8, 7000 + s)).collect();
        assert!(ports.iter().all(|p| (11..=14).contains(p)), "{policy}: {ports:?}");
        let m = lb.snapshot();
        assert_eq!(m.new_flows, 40, "{policy}");
        assert_eq!(m.decisions, 40, "{policy}");
        assert_eq!(m.flows_per_replica.iter().sum::<u64>(), 40, "{policy}");
    }
}

#[test]
fn agent_policies_with_no_agent_answering_fall_back_and_count_the_silence() {
    // Management addresses are on loopback here, where nobody answers.
    let silent = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let lb = Lb::new(config(&format!(
        "policy = \"txbytes\"\nagent_timeout_ms = 5\nagent_port = {port}\nhealth = {{ kind = \"off\" }}"
    )));
    let mut sw = FakeSwitch::connect(&lb);
    assert!((11..=14).contains(&sw.new_flow(1, 1)));
    assert_eq!(lb.snapshot().agent_unanswered, 4);
}

#[test]
fn proactive_mode_is_a_select_group_and_per_client_return_rules() {
    let lb = Lb::new(config("mode = \"proactive\"\nhealth = { kind = \"off\" }"));
    let mut sw = FakeSwitch::connect(&lb);
    assert_eq!(sw.groups.len(), 1);
    let g = &sw.groups[0];
    assert_eq!(g.group_type, v13::GroupType::Select);
    assert_eq!(g.buckets.len(), 4);
    assert_eq!(
        g.buckets[2].actions,
        vec![
            v13::Action::SetField(Oxm::EthDst(replica_mac(2), None)),
            v13::Action::SetField(Oxm::Ipv4Dst(replica_ip(2), None)),
            v13::Action::Output { port: 13, max_len: 0 },
        ]
    );
    // The client asks for the VIP's MAC; its return rules go in.
    sw.send(2, arp(1, client_mac(2), client_ip(2), VIP));
    sw.take_out();
    let req = tcp(client_mac(2), VIP_MAC, client_ip(2), VIP, 5555, 80);
    sw.send(2, req);
    let out = sw.take_out();
    assert_eq!(out.len(), 1);
    let r = (out[0].0 - 11) as usize;
    sw.send(
        out[0].0,
        tcp(replica_mac(r), client_mac(2), replica_ip(r), client_ip(2), 80, 5555),
    );
    let back = sw.take_out();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].0, 2);
    assert_eq!(field_ip(&back[0].1, 26), VIP);
    assert_eq!(sw.packet_ins, 1, "only the ARP reached the controller");
}

#[test]
fn a_new_app_in_the_slot_takes_over_the_connected_switch_from_a_clean_table() {
    let first = Lb::new(config("policy = \"round-robin\"\nhealth = { kind = \"off\" }"));
    let slot = lb::app::LbSlot::new(first.clone());
    let factory = slot.factory();
    let ctx = controller::app::Context {
        registry: Default::default(),
    };
    let mut sw = FakeSwitch::connect_app(factory(&ctx));
    assert_eq!(sw.new_flow(1, 1), 11);
    assert_eq!(sw.new_flow(1, 2), 12);
    let second = Lb::new(config("policy = \"weighted\"\nhealth = { kind = \"off\" }"));
    slot.set(second.clone());
    sw.log.clear();
    sw.advance(Duration::from_millis(60));
    assert!(matches!(&sw.log[0], v13::Body::FlowMod(fm) if fm.command == v13::FlowModCommand::Delete));
    assert!(
        sw.log
            .iter()
            .any(|b| matches!(b, v13::Body::FlowMod(fm) if fm.priority == 0 && fm.match_.fields.is_empty())),
        "the table-miss rule is back: {:?}",
        sw.log
    );
    assert!(sw.rules.iter().all(|r| r.priority == 0), "the old flows are gone");
    // Equal weights: weighted starts from the lowest address again, its own metrics.
    assert_eq!(sw.new_flow(1, 1), 11);
    assert_eq!((first.snapshot().new_flows, second.snapshot().new_flows), (2, 1));
}
