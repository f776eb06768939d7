//! `sdnlab bench ctl --test discovery|discovery-size|reactive-paths|
//! proactive-paths|change-detection|reprovisioning|table-capacity`: the
//! RFC 8456 tests that need a topology. Each trial starts the controller
//! afresh (sdnlab's own in this process, or a `--peer` with its topology
//! service and REST API; a `--target` is the user's to restart), connects
//! an emulated fabric (`ctlbench::fabric`), runs one procedure of
//! `ctlbench::topology_tests`, appends the trial to the run's samples, and
//! stops both. A figure that did not happen within Td is left out of the
//! trial and said in its note; the run then exits 1.

use super::{finish_run, open_run, say, workers, CtlConfig, Ofp};
use crate::check::{Conflict, ParamError};
use crate::ctl::CtlTest;
use crate::rundir::{started, Place};
use crate::{LabError, Observer, Outcome};
use ctlbench::fabric::{Fabric, Spec};
use ctlbench::northbound::Northbound;
use ctlbench::topology_tests as tt;
use report::{Meta, Metric, Sample, Target};
use stats::Better;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod controllers;
mod trials;
pub(in crate::ctl) use controllers::*;
use trials::*;

/// A fabric as `--fabric` gives it: a shape's name and sizes, or a JSON file.
pub fn parse_fabric(s: &str) -> Result<Spec, ParamError> {
    let bad = |problem: String| ParamError::new("fabric", format!("'{s}'"), problem);
    if let Some(path) = s.strip_prefix("file:") {
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let spec: Spec = serde_json::from_str(&text).map_err(|e| {
            bad(format!("{e} (write {{\"switches\": [[DPID, PORTS]], \"links\": [[[DPID, PORT], [DPID, PORT]]], \"hosts\": [[DPID, PORT]]}})"))
        })?;
        spec.validate().map_err(|e| bad(e.to_string()))?;
        return Ok(spec);
    }
    let parts: Vec<&str> = s.split(',').collect();
    let nums: Result<Vec<u32>, _> = parts[1..].iter().map(|p| p.trim().parse::<u32>()).collect();
    let bad = || bad("write leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF, linear,N, tree,DEPTH,FANOUT or file:PATH".into());
    let nums = nums.map_err(|_| bad())?;
    match (parts[0], nums.as_slice()) {
        ("leaf-spine", [sp, l, h]) if *sp >= 1 && *l >= 1 => Ok(Spec::leaf_spine(*sp, *l, *h)),
        ("linear", [n]) if *n >= 1 => Ok(Spec::linear(*n)),
        ("tree", [d, f]) if *d >= 1 && *f >= 1 && (*f as f64).powi(*d as i32) <= 100_000.0 => Ok(Spec::tree(*d, *f)),
        _ => Err(bad()),
    }
}

/// The metrics a test reports, its main one first (a trial without it did not complete).
/// A metric of the topology tests in plain words.
fn title(name: &str) -> &'static str {
    match name {
        "discovery_s" => "Topology discovery time",
        "reactive_path_s" => "Reactive path provisioning time",
        "reactive_rate_per_s" => "Reactive path provisioning rate",
        "proactive_path_s" => "Proactive path provisioning time",
        "proactive_rate_per_s" => "Proactive path provisioning rate",
        "detect_view_s" => "Change detection time, as the controller's view shows it",
        "detect_probe_s" => "Change detection time, to the controller's next probe",
        "reprovision_s" => "Re-provisioning time (longest gap in traffic)",
        "lost_frames" => "Frames lost",
        "failover_s" => "Failover time (longest gap in traffic)",
        "takeover_s" => "Takeover time (kill to the standby's first frame)",
        "remaster_s" => "Re-mastering time (kill to every orphaned switch re-elected)",
        "rejoin_s" => "Rejoin time (the killed member's restart to the masters as before)",
        "rejoin_gap_s" => "Longest gap in traffic while the killed member rejoins",
        "rejoin_lost_frames" => "Frames lost while the killed member rejoins",
        "table_flows" => "Forwarding table capacity",
        _ => "",
    }
}

