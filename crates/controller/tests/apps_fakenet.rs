//! `topology` and `paths` against emulated multi-table switches (no
//! network): links discovered and lost, broadcasts reaching every host
//! exactly once on topologies with loops, unicast paths installed on every
//! switch of the path (then forwarded without the controller), re-routing
//! after a link cut, and a path provisioned ahead of traffic.

mod fakenet;

use controller::app::{AppFactory, Context, SwitchApp};
use controller::paths::{Paths, PROACTIVE_COOKIE, REACTIVE_COOKIE};
use controller::topology::{End, Topology};
use fakenet::{arp_request, host_mac, unicast, FakeNet};
use ofwire::{OFP10_VERSION, OFP13_VERSION};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

const PROBE: Duration = Duration::from_millis(40);
const STORM: u64 = 20_000;

fn apps(with_paths: bool) -> (Vec<AppFactory>, Arc<Topology>, Arc<Paths>) {
    let topo = Topology::new(PROBE, PROBE * 4);
    let paths = Paths::new(topo.clone());
    let t = topo.clone();
    let mut f: Vec<AppFactory> = vec![Arc::new(move |_: &Context| Box::new(t.app()) as Box<dyn SwitchApp>)];
    if with_paths {
        let p = paths.clone();
        f.push(Arc::new(move |ctx: &Context| {
            Box::new(p.app(ctx)) as Box<dyn SwitchApp>
        }));
    }
    (f, topo, paths)
}

/// Two spines (1, 2) and three leaves (11, 12, 13), each leaf wired to each
/// spine (ports 1 and 2), two hosts per leaf (ports 3 and 4): loops everywhere.
fn leaf_spine(version: u8, with_paths: bool) -> (FakeNet, Arc<Topology>, Arc<Paths>) {
    let switches = [(1, 3), (2, 3), (11, 4), (12, 4), (13, 4)];
    let mut links = Vec::new();
    for (i, leaf) in [11u64, 12, 13].iter().enumerate() {
        links.push(((*leaf, 1), (1, i as u32 + 1)));
        links.push(((*leaf, 2), (2, i as u32 + 1)));
    }
    let hosts = [(11, 3), (11, 4), (12, 3), (12, 4), (13, 3), (13, 4)];
    let (f, topo, paths) = apps(with_paths);
    (FakeNet::new(version, &switches, &links, &hosts, f), topo, paths)
}

fn directed(net: &FakeNet) -> BTreeSet<(End, End)> {
    net.links
        .iter()
        .map(|(a, b)| (End { dpid: a.0, port: a.1 }, End { dpid: b.0, port: b.1 }))
        .collect()
}

fn discovered(topo: &Topology) -> BTreeSet<(End, End)> {
    topo.snapshot().links.iter().map(|l| (l.src, l.dst)).collect()
}

#[test]
fn topology_finds_every_link_and_loses_cut_ones() {
    for version in [OFP10_VERSION, OFP13_VERSION] {
        let (mut net, topo, _) = leaf_spine(version, false);
        net.run_for(PROBE * 3, STORM);
        assert_eq!(discovered(&topo), directed(&net), "version {version}");
        assert_eq!(topo.snapshot().switches.len(), 5);
        // Every switch sends LLDP to the controller, above everything else.
        for sw in &net.switches {
            let lldp = sw.flows_with_cookie(controller::topology::LLDP_COOKIE);
            assert_eq!(lldp.len(), 1, "switch {}", sw.dpid);
            assert_eq!(fakenet::eth_type(&lldp[0]), Some(0x88cc));
        }
        // A cut link goes at once (PORT_STATUS), both directions.
        net.cut_link((11, 1));
        net.settle(STORM);
        let now = discovered(&topo);
        assert_eq!(now, directed(&net));
        assert!(!now
            .iter()
            .any(|(a, b)| a.dpid == 11 && a.port == 1 || b.dpid == 11 && b.port == 1));
        // A switch that leaves takes its links with it.
        net.kill_switch(2);
        net.settle(STORM);
        assert!(discovered(&topo).iter().all(|(a, b)| a.dpid != 2 && b.dpid != 2));
        assert_eq!(topo.snapshot().switches.len(), 4);
        let ev = topo.snapshot().events;
        assert_eq!(ev.links_up, 12);
        assert_eq!(ev.links_down, 2 + 6);
        assert_eq!(ev.bad_lldp, 0);
    }
}

#[test]
fn links_that_stop_answering_time_out() {
    let (mut net, topo, _) = leaf_spine(OFP13_VERSION, false);
    net.run_for(PROBE * 3, STORM);
    assert_eq!(discovered(&topo).len(), 12);
    // The wire is gone without any port going down (a broken middlebox).
    let b = net.links.remove(&(12, 2)).unwrap();
    net.links.remove(&b);
    net.run_for(PROBE * 8, STORM);
    assert_eq!(discovered(&topo), directed(&net));
    assert_eq!(discovered(&topo).len(), 10);
}

