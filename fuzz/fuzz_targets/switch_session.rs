//! Fuzz target: the switch's OpenFlow agent fed a whole session, as its
//! connection loop feeds it: the bytes framed into messages, each decoded
//! for the session's version (the first byte picks 1.0 or 1.3) and handed
//! to the agent, whose state (tables, groups, meters, roles, buffers)
//! carries from one message to the next. A panic is a bug; so is a reply
//! that does not encode or does not fit a message (65,535 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ofswitch::agent::{Agent, Effects, Identity};
use ofswitch::pipeline::{Pipeline, PortState};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let Some((&first, stream)) = data.split_first() else { return };
    let version = if first & 1 == 1 { ofwire::OFP10_VERSION } else { ofwire::OFP13_VERSION };
    let mut p = Pipeline::new(8, 10_000);
    for n in 1..=3u32 {
        p.add_port(PortState::up(n, format!("p{n}"), ofwire::MacAddr([2, 0, 0, 0, 0, n as u8]), 10_000_000));
    }
    let mut agent = Agent::new(
        Arc::new(RwLock::new(p)),
        Identity {
            datapath_id: 1,
            desc: ofwire::DescStats::default(),
        },
    );
    let conn = agent.connect(version);
    let mut framer = ofwire::Framer::default();
    framer.push(stream);
    let mut now = Instant::now();
    while let Ok(Some(raw)) = framer.next_message() {
        let mut fx = Effects::default();
        if let Ok(m) = ofwire::decode_in_session(raw, version) {
            agent.on_message(conn, &m, now, &mut fx);
        }
        // Time passes: flows expire between messages.
        now += Duration::from_millis(700);
        agent.expire(now, &mut fx);
        for (_, m) in &fx.messages {
            let bytes = m.to_bytes().expect("every reply encodes");
            assert!(bytes.len() <= 65_535, "a reply of {} bytes", bytes.len());
        }
    }
    agent.disconnect(conn);
});
