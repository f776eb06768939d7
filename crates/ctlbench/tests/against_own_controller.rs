//! The load driver against sdnlab's controller in this process: every
//! response it counts is matched to a request, in both modes and versions,
//! and a controller that answers nothing gives a run with nothing matched.

use std::time::Duration;

mod common;

use common::{cfg, controller};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_matched_in_both_modes_and_versions() {
    let ctl = controller("l2-learning");
    for version in [ofwire::OFP10_VERSION, ofwire::OFP13_VERSION] {
        for mode in [ctlbench::Mode::Throughput, ctlbench::Mode::Latency] {
            let mut seen = 0;
            let r = ctlbench::run(cfg(ctl.local_addrs[0], mode, version), |_| seen += 1).await;
            assert_eq!(seen, 2, "each loop is reported as it ends");
            assert_eq!(r.sessions_lost, 0);
            for l in &r.loops {
                assert!(l.matched_per_s > 100.0, "{version}/{mode:?}: {l:?}");
                assert_eq!(l.unmatched, 0);
                // l2-learning answers each request once. The two counters
                // are read one after the other while the switches keep
                // counting, so allow one read batch of skew at a loop's edge.
                assert!(
                    (l.responses_per_s - l.matched_per_s).abs() <= 0.01 * l.responses_per_s + 1.0,
                    "l2-learning answers each request once: {l:?}"
                );
            }
            assert!(r.rtt_us_p50 > 0.0 && r.rtt_us_p99 >= r.rtt_us_p50);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_answers_with_packet_outs_that_still_match() {
    let ctl = controller("hub");
    let r = ctlbench::run(
        cfg(ctl.local_addrs[0], ctlbench::Mode::Throughput, ofwire::OFP10_VERSION),
        |_| {},
    )
    .await;
    assert!(
        r.loops.iter().all(|l| l.matched_per_s > 100.0 && l.unmatched == 0),
        "{:?}",
        r.loops
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_listener_gives_lost_sessions_not_a_hang() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut keep = Vec::new();
        for s in l.incoming().take(4) {
            keep.push(s);
        }
        std::thread::sleep(Duration::from_millis(100));
    });
    let mut c = cfg(addr, ctlbench::Mode::Throughput, ofwire::OFP10_VERSION);
    c.loops = 1;
    let r = tokio::time::timeout(Duration::from_secs(10), ctlbench::run(c, |_| {}))
        .await
        .expect("the run ends");
    assert!(r.loops.iter().all(|l| l.matched_per_s == 0.0));
}

/// A controller that answers every PACKET_IN twice (a FLOW_MOD and a
/// PACKET_OUT for the same buffer): cbench counts both, the matched count
/// credits the request once and the second answer is counted as unmatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_double_answering_controller_is_caught() {
    use controller::app::{Context, SwitchApp, Verdict};
    use ofwire::hot::{write_flow_mod10, write_packet_out10, PacketInView};
    struct Twice;
    impl SwitchApp for Twice {
        fn name(&self) -> &'static str {
            "twice"
        }
        fn packet_in(&mut self, sw: &mut ofconn::Session, pi: &PacketInView) -> Verdict {
            let mut fm = ofwire::v10::FlowMod {
                match_: ofwire::v10::Match::all(),
                cookie: 0,
                command: ofwire::v10::FlowModCommand::Add,
                idle_timeout: 0,
                hard_timeout: 0,
                priority: 1,
                buffer_id: pi.buffer_id,
                out_port: ofwire::v10::port::NONE,
                flags: 0,
                actions: Vec::new(),
            };
            fm.buffer_id = pi.buffer_id;
            let x = sw.xid();
            let _ = write_flow_mod10(sw.transmit(), x, &fm, &[]);
            let x = sw.xid();
            let _ = write_packet_out10(sw.transmit(), x, pi.buffer_id, pi.in_port as u16, &[], &[]);
            Verdict::Done
        }
    }
    let ctl = controller::runtime::start(controller::runtime::Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        workers: 1,
        apps: vec![std::sync::Arc::new(|_: &Context| Box::new(Twice) as Box<dyn SwitchApp>)],
        ..Default::default()
    })
    .unwrap();
    for mode in [ctlbench::Mode::Latency, ctlbench::Mode::Throughput] {
        let r = ctlbench::run(cfg(ctl.local_addrs[0], mode, ofwire::OFP10_VERSION), |_| {}).await;
        assert_eq!(r.sessions_lost, 0);
        for l in &r.loops {
            assert!(l.matched_per_s > 0.0);
            // Two responses per matched request, the second a duplicate
            // (told apart from answers to no request at all).
            let ratio = l.responses_per_s / l.matched_per_s;
            assert!((1.9..2.1).contains(&ratio), "{mode:?}: ratio {ratio}: {l:?}");
            let duplicates_per_s = l.duplicates as f64 / l.seconds;
            assert!(
                (duplicates_per_s / l.matched_per_s - 1.0).abs() < 0.1,
                "{mode:?}: {l:?}"
            );
            assert!(l.unmatched <= 2, "{mode:?}: {l:?}");
        }
    }
    ctl.stop();
}