#[test]
fn paths_delivers_on_loops_without_storms() {
    for version in [OFP10_VERSION, OFP13_VERSION] {
        let (mut net, topo, paths) = leaf_spine(version, true);
        net.run_for(PROBE * 3, STORM);
        assert_eq!(discovered(&topo).len(), 12);
        let n = 6;
        // Broadcasts: every other host gets exactly one copy.
        for from in 0..n {
            net.send(from, arp_request(from, (from + 1) % n));
            net.settle(STORM);
            let got = net.take_received();
            for (h, frames) in got.iter().enumerate() {
                let want = usize::from(h != from);
                assert_eq!(
                    frames.len(),
                    want,
                    "v{version}: host {h} got {} copies of {from}'s ARP",
                    frames.len()
                );
            }
        }
        assert_eq!(paths.hosts().len(), n, "every host learnt");
        // Unicast: every pair, delivered once, to the right host only.
        for from in 0..n {
            for to in 0..n {
                if from == to {
                    continue;
                }
                net.send(from, unicast(from, to, 1));
                net.settle(STORM);
                let got = net.take_received();
                for (h, frames) in got.iter().enumerate() {
                    assert_eq!(
                        frames.len(),
                        usize::from(h == to),
                        "v{version}: {from}->{to} at host {h}"
                    );
                }
            }
        }
        // The paths are in the switches now: a second round needs no controller.
        let packet_ins: u64 = net.switches.iter().map(|s| s.packet_ins()).sum();
        for from in 0..n {
            for to in (0..n).filter(|t| *t != from) {
                net.send(from, unicast(from, to, 2));
            }
        }
        net.settle(STORM);
        let got = net.take_received();
        assert!(got.iter().all(|f| f.len() == n - 1));
        assert_eq!(net.switches.iter().map(|s| s.packet_ins()).sum::<u64>(), packet_ins);
        // Each leaf holds one flow per destination; the spines carry the rest.
        for leaf in [11, 12, 13] {
            let flows = net.switch(leaf).flows_with_cookie(REACTIVE_COOKIE);
            assert_eq!(flows.len(), n, "leaf {leaf}: {flows:?}");
            assert!(flows
                .iter()
                .all(|f| fakenet::eth_dst(f).is_some() && !fakenet::matches_in_port(f)));
        }
        assert!(
            net.max_hops <= 2,
            "a path longer than leaf-spine-leaf: {}",
            net.max_hops
        );
        let c = paths.counters();
        assert!(c.paths_installed > 0 && c.flood_echoes_dropped == 0, "{c:?}");
    }
}

#[test]
fn broadcasts_before_discovery_settles_do_not_storm() {
    let (mut net, _, _) = leaf_spine(OFP13_VERSION, true);
    // Handshakes only: no time for probes to come back yet.
    net.settle(STORM);
    for from in 0..6 {
        net.send(from, arp_request(from, 5 - from));
    }
    net.settle(STORM);
    assert!(net.frames_processed < 200, "{} frame deliveries", net.frames_processed);
}

#[test]
fn paths_reroute_after_a_link_cut() {
    let (mut net, _, paths) = leaf_spine(OFP13_VERSION, true);
    net.run_for(PROBE * 3, STORM);
    for from in 0..6 {
        net.send(from, arp_request(from, 0));
        net.settle(STORM);
    }
    net.take_received();
    // Host 0 (leaf 11) to host 2 (leaf 12): take down whichever spine link leaf 11 uses.
    net.send(0, unicast(0, 2, 1));
    net.settle(STORM);
    assert_eq!(net.take_received()[2].len(), 1);
    let out = net
        .switch(11)
        .flows_with_cookie(REACTIVE_COOKIE)
        .iter()
        .find(|f| fakenet::eth_dst(f) == Some(host_mac(2)))
        .map(|f| fakenet::outputs(f))
        .unwrap();
    let uplink = out[0];
    net.cut_link((11, uplink));
    net.run_for(PROBE * 2, STORM);
    assert!(
        net.switch(11).flows_with_cookie(REACTIVE_COOKIE).is_empty(),
        "stale paths kept"
    );
    net.send(0, unicast(0, 2, 2));
    net.settle(STORM);
    assert_eq!(net.take_received()[2].len(), 1, "not re-routed; {:?}", paths.counters());
}

