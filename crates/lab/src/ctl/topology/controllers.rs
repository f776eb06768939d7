//! The controller each topology trial starts afresh: sdnlab's own, a peer
//! with its topology service, or a cluster of either, and how a cluster's
//! mastership map is read and waited for.

use super::*;
use crate::ctl::CtlTest;

/// A controller started for one trial.
pub(in crate::ctl) enum Controller {
    Embedded(controller::runtime::Handle),
    Peer(crate::peers::Peer),
    /// An active/standby pair (failover): the active one is killed by the test.
    Pair {
        active: Option<crate::peers::Peer>,
        standby: Box<crate::peers::Peer>,
    },
    /// A cluster of sdnlab's controller (members c1..cN, processes) and
    /// its etcd (RFC 8456's cluster mode; failover: the master of the last
    /// host's switch is killed).
    Cluster {
        members: Vec<Option<crate::peers::Peer>>,
        etcd: cluster::etcd::Etcd,
        _dir: netlab::private::TempDir,
    },
    External,
}

impl Controller {
    /// The processes of the controller under test (this one when embedded;
    /// the emulated fabric's switches run here too).
    pub(in crate::ctl) fn processes(&self) -> Vec<(String, u32)> {
        let mut v = vec![("sdnlab (fabric, driver)".to_string(), std::process::id())];
        match self {
            Controller::Peer(p) => v.push((p.name.clone(), p.pid())),
            Controller::Pair { active, standby } => {
                if let Some(a) = active {
                    v.push((a.name.clone(), a.pid()));
                }
                v.push((standby.name.clone(), standby.pid()));
            }
            Controller::Cluster { members, .. } => {
                for (i, m) in members.iter().enumerate() {
                    if let Some(m) = m {
                        v.push((format!("{} member c{}", m.name, i + 1), m.pid()));
                    }
                }
            }
            Controller::Embedded(_) | Controller::External => {}
        }
        v
    }

    pub(in crate::ctl) fn stop(self) {
        match self {
            Controller::Embedded(h) => h.stop(),
            Controller::Peer(p) => drop(p),
            Controller::Pair { active, standby } => drop((active, standby)),
            // The members first (they leave the cluster), then their etcd.
            Controller::Cluster { members, etcd, _dir } => {
                drop(members);
                drop(etcd);
                drop(_dir);
            }
            Controller::External => {}
        }
    }
}

/// Starts an active/standby pair of `name` as processes (the failover test kills the active one).
pub(super) fn start_pair(
    name: crate::peers::Name,
) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
    let active = crate::peers::start_as(name, crate::peers::Role::Paths { proactive: false })?;
    let Some(Northbound::Sdnlab(active_rest, active_token)) = active.rest.clone() else {
        return Err(crate::peers::PeerError::Unsupported(format!(
            "peer '{name}' has no standby mode: the failover test takes sdnlab"
        ))
        .into());
    };
    let standby = crate::peers::start_standby(name, active_rest)?;
    let target = Target {
        name: format!("{} active/standby pair", active.name),
        version: active.version.clone(),
        command: format!(
            "{} and {} --standby-for {active_rest} (processes, started afresh for each trial)",
            active.command, standby.command
        ),
        address: format!("{} and {}", active.addr, standby.addr),
    };
    Ok((
        vec![active.addr, standby.addr],
        Northbound::Sdnlab(active_rest, active_token),
        target,
        Controller::Pair {
            active: Some(active),
            standby: Box::new(standby),
        },
    ))
}

