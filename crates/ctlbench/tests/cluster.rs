//! The load driver against a cluster (RFC 8456's cluster mode), with
//! sdnlab's controllers in this process as its members. A binary of its
//! own: three controllers and their load beside the paced tests of
//! against_own_controller took the rate those tests assert (CI,
//! 2026-11-28).

mod common;

use common::{cfg, controller};

/// RFC 8456's cluster mode with every member EQUAL: three controllers that
/// know nothing of each other (no role is ever asked for), every switch
/// connected to each. The switches settle as all EQUAL a second after
/// their handshakes, send every PACKET_IN to all three, take the first
/// answer and count the other two as duplicates, per member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_all_equal_cluster_gets_every_request_and_its_second_answers_are_duplicates() {
    let ctls: Vec<_> = (0..3).map(|_| controller("l2-learning")).collect();
    for version in [ofwire::OFP10_VERSION, ofwire::OFP13_VERSION] {
        let mut c = cfg(ctls[0].local_addrs[0], ctlbench::Mode::Throughput, version);
        c.members = ctls.iter().map(|h| h.local_addrs[0]).collect();
        // Paced below what each member answers, so none lags (a member
        // flooded beyond its rate answers after the last loop).
        c.offered_rate = 4000.0;
        c.loop_ms = 500;
        let r = ctlbench::run(c, |_| {}).await;
        assert_eq!(r.sessions_lost, 0, "{version}");
        let cl = r.cluster.as_ref().expect("a cluster report");
        assert!(
            cl.settle_s.is_some_and(|s| s >= 1.0),
            "settled as all EQUAL after a second: {cl:?}"
        );
        assert_eq!((cl.unsettled, cl.without_master), (0, 4), "{cl:?}");
        assert_eq!(cl.members.len(), 3);
        let requests = cl.members[0].requests;
        assert!(requests > 1000, "{cl:?}");
        let firsts: u64 = cl.members.iter().map(|m| m.first_answers).sum();
        let dups: u64 = cl.members.iter().map(|m| m.duplicates).sum();
        for m in &cl.members {
            // Every member was sent every request (up to a loop's edge).
            assert!(m.requests.abs_diff(requests) * 50 <= requests, "{cl:?}");
            assert_eq!((m.masters, m.slave_writes), (0, 0), "{cl:?}");
        }
        // Each request answered three times: one first, two duplicates
        // (give or take the loops' edges: a member that lags, on a busy
        // machine, answers warm-up requests inside the measured loops and
        // measured ones after them).
        let ratio = dups as f64 / firsts as f64;
        assert!((1.6..2.4).contains(&ratio), "{version}: {ratio}: {cl:?}");
        for m in &cl.members {
            let answered = m.first_answers + m.duplicates;
            assert!(
                answered.abs_diff(m.requests) * 4 <= m.requests,
                "every member answered: {cl:?}"
            );
        }
        let loop_dups: u64 = r.loops.iter().map(|l| l.duplicates).sum();
        assert!(loop_dups.abs_diff(dups) * 50 <= dups, "{loop_dups} {dups}");
    }
    for c in ctls {
        c.stop();
    }
}

/// Control Session Capacity against a cluster: each switch opens a session
/// to every member and is held while all of them answer, so every member
/// sees every switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_capacity_against_a_cluster_connects_each_switch_to_every_member() {
    let ctls: Vec<_> = (0..3).map(|_| controller("l2-learning")).collect();
    let cfg = ctlbench::capacity::CapacityConfig {
        target: ctls[0].local_addrs[0],
        version: ofwire::OFP13_VERSION,
        first_dpid: ctlbench::capacity::FIRST_DPID,
        max_sessions: 150,
        check_every: 50,
        timeout: std::time::Duration::from_secs(5),
        members: ctls.iter().map(|h| h.local_addrs[0]).collect(),
    };
    let (_never, stop) = tokio::sync::watch::channel(false);
    let held = ctlbench::capacity::open(cfg, |_, _| {}, stop).await;
    let r = &held.result;
    assert_eq!((r.held, r.ended_by.as_str()), (150, "limit"), "{r:?}");
    for (i, c) in ctls.iter().enumerate() {
        assert_eq!(c.switches().len(), 150, "member {i} has every switch");
    }
    drop(held);
    for c in ctls {
        c.stop();
    }
}
