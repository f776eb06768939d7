//! `sdnlab bench ctl`: the controller load driver (crate `ctlbench`) against
//! a controller at `--target`, or, with no target, against sdnlab's own
//! controller started in this process (the embedded default). Samples are
//! written to `results/<run>/samples.jsonl` as each loop ends.

use std::io::Write;
use std::process::ExitCode;

pub struct BenchArgs {
    pub target: Option<std::net::SocketAddr>,
    pub app: String,
    pub switches: usize,
    pub macs: usize,
    pub mode: ctlbench::Mode,
    pub version: u8,
    pub loops: usize,
    pub loop_ms: u64,
    pub warmup: usize,
    pub window: usize,
    pub json: bool,
}

pub fn run(a: BenchArgs) -> ExitCode {
    let fail = |m: String| crate::net_cmd::fail(m);
    // Thousands of emulated switches need thousands of descriptors.
    controller::runtime::raise_fd_limit();
    let mut embedded = None;
    let target = match a.target {
        Some(t) => t,
        None => {
            let workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            match controller::runtime::start_local(&a.app, workers) {
                Ok(h) => {
                    let addr = h.local_addrs[0];
                    embedded = Some(h);
                    addr
                }
                Err(e) => return fail(e),
            }
        }
    };
    let what = match &embedded {
        Some(_) => format!("sdnlab controller (embedded, app {})", a.app),
        None => format!("controller at {target}"),
    };
    let run_dir = std::path::PathBuf::from("results").join(format!(
        "bench-ctl-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    ));
    if let Err(e) = std::fs::create_dir_all(&run_dir) {
        return fail(format!("{}: {e}", run_dir.display()));
    }
    let cfg = ctlbench::Config {
        target,
        switches: a.switches.max(1),
        macs: a.macs.clamp(2, 65535),
        mode: a.mode,
        version: a.version,
        loops: a.loops.max(1),
        loop_ms: a.loop_ms.max(10),
        warmup: a.warmup,
        window: a.window,
    };
    let meta = serde_json::json!({
        "target": what,
        "config": &cfg,
        "sdnlab": env!("CARGO_PKG_VERSION"),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
    });
    let _ = std::fs::write(
        run_dir.join("meta.json"),
        serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    );
    let mut samples = match std::fs::File::create(run_dir.join("samples.jsonl")) {
        Ok(f) => f,
        Err(e) => return fail(format!("{}: {e}", run_dir.display())),
    };
    eprintln!(
        "sdnlab bench ctl: {what}, {} switches, {} MACs, {:?}, OpenFlow {}, {} loops of {} ms",
        cfg.switches,
        cfg.macs,
        cfg.mode,
        if cfg.version == ofwire::OFP10_VERSION {
            "1.0"
        } else {
            "1.3"
        },
        cfg.loops,
        cfg.loop_ms
    );
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(e.to_string()),
    };
    let report = rt.block_on(ctlbench::run(cfg, |l| {
        let _ = writeln!(samples, "{}", serde_json::to_string(l).unwrap_or_default());
        let _ = samples.flush();
        eprintln!(
            "  loop {}: {:.0} responses/s, {:.0} matched/s, {} unmatched, per switch {}..{}",
            l.loop_index, l.responses_per_s, l.matched_per_s, l.unmatched, l.per_switch_min, l.per_switch_max
        );
    }));
    drop(embedded);
    let rates: Vec<f64> = report.loops.iter().map(|l| l.responses_per_s).collect();
    let matched: Vec<f64> = report.loops.iter().map(|l| l.matched_per_s).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let sd = |v: &[f64]| {
        let m = mean(v);
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len().max(1) as f64).sqrt()
    };
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(0.0, f64::max);
    if a.json {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        println!(
            "RESULT: {} switches {} tests min/max/avg/stdev = {:.2}/{:.2}/{:.2}/{:.2} responses/s",
            report.config.switches,
            rates.len(),
            min,
            max,
            mean(&rates),
            sd(&rates)
        );
        println!(
            "matched: avg {:.2} responses/s; rtt p50 {:.1} us, p99 {:.1} us, max {:.1} us; sessions lost {}; samples in {}",
            mean(&matched),
            report.rtt_us_p50,
            report.rtt_us_p99,
            report.rtt_us_max,
            report.sessions_lost,
            run_dir.display()
        );
    }
    if report.sessions_lost > 0 || mean(&matched) == 0.0 {
        eprintln!("sdnlab bench ctl: the run is not valid (sessions lost or no matched response)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
