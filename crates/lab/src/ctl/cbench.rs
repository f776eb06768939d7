//! RFC 8456's latency and throughput tests (cbench's two modes): the
//! trials against the controller under test, each watched for a host bound.

use super::*;

/// cbench's throughput and latency modes, scenario by scenario, trial by trial.
pub(super) fn run_cbench(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let list = scenarios(a)?;
    // Thousands of emulated switches need thousands of descriptors.
    controller::runtime::raise_fd_limit();
    let run_id = place.name("ctl");
    let dir = place.dir(&run_id);
    let (mut run, rt) = open_run(&dir, meta(a, &list, &run_id), a, place)?;
    // Spread over workers: connected once for the run, clocks measured.
    let fleet = match connect_fleet(place, &rt, &mut run.meta, obs, "the switches") {
        Ok(f) => f,
        Err(e) => return Err(run.fail(e)),
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
                if let Err(e) = ceiling_run(&mut ceiling, name, cfg, fleet.as_ref(), &rt, &mut run, obs) {
                    return Err(run.fail(e));
                }
            }
            let here = Trial {
                a: &a_here,
                name,
                trial,
                cfg,
            };
            let Some(measured) = here.measure(fleet.as_ref(), &rt, &mut run, obs)? else {
                invalid += 1;
                continue;
            };
            cbench_rates.extend(measured.report.loops.iter().map(|l| l.responses_per_s));
            matched_rates.extend(measured.report.loops.iter().map(|l| l.matched_per_s));
            let matched = here.record(&measured, &mut run, &mut invalid)?;
            obs.event(Event::Step {
                status: &format!("{name}: {:.0} matched/s", matched),
            });
            reports.push((name.clone(), measured.report));
            if trial + 1 < a.trials {
                std::thread::sleep(Duration::from_millis(a.cooldown_ms));
            }
        }
        // The last run, after the last trial.
        if let Err(e) = ceiling_run(&mut ceiling, name, cfg, fleet.as_ref(), &rt, &mut run, obs) {
            return Err(run.fail(e));
        }
        state_ceiling(ceiling.as_ref(), name, &mut run.meta, obs);
        if !cbench_rates.is_empty() {
            obs.event(Event::CbenchScenario {
                switches: cfg.switches,
                rates: &cbench_rates,
            });
        }
        let near = if cfg.members.is_empty() {
            flag_near_ceiling(ceiling.as_ref(), name, &cbench_rates, &mut run.meta)
        } else {
            // A cluster's answers include duplicates (every member answering,
            // at the ceiling): the first answers are the figures compared.
            let matched = ceiling.as_ref().map(ceiling::Ceiling::by_matched);
            flag_near_ceiling(matched.as_ref(), name, &matched_rates, &mut run.meta)
        };
        ceilings.push(serde_json::json!({"scenario": name, "ceiling": ceiling, "near_ceiling": near}));
    }
    obs.event(Event::PlanDone);
    let mut outcome = finish_run(run, obs)?;
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

/// The run's metadata: every parameter, RFC 8456's setup (standalone or
/// a cluster), and the metrics (the kill test's two when asked for).
fn meta(a: &CtlConfig, list: &[(String, ctlbench::Config)], run_id: &str) -> Meta {
    let clustered = list.iter().any(|(_, c)| !c.members.is_empty());
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
        ..started(run_id)
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
    meta
}

/// One trial of one scenario.
struct Trial<'t> {
    a: &'t CtlConfig,
    name: &'t String,
    trial: u32,
    cfg: &'t ctlbench::Config,
}

/// What one trial measured: cbench's report, the member killed (if the
/// kill test killed one), and the host's load over the trial.
struct Measured {
    report: ctlbench::Report,
    killed: Option<String>,
    host: crate::host::HostLoad,
}

