//! The controller benchmark (`sdnlab bench ctl`, `experiment = "ctl"`):
//! the load driver (crate `ctlbench`) against a controller at `target`, a
//! peer sdnlab starts afresh for each trial, or sdnlab's own controller
//! started in this process for each trial (the embedded default). Each
//! scenario (a point of `sweep`) is repeated `trials` times; every loop and
//! every trial is appended to the run's `samples.jsonl` as it is measured;
//! at the end the run directory gets its summaries and HTML report (crate
//! `report`). The RFC 8456 tests without a topology live here too
//! (security, sessions, rate, dos); those on emulated fabrics in
//! `topology`, the whole suite in `suite`.

pub mod ceiling;
mod config;
pub mod suite;
pub mod topology;

pub use config::{all_tests, CtlConfig, TESTS};

use crate::rundir::{fail_run, io_error, open_run, started, Place};
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, RunWriter, Sample, Target};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How far above the well-behaved switches the DoS test's attackers'
/// datapath ids start.
const DOS_ATTACKER_DPIDS: u64 = 1_000_000;

/// How long the driver waits for a new source's answer before giving it
/// up: above what a slow learner's queue of a full window takes (Faucet
/// learns a few hundred sources a second; 4 x 256 outstanding is seconds).
const UNANSWERED_AFTER_MS: u64 = 10_000;

/// Why Faucet cannot take `test` in OpenFlow `ofp`, if it is the peer.
pub(crate) fn faucet_unsupported(peer: &str, test: &str, ofp: &str) -> Option<String> {
    if peer != "faucet" {
        return None;
    }
    if ofp != "1.3" {
        return Some("Faucet speaks OpenFlow 1.3 only: add --ofp 1.3".into());
    }
    if !["cbench", "rate", "dos", "security", "sessions"].contains(&test) {
        return Some(format!(
            "Faucet has no topology discovery or northbound API sdnlab can drive, so it cannot take the {test} test"
        ));
    }
    None
}

/// A line for the person watching.
pub(crate) fn say(obs: &dyn Observer, s: String) {
    obs.event(Event::Line(&s));
}

/// The scenarios of a sweep: a name and the driver's config for each point.
pub(crate) fn scenarios(a: &CtlConfig) -> Result<Vec<(String, ctlbench::Config)>, LabError> {
    let base = |target| ctlbench::Config {
        target,
        switches: a.switches,
        macs: a.macs,
        mode: if a.mode == "latency" {
            ctlbench::Mode::Latency
        } else {
            ctlbench::Mode::Throughput
        },
        version: a.version(),
        loops: a.loops,
        loop_ms: a.loop_ms,
        warmup: a.warmup,
        window: a.window,
        connect_rate: a.connect_rate,
        first_dpid: a.first_dpid,
        ports: a.ports,
        malformed_per_mille: (a.malformed_percent * 10.0).round() as u32,
        offered_rate: 0.0,
        vlan: a.frame_vlan(),
        answers: a.answers(),
        unanswered_after_ms: UNANSWERED_AFTER_MS,
        threads: a.driver_threads,
        // A cluster's size in placeholders, its members' addresses set for
        // each trial (the driver's ceiling takes as many sessions).
        members: vec![target; a.cluster.max(a.target_members.len())],
    };
    let placeholder: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    let Some(sweep) = &a.sweep else {
        let c = base(placeholder);
        return Ok(vec![(format!("switches={}", c.switches), c)]);
    };
    let bad = |m: String| LabError::Config(format!("--sweep '{sweep}': {m}"));
    let (param, values) = sweep
        .split_once('=')
        .ok_or_else(|| bad("write PARAM=V1,V2,... (e.g. switches=1,2,4)".into()))?;
    let mut out = Vec::new();
    for v in values.split(',') {
        let n: u64 = v
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{v}' is not a whole number")))?;
        let within = |lo: u64, hi: u64| {
            if (lo..=hi).contains(&n) {
                Ok(())
            } else {
                Err(bad(format!("{param} {n} is out of range: {lo} to {hi}")))
            }
        };
        let mut c = base(placeholder);
        match param {
            "switches" => {
                within(1, 100_000)?;
                c.switches = n as usize
            }
            "macs" => {
                within(2, 65_535)?;
                c.macs = n as usize
            }
            "window" => {
                within(1, 1_000_000)?;
                c.window = n as usize
            }
            "loop-ms" | "loop_ms" => {
                within(10, 3_600_000)?;
                c.loop_ms = n
            }
            "cluster" => {
                // RFC 8456's cluster sizes side by side (0: standalone, the
                // controller embedded; 1: one member with its etcd).
                within(0, 9)?;
                if a.cluster > 0 || a.target.is_some() {
                    return Err(bad(
                        "sweeps sdnlab's cluster sizes: leave out --cluster and --target".into(),
                    ));
                }
                c.members = vec![placeholder; n as usize]
            }
            "malformed" => {
                within(0, 100)?;
                c.malformed_per_mille = (n * 10) as u32
            }
            other => {
                return Err(LabError::Config(format!(
                    "--sweep: cannot sweep '{other}'; choose switches, macs, window, loop-ms, malformed (percent) or cluster (members)"
                )))
            }
        }
        out.push((format!("{param}={n}"), c));
    }
    Ok(out)
}

/// Runs `$f` on `$rt` unless a stop signal (SIGINT, SIGTERM) comes
/// first; then ends the run, its meta.json saying so, with
/// `LabError::Interrupted` (what the run started is dropped, and so
/// stopped, as the error goes up).
macro_rules! or_interrupted {
    ($rt:expr, $f:expr, $writer:ident, $meta:ident, $dir:expr) => {
        match crate::stop::block_on_unless_stopped(&$rt, $f) {
            Some(r) => r,
            None => {
                return Err(crate::rundir::fail_run(
                    $writer,
                    &mut $meta,
                    LabError::Interrupted {
                        dir: $dir.to_path_buf(),
                    },
                ))
            }
        }
    };
}
pub(crate) use or_interrupted;

/// Runs the controller benchmark `a` into `place`: one test, a suite, or
/// the same test against each of several peers.
pub fn run(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    a.validate()?;
    // Ctrl-C and SIGTERM end the run at once, cleanly: every controller,
    // peer, etcd and temporary directory it made goes (their owners are
    // dropped), and the run directory says what was measured.
    crate::stop::catch_stop_signals();
    if place.workers.is_some() {
        spread_cluster_supported(a)?;
    } else {
        // A controller that is not there is said at once, not measured as
        // sessions lost and a report of zeros. (From workers the target
        // may be reachable where this machine cannot see it.)
        for addr in a.target.iter().chain(&a.target_members) {
            reachable(*addr)?;
        }
    }
    if a.suite.is_some() {
        return suite::run(a, place, obs);
    }
    if !a.peers.is_empty() {
        return run_peers(a, place, obs);
    }
    match a.test.as_str() {
        "security" => run_security(a, place, obs),
        "sessions" => run_sessions(a, place, obs),
        "rate" => run_rate(a, place, obs),
        "dos" => run_dos(a, place, obs),
        "cbench" => run_cbench(a, place, obs),
        _ => topology::run(a, place, obs),
    }
}

