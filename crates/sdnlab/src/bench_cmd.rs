//! `sdnlab bench ctl`: the controller load driver (crate `ctlbench`) against
//! a controller at `--target`, or, with no target, against sdnlab's own
//! controller started in this process for each trial (the embedded
//! default). Each scenario (a point of `--sweep`) is repeated `--trials`
//! times; every loop and every trial is appended to the run's
//! `samples.jsonl` as it is measured; at the end the run directory gets
//! its summaries and HTML report (crate `report`), and the terminal a table.

use clap::Args;
use report::{Meta, Metric, RunWriter, Sample, Target};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Clone)]
pub struct CtlArgs {
    /// Real controllers to compare, installed (when missing), started and stopped by sdnlab:
    /// sdnlab, ovs-testcontroller, os-ken, ryu (repeatable; one run each, then one comparison).
    #[arg(long = "peer", value_name = "PEER", value_parser = crate::peers::NAMES, conflicts_with = "target")]
    pub peers: Vec<String>,
    /// Who the target is, when a peer was started for it.
    #[arg(skip)]
    pub target_info: Option<Target>,
    /// The run's name, when it is one of several.
    #[arg(skip)]
    pub run_name: Option<String>,
    /// A peer to start afresh for each trial (set by `--peer`).
    #[arg(skip)]
    pub restart_peer: Option<String>,
    /// What to run: cbench (throughput or latency, --mode) or security (RFC 8456
    /// exception handling: every known malformed case, one session each).
    /// sessions: RFC 8456 control session capacity (open sessions until the controller fails).
    /// rate: RFC 8456 asynchronous message processing rate (loss-free search).
    /// dos: RFC 8456 denial-of-service handling (well-behaved switches' latency with and without a PACKET_IN flood).
    /// On emulated fabrics (--fabric), read and driven through a northbound API (RFC 8456):
    /// discovery (topology discovery time), discovery-size (grow the fabric until discovery fails),
    /// reactive-paths and proactive-paths (path provisioning time and rate),
    /// change-detection (a link or a switch fails, --failure), reprovisioning (traffic around a
    /// failed link: gap and loss per direction), table-capacity and table-capacity-proactive
    /// (forwarding table capacity: destinations sent to, or paths requested, until the flow count stops growing),
    /// failover (an active/standby sdnlab pair with OpenFlow 1.3 roles; the active one is killed).
    #[arg(long, default_value = "cbench", value_parser = ["cbench", "security", "sessions", "rate", "dos",
        "discovery", "discovery-size", "reactive-paths", "proactive-paths", "change-detection",
        "reprovisioning", "table-capacity", "table-capacity-proactive", "failover"])]
    pub test: String,
    /// rate: two rounds agree when the answered rate is within this fraction of the offered one.
    #[arg(long, default_value_t = 0.01)]
    pub rate_tolerance: f64,
    /// dos: flooding switches (each keeps up to 4096 PACKET_INs outstanding and never slows down).
    #[arg(long, default_value_t = 4)]
    pub attackers: usize,
    /// Topology tests: --attackers switches flood the controller with this many PACKET_INs per
    /// second in all, whatever it answers, throughout each trial (RFC 8456 DoS handling applied
    /// to the test; 0: no flood). --malformed-percent applies to them too: that share of the
    /// fabric's messages is followed by a malformed one.
    #[arg(long, default_value_t = 0.0)]
    pub flood_pps: f64,
    /// dos: also measure under a TCP SYN flood of this many SYNs per second on the OpenFlow port (0: off).
    #[arg(long, default_value_t = 0)]
    pub syn_flood_pps: u64,
    /// Topology tests: emulated fabrics, repeatable: leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF, linear,N,
    /// tree,DEPTH,FANOUT or file:PATH (JSON).
    #[arg(long = "fabric", value_name = "SHAPE")]
    pub fabrics: Vec<String>,
    /// Topology tests: how the controller is read and asked for paths: sdnlab:HOST:PORT (its REST
    /// API), osken:HOST:PORT (os-ken's or Ryu's rest_topology + ofctl_rest) or none.
    /// Default: the embedded controller's or the peer's own.
    #[arg(long, value_name = "ADAPTER")]
    pub northbound: Option<String>,
    /// Topology tests: give up after this many seconds (the RFC's Td).
    #[arg(long, default_value_t = 30)]
    pub td_s: u64,
    /// Path tests: addresses per emulated host (the rate tests use them all as destinations).
    #[arg(long, default_value_t = 8)]
    pub host_macs: u16,
    /// change-detection: what fails, repeatable: link, switch (default both).
    #[arg(long = "failure", value_parser = ["link", "switch"])]
    pub failures: Vec<String>,
    /// reprovisioning and failover: one frame (each way) every this many microseconds, for --reprov-ms.
    #[arg(long, default_value_t = 1000)]
    pub reprov_interval_us: u64,
    #[arg(long, default_value_t = 3000)]
    pub reprov_ms: u64,
    /// table-capacity(-proactive): destinations added per step, and at most (up to 65535).
    #[arg(long, default_value_t = 1000)]
    pub table_step: u16,
    #[arg(long, default_value_t = 20000)]
    pub table_max: u16,
    /// discovery-size: grow leaf-spine fabrics (2 spines, leaves doubling) up to this many switches.
    #[arg(long, default_value_t = 1024)]
    pub max_switches: u32,
    /// sessions: stop at this many if the controller has not failed before.
    #[arg(long, default_value_t = 10_000)]
    pub max_sessions: usize,
    /// security: how long to watch each case, ms.
    #[arg(long, default_value_t = 1500)]
    pub case_wait_ms: u64,
    /// security: how long to wait for the controller to drop a silent connection, s.
    #[arg(long, default_value_t = 12)]
    pub hello_wait_s: u64,
    /// Controller to measure; default: sdnlab's own, started in this process for each trial.
    #[arg(long, value_name = "HOST:PORT")]
    pub target: Option<std::net::SocketAddr>,
    /// App of the embedded controller (l2-learning, hub, null, ...).
    #[arg(long, default_value = "l2-learning")]
    pub app: String,
    /// Emulated switches.
    #[arg(long, default_value_t = 16)]
    pub switches: usize,
    /// Host MAC addresses per switch.
    #[arg(long, default_value_t = 1000)]
    pub macs: usize,
    #[arg(long, default_value = "throughput", value_parser = ["throughput", "latency"])]
    pub mode: String,
    #[arg(long, default_value = "1.0", value_parser = ["1.0", "1.3"])]
    pub ofp: String,
    /// Measured loops per trial.
    #[arg(long, default_value_t = 5)]
    pub loops: usize,
    #[arg(long, default_value_t = 1000)]
    pub loop_ms: u64,
    /// Unmeasured loops before the measured ones.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Pause between trials, ms.
    #[arg(long, default_value_t = 500)]
    pub cooldown_ms: u64,
    /// Outstanding PACKET_INs per switch in throughput mode.
    #[arg(long, default_value_t = 256)]
    pub window: usize,
    /// Ports each emulated switch reports.
    #[arg(long, default_value_t = 4)]
    pub ports: u32,
    /// Datapath id of the first emulated switch (the others follow).
    #[arg(long, default_value_t = 1)]
    pub first_dpid: u64,
    /// New switch connections per second (0: as fast as accepted).
    #[arg(long, default_value_t = 0.0)]
    pub connect_rate: f64,
    /// Malformed messages mixed into the load, percent (RFC 8456 exception handling: 1 and 2).
    #[arg(long, default_value_t = 0.0)]
    pub malformed_percent: f64,
    /// Repetitions of each scenario (RFC 8456 asks for at least 10).
    #[arg(long, default_value_t = 10)]
    pub trials: u32,
    /// Sweep one parameter: switches, macs, window, loop-ms or malformed (percent), e.g. `switches=1,2,4,8`.
    #[arg(long, value_name = "PARAM=V1,V2,...")]
    pub sweep: Option<String>,
    /// Where the run's results go (default results/ctl-<time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print cbench's own lines (per loop, and its RESULT line per scenario).
    #[arg(long)]
    pub cbench_output: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run a whole methodology: rfc8456 (every test the target supports, one report).
    #[arg(long, value_parser = ["rfc8456"])]
    pub suite: Option<String>,
    /// With --suite: small fabrics and at most 3 trials (a smoke run).
    #[arg(long, requires = "suite")]
    pub quick: bool,
}

