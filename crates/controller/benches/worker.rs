//! The controller worker's per-message path without the kernel: what one
//! worker does with a batch of PACKET_INs read from a switch (frame them,
//! hand each to the app, write the answers), for 16 switches of 1,000 MACs
//! fed round-robin as `bench ctl` feeds them, OpenFlow 1.0. The machine's
//! noise over loopback is ±20 %; this isolates the worker's own cost so a
//! change to it can be measured at all.
//!
//! `l2-learning` against `null` (one FLOW_MOD encoded once) gives what the
//! MAC table costs; `with-io-traffic` streams 128 KiB of other memory
//! through the cache between two switches' batches (what a read and its
//! answers move in the real worker, kernel included), so a table is met
//! cold as it is under load.

use controller::driver::{Driver, Environment};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ofwire::{v10, Body, Framer, Hello, Message};
use std::time::Instant;

const SWITCHES: usize = 16;
const MACS: usize = 1000;
/// PACKET_INs per read: a 64 KiB read holds 840 of 78 bytes.
const BATCH: usize = 840;

fn mac(switch: usize, i: usize) -> [u8; 6] {
    [0x02, 0, 0, switch as u8, (i >> 8) as u8, i as u8]
}

/// A 60-byte Ethernet/IPv4/UDP frame, as the driver sends.
fn frame(src: [u8; 6], dst: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17]);
    f.resize(60, 0);
    f
}

fn drain(d: &mut Driver) -> Vec<Message> {
    let out = d.take_transmit();
    let mut f = Framer::new(1 << 20);
    f.push(&out);
    let mut msgs = Vec::new();
    while let Ok(Some(m)) = f.next_message() {
        msgs.push(ofwire::decode(m).expect("the controller's messages decode"));
    }
    d.give_back(Vec::with_capacity(out.capacity()));
    msgs
}

/// A driver through the OpenFlow 1.0 handshake.
fn ready(env: &Environment, dpid: u64) -> Driver {
    let now = Instant::now();
    let outbox = controller::shared::Outbox::new(dpid, controller::shared::Mailbox::detached());
    let mut d = Driver::new(dpid, env, outbox, now);
    let mut bytes = Vec::new();
    Message::new(1, 1, Body::Hello(Hello::with_versions(&[1])))
        .encode(&mut bytes)
        .unwrap();
    d.on_bytes(&bytes, now);
    let sent = drain(&mut d);
    let req = sent
        .iter()
        .find(|m| matches!(m.body, Body::V10(v10::Body::FeaturesRequest)))
        .expect("a FEATURES_REQUEST");
    let fr = v10::FeaturesReply {
        actions: 0xfff,
        ..v10::FeaturesReply::bare(dpid)
    };
    bytes.clear();
    Message::v10(req.xid, v10::Body::FeaturesReply(fr))
        .encode(&mut bytes)
        .unwrap();
    d.on_bytes(&bytes, now);
    drain(&mut d);
    assert_eq!(d.sess.phase(), ofconn::Phase::Ready);
    d
}

/// One switch's PACKET_INs for a whole cycle of its MACs, twice over, so
/// any batch of `BATCH` starting in the first cycle is one slice.
fn requests(switch: usize) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut starts = Vec::new();
    for k in 0..2 * MACS {
        let i = k % MACS;
        starts.push(bytes.len());
        let pi = v10::PacketIn {
            buffer_id: k as u32,
            total_len: 60,
            in_port: 1 + (i % 4) as u16,
            reason: ofwire::PacketInReason::NoMatch,
            data: frame(mac(switch, i), mac(switch, (i + 1) % MACS)).into(),
        };
        Message::v10(k as u32, v10::Body::PacketIn(pi))
            .encode(&mut bytes)
            .unwrap();
    }
    starts.push(bytes.len());
    (bytes, starts)
}

fn bench_app(c: &mut Criterion, app: &str, io_traffic: bool) {
    let session = ofconn::Config {
        versions: vec![1],
        ..Default::default()
    };
    let env = Environment::new(vec![controller::catalog::by_name(app).unwrap()], session);
    let mut drivers: Vec<Driver> = (0..SWITCHES).map(|s| ready(&env, 1 + s as u64)).collect();
    let reqs: Vec<(Vec<u8>, Vec<usize>)> = (0..SWITCHES).map(requests).collect();
    // What the kernel would stream through the cache between two batches:
    // 128 KiB each time, from 8 MiB (more than a core's L2), so a switch's
    // table is met after 2 MiB of other bytes, as under load.
    let mut traffic = vec![0u8; 8 << 20];
    let mut traffic_at = 0usize;
    let mut at = 0usize;
    let mut turn = 0usize;
    let name = if io_traffic {
        format!("{app}-with-io-traffic")
    } else {
        app.to_string()
    };
    let mut g = c.benchmark_group("worker");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let s = turn % SWITCHES;
            turn += 1;
            let (bytes, starts) = &reqs[s];
            let d = &mut drivers[s];
            d.on_bytes(&bytes[starts[at]..starts[at + BATCH]], Instant::now());
            let out = d.take_transmit();
            black_box(out.len());
            if io_traffic {
                // The read's bytes arriving and the answers leaving.
                for chunk in traffic[traffic_at..traffic_at + (128 << 10)].chunks_mut(64) {
                    chunk[0] = chunk[0].wrapping_add(out.len() as u8);
                }
                traffic_at = (traffic_at + (128 << 10)) % traffic.len();
            }
            d.give_back(out);
            if s == SWITCHES - 1 {
                at = (at + BATCH) % MACS;
            }
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    for app in ["l2-learning", "null"] {
        bench_app(c, app, false);
        bench_app(c, app, true);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
