use super::*;
use ofwire::error::{BadRequestCode, HelloFailedCode};

/// Decodes and clears everything the session queued.
fn sent(s: &mut Session) -> Vec<Message> {
    let mut f = Framer::default();
    f.push(s.transmit());
    s.transmit().clear();
    let mut v = Vec::new();
    while let Some(m) = f.next_message().unwrap() {
        v.push(ofwire::decode(m).unwrap());
    }
    v
}

fn feed(s: &mut Session, m: &Message, now: Instant) {
    s.on_bytes(&m.to_bytes().unwrap(), now, &mut |_, _| panic!("no PACKET_IN expected"));
}

fn feed_raw(s: &mut Session, raw: &[u8], now: Instant) {
    s.on_bytes(raw, now, &mut |_, _| panic!("no PACKET_IN expected"));
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn port13(no: u32) -> v13::Port {
    v13::Port::new(no, ofwire::MacAddr([2, 0, 0, 0, 0, no as u8]), format!("p{no}"))
}

/// A session through the 1.3 handshake, with port desc split in two replies.
fn ready13(now: Instant) -> Session {
    let mut s = Session::new(Config::default(), now);
    let hello = sent(&mut s);
    assert!(matches!(&hello[0].body, Body::Hello(h) if h.bitmap_versions() == Some(vec![1, 4])));
    feed(
        &mut s,
        &Message::new(4, 7, Body::Hello(Hello::with_versions(&[4]))),
        now,
    );
    let out = sent(&mut s);
    assert!(matches!(out[0].body, Body::V13(v13::Body::FeaturesRequest)), "{out:?}");
    assert_eq!(s.phase(), Phase::AwaitFeatures);
    let fr = v13::FeaturesReply {
        datapath_id: 0xa1,
        n_buffers: 0,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: 0,
        reserved: 0,
    };
    feed(&mut s, &Message::v13(out[0].xid, v13::Body::FeaturesReply(fr)), now);
    let out = sent(&mut s);
    let xid = out[0].xid;
    assert!(
        matches!(&out[0].body, Body::V13(v13::Body::MultipartRequest(r)) if r.body == v13::MultipartRequestBody::PortDesc)
    );
    for (more, ports) in [
        (v13::MULTIPART_MORE, vec![port13(1), port13(2)]),
        (0, vec![port13(v13::port::LOCAL)]),
    ] {
        let r = v13::MultipartReply {
            flags: more,
            body: v13::MultipartReplyBody::PortDesc(ports),
        };
        feed(&mut s, &Message::v13(xid, v13::Body::MultipartReply(r)), now);
    }
    let out = sent(&mut s);
    assert!(matches!(&out[0].body, Body::V13(v13::Body::SetConfig(c)) if c.miss_send_len == 0xffff));
    match events(&mut s).as_slice() {
        [Event::Up(info)] => {
            assert_eq!((info.datapath_id, info.version), (0xa1, 4));
            assert_eq!(
                info.ports.iter().map(|p| p.port_no).collect::<Vec<_>>(),
                vec![1, 2, v13::port::LOCAL]
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.phase(), Phase::Ready);
    assert!(s.held());
    s.resume(now, &mut |_, _| panic!("nothing was held"));
    s
}

#[test]
fn messages_arriving_with_the_handshake_wait_for_the_up_event() {
    let now = Instant::now();
    let mut s = Session::new(Config::default(), now);
    sent(&mut s);
    let mut batch = Message::new(1, 1, Body::Hello(Hello::default())).to_bytes().unwrap();
    feed_raw(&mut s, &batch, now);
    let xid = sent(&mut s)[0].xid;
    let fr = v10::FeaturesReply::bare(9);
    batch = Message::v10(xid, v10::Body::FeaturesReply(fr)).to_bytes().unwrap();
    let pi = v10::PacketIn {
        buffer_id: 1,
        total_len: 1,
        in_port: 1,
        reason: ofwire::PacketInReason::NoMatch,
        data: ofwire::Bytes(vec![0]),
    };
    batch.extend(Message::v10(5, v10::Body::PacketIn(pi)).to_bytes().unwrap());
    feed_raw(&mut s, &batch, now); // would panic if the PACKET_IN came before Up
    assert!(s.held());
    assert!(matches!(events(&mut s).as_slice(), [Event::Up(_)]));
    let mut n = 0;
    s.resume(now, &mut |_, _| n += 1);
    assert_eq!(n, 1);
    assert!(!s.held());
}

#[test]
fn send_writes_the_sessions_version_and_refuses_another() {
    let mut s = ready13(Instant::now());
    sent(&mut s);
    let xid = s.send(Body::V13(v13::Body::BarrierRequest)).unwrap();
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].version, out[0].xid), (ofwire::OFP13_VERSION, xid));
    assert!(matches!(out[0].body, Body::V13(v13::Body::BarrierRequest)));
    // An OpenFlow 1.0 body on a 1.3 session: refused, nothing written.
    let e = s.send(Body::V10(v10::Body::BarrierRequest)).unwrap_err();
    assert!(
        matches!(e, ofwire::EncodeError::VersionMismatch { version: 4, body: 1 }),
        "{e}"
    );
    assert!(s.transmit().is_empty());
}