pub(crate) fn fail(m: impl std::fmt::Display) -> ExitCode {
    crate::net_cmd::fail(m)
}

/// The scenarios of a sweep: (name, switches, macs, window, loop_ms).
fn scenarios(a: &CtlArgs) -> Result<Vec<(String, ctlbench::Config)>, String> {
    let base = |target| ctlbench::Config {
        target,
        switches: a.switches.max(1),
        macs: a.macs.clamp(2, 65535),
        mode: if a.mode == "latency" {
            ctlbench::Mode::Latency
        } else {
            ctlbench::Mode::Throughput
        },
        version: if a.ofp == "1.0" {
            ofwire::OFP10_VERSION
        } else {
            ofwire::OFP13_VERSION
        },
        loops: a.loops.max(1),
        loop_ms: a.loop_ms.max(10),
        warmup: a.warmup,
        window: a.window.max(1),
        connect_rate: a.connect_rate.max(0.0),
        first_dpid: a.first_dpid,
        ports: a.ports.max(1),
        malformed_per_mille: (a.malformed_percent.clamp(0.0, 100.0) * 10.0).round() as u32,
        offered_rate: 0.0,
    };
    let placeholder: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    let Some(sweep) = &a.sweep else {
        let c = base(placeholder);
        return Ok(vec![(format!("switches={}", c.switches), c)]);
    };
    let (param, values) = sweep
        .split_once('=')
        .ok_or_else(|| format!("--sweep '{sweep}': write PARAM=V1,V2,... (e.g. switches=1,2,4)"))?;
    let mut out = Vec::new();
    for v in values.split(',') {
        let n: u64 = v
            .trim()
            .parse()
            .map_err(|_| format!("--sweep '{sweep}': '{v}' is not a whole number"))?;
        let mut c = base(placeholder);
        match param {
            "switches" => c.switches = (n as usize).max(1),
            "macs" => c.macs = (n as usize).clamp(2, 65535),
            "window" => c.window = (n as usize).max(1),
            "loop-ms" | "loop_ms" => c.loop_ms = n.max(10),
            "malformed" => c.malformed_per_mille = (n.min(100) * 10) as u32,
            other => {
                return Err(format!(
                    "--sweep: cannot sweep '{other}'; choose switches, macs, window, loop-ms or malformed (percent)"
                ))
            }
        }
        out.push((format!("{param}={n}"), c));
    }
    Ok(out)
}

