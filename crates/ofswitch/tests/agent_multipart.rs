//! Multipart replies of the switch's agent at scale: a million flows come
//! back as messages under 64 KiB each, every one but the last with
//! REPLY_MORE, every flow once (encoded and decoded as a controller would).

use ofswitch::agent::{Agent, Effects, Identity};
use ofswitch::pipeline::Pipeline;
use ofwire::oxm::{Match, Oxm};
use ofwire::v13::{self, Action, FlowMod, Instruction, MultipartRequestBody as Q};
use ofwire::{Body, DescStats, Message};
use std::net::Ipv4Addr;
use std::sync::{Arc, RwLock};
use std::time::Instant;

#[test]
fn a_million_flows_are_dumped_in_parts_under_64_kib() {
    const N: u32 = 1_000_000;
    let mut p = Pipeline::new(1, 2_000_000);
    let now = Instant::now();
    for i in 0..N {
        let fm = FlowMod {
            match_: Match::new(vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(Ipv4Addr::from(0x0a00_0000 + i), None),
            ]),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: v13::port::CONTROLLER,
                max_len: 0,
            }])],
            ..FlowMod::add(10)
        };
        p.flow_mod(&fm, now).expect("flow accepted");
    }
    let mut agent = Agent::new(
        Arc::new(RwLock::new(p)),
        Identity {
            datapath_id: 1,
            desc: DescStats::default(),
        },
    );
    let conn = agent.connect(ofwire::OFP13_VERSION);
    let req = Message::v13(
        77,
        v13::Body::MultipartRequest(v13::MultipartRequest {
            flags: 0,
            body: Q::Flow(v13::FlowStatsRequest::all()),
        }),
    );
    let mut fx = Effects::default();
    agent.on_message(conn, &req, now, &mut fx);
    let (mut flows, mut seen) = (0usize, std::collections::HashSet::new());
    let n = fx.messages.len();
    assert!(n > 1000, "{n} parts for a million flows");
    for (i, (to, m)) in fx.messages.iter().enumerate() {
        assert_eq!(*to, conn);
        let bytes = m.to_bytes().expect("every part encodes");
        assert!(bytes.len() <= 65_535, "part {i}: {} bytes", bytes.len());
        let back = ofwire::decode(&bytes).expect("every part decodes");
        assert_eq!(back.xid, 77);
        let Body::V13(v13::Body::MultipartReply(r)) = back.body else {
            panic!("part {i}: {back:?}")
        };
        assert_eq!(r.flags, if i + 1 < n { v13::MULTIPART_MORE } else { 0 }, "part {i}");
        let v13::MultipartReplyBody::Flow(list) = r.body else {
            panic!("part {i} is not flow stats")
        };
        for f in list {
            flows += 1;
            let dst = f.match_.fields.iter().find_map(|o| match o {
                Oxm::Ipv4Dst(a, None) => Some(u32::from(*a)),
                _ => None,
            });
            assert!(seen.insert(dst.expect("the flow's match")), "a flow twice");
        }
    }
    assert_eq!(flows, N as usize);
}

fn agent() -> (Agent, usize) {
    let mut agent = Agent::new(
        Arc::new(RwLock::new(Pipeline::new(4, 1000))),
        Identity {
            datapath_id: 1,
            desc: DescStats::default(),
        },
    );
    let conn = agent.connect(ofwire::OFP13_VERSION);
    (agent, conn)
}

fn features(n: u8) -> Vec<v13::TableFeatures> {
    (0..n)
        .map(|t| v13::TableFeatures {
            table_id: t,
            name: format!("t{t}"),
            metadata_match: 0,
            metadata_write: 0,
            config: 0,
            max_entries: 100,
            properties: Vec::new(),
        })
        .collect()
}

fn part(xid: u32, more: bool, body: Q) -> Message {
    Message::v13(
        xid,
        v13::Body::MultipartRequest(v13::MultipartRequest {
            flags: if more { v13::MULTIPART_MORE } else { 0 },
            body,
        }),
    )
}

fn error_of(fx: &Effects) -> Option<ofwire::ErrorCode> {
    fx.messages.iter().find_map(|(_, m)| match &m.body {
        Body::V13(v13::Body::Error(e)) => Some(e.code),
        _ => None,
    })
}

/// A TABLE_FEATURES request in three parts gets one answer, after its
/// last part (this switch's table features cannot be changed: EPERM, as
/// for the same request whole); a request of another type with REQ_MORE,
/// a part with another xid, and parts beyond the buffer get the spec's
/// errors.
#[test]
fn requests_in_parts_are_reassembled_before_they_are_answered() {
    use ofwire::error::{BadRequestCode, TableFeaturesFailedCode};
    let now = Instant::now();
    let (mut a, c) = agent();
    for (i, more) in [true, true, false].into_iter().enumerate() {
        let mut fx = Effects::default();
        a.on_message(c, &part(5, more, Q::TableFeatures(features(2))), now, &mut fx);
        if more {
            assert!(fx.messages.is_empty(), "part {i} answered: {:?}", fx.messages);
        } else {
            assert_eq!(fx.messages.len(), 1, "{:?}", fx.messages);
            assert_eq!(fx.messages[0].1.xid, 5);
            assert_eq!(
                error_of(&fx),
                Some(ofwire::ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::Eperm))
            );
        }
    }
    // Another type with REQ_MORE.
    let mut fx = Effects::default();
    a.on_message(c, &part(6, true, Q::Desc), now, &mut fx);
    assert_eq!(
        error_of(&fx),
        Some(ofwire::ErrorCode::BadRequest(BadRequestCode::BadMultipart))
    );
    // A part under another xid than the first.
    let mut fx = Effects::default();
    a.on_message(c, &part(7, true, Q::TableFeatures(features(1))), now, &mut fx);
    assert!(fx.messages.is_empty());
    a.on_message(c, &part(8, false, Q::TableFeatures(features(1))), now, &mut fx);
    assert_eq!(
        error_of(&fx),
        Some(ofwire::ErrorCode::BadRequest(BadRequestCode::BadMultipart))
    );
    // Then a plain request is answered as usual.
    let mut fx = Effects::default();
    a.on_message(c, &part(9, false, Q::Desc), now, &mut fx);
    assert!(matches!(
        &fx.messages[0].1.body,
        Body::V13(v13::Body::MultipartReply(r)) if matches!(r.body, v13::MultipartReplyBody::Desc(_))
    ));
    // More parts than the switch buffers.
    let mut fx = Effects::default();
    for _ in 0..5 {
        a.on_message(c, &part(10, true, Q::TableFeatures(features(250))), now, &mut fx);
    }
    assert_eq!(
        error_of(&fx),
        Some(ofwire::ErrorCode::BadRequest(BadRequestCode::MultipartBufferOverflow))
    );
}
