//! Micro-benchmarks of the per-packet paths: PACKET_IN decode (zero-copy
//! view, and the full typed decoder for comparison), FLOW_MOD and PACKET_OUT
//! encode into a reused buffer, for OpenFlow 1.0 and 1.3.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ofwire::hot::{write_flow_mod10, write_flow_mod13, write_packet_out10, write_packet_out13, PacketInView};
use ofwire::oxm::Oxm;
use ofwire::{v10, v13, MacAddr};

fn packet_in_bytes(version: u8) -> Vec<u8> {
    let name = if version == ofwire::OFP10_VERSION {
        "v10_packet_in"
    } else {
        "v13_packet_in"
    };
    let (_, msg) = ofwire::corpus::all()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("corpus has packet_in");
    msg.to_bytes().unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("hotpath");
    g.throughput(Throughput::Elements(1));
    let frame = ofwire::corpus::sample_frame();

    let pi10 = packet_in_bytes(ofwire::OFP10_VERSION);
    g.bench_function("packet_in_view_v10", |b| {
        b.iter(|| black_box(PacketInView::parse(black_box(&pi10)).unwrap().in_port))
    });
    let pi13 = packet_in_bytes(ofwire::OFP13_VERSION);
    g.bench_function("packet_in_view_v13", |b| {
        b.iter(|| black_box(PacketInView::parse(black_box(&pi13)).unwrap().in_port))
    });
    g.bench_function("packet_in_typed_decode_v13", |b| {
        b.iter(|| black_box(ofwire::decode(black_box(&pi13)).unwrap()))
    });

    let mut out = Vec::with_capacity(4096);
    let mut fm10 = match ofwire::corpus::v10_messages()
        .into_iter()
        .find(|(n, _)| *n == "flow_mod_add")
        .unwrap()
        .1
    {
        v10::Body::FlowMod(f) => f,
        _ => unreachable!(),
    };
    fm10.actions.clear();
    let actions10 = [v10::Action::Output { port: 2, max_len: 0 }];
    g.bench_function("flow_mod_encode_v10", |b| {
        b.iter(|| {
            out.clear();
            write_flow_mod10(&mut out, 7, black_box(&fm10), black_box(&actions10)).unwrap();
            black_box(out.len())
        })
    });

    let fm13 = v13::FlowMod::add(100);
    let fields = [
        Oxm::InPort(1),
        Oxm::EthDst(MacAddr([2, 0, 0, 0, 0, 2]), None),
        Oxm::EthSrc(MacAddr([2, 0, 0, 0, 0, 1]), None),
    ];
    let actions13 = [v13::Action::Output { port: 2, max_len: 0 }];
    let insts = [v13::Instruction::ApplyActions(&actions13[..])];
    g.bench_function("flow_mod_encode_v13", |b| {
        b.iter(|| {
            out.clear();
            write_flow_mod13(&mut out, 7, black_box(&fm13), black_box(&fields), black_box(&insts)).unwrap();
            black_box(out.len())
        })
    });

    g.bench_function("packet_out_encode_v10", |b| {
        b.iter(|| {
            out.clear();
            write_packet_out10(&mut out, 7, v10::NO_BUFFER, 1, black_box(&actions10), black_box(&frame)).unwrap();
            black_box(out.len())
        })
    });
    g.bench_function("packet_out_encode_v13", |b| {
        b.iter(|| {
            out.clear();
            write_packet_out13(&mut out, 7, v13::NO_BUFFER, 1, black_box(&actions13), black_box(&frame)).unwrap();
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
