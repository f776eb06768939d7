//! Micro-benchmarks of the switch's per-packet and per-rule costs: key
//! extraction, classifier lookup with 1 rule and with 1,000,000 rules (the
//! same frame, matched past a million non-matching rules), a cached plan
//! executed on a frame, FLOW_MOD insertion into the pipeline, and reading
//! the in-kernel fast path's counters for 10,000 flows, one flow at a time
//! and all at once (reads of the tables' memory; needs root or CAP_BPF,
//! skipped otherwise).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ofswitch::actions::Packet;
use ofswitch::pipeline::{Emitted, Pipeline, PortState};
use ofwire::oxm::{Match, Oxm};
use ofwire::v13::{Action, FlowMod, Instruction};
use std::net::Ipv4Addr;
use std::time::Instant;

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend([0x27, 0x10, 0x13, 0x89, 0, 26, 0, 0]);
    f.resize(60, 0);
    f
}

fn pipeline(filler: u32) -> Pipeline {
    let mut p = Pipeline::new(64, 4_000_000);
    for n in 1..=2 {
        p.add_port(PortState::up(
            n,
            format!("p{n}"),
            ofwire::MacAddr([2, 0, 0, 0, 0, n as u8]),
            10_000_000,
        ));
    }
    let now = Instant::now();
    let out2 = vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])];
    for i in 0..filler {
        let fm = FlowMod {
            match_: Match::new(vec![
                Oxm::EthType(0x0800),
                Oxm::Ipv4Dst(Ipv4Addr::from(0x0b00_0000 + i), None),
            ]),
            instructions: out2.clone(),
            ..FlowMod::add(100)
        };
        p.flow_mod(&fm, now).unwrap();
    }
    let fm = FlowMod {
        match_: Match::new(vec![Oxm::InPort(1)]),
        instructions: out2,
        ..FlowMod::add(10)
    };
    p.flow_mod(&fm, now).unwrap();
    p
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("datapath");
    g.throughput(Throughput::Elements(1));
    let f = frame();
    g.bench_function("key_extract", |b| {
        b.iter(|| black_box(ofswitch::key::parse(black_box(&f), 1, 0)))
    });
    for (name, filler) in [("lookup_1_rule", 0u32), ("lookup_past_1M_rules", 1_000_000)] {
        let p = pipeline(filler);
        let (key, _) = ofswitch::key::parse(&f, 1, 0);
        g.bench_function(name, |b| {
            b.iter(|| black_box(p.tables[0].rules.lookup(black_box(&key)).is_some()))
        });
    }
    let p = pipeline(0);
    let (key, _) = ofswitch::key::parse(&f, 1, 0);
    let plan = p.plan(&key);
    let now = Instant::now();
    let mut out = Emitted::default();
    g.bench_function("execute_cached_plan", |b| {
        b.iter(|| {
            let mut pkt = Packet::new(f.clone(), 1);
            Pipeline::execute(&plan, &mut pkt, 0, now, &mut out);
            out.outputs.clear();
        })
    });
    // Into a table that grows as the benchmark runs (as a controller
    // filling it would see), from empty to a million rules and then into a
    // fresh table: criterion may ask for more insertions than any table
    // holds (it panicked with TABLE_FULL past 4,000,000 before). Only the
    // insertions are timed, not the refills.
    const TABLE_ROUND: u32 = 1_000_000;
    let mut p = pipeline(0);
    let mut i = 0u32;
    g.bench_function("flow_mod_insert", |b| {
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                if i == TABLE_ROUND {
                    p = pipeline(0);
                    i = 0;
                }
                let run = left.min(u64::from(TABLE_ROUND - i));
                let start = Instant::now();
                for _ in 0..run {
                    i += 1;
                    let fm = FlowMod {
                        match_: Match::new(vec![
                            Oxm::EthType(0x0800),
                            Oxm::Ipv4Dst(Ipv4Addr::from(0x0c00_0000 + i), None),
                        ]),
                        ..FlowMod::add(100)
                    };
                    p.flow_mod(&fm, now).expect("a table with room");
                }
                spent += start.elapsed();
                left -= run;
            }
            spent
        })
    });
    fast_path_reads(&mut g);
    g.finish();
}

/// A fold's read of the fast path's counters, per flow and all at once.
fn fast_path_reads(g: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>) {
    const FLOWS: u32 = 10_000;
    let fp = match packetio::fastpath::FastPath::new(65_536, 16) {
        Ok(fp) => fp,
        Err(e) => {
            eprintln!("fast path reads skipped: {e}");
            return;
        }
    };
    let keys: Vec<packetio::fastpath::FlowKey> = (0..FLOWS)
        .map(|i| {
            let mut f = frame();
            f[26..30].copy_from_slice(&i.to_be_bytes());
            packetio::fastpath::FlowKey::of(1, &f).expect("an IPv4 frame")
        })
        .collect();
    for k in &keys {
        fp.insert(k, 2).expect("room for every flow");
    }
    g.throughput(Throughput::Elements(FLOWS as u64));
    g.bench_function("fast_path_read_10k_flows_one_by_one", |b| {
        b.iter(|| keys.iter().filter(|k| fp.counts(k).ok().flatten().is_some()).count())
    });
    let mut out = Vec::new();
    g.bench_function("fast_path_read_10k_flows_all_at_once", |b| {
        b.iter(|| {
            fp.counts_all(&mut out).expect("a batch read");
            out.len()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