fn metrics(test: CtlTest) -> Vec<Metric> {
    let m = |name: &str, what: &str, better| Metric::new(name, what, better).titled(title(name));
    match test {
        CtlTest::Discovery | CtlTest::DiscoverySize => {
            vec![m("discovery_s", "seconds to a complete view", Better::Lower)]
        }
        CtlTest::ReactivePaths => vec![
            m(
                "reactive_path_s",
                "seconds from a first frame to its arrival (mean over destinations)",
                Better::Lower,
            ),
            m(
                "reactive_rate_per_s",
                "destinations reached per second, all sent at once",
                Better::Higher,
            ),
        ],
        CtlTest::ProactivePaths => vec![
            m(
                "proactive_path_s",
                "seconds from a path request to the first frame's arrival (mean)",
                Better::Lower,
            ),
            m(
                "proactive_rate_per_s",
                "paths carrying traffic both ways per second, all requested at once",
                Better::Higher,
            ),
        ],
        CtlTest::ChangeDetection => vec![
            m(
                "detect_view_s",
                "seconds until the controller's view lost the failed links",
                Better::Lower,
            ),
            m(
                "detect_probe_s",
                "seconds until the controller's next LLDP probe",
                Better::Lower,
            ),
        ],
        CtlTest::Reprovisioning => vec![
            m(
                "reprovision_s",
                "longest gap in traffic either way after a link failure, seconds",
                Better::Lower,
            ),
            m("lost_frames", "frames lost, both directions", Better::Lower),
        ],
        CtlTest::Failover => vec![
            m(
                "failover_s",
                "longest gap in controller-dependent traffic when the active controller dies, seconds",
                Better::Lower,
            ),
            m(
                "takeover_s",
                "seconds from the kill to the first frame the standby delivered",
                Better::Lower,
            ),
            m("lost_frames", "frames lost", Better::Lower),
        ],
        _ => vec![m("table_flows", "most flows the ingress switch held", Better::Higher)],
        // table-capacity and table-capacity-proactive
    }
}

/// The app sdnlab's controller runs for a test (unless `--app` says otherwise).
fn default_app(test: CtlTest) -> &'static str {
    match test {
        CtlTest::Discovery | CtlTest::DiscoverySize | CtlTest::ChangeDetection => "topology",
        CtlTest::ProactivePaths | CtlTest::TableCapacityProactive => "paths-proactive",
        _ => "paths",
    }
}

/// One scenario: its name, the fabric, and what fails (change-detection).
struct Scenario {
    name: String,
    spec: Spec,
    failure: Option<tt::Failure>,
}

/// The scenarios of a topology test: each fabric (and failure), checked
/// to suit the test.
fn scenarios(a: &CtlConfig) -> Result<Vec<Scenario>, LabError> {
    let mut out = Vec::new();
    if a.test == CtlTest::DiscoverySize {
        let mut leaves = 2;
        while 2 + leaves <= a.max_switches.max(4) {
            let name = format!("leaf-spine,2,{leaves},1");
            out.push(Scenario {
                spec: parse_fabric(&name)?,
                name,
                failure: None,
            });
            leaves *= 2;
        }
        return Ok(out);
    }
    let fabrics = if a.fabrics.is_empty() {
        vec!["leaf-spine,2,4,1".to_string()]
    } else {
        a.fabrics.clone()
    };
    let failures: Vec<crate::ctl::Failure> = if a.failures.is_empty() {
        crate::ctl::Failure::ALL.to_vec()
    } else {
        a.failures.clone()
    };
    for f in &fabrics {
        let spec = parse_fabric(f)?;
        let needs_hosts = !matches!(a.test, CtlTest::Discovery | CtlTest::ChangeDetection);
        if needs_hosts && spec.hosts.len() < 2 {
            return Err(Conflict::new("this test needs a fabric with at least 2 hosts")
                .with("fabric", format!("'{f}'"))
                .with("test", a.test)
                .into());
        }
        if a.test == CtlTest::Reprovisioning {
            let (first, last) = (spec.hosts[0].0, spec.hosts[spec.hosts.len() - 1].0);
            let spines = spec.links.iter().filter(|(l, _)| l.0 == first).count();
            if first == last || spines < 2 {
                return Err(Conflict::new(
                    "reprovisioning needs redundant paths between the fabric's first and last host: \
                     use a leaf-spine with 2 or more spines and 2 or more leaves",
                )
                .with("fabric", format!("'{f}'"))
                .with("test", a.test)
                .into());
            }
        }
        if a.test == CtlTest::ChangeDetection {
            for fl in &failures {
                out.push(Scenario {
                    name: format!("{f} {fl} down"),
                    spec: spec.clone(),
                    failure: Some(match fl {
                        crate::ctl::Failure::Link => tt::Failure::Link,
                        crate::ctl::Failure::Switch => tt::Failure::Switch,
                    }),
                });
            }
        } else {
            out.push(Scenario {
                name: f.clone(),
                spec,
                failure: None,
            });
        }
    }
    Ok(out)
}

