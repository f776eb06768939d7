//! RFC 8456's flow-setup rate tests (reactive and proactive path set-up).

use super::*;

/// `--test rate`: the loss-free asynchronous message processing rate, per
/// scenario and trial (the controller restarted per trial when embedded).
pub(super) fn run_rate(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let list = scenarios(a)?;
    let run_id = place.name("ctl-rate");
    let dir = place.dir(&run_id);
    let meta = Meta {
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
    let (mut run, rt) = open_run(&dir, meta, a, place)?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --test rate: {} scenario(s) x {} trial(s); results in {}",
            list.len(),
            a.trials,
            dir.display()
        ),
    );
    let fleet = match connect_fleet(place, &rt, &mut run.meta, obs, "the switches") {
        Ok(f) => f,
        Err(e) => return Err(run.fail(e)),
    };
    let mut invalid = 0;
    for (name, cfg) in &list {
        let mut ceiling = None;
        let mut rates = Vec::new();
        for trial in 0..a.trials {
            if ceiling::due_before(trial, a.trials) {
                ceiling_run(&mut ceiling, name, cfg, fleet.as_ref(), &rt, &mut run, obs)?;
            }
            let started = start_trial_controller(a, fleet.as_ref(), &rt, &mut run.meta, obs)?;
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
                None => or_interrupted!(rt, ctlbench::rate::search(cfg, 10, a.rate_tolerance, on_round), run),
                Some(f) => {
                    // Each round's load shared out over the workers, as cbench's.
                    let round = |c: ctlbench::Config| async move { f.ctl(&c, |_| {}).await.map(|(r, _)| r) };
                    match rt.block_on(ctlbench::rate::search_with(cfg, 10, a.rate_tolerance, on_round, round)) {
                        Ok(r) => r,
                        Err(e) => return Err(run.fail(LabError::setup(e))),
                    }
                }
            };
            if let Err(e) = started.stop(&rt) {
                return Err(run.fail(LabError::setup(e)));
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
                run.sample(&s)?;
            }
            let note = (!r.converged || r.sessions_lost > 0).then(|| {
                invalid += 1;
                let what = format!(
                    "{name} trial {trial}: {} after {} rounds, {} session(s) lost",
                    if r.converged { "converged" } else { "did not converge" },
                    r.rounds.len(),
                    r.sessions_lost
                );
                run.meta.events.push(what.clone());
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
            run.sample(&s)?;
            rates.push(r.loss_free_per_s);
            std::thread::sleep(Duration::from_millis(a.cooldown_ms));
        }
        ceiling_run(&mut ceiling, name, cfg, fleet.as_ref(), &rt, &mut run, obs)?;
        state_ceiling(ceiling.as_ref(), name, &mut run.meta, obs);
        flag_near_ceiling(ceiling.as_ref(), name, &rates, &mut run.meta);
    }
    let outcome = finish_run(run, obs)?;
    Ok(incomplete(
        outcome,
        invalid,
        "without a loss-free rate (see the report)",
        obs,
    ))
}
