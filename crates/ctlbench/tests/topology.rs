//! The emulated fabric and the RFC 8456 topology tests against sdnlab's
//! controller over TCP: LLDP crosses the emulated links so `topology`
//! finds every link (read back through the REST API), `paths` carries a
//! host's first frame to the other host hop by hop through the flows it
//! installs, paths requested on the REST API carry traffic, failures are
//! seen and routed around, and a controller that never discovers anything
//! gets "did not converge", not a hang. (os-ken runs the same tests
//! through the CLI, in sdnlab's tests.)

use ctlbench::fabric::{Fabric, Spec};
use ctlbench::northbound::Northbound;
use ctlbench::topology_tests::*;
use std::net::SocketAddr;
use std::time::Duration;

use controller::embedded::Options;

/// The REST API's token in these tests.
const TOKEN: &str = "topology-test-token-0123456789";

fn controller(app: &str) -> (controller::runtime::Handle, SocketAddr) {
    start(Options::new(app, 2))
}

/// A controller with its REST API, whose token is the tests' own.
fn start(o: Options) -> (controller::runtime::Handle, SocketAddr) {
    let (ctl, rest, _) = controller::embedded::start_with_rest(Options {
        token: Some(TOKEN.into()),
        ..o
    })
    .unwrap();
    (ctl, rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_finds_every_link() {
    for (spec, version) in [
        (Spec::leaf_spine(2, 3, 1), ofwire::OFP13_VERSION),
        (Spec::linear(5), ofwire::OFP10_VERSION),
    ] {
        let (ctl, rest) = controller("topology");
        let n = spec.switches.len();
        let d = discovery_time(
            spec,
            ctl.local_addrs[0],
            version,
            &Northbound::Sdnlab(rest, Some(TOKEN.into())),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(d.connected as usize, n, "{d:?}");
        assert_eq!(d.links_seen, d.links_expected, "{d:?}");
        let s = d.seconds.unwrap_or_else(|| panic!("{d:?}"));
        assert!(s > 0.0 && s < 10.0, "{d:?}");
        ctl.stop();
    }
}

/// A fabric run in two parts (as on two workers), its links between the
/// parts carried as UDP datagrams: the controller sees every link, LLDP
/// having crossed between the parts both ways; a datagram from anywhere
/// but the other part is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fabric_in_two_parts_is_discovered_whole() {
    use ctlbench::fabric::{Options, Shard};
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;
    let (ctl, rest) = controller("topology");
    let nb = Northbound::Sdnlab(rest, Some(TOKEN.into()));
    let spec = Spec::leaf_spine(2, 4, 1);
    // Spines and the first two leaves in one part, the other two leaves in the other.
    let dpids: Vec<u64> = spec.switches.iter().map(|s| s.0).collect();
    let (first, second) = dpids.split_at(4);
    let sockets = [
        Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap()),
        Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap()),
    ];
    let addr = |i: usize| sockets[i].local_addr().unwrap();
    let part = |i: usize, here: &[u64], there: &[u64]| Options {
        targets: vec![ctl.local_addrs[0]],
        version: ofwire::OFP13_VERSION,
        timeout: Duration::from_secs(10),
        malformed_per_mille: 0,
        shard: Some(Shard {
            here: here.to_vec(),
            socket: sockets[i].clone(),
            elsewhere: there.iter().map(|&d| (d, addr(1 - i))).collect(),
        }),
        reconnect: None,
    };
    let start = std::time::Instant::now();
    let (a, b) = tokio::join!(
        Fabric::start_with(spec.clone(), part(0, first, second)),
        Fabric::start_with(spec.clone(), part(1, second, first))
    );
    assert_eq!(a.stats.connected.load(Relaxed), 4);
    assert_eq!(b.stats.connected.load(Relaxed), 2);
    let expected = spec.links.len() * 2;
    let (seen, seconds, note) = view_complete(&nb, expected, start, Duration::from_secs(10)).await;
    assert!(seconds.is_some(), "{seen} of {expected}: {note}");
    for f in [&a, &b] {
        assert!(f.stats.frames_from_other_parts.load(Relaxed) > 0);
        assert!(f.stats.lldp_packet_ins.load(Relaxed) > 0);
    }
    // A stranger's datagram, well formed, for a switch that is there.
    let stranger = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut forged = vec![0x5d, 0x1b];
    forged.extend_from_slice(&1u64.to_be_bytes());
    forged.extend_from_slice(&1u32.to_be_bytes());
    forged.extend_from_slice(&[0u8; 60]);
    stranger.send_to(&forged, addr(0)).await.unwrap();
    let t = std::time::Instant::now();
    while a.stats.refused_datagrams.load(Relaxed) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the stranger's datagram was taken"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.stop();
    b.stop();
    ctl.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_without_discovery_does_not_converge() {
    let (ctl, rest) = controller("l2-learning");
    let d = discovery_time(
        Spec::linear(3),
        ctl.local_addrs[0],
        ofwire::OFP13_VERSION,
        &Northbound::Sdnlab(rest, Some(TOKEN.into())),
        Duration::from_millis(800),
    )
    .await;
    assert!(d.seconds.is_none());
    assert!(d.note.contains("did not converge within 0.8 s"), "{}", d.note);
    assert!(d.note.contains("409"), "the REST answer is reported: {}", d.note);
    ctl.stop();
}

/// A controller running `app` with a fabric of `spec` connected to it,
/// its view complete and every host's `macs` addresses announced.
async fn ready(app: &str, spec: Spec, version: u8, macs: u16) -> (controller::runtime::Handle, Northbound, Fabric) {
    let (ctl, rest) = controller(app);
    let fabric = Fabric::start(spec, ctl.local_addrs[0], version, Duration::from_secs(5)).await;
    let nb = Northbound::Sdnlab(rest, Some(TOKEN.into()));
    prepare(&fabric, &nb, Duration::from_secs(10), macs).await.unwrap();
    (ctl, nb, fabric)
}

/// A host's frames reach the other host across a leaf-spine (with its
/// loops) through the flows `paths` installs, and a second frame needs no
/// PACKET_IN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_frame_crosses_every_hop() {
    let (ctl, _nb, fabric) = ready("paths", Spec::leaf_spine(2, 3, 1), ofwire::OFP13_VERSION, 1).await;
    fabric.send_from_host(0, frame(host_mac(0, 0), host_mac(2, 0), 7));
    let mut got = Vec::new();
    for _ in 0..200 {
        got = fabric.take_received(2);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(got.len(), 1, "the first frame did not arrive");
    assert_eq!(seq_of(&got[0].1), Some(7));
    assert!(fabric.take_received(1).is_empty(), "delivered to the wrong host");
    let before = fabric.stats.packet_ins.load(std::sync::atomic::Ordering::Relaxed);
    fabric.send_from_host(0, frame(host_mac(0, 0), host_mac(2, 0), 8));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fabric.take_received(2).len(), 1);
    assert_eq!(
        fabric.stats.packet_ins.load(std::sync::atomic::Ordering::Relaxed),
        before,
        "the second frame went through the controller"
    );
    // The frame crossed leaf 1, a spine and leaf 3: each holds a flow for host 3.
    for dpid in [0x1001, 0x1003] {
        assert!(fabric.stats.flows_of(dpid) >= 2, "switch {dpid:#x} has no path flow");
    }
    fabric.stop();
    ctl.stop();
}