#[test]
fn openflow13_handshake_with_split_port_description() {
    ready13(Instant::now());
}

#[test]
fn openflow10_handshake_from_a_hello_without_bitmap() {
    let now = Instant::now();
    let mut s = Session::new(Config::default(), now);
    sent(&mut s);
    feed(&mut s, &Message::new(1, 1, Body::Hello(Hello::default())), now);
    let out = sent(&mut s);
    assert_eq!(
        (out[0].version, out[0].msg_type()),
        (1, v10::msg_type::FEATURES_REQUEST)
    );
    let fr = v10::FeaturesReply {
        datapath_id: 5,
        n_buffers: 256,
        n_tables: 1,
        capabilities: 0,
        actions: 0,
        ports: vec![v10::PhyPort {
            state: 1,
            ..v10::PhyPort::new(1, ofwire::MacAddr([2; 6]), "eth1")
        }],
    };
    feed(&mut s, &Message::v10(out[0].xid, v10::Body::FeaturesReply(fr)), now);
    assert!(matches!(sent(&mut s)[0].body, Body::V10(v10::Body::SetConfig(_))));
    match events(&mut s).as_slice() {
        [Event::Up(info)] => {
            assert_eq!(info.version, 1);
            assert!(!info.ports[0].link_up, "OFPPS_LINK_DOWN was set");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_message_before_hello_gets_hello_failed_and_a_close() {
    let now = Instant::now();
    let mut s = Session::new(Config::default(), now);
    sent(&mut s);
    feed(&mut s, &Message::v13(9, v13::Body::FeaturesRequest), now);
    let out = sent(&mut s);
    assert!(
        matches!(&out[0].body, Body::V13(v13::Body::Error(e)) if e.code == ErrorCode::HelloFailed(HelloFailedCode::Eperm))
    );
    assert_eq!(out[0].xid, 9);
    assert!(s.is_closed());
    assert!(events(&mut s)
        .iter()
        .any(|e| matches!(e, Event::Closed(CloseReason::MessageBeforeHello(_)))));
}

#[test]
fn no_hello_closes_at_the_handshake_timeout() {
    let now = Instant::now();
    let mut s = Session::new(Config::default(), now);
    let next = s.on_timer(now + Duration::from_secs(1)).unwrap();
    assert_eq!(next, now + Duration::from_secs(10));
    assert!(s.on_timer(next).is_none());
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Closed(CloseReason::HandshakeTimeout(Phase::AwaitHello))]
    ));
}

#[test]
fn no_common_version_gets_incompatible() {
    let now = Instant::now();
    let mut s = Session::new(Config::default(), now);
    sent(&mut s);
    feed(
        &mut s,
        &Message::new(6, 3, Body::Hello(Hello::with_versions(&[5, 6]))),
        now,
    );
    let out = sent(&mut s);
    assert!(
        matches!(&out[0].body, Body::V13(v13::Body::Error(e)) if e.code == ErrorCode::HelloFailed(HelloFailedCode::Incompatible))
    );
    assert!(s.is_closed());
}