#[test]
fn a_provisioned_path_carries_traffic_without_the_controller() {
    for version in [OFP10_VERSION, OFP13_VERSION] {
        let (mut net, _, paths) = leaf_spine(version, true);
        net.run_for(PROBE * 3, STORM);
        for from in [0, 4] {
            net.send(from, arp_request(from, 4 - from));
            net.settle(STORM);
        }
        net.take_received();
        let (path, mods) = paths.provision(&host_mac(0).to_string(), "10.0.0.5").unwrap();
        assert_eq!(path.forward.len(), 3, "{path:?}");
        assert_eq!(path.forward[0].dpid, 11);
        assert_eq!(path.forward[2].dpid, 13);
        assert_eq!(path.forward[2].out_port, 3);
        for (dpid, body) in mods {
            assert!(net.env.ctx.send(dpid, body));
        }
        net.settle(STORM);
        paths.record(path);
        let before: u64 = net.switches.iter().map(|s| s.packet_ins()).sum();
        net.send(0, unicast(0, 4, 1));
        net.send(4, unicast(4, 0, 1));
        net.settle(STORM);
        let got = net.take_received();
        assert_eq!((got[0].len(), got[4].len()), (1, 1));
        assert_eq!(net.switches.iter().map(|s| s.packet_ins()).sum::<u64>(), before);
        assert_eq!(net.switch(11).flows_with_cookie(PROACTIVE_COOKIE).len(), 2);
        assert_eq!(paths.provisioned().len(), 1);
        let e = paths.provision("02:00:00:00:00:99", "10.0.0.1").unwrap_err();
        assert!(matches!(e, controller::paths::PathError::UnknownHost(_)), "{e:?}");
        assert!(e.to_string().contains("not known"), "{e}");
    }
}

/// The fake switch follows a multi-table pipeline as OpenFlow 1.3 says:
/// highest priority wins in each table, goto_table carries the packet on,
/// actions of every table apply. (Checks the fake, so the app tests above
/// can be trusted.)
#[test]
fn the_fake_switch_follows_a_multi_table_pipeline() {
    use ofconn::{Session, SwitchInfo};
    use ofwire::oxm::{Match, Oxm};
    use ofwire::v13;

    struct TwoTables;
    impl SwitchApp for TwoTables {
        fn name(&self) -> &'static str {
            "two-tables"
        }
        fn switch_up(&mut self, sw: &mut Session, _info: &SwitchInfo) {
            // Table 0: everything to table 1, but frames to host 1 rewritten to host 2 first.
            let mut goto = v13::FlowMod::add(1);
            goto.instructions = vec![v13::Instruction::GotoTable(1)];
            sw.send13(v13::Body::FlowMod(goto));
            let mut rewrite = v13::FlowMod::add(5);
            rewrite.match_ = Match::new(vec![Oxm::EthDst(host_mac(1), None)]);
            rewrite.instructions = vec![
                v13::Instruction::ApplyActions(vec![v13::Action::SetField(Oxm::EthDst(host_mac(2), None))]),
                v13::Instruction::GotoTable(1),
            ];
            sw.send13(v13::Body::FlowMod(rewrite));
            // Table 1: forward by destination; a lower-priority flow that must lose.
            for (host, port) in [(0usize, 1u32), (1, 2), (2, 3)] {
                let mut fwd = v13::FlowMod::add(10);
                fwd.table_id = 1;
                fwd.match_ = Match::new(vec![Oxm::EthDst(host_mac(host), None)]);
                fwd.instructions = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
                    port,
                    max_len: 0,
                }])];
                sw.send13(v13::Body::FlowMod(fwd));
            }
            let mut loser = v13::FlowMod::add(9);
            loser.table_id = 1;
            loser.match_ = Match::new(vec![Oxm::EthDst(host_mac(2), None)]);
            loser.instructions = vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
                port: 1,
                max_len: 0,
            }])];
            sw.send13(v13::Body::FlowMod(loser));
        }
    }
    let apps: Vec<AppFactory> = vec![Arc::new(|_: &Context| Box::new(TwoTables) as Box<dyn SwitchApp>)];
    let mut net = FakeNet::new(OFP13_VERSION, &[(1, 3)], &[], &[(1, 1), (1, 2), (1, 3)], apps);
    net.settle(STORM);
    assert_eq!(net.switch(1).tables()[1].len(), 4);
    net.send(0, unicast(0, 2, 1));
    net.send(0, unicast(0, 1, 2)); // rewritten to host 2 in table 0
    net.settle(STORM);
    let got = net.take_received();
    assert_eq!((got[0].len(), got[1].len(), got[2].len()), (0, 0, 2));
    assert_eq!(&got[2][1][0..6], &host_mac(2).0, "the rewrite applied");
    // A miss in 1.3 is dropped, not sent to the controller.
    net.send(2, unicast(2, 7, 3));
    net.settle(STORM);
    assert_eq!(net.switch(1).packet_ins(), 0);
}