/// Reactive path provisioning time and rate with `paths`: every first
/// frame arrives, each within the time limit and after a positive delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reactive_paths_are_provisioned_for_every_pair() {
    let (ctl, _nb, fabric) = ready("paths", Spec::leaf_spine(2, 4, 1), ofwire::OFP10_VERSION, 4).await;
    let p = reactive_provisioning(&fabric, Duration::from_secs(2)).await;
    assert_eq!(p.pairs, 3);
    assert!(p.note.is_empty(), "{p:?}");
    assert!(p.seconds.iter().all(|s| s.is_some_and(|s| s > 0.0 && s < 2.0)), "{p:?}");
    let r = reactive_rate(&fabric, 4, Duration::from_secs(5)).await;
    assert_eq!(r.paths, 4 * 3 * 4, "{r:?}");
    assert_eq!(r.reached, r.paths, "{r:?}");
    assert!(r.per_second > 0.0 && r.seconds > 0.0, "{r:?}");
    fabric.stop();
    ctl.stop();
}

/// Proactive provisioning through POST /paths with `paths-proactive`:
/// nothing arrives before the request, every path carries traffic after
/// it; with reactive `paths` the test refuses to measure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proactive_paths_carry_traffic_only_once_requested() {
    let (ctl, nb, fabric) = ready("paths-proactive", Spec::leaf_spine(2, 3, 1), ofwire::OFP13_VERSION, 3).await;
    let p = proactive_provisioning(&fabric, &nb, Duration::from_secs(3)).await;
    assert_eq!(p.pairs, 2);
    assert!(p.note.is_empty(), "{p:?}");
    assert!(p.seconds.iter().all(|s| s.is_some_and(|s| s > 0.0 && s < 3.0)), "{p:?}");
    let r = proactive_rate(&fabric, &nb, 3, Duration::from_secs(5)).await;
    assert_eq!((r.paths, r.reached), (6, 6), "{r:?}");
    assert!(r.per_second > 0.0, "{r:?}");
    fabric.stop();
    ctl.stop();

    let (ctl, nb, fabric) = ready("paths", Spec::linear(3), ofwire::OFP13_VERSION, 1).await;
    let p = proactive_provisioning(&fabric, &nb, Duration::from_secs(2)).await;
    assert!(p.note.contains("forwards reactively"), "{p:?}");
    assert_eq!(p.seconds, vec![None]);
    fabric.stop();
    ctl.stop();
}

