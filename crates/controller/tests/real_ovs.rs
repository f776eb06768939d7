//! The controller against a real switch with real traffic: Open vSwitch
//! (userspace datapath) in namespaces brought up by netlab, hosts pinging
//! every other host through `l2-learning`, OpenFlow 1.0 and 1.3, on a
//! single switch, a chain of 4 and a small leaf-spine; the flows installed
//! are read back with `ovs-ofctl dump-flows`. Needs root.

use controller::runtime::{self, Config};
use netlab::run::{Net, SwitchKind, UpOptions};
use std::process::Command;
use std::time::{Duration, Instant};

fn start_controller(apps: &[&str]) -> runtime::Handle {
    runtime::start(Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 2,
        apps: apps.iter().map(|a| controller::app::by_name(a).unwrap()).collect(),
        session: ofconn::Config::default(),
        verbose: false,
    })
    .unwrap()
}

async fn check(shape: &str, protocol: &str) {
    let ctl = start_controller(&["l2-learning"]);
    let mut topo = netlab::topo::shape(shape).unwrap();
    for s in &mut topo.switches {
        s.protocols = vec![protocol.to_string()];
    }
    let n_switches = topo.switches.len();
    let net = Net::up(
        topo,
        UpOptions {
            kind: SwitchKind::Ovs,
            controller: Some(ctl.local_addrs[0].to_string()),
            keep_loops: false,
        },
    )
    .await
    .unwrap();
    let t = Instant::now();
    while ctl.switches().len() < n_switches {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{shape}/{protocol}: only {:?} switches connected",
            ctl.switches()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut results = net.ping_all(2).await;
    let t = Instant::now();
    while results.iter().any(|r| r.received == 0) && t.elapsed() < Duration::from_secs(10) {
        results = net.ping_all(1).await;
    }
    let failed: Vec<_> = results
        .iter()
        .filter(|r| r.received == 0)
        .map(|r| format!("{}->{}", r.from, r.to))
        .collect();
    assert!(failed.is_empty(), "{shape}/{protocol}: unanswered pairs {failed:?}");
    // The learnt flows are in the switch, as l2-learning writes them.
    let first = net.state.switches[0].0.clone();
    let sock = net.ovs_mgmt(&first).unwrap();
    let out = Command::new("ovs-ofctl")
        .args(["-O", protocol, "dump-flows", &format!("unix:{}", sock.display())])
        .output()
        .unwrap();
    let flows = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let learnt: Vec<&str> = flows.lines().filter(|l| l.contains("cookie=0x5d1a")).collect();
    assert!(
        !learnt.is_empty(),
        "{shape}/{protocol}: no learnt flow on {first}:\n{flows}"
    );
    for l in &learnt {
        assert!(
            l.contains("idle_timeout=60") && l.contains("dl_src=02:00:00") && l.contains("actions=output:"),
            "{l}"
        );
    }
    if protocol == "OpenFlow13" {
        assert!(
            flows.contains("priority=0 actions=CONTROLLER:65535"),
            "table-miss flow missing:\n{flows}"
        );
    }
    net.down().await.unwrap();
    ctl.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_single_switch() {
    check("single,3", "OpenFlow10").await;
    check("single,3", "OpenFlow13").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_linear_chain_of_four() {
    check("linear,4", "OpenFlow10").await;
    check("linear,4", "OpenFlow13").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l2_learning_leaf_spine() {
    // Redundant spine links are left down by netlab (l2-learning does not handle loops).
    check("leaf-spine,2,2,2", "OpenFlow13").await;
    check("leaf-spine,2,2,2", "OpenFlow10").await;
}
