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

pub use config::{CbenchMode, CtlConfig, CtlTest, Failure, Kill, MatchBy, Ofp, SlavePacketIns, Suite};

use crate::check::{Conflict, ParamError};
use crate::rundir::{io_error, runtime, started, Place, Run};
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, Sample, Target};
use std::collections::BTreeMap;
use std::time::Duration;

mod cbench;
mod dos;
mod peers;
mod rate;
mod security;
mod sessions;
mod target;
use cbench::*;
use dos::*;
use peers::*;
use rate::*;
use security::*;
use sessions::*;
use target::*;

/// How far above the well-behaved switches the DoS test's attackers'
/// datapath ids start.
const DOS_ATTACKER_DPIDS: u64 = 1_000_000;

/// How long the driver waits for a new source's answer before giving it
/// up: above what a slow learner's queue of a full window takes (Faucet
/// learns a few hundred sources a second; 4 x 256 outstanding is seconds).
const UNANSWERED_AFTER_MS: u64 = 10_000;

/// Why Faucet cannot take `test` in OpenFlow `ofp`, if it is the peer.
pub(crate) fn faucet_unsupported(peer: crate::peers::Name, test: CtlTest, ofp: Ofp) -> Option<String> {
    if peer != crate::peers::Name::Faucet {
        return None;
    }
    if ofp != Ofp::V13 {
        return Some("Faucet speaks OpenFlow 1.3 only: add --ofp 1.3".into());
    }
    if test.on_a_fabric() {
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
        mode: a.mode.driver(),
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
    let bad = |m: String| LabError::from(ParamError::new("sweep", format!("'{sweep}'"), m));
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
                    return Err(Conflict::new("this sweeps sdnlab's cluster sizes: leave out --cluster and --target")
                        .with("sweep", format!("'{sweep}'"))
                        .into());
                }
                c.members = vec![placeholder; n as usize]
            }
            "malformed" => {
                within(0, 100)?;
                c.malformed_per_mille = (n * 10) as u32
            }
            other => {
                return Err(bad(format!(
                    "cannot sweep '{other}'; choose switches, macs, window, loop-ms, malformed (percent) or cluster (members)"
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
/// (`$stop`: the run's stop token, cloned before `$f` borrowed the run.)
macro_rules! or_interrupted {
    ($rt:expr, $f:expr, $run:ident) => {{
        let stop = $run.stop.clone();
        crate::ctl::or_interrupted!($rt, $f, $run, stop)
    }};
    ($rt:expr, $f:expr, $run:ident, $stop:expr) => {
        match $stop.block_on_unless_stopped(&$rt, $f) {
            Some(r) => r,
            None => return Err($run.interrupted()),
        }
    };
}
pub(crate) use or_interrupted;

/// One controller test's run, opened in `dir` with `meta` (and `a` as its
/// experiment file), and the runtime its trials run on.
fn open_run(
    dir: &std::path::Path,
    meta: Meta,
    a: &CtlConfig,
    place: &Place,
) -> Result<(Run, tokio::runtime::Runtime), LabError> {
    let run = Run::open(dir, meta, &Experiment::Ctl(a.clone()), &place.stop)?;
    Ok((run, runtime()?))
}

/// Runs the controller benchmark `a` into `place`: one test, a suite, or
/// the same test against each of several peers.
pub fn run(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    a.validate()?;
    // A stop (the command line's on Ctrl-C and SIGTERM) ends the run at
    // once, cleanly: every controller, peer, etcd and temporary directory
    // it made goes (their owners are dropped), and the run directory says
    // what was measured.
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
    match a.test {
        CtlTest::Security => run_security(a, place, obs),
        CtlTest::Sessions => run_sessions(a, place, obs),
        CtlTest::Rate => run_rate(a, place, obs),
        CtlTest::Dos => run_dos(a, place, obs),
        CtlTest::Cbench => run_cbench(a, place, obs),
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
    run: &mut Run,
    obs: &dyn Observer,
) -> Result<(), LabError> {
    let k = acc.as_ref().map_or(0, |c| c.runs.len()) as u32;
    let measured = match fleet {
        None => {
            obs.event(Event::Status(&format!(
                "{name}: measuring the driver's own ceiling (run {})",
                k + 1
            )));
            match ceiling::measure(cfg, rt, &run.stop) {
                // (Either way only its words go into the run's events.)
                Some(r) => r.map_err(|e| e.to_string()),
                None => return Err(run.interrupted()),
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
            run.sample(&c.sample(name, k))?;
        }
        Ok(None) => {}
        Err(e) => run.event(format!(
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
pub(crate) fn finish_run(run: Run, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let done = run.finish()?;
    for e in &done.meta.events {
        say(obs, format!("sdnlab bench ctl: {e}"));
    }
    say(
        obs,
        format!("sdnlab bench ctl: report in {}", done.dir.join("report.html").display()),
    );
    Ok(Outcome {
        table: report::terminal_table(&done.summary, &done.meta.metrics),
        json: serde_json::json!({ "run": done.dir, "summary": done.summary }),
        dir: done.dir,
        incomplete: 0,
    })
}
