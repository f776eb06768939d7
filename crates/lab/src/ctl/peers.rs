//! The same test against sdnlab's controller and each real peer, side by
//! side in one run.

use super::*;

/// `peers`: the same test against each peer in turn (each its own run
/// under the run directory), then one report comparing them.
pub(super) fn run_peers(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let dir = place.dir(&place.name("ctl-peers"));
    crate::rundir::write_experiment(&dir, &Experiment::Ctl(a.clone()))?;
    let mut runs = Vec::new();
    let mut incomplete = 0;
    let mut table = String::new();
    let mut each = Vec::new();
    for &name in &a.peers {
        say(
            obs,
            format!("sdnlab bench ctl: peer {name}, started afresh for each trial"),
        );
        let one = CtlConfig {
            peers: Vec::new(),
            peer: Some(name),
            ..a.clone()
        };
        let sub = dir.join(name.name());
        let place = Place {
            dir: Some(sub.clone()),
            name: Some(name.to_string()),
            stop: place.stop.clone(),
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
