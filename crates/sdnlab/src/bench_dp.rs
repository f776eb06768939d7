//! `sdnlab bench dp`: switches benchmarked by RFC 2544 (section 26) with
//! RFC 9004's loss verification, frame size by frame size, on the test bed
//! `bench switch` uses (two host namespaces, each switch under test in
//! turn, the in-kernel generator and the kernel-timestamping receiver).
//!
//! - throughput: binary search for the highest rate with no frame lost
//!   (short search trials), then a confirmation trial at that rate for the
//!   full duration; a lost frame there steps the rate down and confirms
//!   again;
//! - latency at the throughput rate: every frame is timestamped, so each
//!   repetition gives min, mean, median, 99th and 99.9th percentiles and
//!   the delay variation (99.9th percentile minus minimum, RFC 5481's PDV);
//! - frame loss rate: from the most the generator offers down in 10 %
//!   steps until two trials in a row lose nothing.
//!
//! Defaults follow RFC 2544 (60 s trials, latency 120 s repeated 20 times,
//! its seven Ethernet frame sizes); `--quick` is a smoke run. A trial in
//! which the receiver's own ring dropped frames, or the generator fell
//! more than 1 % short of the asked rate, is marked invalid and repeated
//! once. Every trial goes to `samples.jsonl` as it ends.

use crate::net_cmd::fail;
use crate::testbed::{open_bed, trial, Bed, OfClient, Trial, DUTS};
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct DpBenchArgs {
    /// Switches under test, comma-separated: sdnlab, sdnlab-afxdp, ovs, ovs-afxdp, bridge, veth.
    #[arg(long, value_delimiter = ',', default_value = "sdnlab,ovs,bridge")]
    pub dut: Vec<String>,
    /// Frame sizes in bytes, FCS included (64..=1518).
    #[arg(long, value_delimiter = ',', default_value = "64,128,256,512,1024,1280,1518")]
    pub frames: Vec<usize>,
    /// Tests, comma-separated: throughput, latency, loss.
    #[arg(long, value_delimiter = ',', default_value = "throughput,latency,loss")]
    pub tests: Vec<String>,
    /// Seconds of a throughput confirmation trial and of each frame loss trial.
    #[arg(long, default_value_t = 60.0)]
    pub trial_seconds: f64,
    /// Seconds of each throughput search trial.
    #[arg(long, default_value_t = 10.0)]
    pub search_seconds: f64,
    /// The search stops when its bracket is this fraction of the rate.
    #[arg(long, default_value_t = 0.01)]
    pub resolution: f64,
    /// Seconds of each latency trial.
    #[arg(long, default_value_t = 120.0)]
    pub latency_seconds: f64,
    /// Latency trials per frame size (RFC 2544: at least 20).
    #[arg(long, default_value_t = 20)]
    pub repetitions: usize,
    /// How test frames are sent (see `bench switch --generator`).
    #[arg(long, default_value = "xdp")]
    pub generator: traffic::run::GenMethod,
    /// A smoke run: frames 64, 512 and 1518, 1 s trials (0.5 s searches), 5 % resolution,
    /// one 1 s latency trial.
    #[arg(long)]
    pub quick: bool,
    /// Run directory (default results/bench-dp-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const TESTS: [&str; 3] = ["throughput", "latency", "loss"];

struct Plan {
    frames: Vec<usize>,
    trial_s: f64,
    search_s: f64,
    resolution: f64,
    latency_s: f64,
    repetitions: usize,
}

fn plan(args: &DpBenchArgs) -> Result<Plan, String> {
    for d in &args.dut {
        if !DUTS.contains(&d.as_str()) {
            return Err(format!("unknown switch '{d}': choose from {}", DUTS.join(", ")));
        }
    }
    for t in &args.tests {
        if !TESTS.contains(&t.as_str()) {
            return Err(format!("unknown test '{t}': choose from {}", TESTS.join(", ")));
        }
    }
    if let Some(f) = args.frames.iter().find(|f| !(64..=1518).contains(*f)) {
        return Err(format!("--frames {f} is outside 64..=1518"));
    }
    if !(0.001..0.5).contains(&args.resolution) {
        return Err(format!("--resolution {} is outside 0.001..0.5", args.resolution));
    }
    let min_s = [args.trial_seconds, args.search_seconds, args.latency_seconds]
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    if min_s < 0.2 {
        return Err(format!("trials of {min_s} s are too short; give 0.2 s or more"));
    }
    Ok(if args.quick {
        Plan {
            frames: vec![64, 512, 1518],
            trial_s: 1.0,
            search_s: 0.5,
            resolution: 0.05,
            latency_s: 1.0,
            repetitions: 1,
        }
    } else {
        Plan {
            frames: args.frames.clone(),
            trial_s: args.trial_seconds,
            search_s: args.search_seconds,
            resolution: args.resolution,
            latency_s: args.latency_seconds,
            repetitions: args.repetitions.max(1),
        }
    })
}

/// Runs trials and writes each to the samples file as it ends.
struct Runner<'a> {
    bed: &'a Bed,
    dut: &'a str,
    of_addr: Option<std::net::SocketAddr>,
    samples: &'a mut std::fs::File,
}