/// RFC 8456 exception handling in the load: with 2 % malformed messages,
/// sdnlab's controller answers each unknown type with an error, acts on no
/// malformed PACKET_IN, and keeps answering the good ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_in_the_load_are_counted_apart() {
    let ctl = controller("l2-learning");
    let mut c = cfg(ctl.local_addrs[0], ctlbench::Mode::Throughput, ofwire::OFP10_VERSION);
    c.malformed_per_mille = 20;
    let r = ctlbench::run(c, |_| {}).await;
    assert_eq!(r.sessions_lost, 0);
    let sent: u64 = r.loops.iter().map(|l| l.malformed_sent).sum();
    let matched: f64 = r.loops.iter().map(|l| l.matched_per_s * l.seconds).sum();
    assert!(sent > 0 && matched > 0.0);
    // About 2 % of what was sent (good requests are the matched ones, give or take the window).
    let share = sent as f64 / (sent as f64 + matched);
    assert!((0.01..0.03).contains(&share), "share {share}");
    assert_eq!(r.loops.iter().map(|l| l.malformed_acted).sum::<u64>(), 0);
    let errors: u64 = r.loops.iter().map(|l| l.errors).sum();
    // Half the malformed ones are unknown types, each answered with an error.
    assert!(
        errors as f64 >= 0.4 * sent as f64,
        "{errors} errors for {sent} malformed"
    );
    ctl.stop();
}

/// The loss-free rate search converges on sdnlab's controller: the last
/// round's offered rate comes back answered within the tolerance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_search_converges() {
    let ctl = controller("l2-learning");
    let mut c = cfg(ctl.local_addrs[0], ctlbench::Mode::Throughput, ofwire::OFP10_VERSION);
    c.window = 1024;
    let r = ctlbench::rate::search(c, 8, 0.05, |_| {}).await;
    assert_eq!(r.sessions_lost, 0);
    assert!(r.rounds.len() >= 2 && r.rounds[0].offered_per_s == 0.0);
    assert!(r.converged, "{r:?}");
    let last = r.rounds.last().unwrap();
    assert!(last.offered_per_s > 0.0 && last.loss < 0.05, "{r:?}");
    // The converged round sent what it offered.
    assert!((last.sent_per_s / last.offered_per_s - 1.0).abs() < 0.05, "{last:?}");
    ctl.stop();
}

/// A paced run sends at the rate asked, not more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_load_sends_the_offered_rate() {
    let ctl = controller("l2-learning");
    let mut c = cfg(ctl.local_addrs[0], ctlbench::Mode::Throughput, ofwire::OFP10_VERSION);
    c.offered_rate = 20_000.0;
    let r = ctlbench::run(c, |_| {}).await;
    for l in &r.loops {
        assert!((l.requests_per_s / 20_000.0 - 1.0).abs() < 0.1, "{l:?}");
        assert!((l.matched_per_s / 20_000.0 - 1.0).abs() < 0.15, "{l:?}");
    }
    ctl.stop();
}

/// A controller that never asks for what ends a handshake (it sends its
/// HELLO, then nothing) does not hang the run: it ends on time, every
/// switch counted lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_that_never_ends_does_not_hang_the_run() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let hello = ofwire::Message::new(4, 1, ofwire::Body::Hello(ofwire::header::Hello::with_versions(&[4])));
                let _ = s.write_all(&hello.to_bytes().unwrap()).await;
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    let c = cfg(addr, ctlbench::Mode::Throughput, ofwire::OFP13_VERSION);
    let t = std::time::Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(20), ctlbench::run(c.clone(), |_| {}))
        .await
        .expect("the run hung");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(r.sessions_lost, c.switches as u64);
    assert!(r.loops.iter().all(|l| l.matched_per_s == 0.0));
}
