//! RFC 8456's exception handling (security) test: malformed and hostile
//! cases, each followed by a witness that must still be served.

use super::*;

/// `--test security`: every malformed case, with what the controller did.
pub(super) fn run_security(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
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
    let meta = Meta {
        benchmark: "bench ctl --test security".into(),
        targets: vec![target],
        parameters: serde_json::json!({"openflow": a.ofp, "case_wait_ms": a.case_wait_ms, "hello_wait_s": a.hello_wait_s,
            "rfc8456_mode": if clustered { "cluster" } else { "standalone" }, "cluster_size": members.len(),
            "switch_connections": if clustered { "the witness to every member; each case's session to one member" } else { "one controller" }}),
        ..started(&run_id)
    };
    let (mut run, rt) = open_run(&dir, meta, a, place)?;
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
            if let Err(e) = run.sample(&s) {
                failed_write.get_or_insert(e);
            }
            say(obs, format!("  {:<42} {}", scenario, r.outcome));
        }),
        run
    );
    if let Some(r) = embedded {
        r.stop();
    }
    if let Some(e) = failed_write {
        return Err(e);
    }
    if results.iter().any(|r| !r.controller_alive) {
        run.meta
            .events
            .push("the controller stopped accepting connections during the suite".into());
    }
    let mut outcome = finish_run(run, obs)?;
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