impl Runner<'_> {
    /// One trial, repeated once if invalid; recorded either way.
    fn run(&mut self, test: &str, frame: usize, rate: Option<f64>, seconds: f64) -> Result<Trial, String> {
        let mut last = None;
        for attempt in 0..2 {
            let t = trial(self.bed, frame, rate, seconds)?;
            let short = rate.is_some_and(|r| t.offered_pps < 0.99 * r);
            let valid = t.receiver_drops == 0 && !short;
            let ports = self.of_addr.and_then(|a| OfClient::connect(a).ok()).and_then(|mut c| c.port_stats().ok()).map(|v| {
                v.iter()
                    .map(|p| json!({"port": p.port_no, "rx": p.counters.rx_packets, "tx": p.counters.tx_packets, "rx_dropped": p.counters.rx_dropped}))
                    .collect::<Vec<_>>()
            });
            let v = json!({
                "dut": self.dut, "test": test, "frame": frame, "seconds": seconds, "attempt": attempt,
                "asked_pps": rate, "offered_pps": t.offered_pps, "sent": t.sent, "received": t.received,
                "lost": t.sent.saturating_sub(t.received), "reordered": t.reordered, "duplicates": t.duplicates,
                "latency_us": {"min": t.latency_us_min, "mean": t.latency_us_mean, "p50": t.latency_us_p50,
                    "p99": t.latency_us_p99, "p999": t.latency_us_p999, "max": t.latency_us_max},
                "receiver_drops": t.receiver_drops, "generator_short": short, "valid": valid,
                "switch_ports": ports,
            });
            let _ = writeln!(self.samples, "{v}");
            let _ = self.samples.flush();
            if valid {
                return Ok(t);
            }
            last = Some(t);
        }
        Ok(last.expect("two attempts"))
    }
}

fn lost(t: &Trial) -> bool {
    t.received < t.sent
}

/// RFC 2544 26.1 with a confirmation at full duration (RFC 9004's loss
/// verification): the rate and its confirming trial.
fn throughput(r: &mut Runner, frame: usize, p: &Plan) -> Result<(f64, Trial), String> {
    let max = r.run("throughput_max", frame, None, p.search_s)?;
    let (mut lo, mut hi) = (0.0f64, max.offered_pps);
    for probe in 0..20 {
        if hi - lo <= p.resolution * hi {
            break;
        }
        let rate = if probe == 0 {
            max.rx_pps.min(hi) * (1.0 - p.resolution / 2.0)
        } else {
            (lo + hi) / 2.0
        };
        let t = r.run("throughput_search", frame, Some(rate), p.search_s)?;
        if lost(&t) {
            hi = rate;
        } else {
            lo = rate;
        }
    }
    let mut rate = lo;
    for _ in 0..5 {
        if rate <= 0.0 {
            break;
        }
        let t = r.run("throughput_confirm", frame, Some(rate), p.trial_s)?;
        if !lost(&t) {
            return Ok((t.offered_pps, t));
        }
        rate *= 1.0 - p.resolution;
    }
    Err(format!("{frame}-byte frames: no rate confirmed without loss"))
}