#[test]
fn malformed_messages_after_the_handshake_get_errors_and_the_session_goes_on() {
    let now = Instant::now();
    let mut s = ready13(now);
    // Un-negotiated version.
    feed_raw(&mut s, &[1, 18, 0, 8, 0, 0, 0, 0x21], now);
    // Header type not matching the body: BARRIER_REPLY with 4 bytes of body.
    feed_raw(&mut s, &[4, 21, 0, 12, 0, 0, 0, 0x22, 1, 2, 3, 4], now);
    // Unknown message type.
    feed_raw(&mut s, &[4, 77, 0, 8, 0, 0, 0, 0x23], now);
    // Port name without NUL in a PORT_STATUS.
    let mut ps = Message::v13(
        0x24,
        v13::Body::PortStatus(v13::PortStatus {
            reason: ofwire::PortReason::Add,
            desc: port13(3),
        }),
    )
    .to_bytes()
    .unwrap();
    ps[8 + 8 + 16..8 + 8 + 32].copy_from_slice(b"0123456789abcdef");
    feed_raw(&mut s, &ps, now);
    let out = sent(&mut s);
    let codes: Vec<(u32, ErrorCode)> = out
        .iter()
        .map(|m| match &m.body {
            Body::V13(v13::Body::Error(e)) => (m.xid, e.code),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            (0x21, ErrorCode::BadRequest(BadRequestCode::BadVersion)),
            (0x22, ErrorCode::BadRequest(BadRequestCode::BadLen)),
            (0x23, ErrorCode::BadRequest(BadRequestCode::BadType)),
            (0x24, ErrorCode::BadRequest(BadRequestCode::BadLen)),
        ]
    );
    assert_eq!(s.phase(), Phase::Ready);
    assert_eq!(s.counters.rx_errors_sent, 4);
    // Each error also carries the first bytes of the offending message.
    if let Body::V13(v13::Body::Error(e)) = &out[2].body {
        assert_eq!(e.data.0, vec![4, 77, 0, 8, 0, 0, 0, 0x23]);
    }
}

#[test]
fn a_length_field_below_the_header_closes_the_session() {
    let now = Instant::now();
    let mut s = ready13(now);
    feed_raw(&mut s, &[4, 2, 0, 4, 0, 0, 0, 1], now);
    assert!(s.is_closed());
    assert!(matches!(
        events(&mut s).last(),
        Some(Event::Closed(CloseReason::Unframeable(_)))
    ));
}

/// A switch that begins a message and trickles its bytes (each of which
/// keeps the echo quiet) is closed 20 s after the message began; one
/// whose messages keep completing is not.
#[test]
fn a_message_never_finished_closes_the_session() {
    let now = Instant::now();
    let mut s = ready13(now);
    // A header announcing 65,535 bytes, then a byte every 4 s.
    feed_raw(&mut s, &[4, 2, 0xff, 0xff, 0, 0, 0, 7], now);
    let mut t = now;
    for _ in 0..4 {
        t += Duration::from_secs(4);
        feed_raw(&mut s, &[0], t);
        assert!(s.on_timer(t).is_some() && !s.is_closed(), "at {:?}", t - now);
    }
    assert_eq!(
        s.on_timer(t),
        Some(now + Duration::from_secs(20)),
        "the message's deadline"
    );
    assert!(s.on_timer(now + Duration::from_secs(20)).is_none());
    assert!(matches!(
        events(&mut s).last(),
        Some(Event::Closed(CloseReason::MessageTimeout))
    ));
    // Whole messages, each with half of the next behind it: never closed.
    let mut s = ready13(now);
    let echo = Message::v13(3, v13::Body::EchoRequest(ofwire::Bytes::default()))
        .to_bytes()
        .unwrap();
    for i in 0..10u64 {
        let t = now + Duration::from_secs(15 * i);
        let mut bytes = echo[4..].to_vec();
        bytes.extend_from_slice(&echo[..4]);
        if i == 0 {
            bytes = echo[..4].to_vec();
        }
        feed_raw(&mut s, &bytes, t);
        s.on_timer(t);
        assert!(!s.is_closed(), "closed at {} s", 15 * i);
    }
}

