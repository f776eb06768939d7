//! The RFC 8456 suite (`sdnlab bench ctl --suite rfc8456 [--quick]
//! [--peer P...|--target T|--cluster N]`, `suite = "rfc8456"`):
//! every RFC 8456 test the target supports, one run each under
//! `DIR/<test>/<target>`, then one report over all of them (`DIR/report.html`:
//! the setup of every run, a row per trial, average and variation, plots of
//! each metric against the network size) and `DIR/suite.md`, the RFC's
//! result table (one line per test and target: trials, mean, standard
//! deviation, 95 % interval; or why the test did not run). With
//! `--cluster N`, sdnlab's controller standalone and as a cluster of N
//! (`sdnlab-clusterN`), side by side: RFC 8456's two columns.
//!
//! Scale: the full suite keeps the RFC's minimum of 10 trials (more with
//! `--trials`) and grows the fabrics to hundreds of switches; `--quick`
//! uses small fabrics and `--trials` capped at 3, for a smoke run.

use super::{say, CbenchMode, CtlConfig};
use crate::ctl::CtlTest;
use crate::peers::Name;
use crate::rundir::{write_experiment, Place};
use crate::{Experiment, LabError, Observer, Outcome};
use report::suite::{Index, NotRun, Section, SectionRun};

/// One test of the suite: how it is named in the RFC, sdnlab's `--test`, and its settings.
struct Step {
    /// The line's name in suite.md.
    rfc: String,
    /// RFC 8456 section number(s), name, and what this instance adds.
    number: &'static str,
    name: &'static str,
    variant: String,
    test: CtlTest,
    mode: CbenchMode,
    malformed_percent: f64,
    /// PACKET_INs per second of the DoS flood during the test (0: none).
    flood_pps: f64,
}

/// RFC 8456's tests (section 5) as sdnlab runs them: (number, name, sdnlab
/// --test, cbench mode).
const TESTS: [(&str, &str, CtlTest, CbenchMode); 15] = [
    (
        "5.1.1",
        "Network Topology Discovery Time",
        CtlTest::Discovery,
        CbenchMode::Throughput,
    ),
    (
        "5.1.2",
        "Asynchronous Message Processing Time",
        CtlTest::Cbench,
        CbenchMode::Latency,
    ),
    (
        "5.1.3",
        "Asynchronous Message Processing Rate",
        CtlTest::Rate,
        CbenchMode::Throughput,
    ),
    (
        "5.1.3",
        "Asynchronous Message Processing Rate",
        CtlTest::Cbench,
        CbenchMode::Throughput,
    ),
    (
        "5.1.4, 5.1.6",
        "Reactive Path Provisioning Time and Rate",
        CtlTest::ReactivePaths,
        CbenchMode::Throughput,
    ),
    (
        "5.1.5, 5.1.7",
        "Proactive Path Provisioning Time and Rate",
        CtlTest::ProactivePaths,
        CbenchMode::Throughput,
    ),
    (
        "5.1.8",
        "Network Topology Change Detection Time",
        CtlTest::ChangeDetection,
        CbenchMode::Throughput,
    ),
    (
        "5.2.1",
        "Control Session Capacity",
        CtlTest::Sessions,
        CbenchMode::Throughput,
    ),
    (
        "5.2.2",
        "Network Discovery Size",
        CtlTest::DiscoverySize,
        CbenchMode::Throughput,
    ),
    (
        "5.2.3",
        "Forwarding Table Capacity",
        CtlTest::TableCapacity,
        CbenchMode::Throughput,
    ),
    (
        "5.2.3",
        "Forwarding Table Capacity",
        CtlTest::TableCapacityProactive,
        CbenchMode::Throughput,
    ),
    ("5.3.1", "Exception Handling", CtlTest::Security, CbenchMode::Throughput),
    ("5.3.2", "Denial of Service Handling", CtlTest::Dos, CbenchMode::Latency),
    (
        "5.4.1",
        "Controller Failover Time",
        CtlTest::Failover,
        CbenchMode::Throughput,
    ),
    (
        "5.4.2",
        "Network Re-Provisioning Time",
        CtlTest::Reprovisioning,
        CbenchMode::Throughput,
    ),
];

