//! What the steering program (`bpf/xsk.bpf.c`) costs per frame, timed by
//! the kernel (BPF_PROG_TEST_RUN, a million runs, the median of five):
//! straight to the AF_XDP socket without the fast path, and with it a
//! held flow's lookup (a hit, among 1 and 10,000 held flows) and a miss.
//! The lookup is what separates the fast path from the XDP patch; this
//! measures it without the noise of a forwarding benchmark. Needs root or
//! CAP_BPF (says so and stops otherwise).

use packetio::fastpath::{FastPath, FlowKey};

/// An IPv4/UDP frame of 60 bytes from 10.0.<src> to 10.0.0.2.
fn frame(src: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 0, 0, 46, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0]);
    f.extend(src.to_be_bytes());
    f.extend([10, 0, 0, 2, 0x27, 0x10, 0x13, 0x89, 0, 26, 0, 0]);
    f.resize(60, 0xab);
    f
}

fn median_ns(fast: Option<&FastPath>, f: &[u8], want: u32) -> Result<f64, String> {
    let mut runs = Vec::new();
    for _ in 0..5 {
        let (d, action) = packetio::bpf::steering_cost(fast, 1, f, 1_000_000).map_err(|e| e.to_string())?;
        if action != want {
            return Err(format!("the program returned {action}, not {want}"));
        }
        runs.push(d.as_nanos() as f64);
    }
    runs.sort_by(f64::total_cmp);
    Ok(runs[2])
}

fn main() {
    const PASS: u32 = 2;
    const REDIRECT: u32 = 4;
    let fp = match FastPath::new(65_536, 16) {
        Ok(fp) => fp,
        Err(e) => {
            eprintln!("steering bench skipped: {e}");
            return;
        }
    };
    // lo stands for the output port: a test run reports the redirect.
    fp.set_port(2, 1).expect("lo in the DEVMAP");
    let held = frame(1);
    fp.insert(&FlowKey::of(1, &held).expect("a key"), 2).expect("room");
    let cases: Vec<(&str, Option<&FastPath>, Vec<u8>, u32)> = vec![
        ("to the socket, no fast path", None, held.clone(), PASS),
        ("fast path hit, 1 flow held", Some(&fp), held.clone(), REDIRECT),
        ("fast path miss", Some(&fp), frame(2), PASS),
    ];
    let mut results = Vec::new();
    for (name, fast, f, want) in &cases {
        results.push((name.to_string(), median_ns(*fast, f, *want)));
    }
    for i in 3..10_002u16 {
        fp.insert(&FlowKey::of(1, &frame(i)).expect("a key"), 2).expect("room");
    }
    results.push((
        "fast path hit, 10,000 flows held".into(),
        median_ns(Some(&fp), &held, REDIRECT),
    ));
    for (name, r) in results {
        match r {
            Ok(ns) => println!("steering/{name}: {ns:.1} ns per frame"),
            Err(e) => println!("steering/{name}: {e}"),
        }
    }
}