fn clock() -> String {
    let secs = report::now_unix();
    let day = secs % 86400.0;
    format!(
        "{:02}:{:02}:{:06.3}",
        (day / 3600.0) as u32,
        ((day % 3600.0) / 60.0) as u32,
        day % 60.0
    )
}

pub fn run(a: CtlArgs) -> ExitCode {
    if a.suite.is_some() {
        return crate::bench_suite::run(a);
    }
    if !a.peers.is_empty() {
        return run_peers(a);
    }
    if a.test == "security" {
        return run_security(a);
    }
    if a.test == "sessions" {
        return run_sessions(a);
    }
    if a.test == "rate" {
        return run_rate(a);
    }
    if a.test == "dos" {
        return run_dos(a);
    }
    if crate::bench_topology::TESTS.contains(&a.test.as_str()) {
        return crate::bench_topology::run(a);
    }
    let list = match scenarios(&a) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    if a.trials == 0 {
        return fail("--trials must be at least 1");
    }
    if a.target.is_none() && a.restart_peer.is_none() {
        if let Err(e) = controller::app::build(&a.app.split(',').collect::<Vec<_>>()) {
            return fail(e);
        }
    }
    // Thousands of emulated switches need thousands of descriptors.
    controller::runtime::raise_fd_limit();
    let run_id = run_name(&a, "ctl");
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&run_id));
    let mut meta = Meta {
        benchmark: "bench ctl".into(),
        targets: Vec::new(),
        parameters: serde_json::json!({
            "mode": a.mode, "openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "warmup": a.warmup, "cooldown_ms": a.cooldown_ms, "window": a.window, "switches": a.switches,
            "macs": a.macs, "malformed_percent": a.malformed_percent, "connect_rate": a.connect_rate, "ports": a.ports, "first_dpid": a.first_dpid, "sweep": a.sweep,
            "app": if a.target.is_none() { Some(&a.app) } else { None },
        }),
        metrics: vec![
            Metric::new("responses_per_s", "responses/s (cbench)", stats::Better::Higher),
            Metric::new("matched_per_s", "matched responses/s", stats::Better::Higher),
            Metric::new("rtt_p50_us", "us", stats::Better::Lower),
            Metric::new("rtt_p99_us", "us", stats::Better::Lower),
        ],
        ..started(&run_id)
    };
    let (mut writer, rt) = match open_run(&dir, &meta) {
        Ok(x) => x,
        Err(code) => return code,
    };
    eprintln!(
        "sdnlab bench ctl: {} scenario(s) x {} trial(s), {} mode, OpenFlow {}, {} loops of {} ms; results in {}",
        list.len(),
        a.trials,
        a.mode,
        a.ofp,
        a.loops,
        a.loop_ms,
        dir.display()
    );
    let bar = indicatif::ProgressBar::new(list.len() as u64 * a.trials as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} trials, {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut invalid = 0;
    let mut reports = Vec::new();
    for (name, cfg) in &list {
        let mut cbench_rates = Vec::new();
        for trial in 0..a.trials {
            let (mut cfg, embedded) = match target_of(&a) {
                Ok((addr, target, running)) => {
                    if meta.targets.is_empty() {
                        meta.targets.push(target);
                    }
                    (
                        ctlbench::Config {
                            target: addr,
                            ..cfg.clone()
                        },
                        running,
                    )
                }
                Err(e) => {
                    meta.events
                        .push(format!("{name} trial {trial}: the controller did not start: {e}"));
                    invalid += 1;
                    bar.inc(1);
                    continue;
                }
            };
            cfg.loops = cfg.loops.max(1);
            let mut write_errors = Vec::new();
            let report = rt.block_on(ctlbench::run(cfg.clone(), |l| {
                let s = Sample {
                    kind: "loop".into(),
                    scenario: name.clone(),
                    trial,
                    index: l.loop_index as u32,
                    unix: report::now_unix(),
                    values: BTreeMap::from([
                        ("responses_per_s".to_string(), l.responses_per_s),
                        ("matched_per_s".to_string(), l.matched_per_s),
                        ("unmatched".to_string(), l.unmatched as f64),
                        ("malformed_sent".to_string(), l.malformed_sent as f64),
                        ("malformed_acted".to_string(), l.malformed_acted as f64),
                        ("errors".to_string(), l.errors as f64),
                    ]),
                    rtt_cdf: Vec::new(),
                    note: None,
                };
                if let Err(e) = writer.append(&s) {
                    write_errors.push(e.to_string());
                }
                if a.cbench_output {
                    let per = l.responses_per_s / cfg.switches as f64;
                    let cols: Vec<String> = (0..cfg.switches.min(64)).map(|_| format!("{per:.2}")).collect();
                    bar.suspend(|| {
                        println!(
                            "{} {:<4} switches: flows/sec:  {}   total = {:.6} per ms",
                            clock(),
                            cfg.switches,
                            cols.join("  "),
                            l.responses_per_s / 1000.0
                        )
                    });
                }
            }));
            if let Some(r) = embedded {
                r.stop();
            }
            if let Some(e) = write_errors.first() {
                return fail(format!("writing samples: {e}"));
            }
            cbench_rates.extend(report.loops.iter().map(|l| l.responses_per_s));
            let mean = |f: &dyn Fn(&ctlbench::LoopResult) -> f64| {
                report.loops.iter().map(f).sum::<f64>() / report.loops.len().max(1) as f64
            };
            let matched = mean(&|l| l.matched_per_s);
            let mut note = None;
            if report.sessions_lost > 0 || matched == 0.0 {
                invalid += 1;
                let what = format!(
                    "{name} trial {trial}: {} session(s) lost, {:.0} matched responses/s{}",
                    report.sessions_lost,
                    matched,
                    if matched == 0.0 {
                        " (no answer: is the controller there?)"
                    } else {
                        ""
                    }
                );
                meta.events.push(what.clone());
                note = Some(what);
            }
            let s = Sample {
                kind: "trial".into(),
                scenario: name.clone(),
                trial,
                index: 0,
                unix: report::now_unix(),
                values: BTreeMap::from([
                    ("responses_per_s".to_string(), mean(&|l| l.responses_per_s)),
                    ("matched_per_s".to_string(), matched),
                    ("rtt_p50_us".to_string(), report.rtt_us_p50),
                    ("rtt_p99_us".to_string(), report.rtt_us_p99),
                    ("rtt_max_us".to_string(), report.rtt_us_max),
                    ("sessions_lost".to_string(), report.sessions_lost as f64),
                    (
                        "unmatched".to_string(),
                        report.loops.iter().map(|l| l.unmatched).sum::<u64>() as f64,
                    ),
                    (
                        "malformed_sent".to_string(),
                        report.loops.iter().map(|l| l.malformed_sent).sum::<u64>() as f64,
                    ),
                    (
                        "malformed_acted".to_string(),
                        report.loops.iter().map(|l| l.malformed_acted).sum::<u64>() as f64,
                    ),
                    (
                        "errors".to_string(),
                        report.loops.iter().map(|l| l.errors).sum::<u64>() as f64,
                    ),
                ]),
                rtt_cdf: report.rtt_cdf.clone(),
                note,
            };
            if let Err(e) = writer.append(&s) {
                return fail(format!("writing samples: {e}"));
            }
            bar.set_message(format!("{name}: {:.0} matched/s", matched));
            bar.inc(1);
            reports.push((name.clone(), report));
            if trial + 1 < a.trials {
                std::thread::sleep(Duration::from_millis(a.cooldown_ms));
            }
        }
        if a.cbench_output && !cbench_rates.is_empty() {
            let s = stats::summary(&cbench_rates);
            // cbench's stdev is the population one.
            let m = s.mean;
            let pop = (cbench_rates.iter().map(|x| (x - m).powi(2)).sum::<f64>() / cbench_rates.len() as f64).sqrt();
            bar.suspend(|| {
                println!(
                    "RESULT: {} switches {} tests min/max/avg/stdev = {:.2}/{:.2}/{:.2}/{:.2} responses/s",
                    cfg.switches,
                    cbench_rates.len(),
                    s.min,
                    s.max,
                    s.mean,
                    pop
                )
            });
        }
    }
    bar.finish_and_clear();
    meta.finished_unix = Some(report::now_unix());
    let summary = match writer.finish(&meta) {
        Ok(s) => s,
        Err(e) => return fail(format!("writing the report: {e}")),
    };
    if a.json {
        let out = serde_json::json!({
            "run": dir,
            "summary": summary,
            "trials": reports.iter().map(|(n, r)| serde_json::json!({"scenario": n, "report": r})).collect::<Vec<_>>(),
        });
        println!("{out}");
    } else if !a.cbench_output {
        print!("{}", report::terminal_table(&summary, &meta.metrics));
    }
    for e in &meta.events {
        eprintln!("sdnlab bench ctl: {e}");
    }
    eprintln!("sdnlab bench ctl: report in {}", dir.join("report.html").display());
    if invalid > 0 {
        eprintln!("sdnlab bench ctl: {invalid} trial(s) not valid (see above and the report)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// A controller sdnlab started for a trial; `stop` ends it.
enum Running {
    Embedded(controller::runtime::Handle),
    Peer(crate::peers::Peer),
}

impl Running {
    fn stop(self) {
        match self {
            Running::Embedded(h) => h.stop(),
            Running::Peer(p) => drop(p),
        }
    }
}

/// The controller to measure: `--target`, a `--peer` started afresh, or
/// sdnlab's own started in this process.
fn target_of(a: &CtlArgs) -> Result<(std::net::SocketAddr, Target, Option<Running>), String> {
    if let Some(name) = &a.restart_peer {
        let p = crate::peers::start(name)?;
        let target = Target {
            name: p.name.clone(),
            version: p.version.clone(),
            command: format!("{} (started afresh for each trial)", p.command),
            address: p.addr.to_string(),
        };
        return Ok((p.addr, target, Some(Running::Peer(p))));
    }
    match a.target {
        Some(t) => Ok((
            t,
            a.target_info.clone().unwrap_or(Target {
                name: "controller".into(),
                version: String::new(),
                command: String::new(),
                address: t.to_string(),
            }),
            None,
        )),
        None => {
            let h = controller::runtime::start_local(&a.app, workers())?;
            let addr = h.local_addrs[0];
            Ok((
                addr,
                Target {
                    name: format!("sdnlab controller, app {} (embedded)", a.app),
                    version: env!("CARGO_PKG_VERSION").into(),
                    command: format!("in-process, {} workers, started afresh for each trial", workers()),
                    address: "127.0.0.1 (ephemeral port)".into(),
                },
                Some(Running::Embedded(h)),
            ))
        }
    }
}

/// `--test security`: every malformed case, with what the controller did.
fn run_security(a: CtlArgs) -> ExitCode {
    let (addr, target, embedded) = match target_of(&a) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let run_id = run_name(&a, "ctl-security");
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&run_id));
    let version = if a.ofp == "1.0" {
        ofwire::OFP10_VERSION
    } else {
        ofwire::OFP13_VERSION
    };
    let cfg = ctlbench::security::SuiteConfig {
        target: addr,
        version,
        wait: Duration::from_millis(a.case_wait_ms.max(100)),
        hello_wait: Duration::from_secs(a.hello_wait_s),
    };
    let mut meta = Meta {
        benchmark: "bench ctl --test security".into(),
        targets: vec![target],
        parameters: serde_json::json!({"openflow": a.ofp, "case_wait_ms": a.case_wait_ms, "hello_wait_s": a.hello_wait_s}),
        ..started(&run_id)
    };
    let (mut writer, rt) = match open_run(&dir, &meta) {
        Ok(x) => x,
        Err(code) => return code,
    };
    eprintln!(
        "sdnlab bench ctl --test security: {} cases against {addr}, OpenFlow {}; results in {}",
        11,
        a.ofp,
        dir.display()
    );
    let mut write_error = None;
    let results = rt.block_on(ctlbench::security::run_suite(cfg, |r| {
        let o = &r.observation;
        let s = Sample {
            kind: "case".into(),
            scenario: r.case.into(),
            trial: 0,
            index: 0,
            unix: report::now_unix(),
            values: BTreeMap::from([
                ("errors".to_string(), o.errors.len() as f64),
                ("acted".to_string(), o.acted as f64),
                ("closed".to_string(), f64::from(u8::from(o.closed))),
                ("others_served".to_string(), f64::from(u8::from(r.others_served))),
                ("controller_alive".to_string(), f64::from(u8::from(r.controller_alive))),
            ]),
            rtt_cdf: Vec::new(),
            note: Some(format!(
                "{}; other sessions {}",
                r.outcome,
                if r.others_served { "served" } else { "NOT served" }
            )),
        };
        if let Err(e) = writer.append(&s) {
            write_error.get_or_insert(e.to_string());
        }
        eprintln!("  {:<36} {}", r.case, r.outcome);
    }));
    if let Some(r) = embedded {
        r.stop();
    }
    if let Some(e) = write_error {
        return fail(format!("writing samples: {e}"));
    }
    meta.finished_unix = Some(report::now_unix());
    if results.iter().any(|r| !r.controller_alive) {
        meta.events
            .push("the controller stopped accepting connections during the suite".into());
    }
    if let Err(e) = writer.finish(&meta) {
        return fail(format!("writing the report: {e}"));
    }
    if a.json {
        println!("{}", serde_json::json!({ "run": dir, "cases": results }));
    } else {
        let w = results.iter().map(|r| r.case.len()).max().unwrap_or(10);
        println!("{:<w$}  {:<44}  {:<14}  expected", "case", "outcome", "others served");
        for r in &results {
            println!(
                "{:<w$}  {:<44}  {:<14}  {}",
                r.case,
                r.outcome,
                if r.others_served { "yes" } else { "NO" },
                r.expected
            );
        }
    }
    eprintln!("sdnlab bench ctl: report in {}", dir.join("report.html").display());
    ExitCode::SUCCESS
}

/// `--test sessions`: how many sessions the controller holds, and how it fails.
fn run_sessions(a: CtlArgs) -> ExitCode {
    let limit = controller::runtime::raise_fd_limit();
    let run_id = run_name(&a, "ctl-sessions");
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&run_id));
    let version = if a.ofp == "1.0" {
        ofwire::OFP10_VERSION
    } else {
        ofwire::OFP13_VERSION
    };
    let mut meta = Meta {
        benchmark: "bench ctl --test sessions".into(),
        targets: Vec::new(),
        parameters: serde_json::json!({"openflow": a.ofp, "max_sessions": a.max_sessions, "trials": a.trials,
            "our_open_file_limit": limit, "embedded": a.target.is_none() && a.restart_peer.is_none()}),
        metrics: vec![Metric::new("sessions_held", "sessions", stats::Better::Higher)],
        ..started(&run_id)
    };
    if a.target.is_none() && a.restart_peer.is_none() {
        meta.events.push(format!(
            "the embedded controller shares this process's open-file limit ({limit}): each session costs it two descriptors"
        ));
    }
    let (mut writer, rt) = match open_run(&dir, &meta) {
        Ok(x) => x,
        Err(code) => return code,
    };
    eprintln!(
        "sdnlab bench ctl --test sessions: up to {} sessions, {} trial(s); results in {}",
        a.max_sessions,
        a.trials,
        dir.display()
    );
    let mut results = Vec::new();
    for trial in 0..a.trials {
        // A fresh controller for each trial when sdnlab starts it.
        let (addr, target, running) = match target_of(&a) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        if meta.targets.is_empty() {
            meta.targets.push(target);
        }
        let cfg = ctlbench::capacity::CapacityConfig {
            target: addr,
            version,
            max_sessions: a.max_sessions.max(1),
            check_every: 500,
            timeout: Duration::from_secs(5),
        };
        let r = rt.block_on(ctlbench::capacity::run(cfg, |n, secs| {
            eprint!("\r  trial {trial}: {n} sessions held after {secs:.1} s   ");
        }));
        eprintln!(
            "\r  trial {trial}: {} sessions held; ended by {} ({})",
            r.held, r.ended_by, r.detail
        );
        let s = Sample {
            kind: "trial".into(),
            scenario: "sessions".into(),
            trial,
            index: 0,
            unix: report::now_unix(),
            values: BTreeMap::from([
                ("sessions_held".to_string(), r.held as f64),
                ("seconds".to_string(), r.seconds),
                ("sessions_per_s".to_string(), r.sessions_per_s),
            ]),
            rtt_cdf: Vec::new(),
            note: Some(format!(
                "{} sessions held; ended by {}: {}",
                r.held, r.ended_by, r.detail
            )),
        };
        if let Err(e) = writer.append(&s) {
            return fail(format!("writing samples: {e}"));
        }
        results.push(r);
        if let Some(r) = running {
            r.stop();
        }
        if trial + 1 < a.trials {
            // Let the controller release the previous trial's sessions.
            std::thread::sleep(Duration::from_millis(a.cooldown_ms.max(1000)));
        }
    }
    meta.finished_unix = Some(report::now_unix());
    if let Err(e) = writer.finish(&meta) {
        return fail(format!("writing the report: {e}"));
    }
    if a.json {
        println!("{}", serde_json::json!({ "run": dir, "trials": results }));
    } else {
        let held: Vec<f64> = results.iter().map(|r| r.held as f64).collect();
        let s = stats::summary(&held);
        println!(
            "sessions held: median {} (min {}, max {}) over {} trial(s); ended by: {}",
            report::fmt_num(s.median),
            report::fmt_num(s.min),
            report::fmt_num(s.max),
            results.len(),
            results
                .iter()
                .map(|r| r.ended_by.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    eprintln!("sdnlab bench ctl: report in {}", dir.join("report.html").display());
    ExitCode::SUCCESS
}

/// `--test rate`: the loss-free asynchronous message processing rate, per
/// scenario and trial (the controller restarted per trial when embedded).
fn run_rate(a: CtlArgs) -> ExitCode {
    let list = match scenarios(&a) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let run_id = run_name(&a, "ctl-rate");
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&run_id));
    let mut meta = Meta {
        benchmark: "bench ctl --test rate".into(),
        parameters: serde_json::json!({"openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "warmup": a.warmup, "window": a.window, "switches": a.switches, "macs": a.macs, "sweep": a.sweep,
            "tolerance": a.rate_tolerance, "max_rounds": 10}),
        metrics: vec![Metric::new(
            "loss_free_per_s",
            "PACKET_INs/s answered, loss-free",
            stats::Better::Higher,
        )],
        ..started(&run_id)
    };
    let (mut writer, rt) = match open_run(&dir, &meta) {
        Ok(x) => x,
        Err(code) => return code,
    };
    eprintln!(
        "sdnlab bench ctl --test rate: {} scenario(s) x {} trial(s); results in {}",
        list.len(),
        a.trials,
        dir.display()
    );
    let mut invalid = 0;
    for (name, cfg) in &list {
        for trial in 0..a.trials {
            let (addr, target, embedded) = match target_of(&a) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            if meta.targets.is_empty() {
                meta.targets.push(target);
            }
            let cfg = ctlbench::Config {
                target: addr,
                ..cfg.clone()
            };
            let mut rounds = Vec::new();
            let r = rt.block_on(ctlbench::rate::search(
                cfg,
                10,
                a.rate_tolerance.clamp(0.001, 0.5),
                |round| {
                    eprintln!(
                        "  {name} trial {trial}: offered {:>12} sent {:>12} answered {:>12} loss {:.2} %",
                        if round.offered_per_s > 0.0 {
                            report::fmt_num(round.offered_per_s)
                        } else {
                            "unpaced".into()
                        },
                        report::fmt_num(round.sent_per_s),
                        report::fmt_num(round.answered_per_s),
                        round.loss * 100.0
                    );
                    rounds.push(round.clone());
                },
            ));
            if let Some(r) = embedded {
                r.stop();
            }
            for (i, round) in rounds.iter().enumerate() {
                let s = Sample {
                    kind: "round".into(),
                    scenario: name.clone(),
                    trial,
                    index: i as u32,
                    unix: report::now_unix(),
                    values: BTreeMap::from([
                        ("offered_per_s".to_string(), round.offered_per_s),
                        ("sent_per_s".to_string(), round.sent_per_s),
                        ("answered_per_s".to_string(), round.answered_per_s),
                        ("loss".to_string(), round.loss),
                    ]),
                    rtt_cdf: Vec::new(),
                    note: None,
                };
                if let Err(e) = writer.append(&s) {
                    return fail(format!("writing samples: {e}"));
                }
            }
            let note = (!r.converged || r.sessions_lost > 0).then(|| {
                invalid += 1;
                let what = format!(
                    "{name} trial {trial}: {} after {} rounds, {} session(s) lost",
                    if r.converged { "converged" } else { "did not converge" },
                    r.rounds.len(),
                    r.sessions_lost
                );
                meta.events.push(what.clone());
                what
            });
            let s = Sample {
                kind: "trial".into(),
                scenario: name.clone(),
                trial,
                index: 0,
                unix: report::now_unix(),
                values: BTreeMap::from([
                    ("loss_free_per_s".to_string(), r.loss_free_per_s),
                    ("rounds".to_string(), r.rounds.len() as f64),
                ]),
                rtt_cdf: Vec::new(),
                note,
            };
            if let Err(e) = writer.append(&s) {
                return fail(format!("writing samples: {e}"));
            }
            std::thread::sleep(Duration::from_millis(a.cooldown_ms));
        }
    }
    if let Err(code) = finish_run(writer, &mut meta, &dir, a.json) {
        return code;
    }
    if invalid > 0 {
        eprintln!("sdnlab bench ctl: {invalid} trial(s) without a loss-free rate (see the report)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--test dos`: the well-behaved switches (latency mode) measured alone and
/// then while `--attackers` switches flood the controller, trial by trial.
fn run_dos(a: CtlArgs) -> ExitCode {
    let list = match scenarios(&a) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let Some((_, base)) = list.into_iter().next() else {
        return fail("no scenario");
    };
    let run_id = run_name(&a, "ctl-dos");
    let dir = a.out.clone().unwrap_or_else(|| PathBuf::from("results").join(&run_id));
    let mut meta = Meta {
        benchmark: "bench ctl --test dos".into(),
        parameters: serde_json::json!({"openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "good_switches": a.switches, "attackers": a.attackers, "syn_flood_pps": a.syn_flood_pps, "attacker_window": 4096, "macs": a.macs}),
        metrics: vec![
            Metric::new(
                "matched_per_s",
                "well-behaved switches' answered PACKET_INs/s",
                stats::Better::Higher,
            ),
            Metric::new("rtt_p50_us", "us", stats::Better::Lower),
            Metric::new("rtt_p99_us", "us", stats::Better::Lower),
        ],
        ..started(&run_id)
    };
    let (mut writer, rt) = match open_run(&dir, &meta) {
        Ok(x) => x,
        Err(code) => return code,
    };
    eprintln!(
        "sdnlab bench ctl --test dos: {} well-behaved switches (latency mode), {} attackers; {} trial(s); results in {}",
        a.switches,
        a.attackers,
        a.trials,
        dir.display()
    );
    for trial in 0..a.trials {
        let (addr, target, embedded) = match target_of(&a) {
            Ok(t) => t,
            Err(e) => return fail(e),
        };
        if meta.targets.is_empty() {
            meta.targets.push(target);
        }
        let good = ctlbench::Config {
            target: addr,
            mode: ctlbench::Mode::Latency,
            ..base.clone()
        };
        let attack = ctlbench::Config {
            target: addr,
            mode: ctlbench::Mode::Throughput,
            switches: a.attackers.max(1),
            window: 4096,
            first_dpid: a.first_dpid + 1_000_000,
            // Running from before the measurement to after it.
            warmup: 1,
            loops: good.warmup + good.loops + 2,
            ..base.clone()
        };
        let alone = rt.block_on(ctlbench::run(good.clone(), |_| {}));
        // The attackers run on a thread and runtime of their own, so the
        // well-behaved switches' side of the driver is not queued behind them.
        let flood = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()
                .map(|rt| rt.block_on(ctlbench::run(attack, |_| {})))
        });
        // Let the flood build up first.
        std::thread::sleep(Duration::from_millis(good.loop_ms));
        let under = rt.block_on(ctlbench::run(good.clone(), |_| {}));
        let flood = flood.join().ok().flatten();
        // Under a SYN flood (the well-behaved switches connect anew during it).
        let mut syn = None;
        if a.syn_flood_pps > 0 {
            let std::net::SocketAddr::V4(v4) = addr else {
                return fail("the SYN flood needs an IPv4 loopback target");
            };
            let guard = match DropSynAcks::install(v4.port()) {
                Ok(g) => g,
                Err(e) => return fail(e),
            };
            let flood = match ctlbench::synflood::SynFlood::start(v4, a.syn_flood_pps) {
                Ok(f) => f,
                Err(e) => return fail(e),
            };
            std::thread::sleep(Duration::from_millis(good.loop_ms));
            let r = rt.block_on(ctlbench::run(good.clone(), |_| {}));
            let sent = flood.stop();
            drop(guard);
            syn = Some((r, sent));
        }
        if let Some(r) = embedded {
            r.stop();
        }
        let flood_rate = flood
            .as_ref()
            .map(|f| f.loops.iter().map(|l| l.matched_per_s).sum::<f64>() / f.loops.len().max(1) as f64)
            .unwrap_or(0.0);
        let mut phases = vec![("alone", &alone), ("under attack", &under)];
        if let Some((r, _)) = &syn {
            phases.push(("under SYN flood", r));
        }
        for (scenario, r) in phases {
            let matched = r.loops.iter().map(|l| l.matched_per_s).sum::<f64>() / r.loops.len().max(1) as f64;
            let note = (r.sessions_lost > 0).then(|| {
                format!(
                    "{scenario} trial {trial}: {} well-behaved session(s) lost",
                    r.sessions_lost
                )
            });
            if let Some(n) = &note {
                meta.events.push(n.clone());
            }
            let mut values = BTreeMap::from([
                ("matched_per_s".to_string(), matched),
                ("rtt_p50_us".to_string(), r.rtt_us_p50),
                ("rtt_p99_us".to_string(), r.rtt_us_p99),
                ("sessions_lost".to_string(), r.sessions_lost as f64),
            ]);
            if scenario == "under attack" {
                values.insert("attackers_answered_per_s".to_string(), flood_rate);
            }
            if let (true, Some((r, sent))) = (scenario == "under SYN flood", &syn) {
                let secs = (good.warmup + good.loops) as f64 * good.loop_ms as f64 / 1000.0 + 1.0;
                values.insert("syns_per_s".to_string(), *sent as f64 / secs);
                values.insert("sessions_lost".to_string(), r.sessions_lost as f64);
            }
            let s = Sample {
                kind: "trial".into(),
                scenario: scenario.into(),
                trial,
                index: 0,
                unix: report::now_unix(),
                values,
                rtt_cdf: r.rtt_cdf.clone(),
                note,
            };
            if let Err(e) = writer.append(&s) {
                return fail(format!("writing samples: {e}"));
            }
        }
        eprintln!(
            "  trial {trial}: alone p50 {:.1} us, under attack p50 {:.1} us (p99 {:.1} -> {:.1}); attackers answered {}/s",
            alone.rtt_us_p50,
            under.rtt_us_p50,
            alone.rtt_us_p99,
            under.rtt_us_p99,
            report::fmt_num(flood_rate)
        );
        std::thread::sleep(Duration::from_millis(a.cooldown_ms));
    }
    if let Err(code) = finish_run(writer, &mut meta, &dir, a.json) {
        return code;
    }
    ExitCode::SUCCESS
}

pub(crate) fn run_name(a: &CtlArgs, kind: &str) -> String {
    a.run_name
        .clone()
        .unwrap_or_else(|| format!("{kind}-{}", crate::time_tag()))
}

/// `--peer ...`: the same test against each peer in turn (each its own run
/// under the output directory), then one report comparing them.
fn run_peers(a: CtlArgs) -> ExitCode {
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("ctl-peers-{}", crate::time_tag())));
    let mut runs = Vec::new();
    let mut worst = 0u8;
    for name in &a.peers {
        eprintln!("sdnlab bench ctl: peer {name}, started afresh for each trial");
        let mut one = a.clone();
        one.peers.clear();
        one.restart_peer = Some(name.clone());
        one.run_name = Some(name.clone());
        let sub = dir.join(name);
        one.out = Some(sub.clone());
        if run(one) != ExitCode::SUCCESS {
            worst = worst.max(1);
        }
        match report::load(&sub) {
            Ok(r) => runs.push(r),
            Err(e) => eprintln!("sdnlab bench ctl: {name}: {e}"),
        }
    }
    if runs.len() > 1 {
        match report::write_outputs(&dir, &runs) {
            Ok(summary) => {
                println!("\n== all peers");
                print!("{}", report::terminal_table(&summary, &report::metrics(&runs)));
                eprintln!("sdnlab bench ctl: comparison in {}", dir.join("report.html").display());
            }
            Err(e) => return fail(format!("writing the comparison: {e}")),
        }
    }
    ExitCode::from(worst)
}

/// An nftables table that drops the controller's SYN-ACKs to the SYN
/// flood's fake source (loopback only), so half-open connections stay
/// half-open; removed on drop.
struct DropSynAcks {
    table: String,
}

impl DropSynAcks {
    fn install(port: u16) -> Result<DropSynAcks, String> {
        let table = format!("sdnlab_synflood_{}", std::process::id());
        let rules = format!(
            "table ip {table} {{\n chain out {{\n  type filter hook output priority 0; policy accept;\n  \
             ip saddr 127.0.0.0/8 ip daddr {}/32 tcp sport {port} drop\n }}\n}}\n",
            ctlbench::synflood::FAKE_SOURCE
        );
        let mut child = std::process::Command::new("nft")
            .args(["-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("nft (apt-get install nftables) is needed for --syn-flood-pps: {e}"))?;
        use std::io::Write as _;
        if let Some(mut i) = child.stdin.take() {
            let _ = i.write_all(rules.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("nft: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(DropSynAcks { table })
    }
}

impl Drop for DropSynAcks {
    fn drop(&mut self) {
        let _ = std::process::Command::new("nft")
            .args(["delete", "table", "ip", &self.table])
            .status();
    }
}

/// The metadata every run starts with (named `run_id`, the command line,
/// sdnlab's version, the start time, the machine).
pub(crate) fn started(run_id: &str) -> Meta {
    Meta {
        run_id: run_id.to_string(),
        command: std::env::args().collect(),
        sdnlab_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: report::now_unix(),
        setup: report::Setup::detect(),
        ..Default::default()
    }
}

/// Creates the run directory with its `meta.json`, and the runtime the trials run on.
pub(crate) fn open_run(dir: &std::path::Path, meta: &Meta) -> Result<(RunWriter, tokio::runtime::Runtime), ExitCode> {
    let writer = RunWriter::create(dir, meta).map_err(fail)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(fail)?;
    Ok((writer, rt))
}

/// Ends a run: final `meta.json`, summaries and report on disk, the summary
/// on stdout (JSON, or the table), and where the report is.
pub(crate) fn finish_run(
    writer: RunWriter,
    meta: &mut Meta,
    dir: &std::path::Path,
    json: bool,
) -> Result<report::Summary, ExitCode> {
    meta.finished_unix = Some(report::now_unix());
    let summary = writer
        .finish(meta)
        .map_err(|e| fail(format!("writing the report: {e}")))?;
    if json {
        println!("{}", serde_json::json!({ "run": dir, "summary": summary }));
    } else {
        print!("{}", report::terminal_table(&summary, &meta.metrics));
    }
    eprintln!("sdnlab bench ctl: report in {}", dir.join("report.html").display());
    Ok(summary)
}