fn step(rfc: &str, test: CtlTest, mode: CbenchMode, malformed_percent: f64) -> Step {
    let (number, name) = TESTS
        .iter()
        .find(|t| t.2 == test && t.3 == mode)
        .map(|t| (t.0, t.1))
        .unwrap_or(("", ""));
    Step {
        rfc: rfc.to_string(),
        number,
        name,
        variant: String::new(),
        test,
        mode,
        malformed_percent,
        flood_pps: 0.0,
    }
}

/// The procedure of `test` in one sentence, as the report states it.
fn procedure(test: CtlTest, mode: CbenchMode) -> &'static str {
    match (test, mode) {
        (CtlTest::Cbench, CbenchMode::Latency) => "Each emulated switch sends one PACKET_IN at a time and waits for the controller's answer; every round trip from request to matched response is timed.",
        (CtlTest::Cbench, _) => "Each emulated switch keeps a window of PACKET_INs outstanding for the whole loop; the controller's answers per second are counted (cbench's throughput mode), each matched to its request.",
        (CtlTest::Rate, _) => "The emulated switches offer PACKET_INs at a rate, then at the rate the controller answered, until two rounds agree: the highest rate answered without loss.",
        (CtlTest::Sessions, _) => "OpenFlow sessions are opened one after another and all kept alive with echoes until the controller refuses, stalls, resets or drops one.",
        (CtlTest::Security, _) => "Each known malformed message is sent on a session of its own while a witness switch checks that the controller keeps serving the others.",
        (CtlTest::Dos, _) => "Well-behaved switches' round trips are measured alone, then while other switches flood the controller with PACKET_INs (and, if asked, SYNs).",
        (CtlTest::Discovery, _) => "An emulated fabric connects to a fresh controller; the time until its northbound API shows every link is measured.",
        (CtlTest::DiscoverySize, _) => "Leaf-spine fabrics grow until the controller no longer discovers one within Td; the largest discovered in every trial is the result.",
        (CtlTest::ReactivePaths, _) => "Once the fabric is discovered, hosts send their first frames to every destination at once; the time until each arrives and the rate of destinations reached are measured.",
        (CtlTest::ProactivePaths, _) => "Once the fabric is discovered, paths are requested through the northbound API all at once; the time until traffic flows on them and the rate are measured.",
        (CtlTest::ChangeDetection, _) => "A link or a switch of a discovered fabric fails; the time until the controller's view no longer shows it is measured.",
        (CtlTest::TableCapacity, _) => "Hosts send to ever more destinations, step by step, until the number of flows the controller installs at the ingress switch stops growing.",
        (CtlTest::TableCapacityProactive, _) => "Ever more paths are requested through the northbound API, step by step, until the number of flows at the ingress switch stops growing.",
        (CtlTest::Reprovisioning, _) => "Traffic flows both ways across the fabric; a link on its path fails; the longest gap and the frames lost until traffic goes around are measured.",
        (CtlTest::Failover, _) => "An active and a standby controller share the fabric (OpenFlow 1.3 roles); the active one is killed; the gap in traffic and the time until the standby takes over are measured.",
    }
}

/// What the cluster column does differently for `test`, in one sentence.
fn cluster_procedure(test: CtlTest) -> &'static str {
    match test {
        CtlTest::Failover => "In the cluster column the members share the fabric on etcd; the master of the last host's switch is killed (SIGKILL); the gap, the takeover and the re-mastering of every switch it held are measured, then its rejoin once started again.",
        CtlTest::Sessions => "In the cluster column each switch opens a session to every member and counts while all of them answer.",
        CtlTest::Security => "In the cluster column every case is sent to each member in turn, the witness switch connected to all of them.",
        CtlTest::ProactivePaths | CtlTest::TableCapacityProactive => "In the cluster column the paths are asked of one member and reach each switch's master through etcd, every switch connected to every member.",
        _ => "In the cluster column every emulated switch connects to every member, and each trial starts once every switch has one master.",
    }
}

/// The flood the DoS variants use unless --flood-pps says otherwise: well
/// within what one core of the load generator sends on a small machine.
const SUITE_FLOOD_PPS: f64 = 20_000.0;