pub fn run(args: DpBenchArgs) -> ExitCode {
    let p = match plan(&args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/bench-dp-{}", crate::time_tag())));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return fail(format!("{}: {e}", dir.display()));
    }
    let samples_path = dir.join("samples.jsonl");
    let mut samples = match std::fs::File::create(&samples_path) {
        Ok(f) => f,
        Err(e) => return fail(format!("{}: {e}", samples_path.display())),
    };
    let wants = |t: &str| args.tests.iter().any(|x| x == t);
    let mut table = String::from(
        "| switch | frame (B) | throughput (frames/s) | throughput (Mbit/s, L2) | latency mean / p50 / p99.9 (µs) | delay variation (µs) | loss at 100 % / 90 % / 80 % of max (%) |\n|---|---:|---:|---:|---|---:|---|\n",
    );
    for dut in &args.dut {
        let (bed, of_addr) = match open_bed(dut, &dir, args.generator) {
            Ok(b) => b,
            Err(e) => return fail(format!("{dut}: {e}")),
        };
        std::thread::sleep(Duration::from_millis(300));
        let mut runner = Runner {
            bed: &bed,
            dut,
            of_addr,
            samples: &mut samples,
        };
        for &frame in &p.frames {
            let mut tput = None;
            if wants("throughput") || wants("latency") {
                match throughput(&mut runner, frame, &p) {
                    Ok((rate, _)) => {
                        eprintln!("{dut}: {frame} B: throughput {rate:.0} frames/s");
                        tput = Some(rate);
                    }
                    Err(e) => eprintln!("{dut}: {e}"),
                }
            }
            let mut lat: Vec<Trial> = Vec::new();
            if let (true, Some(rate)) = (wants("latency"), tput) {
                for _ in 0..p.repetitions {
                    match runner.run("latency", frame, Some(rate), p.latency_s) {
                        Ok(t) => lat.push(t),
                        Err(e) => return fail(format!("{dut}: {e}")),
                    }
                }
            }
            let mut losses: Vec<f64> = Vec::new();
            if wants("loss") {
                let max = match runner.run("loss_max", frame, None, p.search_s) {
                    Ok(t) => t.offered_pps,
                    Err(e) => return fail(format!("{dut}: {e}")),
                };
                let mut clean_in_a_row = 0;
                for step in 0..10 {
                    let rate = max * (1.0 - 0.1 * step as f64);
                    let t = match runner.run("loss", frame, Some(rate), p.trial_s) {
                        Ok(t) => t,
                        Err(e) => return fail(format!("{dut}: {e}")),
                    };
                    let pct = 100.0 * t.sent.saturating_sub(t.received) as f64 / t.sent.max(1) as f64;
                    losses.push(pct);
                    clean_in_a_row = if pct == 0.0 { clean_in_a_row + 1 } else { 0 };
                    if clean_in_a_row == 2 {
                        break;
                    }
                }
            }
            let mean = |f: fn(&Trial) -> f64| lat.iter().map(f).sum::<f64>() / lat.len().max(1) as f64;
            let lat_cell = if lat.is_empty() {
                "-".to_string()
            } else {
                format!(
                    "{:.1} / {:.0} / {:.0}",
                    mean(|t| t.latency_us_mean),
                    mean(|t| t.latency_us_p50),
                    mean(|t| t.latency_us_p999)
                )
            };
            let pdv = if lat.is_empty() {
                "-".to_string()
            } else {
                format!("{:.0}", mean(|t| t.latency_us_p999 - t.latency_us_min))
            };
            let loss_cell = if losses.is_empty() {
                "-".to_string()
            } else {
                losses
                    .iter()
                    .take(3)
                    .map(|l| format!("{l:.2}"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            table.push_str(&format!(
                "| {dut} | {frame} | {} | {} | {lat_cell} | {pdv} | {loss_cell} |\n",
                tput.map(|r| format!("{r:.0}")).unwrap_or_else(|| "-".into()),
                tput.map(|r| format!("{:.1}", r * frame as f64 * 8.0 / 1e6))
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        drop(bed);
    }
    let meta = json!({
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "frames": p.frames, "trial_seconds": p.trial_s, "search_seconds": p.search_s,
        "resolution": p.resolution, "latency_seconds": p.latency_s, "repetitions": p.repetitions,
        "generator": args.generator, "tests": args.tests, "duts": args.dut,
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "methodology": "RFC 2544 section 26.1-26.3; throughput confirmed at full duration (RFC 9004 loss verification); latency of every frame (kernel receive time minus send time); delay variation = p99.9 - min",
    });
    let _ = std::fs::write(
        dir.join("meta.json"),
        serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    );
    let _ = std::fs::write(dir.join("summary.md"), &table);
    println!("{table}");
    println!("samples: {}", samples_path.display());
    ExitCode::SUCCESS
}
