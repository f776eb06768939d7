//! `sdnlab report` and `sdnlab compare`: a run's (or several runs')
//! summaries and HTML report written again from their samples.

use super::*;

/// The runs of a directory that holds one run per peer (`bench ctl --peer
/// A --peer B`), in the experiment's order (by name when it does not say);
/// None when it holds none.
pub(super) fn peer_runs(dir: &std::path::Path) -> Option<Vec<std::path::PathBuf>> {
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    if found.is_empty() {
        return None;
    }
    found.sort();
    if let Ok(lab::Experiment::Ctl(c)) = lab::Experiment::load(&dir.join("experiment.toml")) {
        let at = |p: &std::path::PathBuf| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            c.peers.iter().position(|x| x.name() == name).unwrap_or(usize::MAX)
        };
        found.sort_by_key(at);
    }
    Some(found)
}

pub(super) fn report_cmd(dirs: &[std::path::PathBuf], out: Option<std::path::PathBuf>) -> ExitCode {
    // `sdnlab report compare BASE OTHER...`: the change of each run against the first.
    if dirs.first().is_some_and(|d| d.as_os_str() == "compare" && !d.exists()) {
        return compare_cmd(&dirs[1..], out);
    }
    // A suite's report is rebuilt in place from its suite.json and runs.
    if let ([dir], None) = (dirs, &out) {
        if report::suite::is_suite(dir) {
            return match report::suite::rebuild(dir) {
                Ok(_) => {
                    eprintln!("sdnlab report: {}", dir.join("report.html").display());
                    ExitCode::SUCCESS
                }
                Err(e) => net_cmd::fail(e),
            };
        }
    }
    // A run against several peers: its own runs, one directory each, in
    // the order the experiment named them; the report rebuilt in place.
    if let ([dir], None) = (dirs, &out) {
        if !dir.join("meta.json").exists() {
            if let Some(parts) = peer_runs(dir) {
                let mut runs = Vec::new();
                for d in &parts {
                    match report::load(d) {
                        Ok(r) => runs.push(r),
                        Err(e) => return net_cmd::fail(e),
                    }
                }
                return match report::write_outputs(dir, &runs) {
                    Ok(summary) => {
                        print!("{}", report::terminal_table(&summary, &report::metrics(&runs)));
                        eprintln!("sdnlab report: {}", dir.join("report.html").display());
                        ExitCode::SUCCESS
                    }
                    Err(e) => net_cmd::fail(e),
                };
            }
        }
    }
    let mut runs = Vec::new();
    for d in dirs {
        match report::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => return net_cmd::fail(format!("{e} (is it a run directory made by sdnlab bench?)")),
        }
    }
    let out = out.unwrap_or_else(|| {
        if runs.len() == 1 {
            dirs[0].clone()
        } else {
            std::path::PathBuf::from("results").join(format!("compare-{}", time_tag()))
        }
    });
    if let Err(e) = std::fs::create_dir_all(&out) {
        return net_cmd::fail(format!("{}: {e}", out.display()));
    }
    match report::write_outputs(&out, &runs) {
        Ok(summary) => {
            print!("{}", report::terminal_table(&summary, &report::metrics(&runs)));
            eprintln!("sdnlab report: {}", out.join("report.html").display());
            ExitCode::SUCCESS
        }
        Err(e) => net_cmd::fail(e),
    }
}

pub(super) fn compare_cmd(dirs: &[std::path::PathBuf], out: Option<std::path::PathBuf>) -> ExitCode {
    if dirs.len() < 2 {
        return net_cmd::fail(
            "report compare takes a baseline run and at least one other: sdnlab report compare BASE OTHER...",
        );
    }
    let mut runs = Vec::new();
    for d in dirs {
        match report::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => return net_cmd::fail(format!("{e} (is it a run directory made by sdnlab bench?)")),
        }
    }
    let out = out.unwrap_or_else(|| std::path::PathBuf::from("results").join(format!("compare-{}", time_tag())));
    if let Err(e) = std::fs::create_dir_all(&out) {
        return net_cmd::fail(format!("{}: {e}", out.display()));
    }
    match report::compare::write(&out, &runs) {
        Ok(changes) => {
            print!("{}", report::compare::terminal(&changes));
            eprintln!("sdnlab report compare: {}", out.join("report.html").display());
            ExitCode::SUCCESS
        }
        Err(e) => net_cmd::fail(e),
    }
}