/// Every test, then (as RFC 8456 asks) Exception Handling and DoS Handling
/// applied to the topology tests whose figures come from the controller's
/// processing: 1 % and 2 % malformed messages, and a PACKET_IN flood.
fn steps(flood_pps: f64) -> Vec<Step> {
    use CbenchMode::{Latency, Throughput};
    let variant = |mut s: Step, v: &str| {
        s.variant = v.to_string();
        s
    };
    let mut v = vec![
        step("Asynchronous Message Processing Time", CtlTest::Cbench, Latency, 0.0),
        variant(
            step("Asynchronous Message Processing Rate", CtlTest::Rate, Throughput, 0.0),
            "loss-free rate search",
        ),
        variant(
            step(
                "Asynchronous Message Processing Rate (cbench throughput)",
                CtlTest::Cbench,
                Throughput,
                0.0,
            ),
            "cbench throughput mode",
        ),
        step("Control Session Capacity", CtlTest::Sessions, Throughput, 0.0),
        variant(
            step(
                "Exception Handling (malformed messages, case by case)",
                CtlTest::Security,
                Throughput,
                0.0,
            ),
            "malformed messages, case by case",
        ),
    ];
    for pct in [1.0, 2.0] {
        let mut s = step(
            &format!("Exception Handling ({pct} % malformed in the load)"),
            CtlTest::Cbench,
            Throughput,
            pct,
        );
        s.number = "5.3.1";
        s.name = "Exception Handling";
        s.variant = format!("{pct} % malformed messages in cbench's throughput load");
        v.push(s);
    }
    v.extend([
        step("Denial of Service Handling", CtlTest::Dos, Latency, 0.0),
        step("Network Topology Discovery Time", CtlTest::Discovery, Throughput, 0.0),
        step("Network Discovery Size", CtlTest::DiscoverySize, Throughput, 0.0),
        step(
            "Reactive Path Provisioning Time and Rate",
            CtlTest::ReactivePaths,
            Throughput,
            0.0,
        ),
        step(
            "Proactive Path Provisioning Time and Rate",
            CtlTest::ProactivePaths,
            Throughput,
            0.0,
        ),
        step(
            "Network Topology Change Detection Time",
            CtlTest::ChangeDetection,
            Throughput,
            0.0,
        ),
        variant(
            step(
                "Forwarding Table Capacity (reactive)",
                CtlTest::TableCapacity,
                Throughput,
                0.0,
            ),
            "reactive",
        ),
        variant(
            step(
                "Forwarding Table Capacity (proactive)",
                CtlTest::TableCapacityProactive,
                Throughput,
                0.0,
            ),
            "proactive",
        ),
        step("Network Re-Provisioning Time", CtlTest::Reprovisioning, Throughput, 0.0),
        step("Controller Failover Time", CtlTest::Failover, Throughput, 0.0),
    ]);
    for (name, test) in [
        ("Network Topology Discovery Time", CtlTest::Discovery),
        ("Reactive Path Provisioning Time and Rate", CtlTest::ReactivePaths),
        ("Network Topology Change Detection Time", CtlTest::ChangeDetection),
        ("Network Re-Provisioning Time", CtlTest::Reprovisioning),
    ] {
        for pct in [1.0, 2.0] {
            let mut s = step(
                &format!("Exception Handling: {name}, {pct} % malformed"),
                test,
                Throughput,
                pct,
            );
            s.variant = format!("{} under {pct} % malformed messages", s.name);
            s.number = "5.3.1";
            s.name = "Exception Handling";
            v.push(s);
        }
        let mut dos = step(
            &format!("Denial of Service Handling: {name} under a {flood_pps} PACKET_IN/s flood"),
            test,
            Throughput,
            0.0,
        );
        dos.variant = format!("{} under a {flood_pps} PACKET_IN/s flood", dos.name);
        dos.number = "5.3.2";
        dos.name = "Denial of Service Handling";
        dos.flood_pps = flood_pps;
        v.push(dos);
    }
    v
}

/// A column of the suite: a peer sdnlab starts, the controller at
/// `--target`, sdnlab's own in this process, or sdnlab's cluster of N.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SuiteTarget {
    Peer(Name),
    Target,
    Embedded,
    Cluster(usize),
}

