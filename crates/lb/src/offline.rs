//! The app without a switch: a session brought through the OpenFlow 1.3
//! handshake from scripted messages, and new flows fed to the app as
//! PACKET_INs. The fake-switch tests build on it, and `bench lb` uses it
//! to time each policy's decision alone, apart from the machine's noise.

use crate::app::Lb;
use controller::app::{SwitchApp, Verdict};
use ofconn::{Event, Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::{v13, Body, Framer, Hello, Message};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

fn feed(s: &mut Session, m: &Message, now: Instant) {
    let bytes = m.to_bytes().expect("a scripted message encodes");
    s.on_bytes(&bytes, now, &mut |_, _| {});
}

/// Decodes and clears what the session queued for the switch.
pub fn drain(s: &mut Session) -> Vec<Message> {
    let mut f = Framer::default();
    f.push(s.transmit());
    s.transmit().clear();
    let mut v = Vec::new();
    while let Ok(Some(m)) = f.next_message() {
        if let Ok(m) = ofwire::decode(m) {
            v.push(m);
        }
    }
    v
}

/// A session with switch `0x1b` through the 1.3 handshake, and what the
/// handshake reported.
pub fn ready_session() -> (Session, SwitchInfo) {
    let now = Instant::now();
    let mut s = Session::new(ofconn::Config::default(), now);
    drain(&mut s);
    feed(
        &mut s,
        &Message::new(4, 1, Body::Hello(Hello::with_versions(&[4]))),
        now,
    );
    let xid = drain(&mut s).first().map_or(0, |m| m.xid);
    let fr = v13::FeaturesReply {
        datapath_id: 0x1b,
        n_buffers: 0,
        n_tables: 254,
        auxiliary_id: 0,
        capabilities: 0,
        reserved: 0,
    };
    feed(&mut s, &Message::v13(xid, v13::Body::FeaturesReply(fr)), now);
    let xid = drain(&mut s).first().map_or(0, |m| m.xid);
    let r = v13::MultipartReply {
        flags: 0,
        body: v13::MultipartReplyBody::PortDesc(vec![]),
    };
    feed(&mut s, &Message::v13(xid, v13::Body::MultipartReply(r)), now);
    drain(&mut s);
    let info = match std::iter::from_fn(|| s.poll_event()).next() {
        Some(Event::Up(info)) => info,
        other => panic!("the scripted handshake ended in {other:?}"),
    };
    s.resume(now, &mut |_, _| {});
    (s, info)
}

/// Hands `frame`, arrived on `in_port` and not buffered, to `app` as a PACKET_IN.
pub fn packet_in(app: &mut dyn SwitchApp, s: &mut Session, in_port: u32, frame: &[u8]) -> Verdict {
    let view = PacketInView {
        version: 4,
        xid: 0,
        buffer_id: v13::NO_BUFFER,
        total_len: frame.len() as u16,
        reason: 0,
        table_id: 0,
        cookie: 0,
        in_port,
        match_fields: &[],
        data: frame,
    };
    app.packet_in(s, &view)
}

/// A TCP SYN-sized frame from `client:port` to the VIP's port 80.
pub fn first_segment(lb: &Lb, client: Ipv4Addr, port: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 20];
    f[0..6].copy_from_slice(&lb.cfg.vip_mac.0);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[8, 0]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&client.octets());
    f[30..34].copy_from_slice(&lb.cfg.vip.octets());
    f[34..36].copy_from_slice(&port.to_be_bytes());
    f[36..38].copy_from_slice(&lb.cfg.ports[0].to_be_bytes());
    f
}

/// Feeds `flows` new flows to a fresh app for `lb`, as fast as it takes
/// them, and returns the app's metrics (its decision-time histogram).
pub fn time_decisions(lb: &Arc<Lb>, flows: u32) -> crate::MetricsSnapshot {
    let (mut s, info) = ready_session();
    let mut app = lb.app();
    app.switch_up(&mut s, &info);
    drain(&mut s);
    for n in 0..flows {
        let client = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 1, 0, 0)) + n / 50_000);
        let frame = first_segment(lb, client, 1024 + (n % 50_000) as u16);
        let _ = packet_in(&mut app, &mut s, 1, &frame);
        s.transmit().clear();
    }
    lb.snapshot()
}
