//! The emulated fabric against sdnlab's controller over TCP: LLDP crosses
//! the emulated links so `topology` finds every link (read back through
//! the REST API), `paths` carries a host's first frame to the other host
//! hop by hop through the flows it installs, and a controller that never
//! discovers anything gets "did not converge", not a hang.

use ctlbench::fabric::{Fabric, Spec};
use ctlbench::northbound::Northbound;
use ctlbench::topology_tests::discovery_time;
use std::net::SocketAddr;
use std::time::Duration;

fn controller(apps: &[&str]) -> (controller::runtime::Handle, SocketAddr) {
    let set = controller::app::build(apps).unwrap();
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 2,
        apps: set.factories.clone(),
        ..Default::default()
    })
    .unwrap();
    let rest = controller::rest::serve("127.0.0.1:0".parse().unwrap(), ctl.clone(), set).unwrap();
    (ctl, rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_finds_every_link() {
    for (spec, version) in [
        (Spec::leaf_spine(2, 3, 1), ofwire::OFP13_VERSION),
        (Spec::linear(5), ofwire::OFP10_VERSION),
    ] {
        let (ctl, rest) = controller(&["topology"]);
        let n = spec.switches.len();
        let d = discovery_time(
            spec,
            ctl.local_addrs[0],
            version,
            &Northbound::Sdnlab(rest),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_without_discovery_does_not_converge() {
    let (ctl, rest) = controller(&["l2-learning"]);
    let d = discovery_time(
        Spec::linear(3),
        ctl.local_addrs[0],
        ofwire::OFP13_VERSION,
        &Northbound::Sdnlab(rest),
        Duration::from_millis(800),
    )
    .await;
    assert!(d.seconds.is_none());
    assert!(d.note.contains("did not converge within 0.8 s"), "{}", d.note);
    assert!(d.note.contains("409"), "the REST answer is reported: {}", d.note);
    ctl.stop();
}

/// A host's frames reach the other host across a leaf-spine (with its
/// loops) through the flows `paths` installs, and a second frame needs no
/// PACKET_IN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_frame_crosses_every_hop() {
    let (ctl, rest) = controller(&["paths"]);
    let spec = Spec::leaf_spine(2, 3, 1);
    let fabric = Fabric::start(
        spec.clone(),
        ctl.local_addrs[0],
        ofwire::OFP13_VERSION,
        Duration::from_secs(5),
    )
    .await;
    // Wait for discovery and for ports to settle (paths floods only once it knows the edges).
    let nb = Northbound::Sdnlab(rest);
    for _ in 0..300 {
        if nb.links().await.unwrap() == Some(spec.links.len() * 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mac = |i: u8| [0x02, 0, 0, 0, 0, i];
    let frame = |from: u8, to: [u8; 6]| {
        let mut f = to.to_vec();
        f.extend_from_slice(&mac(from));
        f.extend_from_slice(&[
            0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, from, 10, 0, 0, 9,
        ]);
        f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
        f
    };
    // Each host announces itself (a broadcast), so the controller learns where it is.
    for h in 0..3u8 {
        fabric.send_from_host(h as usize, frame(h + 1, [0xff; 6]));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for h in 0..3 {
        fabric.take_received(h);
    }
    fabric.send_from_host(0, frame(1, mac(3)));
    let mut got = Vec::new();
    for _ in 0..200 {
        got = fabric.take_received(2);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(got.len(), 1, "the first frame did not arrive");
    assert!(fabric.take_received(1).is_empty(), "delivered to the wrong host");
    let before = fabric.stats.packet_ins.load(std::sync::atomic::Ordering::Relaxed);
    fabric.send_from_host(0, frame(1, mac(3)));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fabric.take_received(2).len(), 1);
    assert_eq!(
        fabric.stats.packet_ins.load(std::sync::atomic::Ordering::Relaxed),
        before,
        "the second frame went through the controller"
    );
    fabric.stop();
    ctl.stop();
}

/// Reactive path provisioning time with `paths`: every first frame arrives,
/// each within the time limit and after a positive delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reactive_paths_are_provisioned_for_every_pair() {
    use ctlbench::topology_tests::{host_frame, reactive_provisioning};
    let (ctl, rest) = controller(&["paths"]);
    let spec = Spec::leaf_spine(2, 4, 1);
    let fabric = Fabric::start(
        spec.clone(),
        ctl.local_addrs[0],
        ofwire::OFP10_VERSION,
        Duration::from_secs(5),
    )
    .await;
    let nb = Northbound::Sdnlab(rest);
    for _ in 0..300 {
        if nb.links().await.unwrap() == Some(spec.links.len() * 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for h in 0..4u8 {
        fabric.send_from_host(h as usize, host_frame(h + 1, [0xff; 6]));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let p = reactive_provisioning(&fabric, Duration::from_secs(2)).await;
    assert_eq!(p.pairs, 3);
    assert!(p.note.is_empty(), "{p:?}");
    assert!(p.seconds.iter().all(|s| s.is_some_and(|s| s > 0.0 && s < 2.0)), "{p:?}");
    fabric.stop();
    ctl.stop();
}