#[test]
fn echo_both_ways_and_dead_peer_detection() {
    let now = Instant::now();
    let mut s = ready13(now);
    feed(
        &mut s,
        &Message::v13(0x55, v13::Body::EchoRequest(ofwire::Bytes(vec![1, 2]))),
        now,
    );
    let out = sent(&mut s);
    assert!(matches!(&out[0].body, Body::V13(v13::Body::EchoReply(d)) if d.0 == vec![1, 2]));
    assert_eq!(out[0].xid, 0x55);
    // Idle: we ask; an answer keeps the session.
    let t1 = now + Duration::from_secs(5);
    s.on_timer(t1);
    let echo = sent(&mut s);
    assert!(matches!(echo[0].body, Body::V13(v13::Body::EchoRequest(_))));
    feed(
        &mut s,
        &Message::v13(echo[0].xid, v13::Body::EchoReply(ofwire::Bytes::default())),
        t1 + Duration::from_secs(1),
    );
    assert_eq!(
        s.on_timer(t1 + Duration::from_secs(2)),
        Some(t1 + Duration::from_secs(6))
    );
    assert!(sent(&mut s).is_empty());
    assert!(!s.is_closed());
    // Idle again and silent: closed after the timeout.
    let t2 = t1 + Duration::from_secs(6);
    s.on_timer(t2);
    assert_eq!(sent(&mut s).len(), 1);
    assert!(s.on_timer(t2 + Duration::from_secs(10)).is_none());
    assert!(matches!(
        events(&mut s).last(),
        Some(Event::Closed(CloseReason::EchoTimeout))
    ));
}

/// An OpenFlow 1.3 PACKET_IN of four bytes from port 2.
fn packet_in_on_port_2() -> Vec<u8> {
    Message::v13(
        0x66,
        v13::Body::PacketIn(v13::PacketIn {
            buffer_id: v13::NO_BUFFER,
            total_len: 4,
            reason: ofwire::PacketInReason::NoMatch,
            table_id: 0,
            cookie: 0,
            match_: ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::InPort(2)]),
            data: ofwire::Bytes(vec![1, 2, 3, 4]),
        }),
    )
    .to_bytes()
    .unwrap()
}

#[test]
fn a_budget_bounds_the_messages_handled_per_call() {
    let now = Instant::now();
    let mut s = ready13(now);
    let one = packet_in_on_port_2();
    let ten: Vec<u8> = one.iter().copied().cycle().take(one.len() * 10).collect();
    s.set_budget(4);
    let mut seen = 0;
    s.on_bytes(&ten, now, &mut |_, _| seen += 1);
    assert_eq!((seen, s.backlog()), (4, true));
    s.work(now, &mut |_, _| seen += 1);
    assert_eq!((seen, s.backlog()), (8, true));
    s.work(now, &mut |_, _| seen += 1);
    assert_eq!((seen, s.backlog()), (10, false));
    // Unbounded: everything at once.
    s.set_budget(usize::MAX);
    s.on_bytes(&ten, now, &mut |_, _| seen += 1);
    assert_eq!((seen, s.backlog()), (20, false));
}

#[test]
fn packet_ins_reach_the_hot_path_and_bad_ones_get_errors() {
    let now = Instant::now();
    let mut s = ready13(now);
    let pi = packet_in_on_port_2();
    let mut seen = Vec::new();
    s.on_bytes(&pi, now, &mut |_, v| seen.push((v.in_port, v.data.to_vec())));
    assert_eq!(seen, vec![(2, vec![1, 2, 3, 4])]);
    let mut bad = pi.clone();
    bad[8 + 16 + 2..8 + 16 + 4].copy_from_slice(&200u16.to_be_bytes()); // match length past the end
    s.on_bytes(&bad, now, &mut |_, _| panic!("malformed PACKET_IN reached the app"));
    let out = sent(&mut s);
    assert!(matches!(&out[0].body, Body::V13(v13::Body::Error(_))));
    assert!(!s.is_closed());
}
