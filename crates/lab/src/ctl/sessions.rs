//! RFC 8456's session capacity test: switches connected until the
//! controller stops accepting them.

use super::*;

pub(super) fn run_sessions(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let limit = controller::runtime::raise_fd_limit();
    // Against a cluster, a switch is held while its session to each member is.
    // A sweep of cluster sizes runs each size in turn (0: standalone).
    let sizes = a.cluster_sizes()?;
    let clustered = a.cluster > 0 || !a.target_members.is_empty() || sizes.iter().any(|&n| n > 0);
    let list = by_cluster_size(a, &sizes);
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
    let (mut run, rt) = open_run(&dir, meta, a, place)?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --test sessions: up to {} sessions, {} trial(s); results in {}",
            a.max_sessions,
            a.trials,
            dir.display()
        ),
    );
    let fleet = match connect_fleet(place, &rt, &mut run.meta, obs, "the sessions") {
        Ok(f) => f,
        Err(e) => return Err(run.fail(e)),
    };
    let mut results = Vec::new();
    for (scenario, a) in &list {
        for trial in 0..a.trials {
            // A fresh controller for each trial when sdnlab starts it.
            let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut run.meta, obs)?;
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
                    run
                ),
                Some(f) => {
                    let r = rt.block_on(f.sessions(&cfg, |n| {
                        obs.event(Event::Status(&format!("trial {trial}: {n} sessions held")));
                    }));
                    let (r, shards) = match r {
                        Ok(x) => x,
                        Err(e) => return Err(run.fail(LabError::setup(e))),
                    };
                    for (worker, s) in &shards {
                        let sample = Sample::of(
                            "shard",
                            "sessions",
                            trial,
                            [("sessions_held", s.held as f64), ("seconds", s.seconds)],
                        )
                        .noted(Some(format!("worker {worker}: ended by {}: {}", s.ended_by, s.detail)));
                        run.sample(&sample)?;
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
            .noted(Some(match host_bound_note(&host, scenario, trial, &mut run.meta) {
                Some(n) => format!("{held}; ended by {}: {}; {n}", r.ended_by, r.detail),
                None => format!("{held}; ended by {}: {}", r.ended_by, r.detail),
            }));
            run.sample(&s)?;
            results.push((scenario.clone(), r));
            if let Err(e) = started.stop(&rt) {
                return Err(run.fail(LabError::setup(e)));
            }
            if trial + 1 < a.trials {
                // Let the controller release the previous trial's sessions.
                std::thread::sleep(Duration::from_millis(a.cooldown_ms.max(1000)));
            }
        }
    }
    let mut outcome = finish_run(run, obs)?;
    outcome.json = serde_json::json!({ "run": dir, "trials": results.iter().map(|(_, r)| r).collect::<Vec<_>>() });
    outcome.table = capacity_table(&list, &results);
    Ok(outcome)
}

/// The trials' configs, one scenario per cluster size swept (0:
/// standalone), or the one asked for.
fn by_cluster_size(a: &CtlConfig, sizes: &[usize]) -> Vec<(String, CtlConfig)> {
    if sizes.is_empty() {
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
    }
}

/// The terminal's table: per scenario, the sessions (or switches) held
/// over its trials and what ended each.
fn capacity_table(list: &[(String, CtlConfig)], results: &[(String, ctlbench::capacity::CapacityResult)]) -> String {
    let mut table = String::new();
    for (scenario, c) in list {
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
        table.push_str(&format!(
            "{label}{unit} held: median {} (min {}, max {}) over {} trial(s); ended by: {}\n",
            report::fmt_num(s.median),
            report::fmt_num(s.min),
            report::fmt_num(s.max),
            of.len(),
            of.iter().map(|r| r.ended_by.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    table
}
