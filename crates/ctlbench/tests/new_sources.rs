//! `Answers::NewSource` against a controller of this test's own that
//! behaves as Faucet does with a learning PACKET_IN: it installs a
//! send-to-controller rule (with its cookie) first, then answers each new
//! source with a FLOW_MOD naming that eth_src, no buffer, and deliberately
//! leaves some unanswered. The driver must stamp its PACKET_INs with that
//! rule (reason ACTION, the rule's table and cookie), tag them with the
//! VLAN asked for, send a source never sent before each time, match the
//! answers by source, and give up on (and count) the unanswered ones.
//! The security suite meets the same controller in its form: the witness
//! is served when its new source is learnt. Faucet itself is driven in
//! CI's smoke (`bench ctl --peer faucet`).

use ofwire::{v13, Body, Message};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const COOKIE: u64 = 0x5adc_15c0;

#[derive(Default)]
struct Seen {
    packet_ins: AtomicU64,
    /// PACKET_INs that did not carry the rule's table and cookie, or not
    /// reason ACTION, or untagged (none is sent before the rule).
    unstamped: AtomicU64,
    repeated: AtomicU64,
}

async fn learning_controller(l: tokio::net::TcpListener, seen: Arc<Seen>) {
    loop {
        let Ok((mut s, _)) = l.accept().await else { return };
        let seen = seen.clone();
        tokio::spawn(async move {
            let hello = Message::new(4, 1, Body::Hello(ofwire::header::Hello::with_versions(&[4])));
            // (A session of the security suite may be gone already.)
            if s.write_all(&hello.to_bytes().unwrap()).await.is_err() {
                return;
            }
            let desc = Message::v13(
                2,
                v13::Body::MultipartRequest(v13::MultipartRequest {
                    flags: 0,
                    body: v13::MultipartRequestBody::PortDesc,
                }),
            );
            if s.write_all(&desc.to_bytes().unwrap()).await.is_err() {
                return;
            }
            // The learning rule, in table 1, with the controller's cookie.
            let rule = Message::v13(
                3,
                v13::Body::FlowMod(v13::FlowMod {
                    cookie: COOKIE,
                    table_id: 1,
                    priority: 1,
                    instructions: vec![v13::Instruction::ApplyActions(vec![v13::Action::Output {
                        port: v13::port::CONTROLLER,
                        max_len: 128,
                    }])],
                    ..v13::FlowMod::add(1)
                }),
            );
            if s.write_all(&rule.to_bytes().unwrap()).await.is_err() {
                return;
            }
            let mut framer = ofwire::header::Framer::default();
            let mut buf = vec![0u8; 65536];
            let mut n_in = 0u64;
            // Every source this connection brought.
            let mut sources = std::collections::HashSet::new();
            loop {
                let Ok(n) = s.read(&mut buf).await else { return };
                if n == 0 {
                    return;
                }
                framer.push(&buf[..n]);
                let mut out = Vec::new();
                while let Ok(Some(raw)) = framer.next_message() {
                    let Ok(m) = ofwire::decode(raw) else { continue };
                    let Body::V13(v13::Body::PacketIn(pi)) = m.body else {
                        continue;
                    };
                    n_in += 1;
                    seen.packet_ins.fetch_add(1, Relaxed);
                    let d = &pi.data.0;
                    if d.len() < 14 {
                        continue; // no frame to learn from (the security suite sends one)
                    }
                    let tagged =
                        d.len() > 16 && d[12..14] == [0x81, 0x00] && u16::from_be_bytes([d[14], d[15]]) & 0xfff == 100;
                    let stamped = pi.cookie == COOKIE && pi.table_id == 1;
                    if pi.reason != ofwire::PacketInReason::Action || !tagged || !stamped {
                        seen.unstamped.fetch_add(1, Relaxed);
                    }
                    let src: [u8; 6] = d[6..12].try_into().unwrap();
                    if !sources.insert(src) {
                        seen.repeated.fetch_add(1, Relaxed);
                    }
                    // Only what came from the rule is learned; one in twenty is
                    // left unanswered, as a controller shedding load would.
                    if !stamped || n_in.is_multiple_of(20) {
                        continue;
                    }
                    let learn = |table: u8, field: ofwire::oxm::Oxm| {
                        Message::v13(
                            0,
                            v13::Body::FlowMod(v13::FlowMod {
                                cookie: COOKIE,
                                table_id: table,
                                priority: 8192,
                                buffer_id: u32::MAX,
                                match_: ofwire::oxm::Match::new(vec![field]),
                                ..v13::FlowMod::add(8192)
                            }),
                        )
                    };
                    let mac = ofwire::MacAddr(src);
                    learn(1, ofwire::oxm::Oxm::EthSrc(mac, None)).encode(&mut out).unwrap();
                    learn(2, ofwire::oxm::Oxm::EthDst(mac, None)).encode(&mut out).unwrap();
                }
                if !out.is_empty() && s.write_all(&out).await.is_err() {
                    return;
                }
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_sources_are_stamped_matched_and_given_up_when_unanswered() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    tokio::spawn(learning_controller(l, seen.clone()));
    for mode in [ctlbench::Mode::Throughput, ctlbench::Mode::Latency] {
        let cfg = ctlbench::Config {
            switches: 2,
            macs: 50,
            mode,
            version: ofwire::OFP13_VERSION,
            loops: 2,
            loop_ms: 1500,
            window: 16,
            vlan: Some(100),
            answers: ctlbench::Answers::NewSource,
            unanswered_after_ms: 300,
            ..ctlbench::Config::new(target)
        };
        let r = ctlbench::run(cfg, |_| {}).await;
        assert_eq!(r.sessions_lost, 0);
        for l in &r.loops {
            // Each answered request brings two FLOW_MODs, one matched.
            assert!(l.matched_per_s > 5.0, "{mode:?}: {l:?}");
            assert!(
                (l.responses_per_s - 2.0 * l.matched_per_s).abs() <= 0.2 * l.responses_per_s + 4.0,
                "{mode:?}: {l:?}"
            );
            // One in twenty left unanswered is given up within the loop's span.
            assert!(l.unanswered > 0, "{mode:?}: nothing given up: {l:?}");
            assert_eq!(l.unmatched, 0, "{mode:?}: {l:?}");
        }
        assert!(r.rtt_us_p50 > 0.0, "{mode:?}");
    }
    assert!(seen.packet_ins.load(Relaxed) > 100);
    assert_eq!(seen.unstamped.load(Relaxed), 0, "PACKET_INs not as from the rule");
    assert_eq!(
        seen.repeated.load(Relaxed),
        0,
        "a source was sent twice on one connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_security_suite_meets_a_learning_controller_in_its_form() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    tokio::spawn(learning_controller(l, seen.clone()));
    let cfg = ctlbench::security::SuiteConfig {
        target,
        version: ofwire::OFP13_VERSION,
        wait: std::time::Duration::from_millis(300),
        hello_wait: std::time::Duration::from_secs(1),
        answers: ctlbench::Answers::NewSource,
        vlan: Some(100),
        members: Vec::new(),
    };
    let results = ctlbench::security::run_suite(cfg, |_| {}).await;
    assert_eq!(results.len(), ctlbench::security::CASES);
    let case = |name: &str| results.iter().find(|r| r.case == name).unwrap();
    // The controller learns only PACKET_INs stamped with its rule and
    // tagged: the witness was, after every case.
    for r in &results {
        assert!(r.others_served && r.controller_alive, "{r:?}");
    }
    // A case's own PACKET_IN is stamped too (the controller learnt its
    // source), while the pipeline installed at connection is not taken
    // for an answer to a case that sends none.
    assert!(case("ARP ethertype carrying IPv4").observation.acted > 0);
    assert_eq!(case("unknown message type").observation.acted, 0);
    assert_eq!(case("bad length field").observation.acted, 0);
}