impl SuiteTarget {
    /// Its name in the suite's tables and directories.
    fn shown(self) -> String {
        match self {
            SuiteTarget::Peer(n) => n.name().to_string(),
            SuiteTarget::Target => "target".into(),
            SuiteTarget::Embedded => "sdnlab".into(),
            SuiteTarget::Cluster(n) => format!("sdnlab-cluster{n}"),
        }
    }
}

/// Why `target` cannot run `step`, if it cannot.
fn unsupported(step: &Step, target: SuiteTarget, a: &CtlConfig) -> Option<String> {
    if let SuiteTarget::Cluster(n) = target {
        if step.test == CtlTest::Failover && n < 2 {
            return Some("a failover needs a member to take over: --cluster 2 or more".into());
        }
        return None;
    }
    let sdnlab = matches!(target, SuiteTarget::Embedded | SuiteTarget::Peer(Name::Sdnlab));
    if step.test == CtlTest::Failover && !sdnlab {
        return Some("needs an active/standby pair sdnlab can start and kill (sdnlab only)".into());
    }
    if let SuiteTarget::Peer(p) = target {
        if let Some(why) = super::faucet_unsupported(p, step.test, a.ofp) {
            return Some(why);
        }
    }
    if step.test.on_a_fabric() {
        let with_topology = match target {
            SuiteTarget::Target => a.northbound.is_some(),
            _ => sdnlab || target == SuiteTarget::Peer(Name::OsKen),
        };
        if !with_topology {
            return Some("no topology discovery or northbound API".into());
        }
    }
    None
}

/// The suite's configuration of one test against one target.
fn config_for(step: &Step, target: SuiteTarget, a: &CtlConfig) -> CtlConfig {
    let mut one = a.clone();
    one.suite = None;
    one.quick = false;
    one.peers.clear();
    one.cluster = match target {
        SuiteTarget::Cluster(n) => n,
        _ => 0,
    };
    one.peer = match target {
        SuiteTarget::Peer(n) => Some(n),
        _ => None,
    };
    one.test = step.test;
    one.mode = step.mode;
    one.malformed_percent = step.malformed_percent;
    one.flood_pps = step.flood_pps;
    one.trials = if a.quick {
        a.trials.clamp(1, 3)
    } else {
        a.trials.max(10)
    };
    if a.quick {
        one.loops = one.loops.min(2);
        one.loop_ms = one.loop_ms.min(300);
        one.switches = one.switches.min(4);
        one.macs = one.macs.min(100);
        one.max_sessions = one.max_sessions.min(500);
        one.fabrics = vec!["leaf-spine,2,2,1".into(), "leaf-spine,2,6,1".into()];
        one.max_switches = one.max_switches.min(34);
        one.table_max = one.table_max.min(300);
        one.table_step = one.table_step.min(100);
        one.host_macs = one.host_macs.min(4);
        one.reprov_ms = one.reprov_ms.min(1500);
        one.td_s = one.td_s.min(15);
        one.cooldown_ms = one.cooldown_ms.min(100);
    } else if one.fabrics.is_empty() {
        one.fabrics = vec![
            "leaf-spine,2,4,1".into(),
            "leaf-spine,2,16,1".into(),
            "leaf-spine,4,64,1".into(),
        ];
    }
    if step.test == CtlTest::Reprovisioning || step.test == CtlTest::Failover {
        // One fabric with redundant paths is the test; the size series is for the others.
        one.fabrics.truncate(1);
    }
    let plain_discovery = step.test == CtlTest::Discovery && step.malformed_percent == 0.0 && step.flood_pps == 0.0;
    if a.quick && !plain_discovery {
        // A smoke run checks each test works on the smallest fabric; the
        // size series (discovery time against the network size) is the
        // plain discovery test's business.
        one.fabrics.truncate(1);
    }
    one
}

/// What the suite measures: the peers, the target, or sdnlab's controller
/// (with `--cluster N`, standalone and as a cluster, side by side: RFC
/// 8456's two columns).
fn targets(a: &CtlConfig) -> Vec<SuiteTarget> {
    if !a.peers.is_empty() {
        a.peers.iter().map(|p| SuiteTarget::Peer(*p)).collect()
    } else if a.target.is_some() {
        vec![SuiteTarget::Target]
    } else if a.cluster > 0 {
        vec![SuiteTarget::Embedded, SuiteTarget::Cluster(a.cluster)]
    } else {
        vec![SuiteTarget::Embedded]
    }
}

