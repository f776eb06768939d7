//! A whole switch (datapath thread, control thread, OpenFlow over TCP) on
//! in-memory ports, driven by a plain OpenFlow 1.3 client: a rule installed
//! before a BARRIER_REPLY is what the next frame meets; a table-miss sends
//! a buffered PACKET_IN and a PACKET_OUT naming the buffer releases the
//! frame; FLOW_REMOVED comes when a rule times out; a port going down is
//! reported with PORT_STATUS; an ADD that breaks the rules gets the right
//! OFPT_ERROR.

mod common;

use common::Client;
use ofwire::oxm::{Match, Oxm};
use ofwire::v13::{self, Action, Body as B, FlowMod, Instruction};
use ofwire::{Body, MacAddr};
use packetio::port::{MemPort, PortIo};
use std::sync::Arc;
use std::time::Duration;

fn frame(dst_last: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, dst_last, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend([0x27, 0x10, 0x13, 0x89, 0, 26, 0, 0]);
    f.resize(60, 0xab);
    f
}

fn switch() -> (switchd::switch::Handle, Vec<Arc<MemPort>>) {
    let ports: Vec<Arc<MemPort>> = (1..=3)
        .map(|i| Arc::new(MemPort::new(&format!("mem{i}"), MacAddr([2, 0xee, 0, 0, 0, i])).unwrap()))
        .collect();
    let h = switchd::switch::start(switchd::switch::Config {
        ports: ports.iter().map(|p| p.clone() as Arc<dyn PortIo>).collect(),
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..Default::default()
    })
    .unwrap();
    (h, ports)
}

fn output(port: u32) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::Output { port, max_len: 0 }])]
}

#[test]
fn a_barrier_reply_means_the_rule_is_live() {
    let (h, ports) = switch();
    let mut c = Client::connect(h.listening[0]);
    for round in 0..20u32 {
        // Alternate the output port; the frame sent right after the
        // barrier must already take the new one.
        let out = 2 + round % 2;
        let fm = FlowMod {
            match_: Match::new(vec![Oxm::InPort(1)]),
            instructions: output(out),
            ..FlowMod::add(10)
        };
        c.send(10 + round, B::FlowMod(fm));
        c.barrier(1000 + round);
        ports[0].inject(frame(9));
        let got = ports[out as usize - 1].wait_sent(1, Duration::from_secs(2));
        assert_eq!(got.len(), 1, "round {round}: frame did not take port {out}");
        assert!(ports[(1 - round % 2) as usize + 1].take_sent().is_empty());
    }
}

#[test]
fn packet_in_buffers_and_packet_out_releases() {
    let (h, ports) = switch();
    let mut c = Client::connect(h.listening[0]);
    let miss = FlowMod {
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: v13::port::CONTROLLER,
            max_len: 32,
        }])],
        ..FlowMod::add(0)
    };
    c.send(2, B::FlowMod(miss));
    c.barrier(3);
    let f = frame(7);
    ports[0].inject(f.clone());
    let pi = c.wait(|m| match &m.body {
        Body::V13(B::PacketIn(p)) => Some(p.clone()),
        _ => None,
    });
    assert_eq!(pi.reason, ofwire::PacketInReason::NoMatch);
    assert_eq!(pi.match_.in_port(), Some(1));
    assert_eq!(pi.data.0, f[..32].to_vec(), "truncated to max_len");
    assert_eq!(pi.total_len as usize, f.len());
    assert_ne!(pi.buffer_id, v13::NO_BUFFER);
    // The buffered frame out of port 3, by its buffer id alone.
    let release = B::PacketOut(v13::PacketOut {
        buffer_id: pi.buffer_id,
        in_port: 1,
        actions: vec![Action::Output { port: 3, max_len: 0 }],
        data: ofwire::Bytes(vec![]),
    });
    c.send(4, release.clone());
    let sent = ports[2].wait_sent(1, Duration::from_secs(2));
    assert_eq!(sent, vec![f], "the whole buffered frame goes out");
    // The same buffer twice: it is gone.
    c.send(5, release);
    let e = c.wait(|m| match &m.body {
        Body::V13(B::Error(e)) if m.xid == 5 => Some(e.code),
        _ => None,
    });
    assert_eq!(
        e,
        ofwire::ErrorCode::BadRequest(ofwire::error::BadRequestCode::BufferEmpty)
    );
    // An id the switch never issued (the next one, and one out of its
    // range): it does not exist.
    for (xid, id) in [(6, pi.buffer_id + 1), (7, 0x0200_0000)] {
        c.send(
            xid,
            B::PacketOut(v13::PacketOut {
                buffer_id: id,
                in_port: 1,
                actions: vec![Action::Output { port: 3, max_len: 0 }],
                data: ofwire::Bytes(vec![]),
            }),
        );
        let e = c.wait(|m| match &m.body {
            Body::V13(B::Error(e)) if m.xid == xid => Some(e.code),
            _ => None,
        });
        assert_eq!(
            e,
            ofwire::ErrorCode::BadRequest(ofwire::error::BadRequestCode::BufferUnknown),
            "buffer {id:#x}"
        );
    }
}

#[test]
fn flow_removed_port_status_and_errors_reach_the_controller() {
    let (h, ports) = switch();
    let mut c = Client::connect(h.listening[0]);
    let fm = FlowMod {
        match_: Match::new(vec![Oxm::InPort(2)]),
        instructions: output(1),
        idle_timeout: 1,
        flags: v13::flow_mod_flags::SEND_FLOW_REM,
        cookie: 0xfeed,
        ..FlowMod::add(5)
    };
    c.send(2, B::FlowMod(fm));
    let fr = c.wait(|m| match &m.body {
        Body::V13(B::FlowRemoved(r)) => Some(r.clone()),
        _ => None,
    });
    assert_eq!((fr.cookie, fr.reason), (0xfeed, ofwire::FlowRemovedReason::IdleTimeout));
    ports[1].set_link(false);
    let ps = c.wait(|m| match &m.body {
        Body::V13(B::PortStatus(p)) => Some(p.clone()),
        _ => None,
    });
    assert_eq!(ps.desc.port_no, 2);
    assert_eq!(ps.desc.state & 1, 1, "LINK_DOWN");
    let bad = FlowMod {
        instructions: vec![Instruction::GotoTable(0)],
        ..FlowMod::add(1)
    };
    c.send(9, B::FlowMod(bad));
    let code = c.wait(|m| match &m.body {
        Body::V13(B::Error(e)) if m.xid == 9 => Some(e.code),
        _ => None,
    });
    assert_eq!(
        code,
        ofwire::ErrorCode::BadInstruction(ofwire::error::BadInstructionCode::BadTableId)
    );
}
