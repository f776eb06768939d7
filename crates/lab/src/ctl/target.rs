//! The controller a test runs against: the embedded one, a peer, a cluster
//! (here or spread over workers), or one named by address; started for a
//! trial and stopped after it.

use super::*;
use crate::ctl::CtlTest;

pub(crate) fn workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// A controller sdnlab started for a trial; `stop` ends it.
pub(super) enum Running {
    Embedded(controller::runtime::Handle),
    Peer(crate::peers::Peer),
    /// A cluster of sdnlab's controller (its members' OpenFlow addresses).
    Cluster(topology::Controller, Vec<std::net::SocketAddr>),
    /// Instances of a peer with one configuration (Faucet's redundancy).
    Peers(Vec<crate::peers::Peer>),
}

impl Running {
    pub(super) fn stop(self) {
        match self {
            Running::Embedded(h) => h.stop(),
            Running::Peer(p) => drop(p),
            Running::Cluster(c, _) => c.stop(),
            Running::Peers(p) => drop(p),
        }
    }

    /// Kills the cluster's first member (SIGKILL), as a failure would:
    /// what it was, or None when this is not a cluster of processes.
    pub(super) fn kill_first(&mut self) -> Option<String> {
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
    pub(super) fn processes(&self) -> Vec<(String, u32)> {
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
    pub(super) fn members(&self) -> Vec<std::net::SocketAddr> {
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
pub(super) fn trial_members(a: &CtlConfig, running: &Option<Running>) -> Vec<std::net::SocketAddr> {
    if a.target_members.is_empty() {
        running.as_ref().map(Running::members).unwrap_or_default()
    } else {
        a.target_members.clone()
    }
}

/// Watches the host while a trial runs: the processes of what `running`
/// started, or this one alone (an external controller is not seen).
pub(super) fn watch_host(running: &Option<Running>) -> crate::host::HostWatch {
    let watched = match running {
        Some(r) => r.processes(),
        None => vec![("sdnlab (driver)".to_string(), std::process::id())],
    };
    crate::host::HostWatch::start(watched, crate::host::Rule::default())
}

/// `n` after what `note` says already ("; " between).
pub(super) fn add_note(note: &mut Option<String>, n: String) {
    *note = Some(match note.take() {
        Some(x) => format!("{x}; {n}"),
        None => n,
    });
}

/// A host-bound trial, said in the run's events (which the report shows
/// as warnings) and in the trial's note: on one machine the load driver
/// and the controllers share the cores, so a saturated core bounds the
/// figure as much as the controller does.
pub(super) fn host_bound_note(host: &crate::host::HostLoad, name: &str, trial: u32, meta: &mut Meta) -> Option<String> {
    let reason = host.reason.as_ref()?;
    meta.events.push(format!("{name} trial {trial}: host-bound: {reason}"));
    Some(format!("host-bound: {reason}"))
}

/// Whether a controller accepts a connection at `addr` (within 3 s).
pub(super) fn reachable(addr: std::net::SocketAddr) -> Result<(), LabError> {
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map(drop)
        .map_err(|source| LabError::Unreachable { addr, source })
}

/// What of cluster mode runs spread over workers (an error saying what
/// does not): sdnlab's cluster started on the workers (`--cluster N`) or
/// a cluster at addresses (`--target A,B,C`), against the cbench, rate,
/// sessions and dos tests and the topology tests that spread (discovery
/// and change detection).
pub(super) fn spread_cluster_supported(a: &CtlConfig) -> Result<(), LabError> {
    let clustered = a.cluster > 0 || !a.target_members.is_empty();
    let refuse = |c: Conflict| Err(c.flag("workers").into());
    if let Some(sweep) = a.sweep.as_ref().filter(|_| a.sweeps_clusters()) {
        return refuse(
            Conflict::new("cluster sizes are not swept over workers (the standalone size runs on this machine's loopback); run each size with --cluster N")
                .with("sweep", format!("'{sweep}'")),
        );
    }
    if clustered && !a.test.spreads_over_workers() {
        return refuse(
            Conflict::new("a cluster is spread over workers for the cbench, rate, sessions, dos, discovery, discovery-size and change-detection tests so far; run this test without --workers")
                .with("test", a.test),
        );
    }
    if a.cluster > 0 && a.peer.is_some() {
        return refuse(
            Conflict::new("a peer's instances run on this machine's loopback, out of the workers' reach; --cluster N with --workers starts sdnlab's members on the workers")
                .with("cluster", a.cluster)
                .flag("peer"),
        );
    }
    Ok(())
}

/// The controller of one trial, as started (or named) for it.
pub(super) struct Started<'f> {
    /// Where the switches connect (the first member of a cluster).
    pub(super) addr: std::net::SocketAddr,
    /// Every member each switch connects to (empty: one controller).
    pub(super) members: Vec<std::net::SocketAddr>,
    pub(super) running: Option<Running>,
    /// The fleet whose workers run sdnlab's cluster for this trial.
    pub(super) spread: Option<&'f fleet::coordinator::Fleet>,
}

impl Started<'_> {
    /// Stops what was started for the trial (on the workers too).
    pub(super) fn stop(self, rt: &tokio::runtime::Runtime) -> Result<(), fleet::FleetError> {
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
pub(super) fn start_trial_controller<'f>(
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
    let c = rt.block_on(f.cluster_up(
        a.cluster,
        a.etcd_members,
        app,
        &name,
        a.slave_packet_ins == SlavePacketIns::All,
    ))?;
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
pub(super) fn target_of(a: &CtlConfig) -> Result<(std::net::SocketAddr, Target, Option<Running>), LabError> {
    if a.cluster > 0 && a.peer != Some(crate::peers::Name::Faucet) {
        let (members, _, target, ctl) = topology::start_cluster(a, a.cluster, &a.app)?;
        return Ok((members[0], target, Some(Running::Cluster(ctl, members))));
    }
    if let Some(name) = a.peer {
        let dps = match a.test {
            CtlTest::Security => {
                use ctlbench::security::{CASES, FIRST_CASE_DPID, PORTS, WITNESS_DPID};
                crate::peers::Datapaths {
                    ranges: vec![(WITNESS_DPID, 1), (FIRST_CASE_DPID, CASES)],
                    ports: PORTS,
                }
            }
            CtlTest::Sessions => crate::peers::Datapaths {
                ranges: vec![(ctlbench::capacity::FIRST_DPID, a.max_sessions)],
                ports: ctlbench::capacity::PORTS,
            },
            _ => {
                // Every emulated switch any scenario of the run brings.
                let most = scenarios(a)?.iter().map(|(_, c)| c.switches).max();
                let mut ranges = vec![(a.first_dpid, most.unwrap_or(a.switches))];
                if a.test == CtlTest::Dos {
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