/// Runs every test of the suite against every target into `place`.
pub fn run(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let dir = place.dir(&place.name("rfc8456"));
    if dir.join("suite.md").exists() {
        return Err(
            crate::check::ParamError::new("out", dir.display(), "already holds a suite: choose another").into(),
        );
    }
    write_experiment(&dir, &Experiment::Ctl(a.clone()))?;
    let targets = targets(a);
    let mut index = Index {
        schema: report::SCHEMA_VERSION,
        title: "RFC 8456 controller benchmark".into(),
        methodology: "RFC 8456".into(),
        command: std::env::args().collect(),
        sections: Vec::new(),
    };
    let mut lines = vec![
        "| RFC 8456 test | sdnlab --test | target | metric | trials | mean | stdev | 95 % CI of the mean (bootstrap) | note |".to_string(),
        "|---|---|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut failed = 0;
    let flood_pps = if a.flood_pps > 0.0 {
        a.flood_pps
    } else {
        SUITE_FLOOD_PPS
    };
    // A stop signal ends the suite after the step it interrupted (its
    // partial run is in the suite like the others).
    let mut interrupted = false;
    for (i, step) in steps(flood_pps).iter().enumerate() {
        if interrupted {
            break;
        }
        let mut section = section_of(step, a);
        for &target in &targets {
            if interrupted {
                break;
            }
            let shown = &target.shown();
            if let Some(why) = unsupported(step, target, a) {
                section.not_run.push(NotRun {
                    target: shown.into(),
                    why: why.clone(),
                });
                lines.push(format!(
                    "| {} | {} | {shown} | | | | | | not run: {why} |",
                    step.rfc, step.test
                ));
                continue;
            }
            let sub = dir.join(format!("{:02}-{}", i + 1, step.test)).join(shown);
            let step = &step;
            say(
                obs,
                format!(
                    "sdnlab bench ctl --suite rfc8456: {} ({}) against {shown}",
                    step.rfc, step.test
                ),
            );
            let one = config_for(step, target, a);
            let place = Place {
                dir: Some(sub.clone()),
                name: Some(shown.to_string()),
                stop: place.stop.clone(),
                ..Default::default()
            };
            let complete = match super::run(&one, &place, obs) {
                Ok(o) => o.incomplete == 0,
                Err(e @ LabError::Interrupted { .. }) => {
                    say(obs, format!("sdnlab bench ctl --suite rfc8456: {}: {e}", step.test));
                    interrupted = true;
                    false
                }
                Err(e) => {
                    say(obs, format!("sdnlab bench ctl --suite rfc8456: {}: {e}", step.test));
                    false
                }
            };
            let run = match report::load(&sub) {
                Ok(r) => r,
                Err(e) => {
                    failed += 1;
                    lines.push(format!(
                        "| {} | {} | {shown} | | | | | | did not run: {e} |",
                        step.rfc, step.test
                    ));
                    continue;
                }
            };
            if !complete {
                failed += 1;
            }
            section.runs.push(SectionRun {
                target: shown.into(),
                dir: format!("{:02}-{}/{shown}", i + 1, step.test),
                complete,
            });
            lines.extend(table_rows(step, shown, &run, &sub, complete));
        }
        index.sections.push(section);
    }
    if interrupted {
        lines.push("| | | | | | | | | interrupted (SIGINT or SIGTERM): the tests after this one did not run |".into());
    }
    // The report follows the methodology's order (the runs went cheapest first).
    index.sections.sort_by(|a, b| a.number.cmp(&b.number));
    let md = format!(
        "# RFC 8456 suite\n\nCommand: `{}`\n\n{}\n\nEvery run's setup, trials and plots: report.html; each test's own run: its directory.\n",
        std::env::args().collect::<Vec<_>>().join(" "),
        lines.join("\n")
    );
    std::fs::write(dir.join("suite.md"), &md).map_err(crate::rundir::io_error(&dir))?;
    let summary = report::suite::write(&dir, &index).map_err(crate::rundir::io_error(&dir))?;
    say(
        obs,
        format!(
            "sdnlab bench ctl --suite rfc8456: {} tests; report in {}, table in {}",
            index.sections.len(),
            dir.join("report.html").display(),
            dir.join("suite.md").display()
        ),
    );
    if failed > 0 {
        say(
            obs,
            format!("sdnlab bench ctl --suite rfc8456: {failed} test(s) did not complete every trial (see suite.md)"),
        );
    }
    if interrupted {
        return Err(LabError::Interrupted { dir });
    }
    Ok(Outcome {
        json: serde_json::json!({ "run": dir, "summary": summary }),
        dir,
        table: lines.join("\n") + "\n",
        incomplete: failed,
    })
}

/// A step's section of the suite's report, before its runs: its place in
/// RFC 8456, its name and its procedure (with the cluster's, in cluster mode).
fn section_of(step: &Step, a: &CtlConfig) -> Section {
    Section {
        number: step.number.into(),
        name: step.name.into(),
        variant: step.variant.clone(),
        test: step.test.to_string(),
        procedure: if a.cluster > 0 {
            format!("{} {}", procedure(step.test, step.mode), cluster_procedure(step.test))
        } else {
            procedure(step.test, step.mode).into()
        },
        ..Default::default()
    }
}

/// One test's run against one target as rows of suite.md: each metric's
/// figure per scenario, or why there is none.
fn table_rows(step: &Step, shown: &str, run: &report::Run, sub: &std::path::Path, complete: bool) -> Vec<String> {
    let mut rows = Vec::new();
    let summary = report::summarise(std::slice::from_ref(run));
    if summary.cells.is_empty() {
        rows.push(format!(
            "| {} | {} | {shown} | | {} | | | | no numeric figure: see {} |",
            step.rfc,
            step.test,
            run.samples.iter().filter(|s| s.kind == "trial").count(),
            sub.display()
        ));
    }
    let note = if complete {
        String::new()
    } else {
        format!(
            "some trials incomplete ({} events, see the report)",
            run.meta.events.len()
        )
    };
    for m in &run.meta.metrics {
        for c in summary.cells.iter().filter(|c| c.metric == m.name) {
            let s = &c.summary;
            rows.push(format!(
                "| {} | {} | {shown} / {} | {} ({}) | {} | {} | {} | {} | {note} |",
                step.rfc,
                step.test,
                c.scenario,
                m.name,
                m.unit,
                s.n,
                report::fmt_num(s.mean),
                report::fmt_num(s.stdev),
                c.ci_text()
            ));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--suite rfc8456 --cluster 3`: sdnlab standalone and as a cluster of
    /// three, each test of the cluster column run with `cluster = 3` (and
    /// no peer), the others said not run, with why.
    #[test]
    fn the_cluster_column_beside_the_standalone_one() {
        let a = CtlConfig {
            suite: Some(crate::ctl::Suite::Rfc8456),
            cluster: 3,
            ..Default::default()
        };
        let t = targets(&a);
        assert_eq!(t, [SuiteTarget::Embedded, SuiteTarget::Cluster(3)]);
        assert_eq!(t[1].shown(), "sdnlab-cluster3");
        let mut run = Vec::new();
        for step in steps(SUITE_FLOOD_PPS) {
            let standalone = config_for(&step, t[0], &a);
            assert_eq!((standalone.cluster, standalone.peer), (0, None));
            assert!(unsupported(&step, t[0], &a).is_none(), "{}", step.test);
            // Every test runs in the cluster column.
            if let Some(why) = unsupported(&step, t[1], &a) {
                panic!("{}: {why}", step.test);
            }
            let c = config_for(&step, t[1], &a);
            assert_eq!((c.cluster, c.peer), (3, None), "{}", step.test);
            c.validate().unwrap();
            run.push(step.test);
        }
        for test in CtlTest::ALL {
            assert!(run.contains(test), "{test} not in the cluster column");
        }
        // A failover needs two members.
        let one = CtlConfig {
            cluster: 1,
            ..a.clone()
        };
        let failover = steps(SUITE_FLOOD_PPS)
            .into_iter()
            .find(|s| s.test == CtlTest::Failover)
            .unwrap();
        assert!(unsupported(&failover, SuiteTarget::Cluster(1), &one).is_some());
    }
}