impl Trial<'_> {
    /// The controller started, cbench's loops run (each loop's sample on
    /// disk as it ends, spread over the workers if there are any), the
    /// controller stopped. None if the controller did not start: the
    /// trial is not valid, and said so in the events.
    fn measure(
        &self,
        fleet: Option<&fleet::coordinator::Fleet>,
        rt: &tokio::runtime::Runtime,
        run: &mut Run,
        obs: &dyn Observer,
    ) -> Result<Option<Measured>, LabError> {
        let Trial { a, name, trial, .. } = *self;
        let (cfg, mut started) = match start_trial_controller(a, fleet, rt, &mut run.meta, obs) {
            Ok(started) => (
                ctlbench::Config {
                    target: started.addr,
                    members: started.members.clone(),
                    ..self.cfg.clone()
                },
                started,
            ),
            Err(e) => {
                run.meta
                    .events
                    .push(format!("{name} trial {trial}: the controller did not start: {e}"));
                obs.event(Event::Step {
                    status: "the controller did not start",
                });
                return Ok(None);
            }
        };
        let mut write_errors = Vec::new();
        // --kill-after-loop: the first member killed once that many
        // loops are measured (what it was, once done).
        let mut killed: Option<String> = None;
        let mut running = started.running.take();
        let watch = watch_host(&running);
        let stop = run.stop.clone();
        let on_loop = |l: &ctlbench::LoopResult| {
            if a.kill_after_loop == Some(l.loop_index as u32 + 1) && killed.is_none() {
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
            if let Err(e) = run.sample(&s) {
                write_errors.push(e);
            }
            obs.event(Event::CbenchLoop {
                switches: cfg.switches,
                responses_per_s: l.responses_per_s,
                per_switch: &l.per_switch,
                version: cfg.version,
            });
        };
        let report = match fleet {
            None => or_interrupted!(rt, ctlbench::run(cfg.clone(), on_loop), run, stop),
            Some(f) => match rt.block_on(f.ctl(&cfg, on_loop)) {
                Ok((report, shards)) => {
                    self.record_shards(&shards, run)?;
                    report
                }
                Err(e) => return Err(run.fail(LabError::setup(e))),
            },
        };
        let host = watch.finish();
        let started = Started { running, ..started };
        if let Err(e) = started.stop(rt) {
            return Err(run.fail(LabError::setup(e)));
        }
        if let Some(e) = write_errors.pop() {
            return Err(e);
        }
        Ok(Some(Measured { report, killed, host }))
    }

    /// What each worker's share of the switches measured, on disk.
    fn record_shards(&self, shards: &[fleet::shard::Shard], run: &mut Run) -> Result<(), LabError> {
        for (k, sh) in shards.iter().enumerate() {
            let s = Sample::of(
                "shard",
                self.name.clone(),
                self.trial,
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
            run.sample(&s)?;
        }
        Ok(())
    }

    /// The trial's sample on disk, with its note (sessions lost, the
    /// cluster's roles, the member killed, a host bound); counts it in
    /// `invalid` when it is not valid. Its matched responses per second.
    fn record(&self, m: &Measured, run: &mut Run, invalid: &mut usize) -> Result<f64, LabError> {
        let Trial { a, name, trial, cfg } = *self;
        let report = &m.report;
        // The killed member's sessions, one a switch, are lost by design.
        let expected_lost = if m.killed.is_some() { cfg.switches as u64 } else { 0 };
        let mut kill_values = Vec::new();
        if let (Some(k), Some(what)) = (a.kill_after_loop, &m.killed) {
            let k = (k as usize).min(report.loops.len());
            let avg =
                |ls: &[ctlbench::LoopResult]| ls.iter().map(|l| l.matched_per_s).sum::<f64>() / ls.len().max(1) as f64;
            kill_values.push(("matched_before_kill_per_s", avg(&report.loops[..k])));
            kill_values.push(("matched_after_kill_per_s", avg(&report.loops[k..])));
            run.meta.events.push(format!(
                "{name} trial {trial}: {what} killed (SIGKILL) after measured loop {k}"
            ));
        } else if a.kill_after_loop.is_some() {
            run.meta.events.push(format!(
                "{name} trial {trial}: no member could be killed (not a cluster of processes)"
            ));
            *invalid += 1;
        }
        let mean = |f: &dyn Fn(&ctlbench::LoopResult) -> f64| report.mean(f);
        let matched = mean(&|l| l.matched_per_s);
        let mut note = None;
        if report.sessions_lost > expected_lost || matched == 0.0 {
            *invalid += 1;
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
            run.meta.events.push(what.clone());
            note = Some(what);
        }
        let cluster_values = match &report.cluster {
            Some(c) => self.record_cluster(c, run, invalid, &mut note)?,
            None => Vec::new(),
        };
        if let Some(what) = &m.killed {
            let n = format!("{what} killed after loop {}", a.kill_after_loop.unwrap_or(0));
            add_note(&mut note, n);
        }
        if let Some(n) = host_bound_note(&m.host, name, trial, &mut run.meta) {
            add_note(&mut note, n);
        }
        let total = |f: fn(&ctlbench::LoopResult) -> u64| report.loops.iter().map(f).sum::<u64>() as f64;
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
                ("unmatched", total(|l| l.unmatched)),
                ("malformed_sent", total(|l| l.malformed_sent)),
                ("malformed_acted", total(|l| l.malformed_acted)),
                ("errors", total(|l| l.errors)),
                ("duplicates", total(|l| l.duplicates)),
            ]),
        )
        .with_cdf(report.rtt_cdf.clone())
        .noted(note);
        run.sample(&s)?;
        Ok(matched)
    }

    /// What each member of a cluster did, as the switches saw it: a
    /// sample per member on disk before any summary, the trial's cluster
    /// figures returned, and a line for the trial's note. Roles that had
    /// not settled when the loops began make the trial not valid.
    fn record_cluster(
        &self,
        c: &ctlbench::ClusterReport,
        run: &mut Run,
        invalid: &mut usize,
        note: &mut Option<String>,
    ) -> Result<Vec<(&'static str, f64)>, LabError> {
        let Trial { name, trial, cfg, .. } = *self;
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
            run.sample(&s)?;
        }
        let mut values = Vec::new();
        if let Some(x) = c.settle_s {
            values.push(("settle_s", x));
        }
        values.push(("unsettled", c.unsettled as f64));
        values.push(("without_master", c.without_master as f64));
        values.push((
            "slave_writes",
            c.members.iter().map(|m| m.slave_writes).sum::<u64>() as f64,
        ));
        values.push(("cluster_size", c.members.len() as f64));
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
            *invalid += 1;
            n = format!(
                "{} switch(es) without settled roles when the loops began; {n}",
                c.unsettled
            );
            run.meta.events.push(format!("{name} trial {trial}: {n}"));
        }
        add_note(note, n);
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use crate::ctl::{run, CtlConfig};
    use crate::rundir::Place;

    /// The library alone (no root, no binary): a small cbench run against
    /// the embedded controller keeps every trial on disk as a sample and
    /// answers with the summary of what it measured.
    #[test]
    fn a_small_cbench_run_measures_the_embedded_controller_trial_by_trial() {
        let dir = netlab::private::temp_dir("sdnlab-ctl-test-").unwrap();
        let cfg = CtlConfig {
            switches: 2,
            macs: 16,
            loops: 2,
            loop_ms: 100,
            warmup: 0,
            cooldown_ms: 0,
            trials: 3,
            ..CtlConfig::default()
        };
        let out = run(&cfg, &Place::at(dir.path().join("run")), &crate::observe::Quiet).unwrap();
        let samples: Vec<report::Sample> = std::fs::read_to_string(out.dir.join("samples.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let of = |kind: &str| -> Vec<&report::Sample> { samples.iter().filter(|s| s.kind == kind).collect() };
        let trials = of("trial");
        assert_eq!(trials.iter().map(|s| s.trial).collect::<Vec<_>>(), [0, 1, 2]);
        for s in &trials {
            assert!(s.values["responses_per_s"] > 0.0, "{s:?}");
            // Every answer the embedded learning switch gave was matched
            // to its PACKET_IN, and no session was lost. (A loop's
            // counters are read while the sessions run: an answer counted
            // as received but not yet as matched when the loop ends is
            // matched in the next one, so the two agree to within a
            // batch at each end, not exactly; seen under load, 79 of
            // 1.34 M/s. None is left unmatched.)
            let (matched, responses) = (s.values["matched_per_s"], s.values["responses_per_s"]);
            assert!(matched <= responses * 1.001 && matched >= responses * 0.999, "{s:?}");
            assert_eq!((s.values["unmatched"], s.values["sessions_lost"]), (0.0, 0.0), "{s:?}");
            assert!(!s.rtt_cdf.is_empty(), "the round trips' distribution");
        }
        // Each trial's loops, each on disk as it ended.
        let loops: Vec<(u32, u32)> = of("loop").iter().map(|s| (s.trial, s.index)).collect();
        assert_eq!(loops, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        // The driver's own ceiling, taken around the trials (see `ceiling`).
        assert!(!of("ceiling").is_empty(), "{samples:?}");
        assert!(out.table.contains("responses_per_s"), "{}", out.table);
        assert!(out.dir.join("report.html").exists());
        assert_eq!(out.json["run"], serde_json::json!(out.dir));
    }
}
