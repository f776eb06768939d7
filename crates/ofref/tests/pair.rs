//! The reference pair against itself and against an independent codec:
//! the generator loads the responder in both OpenFlow versions and modes,
//! every switch answered in every loop; every message either side sends
//! decodes with sdnlab's codec (ofwire, itself checked byte for byte
//! against tshark and Open vSwitch), and each answer carries the request's
//! buffer id.

use ofwire::{v10, v13, Body, Framer, Message};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn gen(target: std::net::SocketAddr, version: u8, latency: bool) -> ofref::GenConfig {
    ofref::GenConfig {
        target,
        version,
        latency,
        switches: 4,
        macs: 50,
        window: 64,
        ports: 4,
        first_dpid: 0x77,
        warmup: 1,
        loops: 2,
        loop_ms: 200,
        threads: 2,
    }
}

#[test]
fn the_generator_loads_the_responder_in_both_versions_and_modes() {
    let r = ofref::Responder::start(2).unwrap();
    for version in [0x01, 0x04] {
        for latency in [false, true] {
            let rep = ofref::generate(&gen(r.addr(), version, latency)).unwrap();
            assert_eq!(rep.established, 4, "{version} {latency}");
            assert_eq!(rep.loops.len(), 2);
            for l in &rep.loops {
                assert!(l.per_switch.iter().all(|&n| n > 0), "{version} {latency}: {l:?}");
                assert!((0.15..0.5).contains(&l.seconds), "{l:?}");
            }
        }
    }
}

/// In 1.3 a learning controller (sdnlab's, os-ken) drops PACKET_INs until
/// it has the switch's port list: the generator's handshake ends when the
/// controller asks for it, so every switch is answered in every loop.
#[test]
fn the_generator_waits_for_a_13_controllers_port_list() {
    let ctl = controller::embedded::start_local("l2-learning", 1).unwrap();
    for latency in [false, true] {
        let rep = ofref::generate(&gen(ctl.local_addrs[0], 0x04, latency)).unwrap();
        assert_eq!(rep.established, 4, "{latency}");
        for l in &rep.loops {
            assert!(l.per_switch.iter().all(|&n| n > 0), "{latency}: {l:?}");
        }
    }
    ctl.stop();
}

fn hello(version: u8) -> Vec<u8> {
    Message::new(version, 1, Body::Hello(ofwire::Hello::with_versions(&[version])))
        .to_bytes()
        .unwrap()
}

/// Reads whole messages from `s` until `until` says stop or 3 s pass.
fn read_until(s: &mut TcpStream, framer: &mut Framer, mut until: impl FnMut(&Message) -> bool) {
    let t = Instant::now();
    let mut buf = [0u8; 65536];
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    while t.elapsed() < Duration::from_secs(3) {
        while let Some(raw) = framer.next_message().unwrap() {
            let m = ofwire::decode(raw).unwrap_or_else(|e| panic!("{e}: {raw:02x?}"));
            if until(&m) {
                return;
            }
        }
        if let Ok(n) = s.read(&mut buf) {
            assert!(n > 0, "closed");
            framer.push(&buf[..n]);
        }
    }
    panic!("not seen within 3 s");
}

#[test]
fn the_responders_messages_decode_and_answer_the_buffer() {
    let r = ofref::Responder::start(1).unwrap();
    for version in [0x01u8, 0x04] {
        let mut s = TcpStream::connect(r.addr()).unwrap();
        let mut framer = Framer::default();
        s.write_all(&hello(version)).unwrap();
        read_until(&mut s, &mut framer, |m| {
            matches!(
                m.body,
                Body::V10(v10::Body::FeaturesRequest) | Body::V13(v13::Body::FeaturesRequest)
            )
        });
        if version == 0x04 {
            read_until(&mut s, &mut framer, |m| {
                matches!(m.body, Body::V13(v13::Body::MultipartRequest(_)))
            });
        }
        let frame = vec![0xffu8; 60];
        let pi = match version {
            0x01 => Body::V10(v10::Body::PacketIn(v10::PacketIn {
                buffer_id: 0x1234_5678,
                total_len: 60,
                in_port: 1,
                reason: ofwire::PacketInReason::NoMatch,
                data: ofwire::Bytes(frame),
            })),
            _ => Body::V13(v13::Body::PacketIn(v13::PacketIn {
                buffer_id: 0x1234_5678,
                total_len: 60,
                reason: ofwire::PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0,
                match_: ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::InPort(1)]),
                data: ofwire::Bytes(frame),
            })),
        };
        s.write_all(&Message::new(version, 9, pi).to_bytes().unwrap()).unwrap();
        read_until(&mut s, &mut framer, |m| match &m.body {
            Body::V10(v10::Body::FlowMod(f)) => f.buffer_id == 0x1234_5678 && m.xid == 9,
            Body::V13(v13::Body::FlowMod(f)) => f.buffer_id == 0x1234_5678 && m.xid == 9,
            _ => false,
        });
        // An echo is answered in kind.
        s.write_all(
            &Message::new(
                version,
                11,
                match version {
                    0x01 => Body::V10(v10::Body::EchoRequest(ofwire::Bytes(b"abc".to_vec()))),
                    _ => Body::V13(v13::Body::EchoRequest(ofwire::Bytes(b"abc".to_vec()))),
                },
            )
            .to_bytes()
            .unwrap(),
        )
        .unwrap();
        read_until(&mut s, &mut framer, |m| match &m.body {
            Body::V10(v10::Body::EchoReply(b)) | Body::V13(v13::Body::EchoReply(b)) => m.xid == 11 && b.0 == b"abc",
            _ => false,
        });
    }
}

#[test]
fn the_generators_messages_decode() {
    for version in [0x01u8, 0x04] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let g = std::thread::spawn(move || {
            let mut c = gen(addr, version, false);
            c.switches = 1;
            c.threads = 1;
            c.warmup = 0;
            c.loops = 1;
            c.loop_ms = 300;
            ofref::generate(&c).unwrap()
        });
        let (mut s, _) = l.accept().unwrap();
        let mut framer = Framer::default();
        s.write_all(&hello(version)).unwrap();
        let fr = match version {
            0x01 => Body::V10(v10::Body::FeaturesRequest),
            _ => Body::V13(v13::Body::FeaturesRequest),
        };
        s.write_all(&Message::new(version, 2, fr).to_bytes().unwrap()).unwrap();
        read_until(&mut s, &mut framer, |m| match &m.body {
            Body::V10(v10::Body::FeaturesReply(f)) => f.datapath_id == 0x77 && f.ports.len() == 4,
            Body::V13(v13::Body::FeaturesReply(f)) => f.datapath_id == 0x77,
            _ => false,
        });
        // The learning phase: every MAC once, as a broadcast, each a whole frame.
        let mut sources = std::collections::HashSet::new();
        read_until(&mut s, &mut framer, |m| {
            let data = match &m.body {
                Body::V10(v10::Body::PacketIn(p)) => &p.data.0,
                Body::V13(v13::Body::PacketIn(p)) => &p.data.0,
                _ => return false,
            };
            assert_eq!(data.len(), 60);
            assert_eq!(data[..6], [0xff; 6]);
            sources.insert(data[6..12].to_vec());
            sources.len() == 50
        });
        let rep = g.join().unwrap();
        assert_eq!(rep.established, 1);
    }
}