/// Checks what only the topology tests need: the fabrics (with hosts
/// where the test sends traffic), a northbound API for a `target`, and no
/// `target` for failover.
pub(crate) fn check(a: &CtlConfig) -> Result<(), LabError> {
    scenarios(a)?;
    if a.target.is_some() && a.northbound.is_none() {
        return Err(
            Conflict::new("this test needs --northbound (sdnlab:HOST:PORT, osken:HOST:PORT or none)")
                .with("test", a.test)
                .flag("target")
                .into(),
        );
    }
    if a.test == CtlTest::Failover && a.target.is_some() {
        return Err(Conflict::new(
            "a failover kills the active controller, so sdnlab starts the pair: use the default or --peer sdnlab, not --target",
        )
        .with("test", CtlTest::Failover)
        .flag("target")
        .into());
    }
    Ok(())
}

/// What the fabric's parts cannot do over workers: a flood (it runs on
/// this machine), malformed messages (each part would send its own share).
fn check_spread(a: &CtlConfig, place: &Place) -> Result<(), LabError> {
    if place.workers.is_none() {
        return Ok(());
    }
    if a.flood_pps > 0.0 {
        return Err(
            Conflict::new("the flood runs on this machine only; leave one of them out")
                .with("flood-pps", a.flood_pps)
                .flag("workers")
                .into(),
        );
    }
    if a.malformed_percent > 0.0 {
        return Err(
            Conflict::new("leave one of them out (the fabric's parts would each send their own share)")
                .with("malformed-percent", a.malformed_percent)
                .flag("workers")
                .into(),
        );
    }
    Ok(())
}