/// A failed link and a failed switch leave the controller's view, and the
/// controller probes again afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_and_switch_failures_are_detected() {
    for failure in [Failure::Link, Failure::Switch] {
        let (ctl, nb, fabric) = ready("topology", Spec::leaf_spine(2, 3, 1), ofwire::OFP13_VERSION, 0).await;
        let c = change_detection(&fabric, &nb, failure, Duration::from_secs(6)).await;
        let lost = if failure == Failure::Link { 2 } else { 6 };
        assert_eq!(c.links_after, c.links_before - lost, "{c:?}");
        assert!(c.view_s.is_some_and(|s| s > 0.0 && s < 6.0), "{c:?}");
        assert!(c.first_probe_s.is_some_and(|s| s > 0.0), "{c:?}");
        fabric.stop();
        ctl.stop();
    }
}

/// Traffic between two leaves moves to the other spine when its link
/// fails: both directions keep arriving, with a bounded gap and loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_is_reprovisioned_around_a_failed_link() {
    let (ctl, _nb, fabric) = ready("paths", Spec::leaf_spine(2, 2, 1), ofwire::OFP13_VERSION, 1).await;
    let r = reprovisioning(&fabric, Duration::from_millis(2), Duration::from_millis(1500)).await;
    assert!(r.note.is_empty(), "{r:?}");
    assert_eq!(r.failed.0, 0x1001, "{r:?}");
    let after_failure = |d: &Direction| d.sent * 6 / 10;
    for d in [&r.forward, &r.reverse] {
        assert!(d.sent > 100, "{r:?}");
        assert!(
            d.received > after_failure(d),
            "traffic did not come back after the failure: {r:?}"
        );
        assert!(d.gap_s < 1.0, "{r:?}");
    }
    // After the failure host 0's frames left by the other spine.
    let other = (0x1001, 3 - r.failed.1);
    assert!(
        fabric.stats.frames_out_of(other) > r.forward.sent as u64 / 4,
        "the traffic did not move to {other:?}: {r:?}"
    );
    fabric.stop();
    ctl.stop();
}

/// Host 0's switch holds a flow per destination it sent to, and the count
/// grows with the destinations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_capacity_counts_one_flow_per_destination() {
    let (ctl, _nb, fabric) = ready("paths", Spec::linear(2), ofwire::OFP13_VERSION, 1).await;
    let before = fabric.stats.flows_of(1);
    let t = table_capacity(&fabric, 50, 150, Duration::from_secs(20)).await;
    assert_eq!(t.destinations, 150, "{t:?}");
    assert!(t.flows >= before + 150, "{t:?} (before: {before})");
    fabric.stop();
    ctl.stop();
}

/// An active/standby pair with OpenFlow 1.3 roles: the standby learns the
/// links from the active one's probes while it stays silent (no duplicate
/// deliveries), and takes over when the active one dies; without a
/// standby the same test says nobody took over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_takes_over_when_the_active_controller_dies() {
    let spec = Spec::leaf_spine(2, 3, 1);
    let (active, active_rest) = controller("paths");
    let watched = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (standby, standby_rest) = start(Options {
        standby_for: Some(watched.local_addr().unwrap()),
        ..Options::new("paths", 2)
    });
    let fabric = Fabric::start_multi(
        spec,
        vec![active.local_addrs[0], standby.local_addrs[0]],
        ofwire::OFP13_VERSION,
        Duration::from_secs(5),
    )
    .await;
    let td = Duration::from_secs(10);
    prepare(&fabric, &Northbound::Sdnlab(active_rest, Some(TOKEN.into())), td, 1)
        .await
        .unwrap();
    wait_for_view(&fabric, &Northbound::Sdnlab(standby_rest, Some(TOKEN.into())), td)
        .await
        .expect("the standby learns the links from the active controller's probes");
    assert!(standby.ha().unwrap().is_standby());
    let kill = {
        let active = active.clone();
        Box::new(move || {
            active.kill();
            drop(watched);
        })
    };
    let f = failover(&fabric, kill, Duration::from_millis(2), Duration::from_millis(1500)).await;
    assert!(f.note.is_empty(), "{f:?}");
    assert_eq!(f.duplicates, 0, "both controllers acted: {f:?}");
    assert!(f.takeover_s.is_some_and(|s| s > 0.0 && s < 0.9), "{f:?}");
    assert!(f.received > f.sent / 2, "{f:?}");
    assert!(!standby.ha().unwrap().is_standby());
    assert!(
        standby
            .stats
            .standby_held_back
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0,
        "the standby never had anything to hold back"
    );
    fabric.stop();
    standby.stop();

    let (alone, _) = controller("paths");
    let fabric = Fabric::start(
        Spec::leaf_spine(2, 3, 1),
        alone.local_addrs[0],
        ofwire::OFP13_VERSION,
        td,
    )
    .await;
    wait_for_view(&fabric, &Northbound::None, td).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let kill = {
        let alone = alone.clone();
        Box::new(move || alone.kill())
    };
    let f = failover(&fabric, kill, Duration::from_millis(2), Duration::from_millis(1000)).await;
    assert!(f.note.contains("no standby took over"), "{f:?}");
    assert!(f.gap_s.is_none() && f.takeover_s.is_none(), "{f:?}");
    fabric.stop();
}