/// One run of the driver's ceiling for a scenario (`ceiling`), added to
/// `acc`, its sample on disk at once; nothing when the ceiling does not
/// apply. A run that fails is one of the run's events. With `fleet`, it
/// is taken on the workers (their sum); a worker lost meanwhile is an
/// error, and so is a stop signal.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ceiling_run(
    acc: &mut Option<ceiling::Ceiling>,
    name: &str,
    cfg: &ctlbench::Config,
    fleet: Option<&fleet::coordinator::Fleet>,
    rt: &tokio::runtime::Runtime,
    writer: &mut RunWriter,
    meta: &mut Meta,
    dir: &Path,
    obs: &dyn Observer,
) -> Result<(), LabError> {
    let k = acc.as_ref().map_or(0, |c| c.runs.len()) as u32;
    let measured = match fleet {
        None => {
            obs.event(Event::Status(&format!(
                "{name}: measuring the driver's own ceiling (run {})",
                k + 1
            )));
            match ceiling::measure(cfg, rt) {
                // (Either way only its words go into the run's events.)
                Some(r) => r.map_err(|e| e.to_string()),
                None => return Err(LabError::Interrupted { dir: dir.to_path_buf() }),
            }
        }
        Some(f) => {
            obs.event(Event::Status(&format!(
                "{name}: measuring the driver's own ceiling on every worker (run {})",
                k + 1
            )));
            match rt.block_on(f.ceiling(cfg)) {
                Ok(c) => Ok(c.map(|c| ceiling::Ceiling {
                    place: format!(
                        "over {} worker(s) (their sum, each against a responder on its own machine)",
                        f.workers.len()
                    ),
                    ..ceiling::Ceiling::here(c)
                })),
                Err(e @ fleet::FleetError::Lost { .. }) => return Err(LabError::setup(e)),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    match measured {
        Ok(Some(c)) => {
            match acc {
                Some(a) => a.add(c),
                None => *acc = Some(c),
            }
            let c = acc.as_ref().expect("just set");
            writer.append(&c.sample(name, k)).map_err(io_error(dir))?;
        }
        Ok(None) => {}
        Err(e) => meta.events.push(format!(
            "{name}: run {} of the driver's own ceiling was not measured: {e}",
            k + 1
        )),
    }
    Ok(())
}

/// The scenario's ceiling, all its runs taken, stated among the run's events.
fn state_ceiling(c: Option<&ceiling::Ceiling>, name: &str, meta: &mut Meta, obs: &dyn Observer) {
    if let Some(c) = c {
        let line = c.line(name);
        obs.event(Event::Status(&line));
        meta.events.push(line);
    }
}

/// Whether the mean of a scenario's `figures` comes within 20 % of its
/// ceiling; if so, the warning is one of the run's events.
fn flag_near_ceiling(ceiling: Option<&ceiling::Ceiling>, name: &str, figures: &[f64], meta: &mut Meta) -> bool {
    let mean = figures.iter().sum::<f64>() / figures.len().max(1) as f64;
    let warning = ceiling.and_then(|c| c.warning(name, mean));
    let near = warning.is_some();
    meta.events.extend(warning);
    near
}

/// cbench's throughput and latency modes, scenario by scenario, trial by trial.
fn run_cbench(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let list = scenarios(a)?;
    let clustered = list.iter().any(|(_, c)| !c.members.is_empty());
    // Thousands of emulated switches need thousands of descriptors.
    controller::runtime::raise_fd_limit();
    let run_id = place.name("ctl");
    let dir = place.dir(&run_id);
    let mut meta = Meta {
        benchmark: "bench ctl".into(),
        targets: Vec::new(),
        parameters: serde_json::json!({
            "mode": a.mode, "openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "warmup": a.warmup, "cooldown_ms": a.cooldown_ms, "window": a.window, "switches": a.switches,
            "macs": a.macs, "malformed_percent": a.malformed_percent, "connect_rate": a.connect_rate, "ports": a.ports, "first_dpid": a.first_dpid, "sweep": a.sweep,
            "app": if a.embedded() { Some(&a.app) } else { None },
            // RFC 8456's setup: standalone, or a cluster of identical members.
            "rfc8456_mode": if clustered { "cluster" } else { "standalone" },
            "cluster_size": list.iter().map(|(_, c)| c.members.len()).max().unwrap_or(0),
            "switch_connections": if clustered { "every switch to every member" } else { "one controller" },
            "slave_packet_ins": if clustered && a.target_members.is_empty() { Some(&a.slave_packet_ins) } else { None },
            "etcd_members": if clustered && a.target_members.is_empty() { Some(a.etcd_members) } else { None },
            // What an answer is: the FLOW_MOD or PACKET_OUT for a buffered
            // PACKET_IN, or (Faucet) a FLOW_MOD naming a new source, once.
            "answers": match a.answers() {
                ctlbench::Answers::NewSource => "new-source",
                _ => "buffer",
            },
        }),
        metrics: vec![
            Metric::new("responses_per_s", "responses/s (cbench)", stats::Better::Higher)
                .titled("Responses per second (cbench's figure)"),
            Metric::new("matched_per_s", "matched responses/s", stats::Better::Higher)
                .titled("Matched responses per second"),
            Metric::new("rtt_p50_us", "us", stats::Better::Lower).titled("Round-trip time, median"),
            Metric::new("rtt_p99_us", "us", stats::Better::Lower).titled("Round-trip time, 99th percentile"),
        ],
        ..started(&run_id)
    };
    if a.kill_after_loop.is_some() {
        meta.metrics.extend([
            Metric::new(
                "matched_before_kill_per_s",
                "matched responses/s",
                stats::Better::Higher,
            )
            .titled("Matched responses per second, every member up"),
            Metric::new("matched_after_kill_per_s", "matched responses/s", stats::Better::Higher)
                .titled("Matched responses per second, the first member killed"),
        ]);
        meta.parameters["kill_after_loop"] = serde_json::json!(a.kill_after_loop);
    }
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    // Spread over workers: connected once for the run, clocks measured.
    let fleet = match connect_fleet(place, &rt, &mut meta, obs, "the switches") {
        Ok(f) => f,
        Err(e) => return Err(fail_run(writer, &mut meta, e)),
    };
    say(
        obs,
        format!(
            "sdnlab bench ctl: {} scenario(s) x {} trial(s), {} mode, OpenFlow {}, {} loops of {} ms; results in {}",
            list.len(),
            a.trials,
            a.mode,
            a.ofp,
            a.loops,
            a.loop_ms,
            dir.display()
        ),
    );
    obs.event(Event::Plan {
        steps: list.len() as u64 * a.trials as u64,
    });
    let mut invalid = 0;
    let mut reports = Vec::new();
    let mut ceilings = Vec::new();
    for (name, cfg) in &list {
        let mut cbench_rates = Vec::new();
        let mut matched_rates = Vec::new();
        let mut ceiling = None;
        // The scenario's cluster size (a sweep of sizes sets it per scenario).
        let a_here = CtlConfig {
            cluster: if a.target_members.is_empty() {
                cfg.members.len()
            } else {
                0
            },
            ..a.clone()
        };
        for trial in 0..a.trials {
            if ceiling::due_before(trial, a.trials) {
                if let Err(e) = ceiling_run(
                    &mut ceiling,
                    name,
                    cfg,
                    fleet.as_ref(),
                    &rt,
                    &mut writer,
                    &mut meta,
                    &dir,
                    obs,
                ) {
                    return Err(fail_run(writer, &mut meta, e));
                }
            }
            let (cfg, mut started) = match start_trial_controller(&a_here, fleet.as_ref(), &rt, &mut meta, obs) {
                Ok(started) => (
                    ctlbench::Config {
                        target: started.addr,
                        members: started.members.clone(),
                        ..cfg.clone()
                    },
                    started,
                ),
                Err(e) => {
                    meta.events
                        .push(format!("{name} trial {trial}: the controller did not start: {e}"));
                    invalid += 1;
                    obs.event(Event::Step {
                        status: "the controller did not start",
                    });
                    continue;
                }
            };
            let mut write_errors = Vec::new();
            // --kill-after-loop: the first member killed once that many
            // loops are measured (what it was, once done).
            let mut killed: Option<String> = None;
            let mut running = started.running.take();
            let watch = watch_host(&running);
            let on_loop = |l: &ctlbench::LoopResult| {
                if a_here.kill_after_loop == Some(l.loop_index as u32 + 1) && killed.is_none() {
                    killed = running.as_mut().and_then(Running::kill_first);
                }
                let s = Sample::of(
                    "loop",
                    name.clone(),
                    trial,
                    [
                        ("responses_per_s", l.responses_per_s),
                        ("matched_per_s", l.matched_per_s),
                        ("unmatched", l.unmatched as f64),
                        ("malformed_sent", l.malformed_sent as f64),
                        ("malformed_acted", l.malformed_acted as f64),
                        ("errors", l.errors as f64),
                    ],
                )
                .at(l.loop_index as u32);
                if let Err(e) = writer.append(&s) {
                    write_errors.push(e);
                }
                obs.event(Event::CbenchLoop {
                    switches: cfg.switches,
                    responses_per_s: l.responses_per_s,
                    per_switch: &l.per_switch,
                    version: cfg.version,
                });
            };
            let report = match &fleet {
                None => or_interrupted!(rt, ctlbench::run(cfg.clone(), on_loop), writer, meta, dir),
                Some(f) => match rt.block_on(f.ctl(&cfg, on_loop)) {
                    Ok((report, shards)) => {
                        for (k, sh) in shards.iter().enumerate() {
                            let s = Sample::of(
                                "shard",
                                name.clone(),
                                trial,
                                [
                                    ("worker", k as f64),
                                    ("switches", sh.switches as f64),
                                    ("first_dpid", sh.first_dpid as f64),
                                    ("responses_per_s", sh.report.mean(|l| l.responses_per_s)),
                                    ("matched_per_s", sh.report.mean(|l| l.matched_per_s)),
                                    ("rtt_p50_us", sh.report.rtt_us_p50),
                                    ("sessions_lost", sh.report.sessions_lost as f64),
                                ],
                            )
                            .at(k as u32)
                            .noted(Some(sh.worker.clone()));
                            writer.append(&s).map_err(io_error(&dir))?;
                        }
                        report
                    }
                    Err(e) => return Err(fail_run(writer, &mut meta, LabError::setup(e))),
                },
            };
            let host = watch.finish();
            let started = Started { running, ..started };
            if let Err(e) = started.stop(&rt) {
                return Err(fail_run(writer, &mut meta, LabError::setup(e)));
            }
            if let Some(e) = write_errors.pop() {
                return Err(io_error(&dir)(e));
            }
            // The killed member's sessions, one a switch, are lost by design.
            let expected_lost = if killed.is_some() { cfg.switches as u64 } else { 0 };
            let mut kill_values = Vec::new();
            if let (Some(k), Some(what)) = (a_here.kill_after_loop, &killed) {
                let k = (k as usize).min(report.loops.len());
                let avg = |ls: &[ctlbench::LoopResult]| {
                    ls.iter().map(|l| l.matched_per_s).sum::<f64>() / ls.len().max(1) as f64
                };
                kill_values.push(("matched_before_kill_per_s", avg(&report.loops[..k])));
                kill_values.push(("matched_after_kill_per_s", avg(&report.loops[k..])));
                meta.events.push(format!(
                    "{name} trial {trial}: {what} killed (SIGKILL) after measured loop {k}"
                ));
            } else if a_here.kill_after_loop.is_some() {
                meta.events.push(format!(
                    "{name} trial {trial}: no member could be killed (not a cluster of processes)"
                ));
                invalid += 1;
            }
            cbench_rates.extend(report.loops.iter().map(|l| l.responses_per_s));
            matched_rates.extend(report.loops.iter().map(|l| l.matched_per_s));
            let mean = |f: &dyn Fn(&ctlbench::LoopResult) -> f64| report.mean(f);
            let matched = mean(&|l| l.matched_per_s);
            let mut note = None;
            if report.sessions_lost > expected_lost || matched == 0.0 {
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
            let mut cluster_values = Vec::new();
            if let Some(c) = &report.cluster {
                // What each member did (as the switches saw it), on disk
                // before any summary; the trial's note says it in a line.
                for (k, m) in c.members.iter().enumerate() {
                    let s = Sample::of(
                        "member",
                        name.clone(),
                        trial,
                        [
                            ("member", (k + 1) as f64),
                            ("masters", m.masters as f64),
                            ("requests", m.requests as f64),
                            ("first_answers", m.first_answers as f64),
                            ("duplicates", m.duplicates as f64),
                            ("slave_writes", m.slave_writes as f64),
                        ],
                    )
                    .at(k as u32)
                    .noted(Some(format!("c{} at {}", k + 1, m.address)));
                    writer.append(&s).map_err(io_error(&dir))?;
                }
                if let Some(x) = c.settle_s {
                    cluster_values.push(("settle_s", x));
                }
                cluster_values.push(("unsettled", c.unsettled as f64));
                cluster_values.push(("without_master", c.without_master as f64));
                cluster_values.push((
                    "slave_writes",
                    c.members.iter().map(|m| m.slave_writes).sum::<u64>() as f64,
                ));
                cluster_values.push(("cluster_size", c.members.len() as f64));
                let no_roles = c.without_master == cfg.switches as u64;
                let line = c
                    .members
                    .iter()
                    .enumerate()
                    .map(|(k, m)| {
                        format!(
                            "c{}: {}{} first answers, {} duplicates",
                            k + 1,
                            if no_roles {
                                String::new()
                            } else {
                                format!("master of {}, ", m.masters)
                            },
                            m.first_answers,
                            m.duplicates
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                let mut n = if no_roles {
                    format!("no roles (OpenFlow 1.0, or every member EQUAL): {line}")
                } else {
                    format!("masters (as the switches saw the roles): {line}")
                };
                if c.unsettled > 0 {
                    invalid += 1;
                    n = format!(
                        "{} switch(es) without settled roles when the loops began; {n}",
                        c.unsettled
                    );
                    meta.events.push(format!("{name} trial {trial}: {n}"));
                }
                add_note(&mut note, n);
            }
            if let Some(what) = &killed {
                let n = format!("{what} killed after loop {}", a_here.kill_after_loop.unwrap_or(0));
                add_note(&mut note, n);
            }
            if let Some(n) = host_bound_note(&host, name, trial, &mut meta) {
                add_note(&mut note, n);
            }
            let s = Sample::trial(
                name.clone(),
                trial,
                cluster_values.into_iter().chain(kill_values).chain([
                    ("responses_per_s", mean(&|l| l.responses_per_s)),
                    ("matched_per_s", matched),
                    ("rtt_p50_us", report.rtt_us_p50),
                    ("rtt_p99_us", report.rtt_us_p99),
                    ("rtt_max_us", report.rtt_us_max),
                    ("sessions_lost", report.sessions_lost as f64),
                    (
                        "unmatched",
                        report.loops.iter().map(|l| l.unmatched).sum::<u64>() as f64,
                    ),
                    (
                        "malformed_sent",
                        report.loops.iter().map(|l| l.malformed_sent).sum::<u64>() as f64,
                    ),
                    (
                        "malformed_acted",
                        report.loops.iter().map(|l| l.malformed_acted).sum::<u64>() as f64,
                    ),
                    ("errors", report.loops.iter().map(|l| l.errors).sum::<u64>() as f64),
                    (
                        "duplicates",
                        report.loops.iter().map(|l| l.duplicates).sum::<u64>() as f64,
                    ),
                ]),
            )
            .with_cdf(report.rtt_cdf.clone())
            .noted(note);
            writer.append(&s).map_err(io_error(&dir))?;
            obs.event(Event::Step {
                status: &format!("{name}: {:.0} matched/s", matched),
            });
            reports.push((name.clone(), report));
            if trial + 1 < a.trials {
                std::thread::sleep(Duration::from_millis(a.cooldown_ms));
            }
        }
        // The last run, after the last trial.
        if let Err(e) = ceiling_run(
            &mut ceiling,
            name,
            cfg,
            fleet.as_ref(),
            &rt,
            &mut writer,
            &mut meta,
            &dir,
            obs,
        ) {
            return Err(fail_run(writer, &mut meta, e));
        }
        state_ceiling(ceiling.as_ref(), name, &mut meta, obs);
        if !cbench_rates.is_empty() {
            obs.event(Event::CbenchScenario {
                switches: cfg.switches,
                rates: &cbench_rates,
            });
        }
        let near = if cfg.members.is_empty() {
            flag_near_ceiling(ceiling.as_ref(), name, &cbench_rates, &mut meta)
        } else {
            // A cluster's answers include duplicates (every member answering,
            // at the ceiling): the first answers are the figures compared.
            let matched = ceiling.as_ref().map(ceiling::Ceiling::by_matched);
            flag_near_ceiling(matched.as_ref(), name, &matched_rates, &mut meta)
        };
        ceilings.push(serde_json::json!({"scenario": name, "ceiling": ceiling, "near_ceiling": near}));
    }
    obs.event(Event::PlanDone);
    let mut outcome = finish_run(writer, &mut meta, &dir, obs)?;
    outcome.json["trials"] = reports
        .iter()
        .map(|(n, r)| serde_json::json!({"scenario": n, "report": r}))
        .collect();
    outcome.json["ceilings"] = ceilings.into();
    Ok(incomplete(
        outcome,
        invalid,
        "not valid (see above and the report)",
        obs,
    ))
}

pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// A controller sdnlab started for a trial; `stop` ends it.
enum Running {
    Embedded(controller::runtime::Handle),
    Peer(crate::peers::Peer),
    /// A cluster of sdnlab's controller (its members' OpenFlow addresses).
    Cluster(topology::Controller, Vec<std::net::SocketAddr>),
    /// Instances of a peer with one configuration (Faucet's redundancy).
    Peers(Vec<crate::peers::Peer>),
}

impl Running {
    fn stop(self) {
        match self {
            Running::Embedded(h) => h.stop(),
            Running::Peer(p) => drop(p),
            Running::Cluster(c, _) => c.stop(),
            Running::Peers(p) => drop(p),
        }
    }

    /// Kills the cluster's first member (SIGKILL), as a failure would:
    /// what it was, or None when this is not a cluster of processes.
    fn kill_first(&mut self) -> Option<String> {
        match self {
            Running::Peers(ps) => ps.first_mut().map(|p| {
                p.kill();
                format!("{} instance 1 at {}", p.name, p.addr)
            }),
            Running::Cluster(topology::Controller::Cluster { members, .. }, addrs) => {
                let p = members.first_mut()?.as_mut()?;
                p.kill();
                Some(format!(
                    "member c1 at {}",
                    addrs.first().map(|a| a.to_string()).unwrap_or_default()
                ))
            }
            _ => None,
        }
    }

    /// The processes of the controller under test, and this one (the
    /// load driver, and the controller itself when embedded), for the
    /// host watch.
    fn processes(&self) -> Vec<(String, u32)> {
        match self {
            Running::Cluster(c, _) => c.processes(),
            Running::Peer(p) => vec![
                ("sdnlab (driver)".to_string(), std::process::id()),
                (p.name.clone(), p.pid()),
            ],
            Running::Peers(ps) => std::iter::once(("sdnlab (driver)".to_string(), std::process::id()))
                .chain(
                    ps.iter()
                        .enumerate()
                        .map(|(i, p)| (format!("{} instance {}", p.name, i + 1), p.pid())),
                )
                .collect(),
            Running::Embedded(_) => vec![("sdnlab (controller, driver)".to_string(), std::process::id())],
        }
    }

    /// A cluster's members, every switch connecting to each (empty: one controller).
    fn members(&self) -> Vec<std::net::SocketAddr> {
        match self {
            Running::Cluster(_, m) => m.clone(),
            Running::Peers(p) => p.iter().map(|p| p.addr).collect(),
            _ => Vec::new(),
        }
    }
}

/// The members every emulated switch connects to in cluster mode: those
/// of `--target A,B,C`, or of the cluster started for the trial (empty:
/// one controller).
fn trial_members(a: &CtlConfig, running: &Option<Running>) -> Vec<std::net::SocketAddr> {
    if a.target_members.is_empty() {
        running.as_ref().map(Running::members).unwrap_or_default()
    } else {
        a.target_members.clone()
    }
}

/// Watches the host while a trial runs: the processes of what `running`
/// started, or this one alone (an external controller is not seen).
fn watch_host(running: &Option<Running>) -> crate::host::HostWatch {
    let watched = match running {
        Some(r) => r.processes(),
        None => vec![("sdnlab (driver)".to_string(), std::process::id())],
    };
    crate::host::HostWatch::start(watched, crate::host::Rule::default())
}

/// `n` after what `note` says already ("; " between).
fn add_note(note: &mut Option<String>, n: String) {
    *note = Some(match note.take() {
        Some(x) => format!("{x}; {n}"),
        None => n,
    });
}

/// A host-bound trial, said in the run's events (which the report shows
/// as warnings) and in the trial's note: on one machine the load driver
/// and the controllers share the cores, so a saturated core bounds the
/// figure as much as the controller does.
fn host_bound_note(host: &crate::host::HostLoad, name: &str, trial: u32, meta: &mut Meta) -> Option<String> {
    let reason = host.reason.as_ref()?;
    meta.events.push(format!("{name} trial {trial}: host-bound: {reason}"));
    Some(format!("host-bound: {reason}"))
}

/// Whether a controller accepts a connection at `addr` (within 3 s).
fn reachable(addr: std::net::SocketAddr) -> Result<(), LabError> {
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map(drop)
        .map_err(|source| LabError::Unreachable { addr, source })
}

/// What of cluster mode runs spread over workers (an error saying what
/// does not): sdnlab's cluster started on the workers (`--cluster N`) or
/// a cluster at addresses (`--target A,B,C`), against the cbench, rate,
/// sessions and dos tests and the topology tests that spread (discovery
/// and change detection).
fn spread_cluster_supported(a: &CtlConfig) -> Result<(), LabError> {
    let clustered = a.cluster > 0 || !a.target_members.is_empty();
    let refuse = |why: &str| Err(LabError::Config(format!("--workers: {why}")));
    if a.sweeps_clusters() {
        return refuse("--sweep cluster=... is not spread over workers (its standalone size runs on this machine's loopback); run each size with --cluster N");
    }
    let spread = [
        "cbench",
        "rate",
        "sessions",
        "dos",
        "discovery",
        "discovery-size",
        "change-detection",
    ];
    if clustered && !spread.contains(&a.test.as_str()) {
        return refuse("a cluster is spread over workers for the cbench, rate, sessions, dos, discovery, discovery-size and change-detection tests so far; run this test without --workers");
    }
    if a.cluster > 0 && a.peer.is_some() {
        return refuse("a peer's instances run on this machine's loopback, out of the workers' reach; --cluster N with --workers starts sdnlab's members on the workers");
    }
    Ok(())
}

/// The controller of one trial, as started (or named) for it.
struct Started<'f> {
    /// Where the switches connect (the first member of a cluster).
    addr: std::net::SocketAddr,
    /// Every member each switch connects to (empty: one controller).
    members: Vec<std::net::SocketAddr>,
    running: Option<Running>,
    /// The fleet whose workers run sdnlab's cluster for this trial.
    spread: Option<&'f fleet::coordinator::Fleet>,
}

impl Started<'_> {
    /// Stops what was started for the trial (on the workers too).
    fn stop(self, rt: &tokio::runtime::Runtime) -> Result<(), fleet::FleetError> {
        if let Some(r) = self.running {
            r.stop();
        }
        match self.spread {
            Some(f) => rt.block_on(f.cluster_down()),
            None => Ok(()),
        }
    }
}

/// A trial's controller: sdnlab's cluster started on the workers of
/// `fleet` (`--cluster N` with `--workers`), or what `target_of` starts
/// or names; the report's target is recorded in `meta` the first time.
fn start_trial_controller<'f>(
    a: &CtlConfig,
    fleet: Option<&'f fleet::coordinator::Fleet>,
    rt: &tokio::runtime::Runtime,
    meta: &mut Meta,
    obs: &dyn Observer,
) -> Result<Started<'f>, LabError> {
    let spread = fleet.filter(|_| a.cluster > 0 && a.peer.is_none());
    let (started, target) = match spread {
        Some(f) => {
            let (c, target) = start_spread_cluster(f, rt, a, &a.app, meta, obs).map_err(LabError::setup)?;
            let members: Vec<std::net::SocketAddr> = c.members.iter().map(|m| m.openflow).collect();
            let addr = members[0];
            let s = Started {
                addr,
                members,
                running: None,
                spread,
            };
            (s, target)
        }
        None => {
            let (addr, target, running) = target_of(a)?;
            let s = Started {
                addr,
                members: trial_members(a, &running),
                running,
                spread: None,
            };
            (s, target)
        }
    };
    if meta.targets.is_empty() {
        meta.targets.push(target);
    }
    Ok(started)
}

/// Starts sdnlab's cluster of `a.cluster` members running `app` on the
/// workers (its etcd on the first, member cI on worker I - 1 modulo their
/// number), says where each runs, and records it in `meta`: the cluster
/// and the target as the report names it.
pub(super) fn start_spread_cluster(
    f: &fleet::coordinator::Fleet,
    rt: &tokio::runtime::Runtime,
    a: &CtlConfig,
    app: &str,
    meta: &mut Meta,
    obs: &dyn Observer,
) -> Result<(fleet::coordinator::SpreadCluster, Target), fleet::FleetError> {
    let name = format!("bench-{}", std::process::id());
    let c = rt.block_on(f.cluster_up(a.cluster, a.etcd_members, app, &name, a.slave_packet_ins == "all"))?;
    let placement: Vec<String> = c
        .members
        .iter()
        .map(|m| format!("{} on {} ({})", m.name, m.worker, m.openflow))
        .collect();
    if meta.parameters.get("cluster_placement").is_none() {
        say(
            obs,
            format!(
                "sdnlab bench ctl: cluster members {}; etcd {} on {}",
                placement.join(", "),
                c.endpoints.join(","),
                c.etcd_worker
            ),
        );
    }
    meta.parameters["cluster_placement"] = serde_json::to_value(&c).unwrap_or_default();
    let target = Target {
        name: format!("sdnlab cluster of {}", a.cluster),
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: format!(
            "{} identical members of sdnlab's controller (app {}, --slave-packet-ins {}), each inside `sdnlab worker` on a worker: {}, started afresh for each trial; every switch connects to each; etcd: {} on worker {}, {} member{}",
            a.cluster,
            app,
            a.slave_packet_ins,
            placement.join(", "),
            c.etcd_version,
            c.etcd_worker,
            a.etcd_members,
            if a.etcd_members == 1 { "" } else { "s" }
        ),
        address: c
            .members
            .iter()
            .map(|m| m.openflow.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    };
    Ok((c, target))
}

/// The controller to measure: `--target`, a `--peer` started afresh, or
/// sdnlab's own started in this process.
fn target_of(a: &CtlConfig) -> Result<(std::net::SocketAddr, Target, Option<Running>), LabError> {
    if a.cluster > 0 && a.peer.as_deref() != Some("faucet") {
        let (members, _, target, ctl) = topology::start_cluster(a, a.cluster, &a.app)?;
        return Ok((members[0], target, Some(Running::Cluster(ctl, members))));
    }
    if let Some(name) = &a.peer {
        let dps = match a.test.as_str() {
            "security" => {
                use ctlbench::security::{CASES, FIRST_CASE_DPID, PORTS, WITNESS_DPID};
                crate::peers::Datapaths {
                    ranges: vec![(WITNESS_DPID, 1), (FIRST_CASE_DPID, CASES)],
                    ports: PORTS,
                }
            }
            "sessions" => crate::peers::Datapaths {
                ranges: vec![(ctlbench::capacity::FIRST_DPID, a.max_sessions)],
                ports: ctlbench::capacity::PORTS,
            },
            _ => {
                // Every emulated switch any scenario of the run brings.
                let most = scenarios(a)?.iter().map(|(_, c)| c.switches).max();
                let mut ranges = vec![(a.first_dpid, most.unwrap_or(a.switches))];
                if a.test == "dos" {
                    // The attackers (`run_dos`).
                    ranges.push((a.first_dpid + DOS_ATTACKER_DPIDS, a.attackers));
                }
                crate::peers::Datapaths { ranges, ports: a.ports }
            }
        };
        if a.cluster > 0 {
            // Faucet's documented redundancy: instances with one
            // faucet.yaml, each a controller of every switch, all EQUAL
            // (Faucet asks for no role).
            let mut instances = Vec::new();
            for _ in 0..a.cluster {
                instances.push(crate::peers::start_for(name, dps.clone())?);
            }
            let first = &instances[0];
            let target = Target {
                name: format!("{} cluster of {}", first.name, a.cluster),
                version: first.version.clone(),
                command: format!(
                    "{} identical instances, each `{}` with the same faucet.yaml (started afresh for each trial); every switch connects to each",
                    a.cluster, first.command
                ),
                address: instances.iter().map(|p| p.addr.to_string()).collect::<Vec<_>>().join(" "),
            };
            return Ok((first.addr, target, Some(Running::Peers(instances))));
        }
        let p = crate::peers::start_for(name, dps)?;
        let target = Target {
            name: p.name.clone(),
            version: p.version.clone(),
            command: format!("{} (started afresh for each trial)", p.command),
            address: p.addr.to_string(),
        };
        return Ok((p.addr, target, Some(Running::Peer(p))));
    }
    match a.target {
        Some(t) if !a.target_members.is_empty() => Ok((
            t,
            Target {
                name: format!("controller cluster of {}", a.target_members.len()),
                version: String::new(),
                command: "a cluster at addresses (--target A,B,C); every switch connects to each member".into(),
                address: a
                    .target_members
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            },
            None,
        )),
        Some(t) => Ok((
            t,
            Target {
                name: "controller".into(),
                version: String::new(),
                command: String::new(),
                address: t.to_string(),
            },
            None,
        )),
        None => {
            let h = controller::embedded::start_local(&a.app, workers()).map_err(LabError::setup)?;
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
fn run_security(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let (addr, target, embedded) = target_of(a)?;
    // Against a cluster: every case against each member, the witness
    // connected to all of them.
    let members = trial_members(a, &embedded);
    let names: std::collections::HashMap<std::net::SocketAddr, String> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (*m, format!("c{}", i + 1)))
        .collect();
    let clustered = !members.is_empty();
    let run_id = place.name("ctl-security");
    let dir = place.dir(&run_id);
    let cfg = ctlbench::security::SuiteConfig {
        target: addr,
        version: a.version(),
        wait: Duration::from_millis(a.case_wait_ms),
        hello_wait: Duration::from_secs(a.hello_wait_s),
        answers: a.answers(),
        vlan: a.frame_vlan(),
        members: members.clone(),
    };
    let mut meta = Meta {
        benchmark: "bench ctl --test security".into(),
        targets: vec![target],
        parameters: serde_json::json!({"openflow": a.ofp, "case_wait_ms": a.case_wait_ms, "hello_wait_s": a.hello_wait_s,
            "rfc8456_mode": if clustered { "cluster" } else { "standalone" }, "cluster_size": members.len(),
            "switch_connections": if clustered { "the witness to every member; each case's session to one member" } else { "one controller" }}),
        ..started(&run_id)
    };
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --test security: {} cases against {}, OpenFlow {}; results in {}",
            ctlbench::security::CASES,
            if clustered {
                format!("each of {} members", members.len())
            } else {
                addr.to_string()
            },
            a.ofp,
            dir.display()
        ),
    );
    let mut failed_write = None;
    let results = or_interrupted!(
        rt,
        ctlbench::security::run_suite(cfg, |r| {
            let o = &r.observation;
            let scenario = match r.member.and_then(|m| names.get(&m)) {
                Some(n) => format!("{} @ {n}", r.case),
                None => r.case.to_string(),
            };
            let s = Sample::of(
                "case",
                scenario.clone(),
                0,
                [
                    ("errors", o.errors.len() as f64),
                    ("acted", o.acted as f64),
                    ("closed", f64::from(u8::from(o.closed))),
                    ("others_served", f64::from(u8::from(r.others_served))),
                    ("controller_alive", f64::from(u8::from(r.controller_alive))),
                ],
            )
            .noted(Some(format!(
                "{}; other sessions {}",
                r.outcome,
                if r.others_served { "served" } else { "NOT served" }
            )));
            if let Err(e) = writer.append(&s) {
                failed_write.get_or_insert(e);
            }
            say(obs, format!("  {:<42} {}", scenario, r.outcome));
        }),
        writer,
        meta,
        dir
    );
    if let Some(r) = embedded {
        r.stop();
    }
    if let Some(e) = failed_write {
        return Err(io_error(&dir)(e));
    }
    if results.iter().any(|r| !r.controller_alive) {
        meta.events
            .push("the controller stopped accepting connections during the suite".into());
    }
    let mut outcome = finish_run(writer, &mut meta, &dir, obs)?;
    outcome.json = serde_json::json!({ "run": dir, "cases": results });
    let case_of = |r: &ctlbench::security::CaseResult| match r.member.and_then(|m| names.get(&m)) {
        Some(n) => format!("{} @ {n}", r.case),
        None => r.case.to_string(),
    };
    let w = results.iter().map(|r| case_of(r).len()).max().unwrap_or(10);
    let mut table = format!("{:<w$}  {:<44}  {:<14}  expected\n", "case", "outcome", "others served");
    for r in &results {
        table += &format!(
            "{:<w$}  {:<44}  {:<14}  {}\n",
            case_of(r),
            r.outcome,
            if r.others_served { "yes" } else { "NO" },
            r.expected
        );
    }
    outcome.table = table;
    Ok(outcome)
}

/// `--test sessions`: how many sessions the controller holds, and how it fails.
/// The run's workers, connected once for the run (their clocks measured
/// and recorded in `meta`), when it is spread over them; `what` is what
/// they share out.
pub(super) fn connect_fleet(
    place: &Place,
    rt: &tokio::runtime::Runtime,
    meta: &mut Meta,
    obs: &dyn Observer,
    what: &str,
) -> Result<Option<fleet::coordinator::Fleet>, LabError> {
    let Some(path) = &place.workers else { return Ok(None) };
    let inv = fleet::inventory::Inventory::load(path).map_err(|e| LabError::Config(e.to_string()))?;
    let f = rt
        .block_on(fleet::coordinator::Fleet::connect(&inv))
        .map_err(LabError::setup)?;
    meta.parameters["workers"] = f.clocks();
    meta.events.extend(f.clock_warnings());
    say(
        obs,
        format!(
            "sdnlab bench ctl: {what} spread over {} worker(s): {}",
            f.workers.len(),
            f.workers.iter().map(|w| w.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    );
    Ok(Some(f))
}

fn run_sessions(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let limit = controller::runtime::raise_fd_limit();
    // Against a cluster, a switch is held while its session to each member is.
    // A sweep of cluster sizes runs each size in turn (0: standalone).
    let sizes = a.cluster_sizes()?;
    let clustered = a.cluster > 0 || !a.target_members.is_empty() || sizes.iter().any(|&n| n > 0);
    let list: Vec<(String, CtlConfig)> = if sizes.is_empty() {
        vec![("sessions".into(), a.clone())]
    } else {
        sizes
            .iter()
            .map(|&n| {
                let name = if n == 0 {
                    "standalone".into()
                } else {
                    format!("cluster={n}")
                };
                (
                    name,
                    CtlConfig {
                        cluster: n,
                        ..a.clone()
                    },
                )
            })
            .collect()
    };
    let run_id = place.name("ctl-sessions");
    let dir = place.dir(&run_id);
    let version = a.version();
    let mut meta = Meta {
        benchmark: "bench ctl --test sessions".into(),
        targets: Vec::new(),
        parameters: serde_json::json!({"openflow": a.ofp, "max_sessions": a.max_sessions, "trials": a.trials,
            "our_open_file_limit": limit, "embedded": a.embedded() && a.cluster == 0,
            "rfc8456_mode": if clustered { "cluster" } else { "standalone" },
            "cluster_size": if a.cluster > 0 { a.cluster } else { sizes.iter().copied().max().unwrap_or(a.target_members.len()) },
            "cluster_sizes": sizes,
            "switch_connections": if clustered { "every switch to every member" } else { "one controller" }}),
        // (Against a cluster a switch is held while its session to each
        // member is: the count is of switches.)
        metrics: vec![Metric::new(
            "sessions_held",
            if clustered {
                "switches (a session to every member each; standalone: sessions)"
            } else {
                "sessions"
            },
            stats::Better::Higher,
        )
        .titled("Control sessions held")],
        ..started(&run_id)
    };
    if a.embedded() && list.iter().any(|(_, c)| c.cluster == 0) {
        meta.events.push(format!(
            "the embedded controller shares this process's open-file limit ({limit}): each session costs it two descriptors"
        ));
    }
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --test sessions: up to {} sessions, {} trial(s); results in {}",
            a.max_sessions,
            a.trials,
            dir.display()
        ),
    );
    let fleet = match connect_fleet(place, &rt, &mut meta, obs, "the sessions") {
        Ok(f) => f,
        Err(e) => return Err(fail_run(writer, &mut meta, e)),
    };
    let mut results = Vec::new();
    for (scenario, a) in &list {
        for trial in 0..a.trials {
            // A fresh controller for each trial when sdnlab starts it.
            let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut meta, obs)?;
            let cfg = ctlbench::capacity::CapacityConfig {
                target: started.addr,
                version,
                first_dpid: ctlbench::capacity::FIRST_DPID,
                max_sessions: a.max_sessions,
                check_every: 500,
                timeout: Duration::from_secs(5),
                members: started.members.clone(),
            };
            let members = cfg.members.len();
            let watch = watch_host(&started.running);
            let r = match &fleet {
                None => or_interrupted!(
                    rt,
                    ctlbench::capacity::run(cfg, |n, secs| {
                        obs.event(Event::Status(&format!(
                            "trial {trial}: {n} sessions held after {secs:.1} s"
                        )));
                    }),
                    writer,
                    meta,
                    dir
                ),
                Some(f) => {
                    let r = rt.block_on(f.sessions(&cfg, |n| {
                        obs.event(Event::Status(&format!("trial {trial}: {n} sessions held")));
                    }));
                    let (r, shards) = match r {
                        Ok(x) => x,
                        Err(e) => return Err(fail_run(writer, &mut meta, LabError::setup(e))),
                    };
                    for (worker, s) in &shards {
                        let sample = Sample::of(
                            "shard",
                            "sessions",
                            trial,
                            [("sessions_held", s.held as f64), ("seconds", s.seconds)],
                        )
                        .noted(Some(format!("worker {worker}: ended by {}: {}", s.ended_by, s.detail)));
                        writer.append(&sample).map_err(io_error(&dir))?;
                    }
                    r
                }
            };
            let host = watch.finish();
            let held = if members > 0 {
                format!(
                    "{} switches held, each with a session to each of {members} members ({} sessions)",
                    r.held,
                    r.held * members
                )
            } else {
                format!("{} sessions held", r.held)
            };
            say(
                obs,
                format!("  trial {trial}: {held}; ended by {} ({})", r.ended_by, r.detail),
            );
            let s = Sample::trial(
                scenario.clone(),
                trial,
                [
                    ("sessions_held", r.held as f64),
                    ("seconds", r.seconds),
                    ("sessions_per_s", r.sessions_per_s),
                ],
            )
            .noted(Some(match host_bound_note(&host, scenario, trial, &mut meta) {
                Some(n) => format!("{held}; ended by {}: {}; {n}", r.ended_by, r.detail),
                None => format!("{held}; ended by {}: {}", r.ended_by, r.detail),
            }));
            writer.append(&s).map_err(io_error(&dir))?;
            results.push((scenario.clone(), r));
            if let Err(e) = started.stop(&rt) {
                return Err(fail_run(writer, &mut meta, LabError::setup(e)));
            }
            if trial + 1 < a.trials {
                // Let the controller release the previous trial's sessions.
                std::thread::sleep(Duration::from_millis(a.cooldown_ms.max(1000)));
            }
        }
    }
    let mut outcome = finish_run(writer, &mut meta, &dir, obs)?;
    outcome.json = serde_json::json!({ "run": dir, "trials": results.iter().map(|(_, r)| r).collect::<Vec<_>>() });
    outcome.table = String::new();
    for (scenario, c) in &list {
        let of: Vec<&ctlbench::capacity::CapacityResult> =
            results.iter().filter(|(n, _)| n == scenario).map(|(_, r)| r).collect();
        let held: Vec<f64> = of.iter().map(|r| r.held as f64).collect();
        let s = stats::summary(&held);
        let label = if list.len() > 1 {
            format!("{scenario}: ")
        } else {
            String::new()
        };
        let unit = if c.cluster > 0 || !c.target_members.is_empty() {
            "switches (a session to every member each)"
        } else {
            "sessions"
        };
        outcome.table.push_str(&format!(
            "{label}{unit} held: median {} (min {}, max {}) over {} trial(s); ended by: {}\n",
            report::fmt_num(s.median),
            report::fmt_num(s.min),
            report::fmt_num(s.max),
            of.len(),
            of.iter().map(|r| r.ended_by.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(outcome)
}

/// `--test rate`: the loss-free asynchronous message processing rate, per
/// scenario and trial (the controller restarted per trial when embedded).
fn run_rate(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let list = scenarios(a)?;
    let run_id = place.name("ctl-rate");
    let dir = place.dir(&run_id);
    let mut meta = Meta {
        benchmark: "bench ctl --test rate".into(),
        parameters: serde_json::json!({"openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "warmup": a.warmup, "window": a.window, "switches": a.switches, "macs": a.macs, "sweep": a.sweep,
            "tolerance": a.rate_tolerance, "max_rounds": 10}),
        metrics: vec![Metric::new(
            "loss_free_per_s",
            "PACKET_INs/s answered, loss-free",
            stats::Better::Higher,
        )
        .titled("Loss-free message processing rate")],
        ..started(&run_id)
    };
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --test rate: {} scenario(s) x {} trial(s); results in {}",
            list.len(),
            a.trials,
            dir.display()
        ),
    );
    let fleet = match connect_fleet(place, &rt, &mut meta, obs, "the switches") {
        Ok(f) => f,
        Err(e) => return Err(fail_run(writer, &mut meta, e)),
    };
    let mut invalid = 0;
    for (name, cfg) in &list {
        let mut ceiling = None;
        let mut rates = Vec::new();
        for trial in 0..a.trials {
            if ceiling::due_before(trial, a.trials) {
                ceiling_run(
                    &mut ceiling,
                    name,
                    cfg,
                    fleet.as_ref(),
                    &rt,
                    &mut writer,
                    &mut meta,
                    &dir,
                    obs,
                )?;
            }
            let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut meta, obs)?;
            let cfg = ctlbench::Config {
                target: started.addr,
                members: started.members.clone(),
                ..cfg.clone()
            };
            let mut rounds = Vec::new();
            let on_round = |round: &ctlbench::rate::Round| {
                say(
                    obs,
                    format!(
                        "  {name} trial {trial}: offered {:>12} sent {:>12} answered {:>12} loss {:.2} %",
                        if round.offered_per_s > 0.0 {
                            report::fmt_num(round.offered_per_s)
                        } else {
                            "unpaced".into()
                        },
                        report::fmt_num(round.sent_per_s),
                        report::fmt_num(round.answered_per_s),
                        round.loss * 100.0
                    ),
                );
                rounds.push(round.clone());
            };
            let r = match &fleet {
                None => or_interrupted!(
                    rt,
                    ctlbench::rate::search(cfg, 10, a.rate_tolerance, on_round),
                    writer,
                    meta,
                    dir
                ),
                Some(f) => {
                    // Each round's load shared out over the workers, as cbench's.
                    let round = |c: ctlbench::Config| async move { f.ctl(&c, |_| {}).await.map(|(r, _)| r) };
                    match rt.block_on(ctlbench::rate::search_with(cfg, 10, a.rate_tolerance, on_round, round)) {
                        Ok(r) => r,
                        Err(e) => return Err(fail_run(writer, &mut meta, LabError::setup(e))),
                    }
                }
            };
            if let Err(e) = started.stop(&rt) {
                return Err(fail_run(writer, &mut meta, LabError::setup(e)));
            }
            for (i, round) in rounds.iter().enumerate() {
                let s = Sample::of(
                    "round",
                    name.clone(),
                    trial,
                    [
                        ("offered_per_s", round.offered_per_s),
                        ("sent_per_s", round.sent_per_s),
                        ("answered_per_s", round.answered_per_s),
                        ("loss", round.loss),
                    ],
                )
                .at(i as u32);
                writer.append(&s).map_err(io_error(&dir))?;
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
            let s = Sample::trial(
                name.clone(),
                trial,
                [
                    ("loss_free_per_s", r.loss_free_per_s),
                    ("rounds", r.rounds.len() as f64),
                ],
            )
            .noted(note);
            writer.append(&s).map_err(io_error(&dir))?;
            rates.push(r.loss_free_per_s);
            std::thread::sleep(Duration::from_millis(a.cooldown_ms));
        }
        ceiling_run(
            &mut ceiling,
            name,
            cfg,
            fleet.as_ref(),
            &rt,
            &mut writer,
            &mut meta,
            &dir,
            obs,
        )?;
        state_ceiling(ceiling.as_ref(), name, &mut meta, obs);
        flag_near_ceiling(ceiling.as_ref(), name, &rates, &mut meta);
    }
    let outcome = finish_run(writer, &mut meta, &dir, obs)?;
    Ok(incomplete(
        outcome,
        invalid,
        "without a loss-free rate (see the report)",
        obs,
    ))
}

/// `--test dos`: the well-behaved switches (latency mode) measured alone and
/// then while `--attackers` switches flood the controller, trial by trial.
fn run_dos(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let Some((_, base)) = scenarios(a)?.into_iter().next() else {
        return Err(LabError::Config("--test dos: no scenario".into()));
    };
    if place.workers.is_some() && a.syn_flood_pps > 0 {
        return Err(LabError::Config(
            "--syn-flood-pps: not over workers (the SYN flood runs on this machine's loopback)".into(),
        ));
    }
    let run_id = place.name("ctl-dos");
    let dir = place.dir(&run_id);
    let mut meta = Meta {
        benchmark: "bench ctl --test dos".into(),
        parameters: serde_json::json!({"openflow": a.ofp, "trials": a.trials, "loops": a.loops, "loop_ms": a.loop_ms,
            "good_switches": a.switches, "attackers": a.attackers, "syn_flood_pps": a.syn_flood_pps, "attacker_window": 4096, "macs": a.macs}),
        metrics: vec![
            Metric::new(
                "matched_per_s",
                "well-behaved switches' answered PACKET_INs/s",
                stats::Better::Higher,
            )
            .titled("Well-behaved switches' answered PACKET_INs per second"),
            Metric::new("rtt_p50_us", "us", stats::Better::Lower).titled("Round-trip time, median"),
            Metric::new("rtt_p99_us", "us", stats::Better::Lower).titled("Round-trip time, 99th percentile"),
        ],
        ..started(&run_id)
    };
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    say(obs, format!(
        "sdnlab bench ctl --test dos: {} well-behaved switches (latency mode), {} attackers; {} trial(s); results in {}",
        a.switches,
        a.attackers,
        a.trials,
        dir.display()
    ));
    let fleet = match connect_fleet(place, &rt, &mut meta, obs, "the attackers") {
        Ok(f) => f,
        Err(e) => return Err(fail_run(writer, &mut meta, e)),
    };
    for trial in 0..a.trials {
        let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut meta, obs)?;
        let addr = started.addr;
        // In a cluster, the well-behaved switches and the attackers alike
        // connect to every member.
        let members = started.members.clone();
        let good = ctlbench::Config {
            target: addr,
            mode: ctlbench::Mode::Latency,
            members: members.clone(),
            ..base.clone()
        };
        let attack = ctlbench::Config {
            target: addr,
            members,
            mode: ctlbench::Mode::Throughput,
            switches: a.attackers,
            window: 4096,
            first_dpid: a.first_dpid + DOS_ATTACKER_DPIDS,
            threads: 1,
            // Running from before the measurement to after it.
            warmup: 1,
            loops: good.warmup + good.loops + 2,
            ..base.clone()
        };
        let alone = or_interrupted!(rt, ctlbench::run(good.clone(), |_| {}), writer, meta, dir);
        let (under, flood) = match &fleet {
            None => {
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
                let under = or_interrupted!(rt, ctlbench::run(good.clone(), |_| {}), writer, meta, dir);
                (under, flood.join().ok().flatten())
            }
            // The attackers on the workers, the well-behaved switches here:
            // a flood from other machines.
            Some(f) => {
                let (flood, under) = rt.block_on(async {
                    tokio::join!(f.ctl(&attack, |_| {}), async {
                        tokio::time::sleep(Duration::from_millis(good.loop_ms)).await;
                        ctlbench::run(good.clone(), |_| {}).await
                    })
                });
                match flood {
                    Ok((flood, _)) => (under, Some(flood)),
                    Err(e) => return Err(fail_run(writer, &mut meta, LabError::setup(e))),
                }
            }
        };
        // Under a SYN flood (the well-behaved switches connect anew during it).
        let mut syn = None;
        if a.syn_flood_pps > 0 {
            let std::net::SocketAddr::V4(v4) = addr else {
                return Err(LabError::Config(
                    "--syn-flood-pps: the SYN flood needs an IPv4 loopback target".into(),
                ));
            };
            let guard = DropSynAcks::install(v4.port()).map_err(LabError::setup)?;
            let flood = ctlbench::synflood::SynFlood::start(v4, a.syn_flood_pps).map_err(LabError::setup)?;
            std::thread::sleep(Duration::from_millis(good.loop_ms));
            let r = rt.block_on(ctlbench::run(good.clone(), |_| {}));
            let sent = flood.stop();
            drop(guard);
            syn = Some((r, sent));
        }
        if let Err(e) = started.stop(&rt) {
            return Err(fail_run(writer, &mut meta, LabError::setup(e)));
        }
        let flood_rate = flood.as_ref().map(|f| f.mean(|l| l.matched_per_s)).unwrap_or(0.0);
        let mut phases = vec![("alone", &alone), ("under attack", &under)];
        if let Some((r, _)) = &syn {
            phases.push(("under SYN flood", r));
        }
        for (scenario, r) in phases {
            let matched = r.mean(|l| l.matched_per_s);
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
            let s = Sample::trial(scenario, trial, values)
                .with_cdf(r.rtt_cdf.clone())
                .noted(note);
            writer.append(&s).map_err(io_error(&dir))?;
        }
        say(obs, format!(
            "  trial {trial}: alone p50 {:.1} us, under attack p50 {:.1} us (p99 {:.1} -> {:.1}); attackers answered {}/s",
            alone.rtt_us_p50,
            under.rtt_us_p50,
            alone.rtt_us_p99,
            under.rtt_us_p99,
            report::fmt_num(flood_rate)
        ));
        std::thread::sleep(Duration::from_millis(a.cooldown_ms));
    }
    finish_run(writer, &mut meta, &dir, obs)
}

/// `peers`: the same test against each peer in turn (each its own run
/// under the run directory), then one report comparing them.
fn run_peers(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let dir = place.dir(&place.name("ctl-peers"));
    crate::rundir::write_experiment(&dir, &Experiment::Ctl(a.clone()))?;
    let mut runs = Vec::new();
    let mut incomplete = 0;
    let mut table = String::new();
    let mut each = Vec::new();
    for name in &a.peers {
        say(
            obs,
            format!("sdnlab bench ctl: peer {name}, started afresh for each trial"),
        );
        let one = CtlConfig {
            peers: Vec::new(),
            peer: Some(name.clone()),
            ..a.clone()
        };
        let sub = dir.join(name);
        let place = Place {
            dir: Some(sub.clone()),
            name: Some(name.clone()),
            ..Default::default()
        };
        match run(&one, &place, obs) {
            Ok(o) => {
                incomplete += o.incomplete;
                table += &format!("== {name}\n{}", o.table);
                each.push(o.json);
            }
            // A stop signal: the peers after this one do not run.
            Err(LabError::Interrupted { .. }) => return Err(LabError::Interrupted { dir }),
            Err(e) => {
                incomplete += 1;
                say(obs, format!("sdnlab bench ctl: {name}: {e}"));
            }
        }
        match report::load(&sub) {
            Ok(r) => runs.push(r),
            Err(e) => say(obs, format!("sdnlab bench ctl: {name}: {e}")),
        }
    }
    let mut json = serde_json::json!({ "run": dir, "peers": each });
    if runs.len() > 1 {
        let summary = report::write_outputs(&dir, &runs).map_err(io_error(&dir))?;
        table += "\n== all peers\n";
        table += &report::terminal_table(&summary, &report::metrics(&runs));
        say(
            obs,
            format!("sdnlab bench ctl: comparison in {}", dir.join("report.html").display()),
        );
        json["summary"] = serde_json::to_value(&summary).unwrap_or_default();
    }
    Ok(Outcome {
        dir,
        table,
        json,
        incomplete,
    })
}

/// An nftables table that drops the controller's SYN-ACKs to the SYN
/// flood's fake source (loopback only), so half-open connections stay
/// half-open; removed on drop.
struct DropSynAcks {
    table: String,
}

impl DropSynAcks {
    // Text on purpose: said as `LabError::Setup`, with nft's own words and the package to install.
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

/// `outcome` with `n` trials that did not complete, said as `what` when any.
pub(crate) fn incomplete(mut outcome: Outcome, n: usize, what: &str, obs: &dyn Observer) -> Outcome {
    if n > 0 {
        say(obs, format!("sdnlab bench ctl: {n} trial(s) {what}"));
    }
    outcome.incomplete = n;
    outcome
}

/// Ends a run: final `meta.json`, summaries and report on disk; the
/// events and where the report is go to the observer.
pub(crate) fn finish_run(
    writer: RunWriter,
    meta: &mut Meta,
    dir: &Path,
    obs: &dyn Observer,
) -> Result<Outcome, LabError> {
    meta.finished_unix = Some(report::now_unix());
    let summary = writer.finish(meta).map_err(io_error(dir))?;
    for e in &meta.events {
        say(obs, format!("sdnlab bench ctl: {e}"));
    }
    say(
        obs,
        format!("sdnlab bench ctl: report in {}", dir.join("report.html").display()),
    );
    Ok(Outcome {
        dir: dir.to_path_buf(),
        table: report::terminal_table(&summary, &meta.metrics),
        json: serde_json::json!({ "run": dir, "summary": summary }),
        incomplete: 0,
    })
}