/// Runs one topology test, trial by trial, scenario by scenario.
pub fn run(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    check(a)?;
    check_spread(a, place)?;
    // Each scenario, and the config its trials run with: one per cluster
    // size when the run sweeps them (0: standalone), named after it.
    let sizes = a.cluster_sizes()?;
    let list = by_cluster_size(a, &sizes)?;
    let clustered = a.cluster > 0 || sizes.iter().any(|&n| n > 0);
    let explicit_nb = a.northbound.as_deref().map(Northbound::parse).transpose()?;
    let app = if a.app == "l2-learning" {
        default_app(a.test).to_string()
    } else {
        a.app.clone()
    };
    if a.embedded() {
        controller::catalog::build(&app.split(',').collect::<Vec<_>>())?;
    }
    controller::runtime::raise_fd_limit();
    // Failover needs roles, which OpenFlow 1.0 does not have.
    let version = if a.ofp == Ofp::V10 && a.test != CtlTest::Failover {
        ofwire::OFP10_VERSION
    } else {
        ofwire::OFP13_VERSION
    };
    let run_id = place.name(&format!("ctl-{}", a.test));
    let dir = place.dir(&run_id);
    let metrics = run_metrics(a.test, clustered);
    let main_metric = metrics[0].name.clone();
    let meta = Meta {
        benchmark: format!("bench ctl --test {}", a.test),
        parameters: parameters(a, version, &list, &app, clustered, &sizes),
        metrics,
        ..started(&run_id)
    };
    let (mut run, rt) = open_run(&dir, meta, a, place)?;
    let fleet = super::connect_fleet(place, &rt, &mut run.meta, obs, "the fabric's switches")?;
    let mut invalid = 0;
    let mut largest_discovered = None;
    for (s, a) in &list {
        let mut all_converged = true;
        for trial_no in 0..a.trials {
            // sdnlab's cluster on the workers (its first member's view read
            // through its REST API from here), or the controller as
            // anywhere else.
            let spread_cluster = fleet.as_ref().filter(|_| a.cluster > 0 && a.peer.is_none());
            let (targets, nb, who, mut ctl) = match spread_cluster {
                Some(f) => {
                    let (c, who) =
                        super::start_spread_cluster(f, &rt, a, &app, &mut run.meta, obs).map_err(LabError::setup)?;
                    let nb = explicit_nb
                        .clone()
                        .unwrap_or(Northbound::Sdnlab(c.members[0].rest, None));
                    let targets = c.members.iter().map(|m| m.openflow).collect();
                    (targets, nb, who, Controller::External)
                }
                None => start_controller(a, &app, &explicit_nb)?,
            };
            if run.meta.targets.is_empty() {
                run.meta.targets.push(who);
            }
            let flood = if a.flood_pps > 0.0 {
                Some(start_flood(targets[0], a.attackers, a.flood_pps, version).map_err(LabError::Setup)?)
            } else {
                None
            };
            let watch = crate::host::HostWatch::start(ctl.processes(), crate::host::Rule::default());
            let mut t = match &fleet {
                Some(f) => {
                    let (t, parts) = rt.block_on(spread_trial(a, s, &targets, version, &nb, f))?;
                    for p in parts {
                        run.sample(&shard_sample(&s.name, trial_no, &p))?;
                    }
                    t
                }
                None => super::or_interrupted!(rt, trial(a, s, targets, version, &nb, &mut ctl), run),
            };
            let host = watch.finish();
            if let Some(reason) = &host.reason {
                t.note(&format!("host-bound: {reason}"));
                run.meta
                    .events
                    .push(format!("{} trial {trial_no}: host-bound: {reason}", s.name));
            }
            if let Some(f) = flood {
                stop_flood(f, &mut t);
            }
            ctl.stop();
            if let Some(f) = spread_cluster {
                rt.block_on(f.cluster_down()).map_err(LabError::setup)?;
            }
            let main = t.values.get(&main_metric).copied();
            say(obs, trial_line(s, trial_no, &nb, &run.meta.metrics, &t));
            let note = main.is_none().then(|| {
                invalid += 1;
                all_converged = false;
                let n = format!("{} trial {trial_no}: {}", s.name, t.note);
                run.meta.events.push(n.clone());
                n
            });
            let sample = Sample::trial(s.name.clone(), trial_no, t.values)
                .noted(note.or((!t.note.is_empty()).then_some(t.note)));
            run.sample(&sample)?;
            std::thread::sleep(Duration::from_millis(a.cooldown_ms));
        }
        if a.test == CtlTest::DiscoverySize {
            if !all_converged {
                run.meta.events.push(format!(
                    "network discovery size: {} switches did not converge in every trial; the largest that did: {}",
                    s.spec.switches.len(),
                    largest_discovered.map_or("none".to_string(), |n: usize| format!("{n} switches"))
                ));
                break;
            }
            largest_discovered = Some(s.spec.switches.len());
        }
    }
    if let Some(n) = largest_discovered {
        say(
            obs,
            format!("sdnlab bench ctl: network discovery size: {n} switches converged in every trial"),
        );
        if !run.meta.events.iter().any(|e| e.starts_with("network discovery size")) {
            run.meta.events.push(format!(
                "network discovery size: at least {n} switches (the largest tried)"
            ));
        }
    }
    let outcome = finish_run(run, obs)?;
    // Growing until discovery fails is discovery-size's purpose, not an invalid run.
    let invalid = if a.test == CtlTest::DiscoverySize { 0 } else { invalid };
    Ok(super::incomplete(
        outcome,
        invalid,
        "did not complete (see the report)",
        obs,
    ))
}

/// Stops the flood of a DoS variant; its mean rate goes into the trial.
fn stop_flood((f, rates): Flood, t: &mut Trial) {
    f.shutdown_background();
    let r = rates.lock().unwrap();
    if !r.is_empty() {
        t.set("flood_packet_ins_per_s", r.iter().sum::<f64>() / r.len() as f64);
    }
}