/// Starts a cluster of `n` sdnlab members running `app` and their etcd
/// (files in a private directory): every emulated switch connects to each.
pub(in crate::ctl) fn start_cluster(
    a: &CtlConfig,
    n: usize,
    app: &str,
) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
    // A private directory (random, 0700) for etcd's data and log, removed
    // with the trial's controller.
    let dir = netlab::private::temp_dir("sdnlab-bench-etcd-")
        .map_err(|e| LabError::setup(format!("a directory for etcd: {e}")))?;
    let etcd = cluster::etcd::Etcd::start(dir.path(), a.etcd_members)?;
    let endpoints = etcd.endpoints();
    let name = bench_cluster_name();
    let mut members = Vec::new();
    for i in 1..=n {
        members.push(Some(crate::peers::start_member(
            &endpoints,
            &name,
            &format!("c{i}"),
            app,
            a.slave_packet_ins,
            None,
        )?));
    }
    let first = members[0].as_ref().expect("started");
    let nb = first.rest.clone().unwrap_or(Northbound::None);
    let target = Target {
        name: format!("{} cluster of {n}", first.name),
        version: first.version.clone(),
        command: format!(
            "{n} identical members, each `{}` (processes, started afresh for each trial); every switch connects to each; etcd: {} on this machine, {} member{}",
            first.command.replace("--member c1", "--member cI"),
            cluster::etcd::Etcd::version().unwrap_or_else(|| "etcd".into()),
            a.etcd_members,
            if a.etcd_members == 1 { "" } else { "s" }
        ),
        address: members
            .iter()
            .flatten()
            .map(|m| m.addr.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let addrs = members.iter().flatten().map(|m| m.addr).collect();
    Ok((
        addrs,
        nb,
        target,
        Controller::Cluster {
            members,
            etcd,
            _dir: dir,
        },
    ))
}

/// The name of the clusters `bench ctl` starts (one etcd per trial).
pub(super) fn bench_cluster_name() -> String {
    format!("bench-{}", std::process::id())
}

/// Datapath id -> (master's name, how many members the switch is connected to).
pub(super) type MastershipMap = BTreeMap<u64, (String, usize)>;

/// A member's mastership map (GET /cluster, no token needed): datapath
/// id -> master's name, and every member's view of how many members
/// each switch is connected to.
pub(super) fn cluster_map(rest: SocketAddr) -> Option<MastershipMap> {
    let body = httpc::request_blocking(rest, httpc::Request::get("/cluster"), Duration::from_secs(2))
        .ok()?
        .body;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let mut out = BTreeMap::new();
    for (d, x) in v["masters"].as_object()? {
        let dpid = u64::from_str_radix(d, 16).ok()?;
        let connected = x["connected"].as_array().map_or(0, |c| c.len());
        out.insert(dpid, (x["master"].as_str()?.to_string(), connected));
    }
    Some(out)
}

/// The members' REST APIs (c1..cN; a member already gone has port 0).
pub(super) fn member_rests(members: &[Option<crate::peers::Peer>]) -> Vec<SocketAddr> {
    members
        .iter()
        .map(|m| match m.as_ref().and_then(|m| m.rest.clone()) {
            Some(Northbound::Sdnlab(r, _)) => r,
            _ => SocketAddr::from(([127, 0, 0, 1], 0)),
        })
        .collect()
}

/// Waits (within `td`) until mastership has settled as member `rest` sees
/// it: every switch of `switches` has a master and is connected to all
/// `n` members. The map, and the seconds it took.
pub(super) async fn settled_map(
    rest: SocketAddr,
    switches: &[u64],
    n: usize,
    td: Duration,
) -> Option<(MastershipMap, f64)> {
    let start = Instant::now();
    while start.elapsed() < td {
        if let Some(m) = cluster_map(rest) {
            if switches.iter().all(|d| m.get(d).is_some_and(|x| x.1 == n)) {
                return Some((m, start.elapsed().as_secs_f64()));
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// A mastership map in a line: each member and the switches it masters.
pub(super) fn describe(m: &MastershipMap) -> String {
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (d, (name, _)) in m {
        by.entry(name.as_str()).or_default().push(format!("{d:#x}"));
    }
    by.iter()
        .map(|(n, ds)| format!("{n}: {}", ds.join(",")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Starts the controller for a trial: the OpenFlow addresses, how to read it, who it is.
pub(super) fn start_controller(
    a: &CtlConfig,
    app: &str,
    explicit_nb: &Option<Northbound>,
) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
    if a.cluster > 0 {
        // The failover test's members run paths (it needs a path to fail over).
        return start_cluster(a, a.cluster, if a.test == CtlTest::Failover { "paths" } else { app });
    }
    if a.test == CtlTest::Failover {
        return start_pair(a.peer.unwrap_or(crate::peers::Name::Sdnlab));
    }
    let (addr, nb, mut target, ctl) = start_one(a, app, explicit_nb)?;
    if !a.target_members.is_empty() {
        // A cluster at addresses: every switch connects to each member.
        target.name = format!("controller cluster of {}", a.target_members.len());
        target.address = a
            .target_members
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        return Ok((a.target_members.clone(), nb, target, ctl));
    }
    Ok((vec![addr], nb, target, ctl))
}

pub(super) fn start_one(
    a: &CtlConfig,
    app: &str,
    explicit_nb: &Option<Northbound>,
) -> Result<(SocketAddr, Northbound, Target, Controller), LabError> {
    if let Some(name) = a.peer {
        let role = crate::peers::Role::Paths {
            proactive: a.test == CtlTest::ProactivePaths || a.test == CtlTest::TableCapacityProactive,
        };
        let p = crate::peers::start_as(name, role)?;
        let nb = explicit_nb.clone().or(p.rest.clone()).unwrap_or(Northbound::None);
        let target = Target {
            name: p.name.clone(),
            version: p.version.clone(),
            command: format!("{} (started afresh for each trial)", p.command),
            address: p.addr.to_string(),
        };
        return Ok((p.addr, nb, target, Controller::Peer(p)));
    }
    if let (Some(t), Some(nb)) = (a.target, explicit_nb) {
        let target = Target {
            name: "controller".into(),
            address: t.to_string(),
            ..Default::default()
        };
        return Ok((t, nb.clone(), target, Controller::External));
    }
    let (h, rest, token) = controller::embedded::start_local_with_rest(app, workers()).map_err(LabError::setup)?;
    let target = Target {
        name: format!("sdnlab controller, app {app} (embedded)"),
        version: env!("CARGO_PKG_VERSION").into(),
        command: "in-process with its REST API, started afresh for each trial".into(),
        address: h.local_addrs[0].to_string(),
    };
    let nb = explicit_nb.clone().unwrap_or(Northbound::Sdnlab(rest, Some(token)));
    Ok((h.local_addrs[0], nb, target, Controller::Embedded(h)))
}