/// The run's parameters in meta.json: the test's, and RFC 8456's mode.
fn parameters(
    a: &CtlConfig,
    version: u8,
    list: &[(Scenario, CtlConfig)],
    app: &str,
    clustered: bool,
    sizes: &[usize],
) -> serde_json::Value {
    serde_json::json!({"openflow": if version == ofwire::OFP13_VERSION { "1.3" } else { "1.0" }, "trials": a.trials,
        "scenarios": list.iter().map(|(s, _)| s.name.clone()).collect::<Vec<_>>(), "td_s": a.td_s,
        "northbound": a.northbound, "host_macs": a.host_macs, "reprov_interval_us": a.reprov_interval_us,
        "reprov_ms": a.reprov_ms, "table_step": a.table_step, "table_max": a.table_max,
        "malformed_percent": a.malformed_percent, "flood_attackers": if a.flood_pps > 0.0 { a.attackers } else { 0 }, "flood_pps": a.flood_pps,
        "app": if a.embedded() { Some(&app) } else { None },
        // RFC 8456's setup: standalone, or a cluster of identical members.
        "rfc8456_mode": if clustered { "cluster" } else { "standalone" },
        "cluster_size": sizes.iter().copied().max().unwrap_or(a.cluster), "cluster_sizes": sizes,
        "switch_connections": if clustered { "every switch to every member" } else { "one controller" },
        "kill": if a.test == CtlTest::Failover && clustered { Some(&a.kill) } else { None }})
}

/// Each scenario and the config its trials run with: one per cluster size
/// when the run sweeps them (0: standalone), named after it.
fn by_cluster_size(a: &CtlConfig, sizes: &[usize]) -> Result<Vec<(Scenario, CtlConfig)>, LabError> {
    Ok(scenarios(a)?
        .into_iter()
        .flat_map(|s| {
            if sizes.is_empty() {
                return vec![(s, a.clone())];
            }
            sizes
                .iter()
                .map(|&n| {
                    let name = if n == 0 {
                        format!("{} standalone", s.name)
                    } else {
                        format!("{} cluster={n}", s.name)
                    };
                    let s = Scenario {
                        name,
                        spec: s.spec.clone(),
                        failure: s.failure,
                    };
                    (
                        s,
                        CtlConfig {
                            cluster: n,
                            ..a.clone()
                        },
                    )
                })
                .collect()
        })
        .collect())
}

/// The test's metrics, and in cluster mode the failover's own (the
/// re-mastering and the rejoin).
fn run_metrics(test: CtlTest, clustered: bool) -> Vec<Metric> {
    let mut metrics = metrics(test);
    if test == CtlTest::Failover && clustered {
        // Only a cluster has it: a metric no trial of the pair can fill
        // would leave the pair out of a results table.
        metrics.push(
            Metric::new(
                "remaster_s",
                "seconds from the kill to every switch the killed master held having a new master in etcd",
                Better::Lower,
            )
            .titled(title("remaster_s")),
        );
        for (name, unit) in [
            (
                "rejoin_s",
                "seconds from the killed member's restart to the masters as they were before the kill",
            ),
            (
                "rejoin_gap_s",
                "longest gap in traffic while the killed member rejoins, seconds",
            ),
            ("rejoin_lost_frames", "frames lost while the killed member rejoins"),
        ] {
            metrics.push(Metric::new(name, unit, Better::Lower).titled(title(name)));
        }
    }
    metrics
}

/// A worker's part of a spread fabric in one trial, as a sample.
fn shard_sample(name: &str, trial: u32, p: &fleet::coordinator::FabricPart) -> Sample {
    Sample::of(
        "shard",
        name.to_string(),
        trial,
        [
            ("switches", p.switches as f64),
            ("connected", p.counts.connected as f64),
            ("lldp_packet_ins", p.counts.lldp_packet_ins as f64),
            ("frames_to_other_parts", p.counts.frames_to_other_parts as f64),
            ("frames_from_other_parts", p.counts.frames_from_other_parts as f64),
            ("refused_datagrams", p.counts.refused_datagrams as f64),
        ],
    )
    .noted(Some(format!("worker {}", p.worker)))
}

/// The line a trial ends with: its figures (or none) and its note.
fn trial_line(s: &Scenario, trial_no: u32, nb: &Northbound, metrics: &[Metric], t: &Trial) -> String {
    let shown: Vec<String> = metrics
        .iter()
        .filter_map(|m| t.values.get(&m.name).map(|v| format!("{} {v:.4}", m.name)))
        .collect();
    format!(
        "  {} trial {trial_no} ({}): {}{}",
        s.name,
        nb.name(),
        if shown.is_empty() {
            "no figure".to_string()
        } else {
            shown.join(", ")
        },
        if t.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.note)
        }
    )
}
