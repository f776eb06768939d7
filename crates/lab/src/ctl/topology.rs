//! `sdnlab bench ctl --test discovery|discovery-size|reactive-paths|
//! proactive-paths|change-detection|reprovisioning|table-capacity`: the
//! RFC 8456 tests that need a topology. Each trial starts the controller
//! afresh (sdnlab's own in this process, or a `--peer` with its topology
//! service and REST API; a `--target` is the user's to restart), connects
//! an emulated fabric (`ctlbench::fabric`), runs one procedure of
//! `ctlbench::topology_tests`, appends the trial to the run's samples, and
//! stops both. A figure that did not happen within Td is left out of the
//! trial and said in its note; the run then exits 1.

use super::{finish_run, say, workers, CtlConfig};
use crate::rundir::{open_run, started, Place};
use crate::{Experiment, LabError, Observer, Outcome};
use ctlbench::fabric::{Fabric, Spec};
use ctlbench::northbound::Northbound;
use ctlbench::topology_tests as tt;
use report::{Meta, Metric, Sample, Target};
use stats::Better;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const TESTS: [&str; 9] = [
    "discovery",
    "discovery-size",
    "reactive-paths",
    "proactive-paths",
    "change-detection",
    "reprovisioning",
    "table-capacity",
    "table-capacity-proactive",
    "failover",
];

// Text on purpose: a config's problem, said as `LabError::Config` (the key and the fix).
pub fn parse_fabric(s: &str) -> Result<Spec, String> {
    if let Some(path) = s.strip_prefix("file:") {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--fabric '{s}': {e}"))?;
        let spec: Spec = serde_json::from_str(&text).map_err(|e| {
            format!("--fabric '{s}': {e} (write {{\"switches\": [[DPID, PORTS]], \"links\": [[[DPID, PORT], [DPID, PORT]]], \"hosts\": [[DPID, PORT]]}})")
        })?;
        spec.validate().map_err(|e| format!("--fabric '{s}': {e}"))?;
        return Ok(spec);
    }
    let parts: Vec<&str> = s.split(',').collect();
    let nums: Result<Vec<u32>, _> = parts[1..].iter().map(|p| p.trim().parse::<u32>()).collect();
    let bad = || {
        format!(
            "--fabric '{s}': write leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF, linear,N, tree,DEPTH,FANOUT or file:PATH"
        )
    };
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

fn metrics(test: &str) -> Vec<Metric> {
    let m = |name: &str, what: &str, better| Metric::new(name, what, better).titled(title(name));
    match test {
        "discovery" | "discovery-size" => vec![m("discovery_s", "seconds to a complete view", Better::Lower)],
        "reactive-paths" => vec![
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
        "proactive-paths" => vec![
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
        "change-detection" => vec![
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
        "reprovisioning" => vec![
            m(
                "reprovision_s",
                "longest gap in traffic either way after a link failure, seconds",
                Better::Lower,
            ),
            m("lost_frames", "frames lost, both directions", Better::Lower),
        ],
        "failover" => vec![
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
fn default_app(test: &str) -> &'static str {
    match test {
        "discovery" | "discovery-size" | "change-detection" => "topology",
        "proactive-paths" | "table-capacity-proactive" => "paths-proactive",
        _ => "paths",
    }
}

/// A controller started for one trial.
pub(super) enum Controller {
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
    pub(super) fn processes(&self) -> Vec<(String, u32)> {
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

    pub(super) fn stop(self) {
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
fn start_pair(name: &str) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
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
pub(super) fn start_cluster(
    a: &CtlConfig,
    n: usize,
    app: &str,
) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
    let slave_packet_ins = a.slave_packet_ins.as_str();
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
            slave_packet_ins,
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
fn bench_cluster_name() -> String {
    format!("bench-{}", std::process::id())
}

/// Datapath id -> (master's name, how many members the switch is connected to).
type MastershipMap = BTreeMap<u64, (String, usize)>;

/// A member's mastership map (GET /cluster, no token needed): datapath
/// id -> master's name, and every member's view of how many members
/// each switch is connected to.
fn cluster_map(rest: SocketAddr) -> Option<MastershipMap> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&rest, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET /cluster HTTP/1.0\r\nHost: {rest}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (_, body) = text.split_once("\r\n\r\n")?;
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let mut out = BTreeMap::new();
    for (d, x) in v["masters"].as_object()? {
        let dpid = u64::from_str_radix(d, 16).ok()?;
        let connected = x["connected"].as_array().map_or(0, |c| c.len());
        out.insert(dpid, (x["master"].as_str()?.to_string(), connected));
    }
    Some(out)
}

/// The members' REST APIs (c1..cN; a member already gone has port 0).
fn member_rests(members: &[Option<crate::peers::Peer>]) -> Vec<SocketAddr> {
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
async fn settled_map(rest: SocketAddr, switches: &[u64], n: usize, td: Duration) -> Option<(MastershipMap, f64)> {
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
fn describe(m: &MastershipMap) -> String {
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
fn start_controller(
    a: &CtlConfig,
    app: &str,
    explicit_nb: &Option<Northbound>,
) -> Result<(Vec<SocketAddr>, Northbound, Target, Controller), LabError> {
    if a.cluster > 0 {
        // The failover test's members run paths (it needs a path to fail over).
        return start_cluster(a, a.cluster, if a.test == "failover" { "paths" } else { app });
    }
    if a.test == "failover" {
        return start_pair(a.peer.as_deref().unwrap_or("sdnlab"));
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

fn start_one(
    a: &CtlConfig,
    app: &str,
    explicit_nb: &Option<Northbound>,
) -> Result<(SocketAddr, Northbound, Target, Controller), LabError> {
    if let Some(name) = &a.peer {
        let role = crate::peers::Role::Paths {
            proactive: a.test == "proactive-paths" || a.test == "table-capacity-proactive",
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

/// One scenario: its name, the fabric, and what fails (change-detection).
struct Scenario {
    name: String,
    spec: Spec,
    failure: Option<tt::Failure>,
}

// Text on purpose: a config's problem, said as `LabError::Config` (the key and the fix).
fn scenarios(a: &CtlConfig) -> Result<Vec<Scenario>, String> {
    let mut out = Vec::new();
    if a.test == "discovery-size" {
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
    let failures: Vec<&str> = if a.failures.is_empty() {
        vec!["link", "switch"]
    } else {
        a.failures.iter().map(|s| s.as_str()).collect()
    };
    for f in &fabrics {
        let spec = parse_fabric(f)?;
        let needs_hosts = !matches!(a.test.as_str(), "discovery" | "change-detection");
        if needs_hosts && spec.hosts.len() < 2 {
            return Err(format!("--fabric '{f}': --test {} needs at least 2 hosts", a.test));
        }
        if a.test == "reprovisioning" {
            let (first, last) = (spec.hosts[0].0, spec.hosts[spec.hosts.len() - 1].0);
            let spines = spec.links.iter().filter(|(l, _)| l.0 == first).count();
            if first == last || spines < 2 {
                return Err(format!(
                    "--fabric '{f}': reprovisioning needs redundant paths between its first and last host: \
                     use a leaf-spine with 2 or more spines and 2 or more leaves"
                ));
            }
        }
        if a.test == "change-detection" {
            for fl in &failures {
                out.push(Scenario {
                    name: format!("{f} {fl} down"),
                    spec: spec.clone(),
                    failure: Some(if *fl == "link" {
                        tt::Failure::Link
                    } else {
                        tt::Failure::Switch
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

/// What one trial measured: its values, and why a figure is missing.
struct Trial {
    values: BTreeMap<String, f64>,
    note: String,
}

impl Trial {
    fn new() -> Trial {
        Trial {
            values: BTreeMap::new(),
            note: String::new(),
        }
    }

    fn set(&mut self, k: &str, v: f64) {
        self.values.insert(k.to_string(), v);
    }

    /// A change-detection test's figures.
    fn change(&mut self, c: &tt::ChangeDetection) {
        if let Some(x) = c.view_s {
            self.set("detect_view_s", x);
        }
        if let Some(x) = c.first_probe_s {
            self.set("detect_probe_s", x);
        }
        self.set("links_after", c.links_after as f64);
        self.note(&c.note);
    }

    /// A failover test's figures (pair or cluster).
    fn failover(&mut self, f: &tt::Failover) {
        if let Some(x) = f.gap_s {
            self.set("failover_s", x);
        }
        if let Some(x) = f.takeover_s {
            self.set("takeover_s", x);
        }
        self.set("lost_frames", f.lost as f64);
        self.set("sent", f.sent as f64);
        self.set("duplicates", f.duplicates as f64);
        self.note(&f.note);
    }

    fn note(&mut self, n: &str) {
        if !n.is_empty() {
            if !self.note.is_empty() {
                self.note.push_str("; ");
            }
            self.note.push_str(n);
        }
    }
}

/// Controller Failover Time in cluster mode: once mastership has settled
/// (every switch one master, connected to every member) and every member
/// knows the network, the master of the last host's switch is killed
/// (SIGKILL) while frames that each need a controller flow; besides the
/// gap and the takeover, a survivor's map is read every few milliseconds
/// from the kill until no switch names the dead member (re-mastering).
/// The mastership map before and after goes into the trial's note.
async fn cluster_failover(
    a: &CtlConfig,
    fabric: &ctlbench::fabric::Fabric,
    members: &mut [Option<crate::peers::Peer>],
    endpoints: &str,
    td: Duration,
    t: &mut Trial,
) {
    let rests = member_rests(members);
    let n = members.len();
    let switches: Vec<u64> = fabric.spec.switches.iter().map(|s| s.0).collect();
    let Some((before, settle_s)) = settled_map(rests[0], &switches, n, td).await else {
        t.note(&format!(
            "mastership did not settle within Td ({} s): no trial",
            td.as_secs()
        ));
        return;
    };
    t.set("settle_s", settle_s);
    for (i, m) in members.iter().enumerate() {
        let nb = m.as_ref().and_then(|m| m.rest.clone()).unwrap_or(Northbound::None);
        if let Err(e) = tt::wait_for_view(fabric, &nb, td).await {
            t.note(&format!("member c{}'s view: {e}", i + 1));
        }
    }
    // The frames reach the last host by a PACKET_OUT at its switch: every
    // member hears every PACKET_IN (slaves too, for their view) and the
    // paths app floods from the controller, so the member that masters the
    // last host's switch is the one the traffic needs.
    let egress = fabric.spec.hosts[fabric.spec.hosts.len() - 1].0;
    let master = before[&egress].0.clone();
    // The control (`kill = "non-master"`): a member the traffic does not
    // need, killed the same way (its own switches are re-mastered).
    let control = a.kill == "non-master";
    let victim_name = if control {
        match (1..=n).map(|i| format!("c{i}")).find(|c| *c != master) {
            Some(c) => c,
            None => {
                t.note("no member other than the master to kill");
                return;
            }
        }
    } else {
        master.clone()
    };
    let Some(victim) = victim_name
        .strip_prefix('c')
        .and_then(|i| i.parse::<usize>().ok())
        .map(|i| i - 1)
    else {
        t.note(&format!("no member is master of switch {egress:#x}"));
        return;
    };
    let orphans = before.values().filter(|x| x.0 == victim_name).count();
    let survivor = rests[(victim + 1) % n];
    let peer = members[victim].take();
    let victim_port = peer.as_ref().map_or(0, |p| p.addr.port());
    let remaster: Arc<std::sync::Mutex<Option<f64>>> = Arc::default();
    let after: Arc<std::sync::Mutex<Option<MastershipMap>>> = Arc::default();
    let (r, af, dead) = (remaster.clone(), after.clone(), victim_name.clone());
    let kill = Box::new(move || {
        let at = Instant::now();
        drop(peer); // SIGKILL, and reaped
        std::thread::spawn(move || {
            while at.elapsed() < Duration::from_secs(10) {
                if let Some(m) = cluster_map(survivor) {
                    if !m.values().any(|x| x.0 == dead) && m.len() >= switches.len() {
                        *r.lock().unwrap() = Some(at.elapsed().as_secs_f64());
                        *af.lock().unwrap() = Some(m);
                        return;
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
    });
    let interval = Duration::from_micros(a.reprov_interval_us.max(100));
    let f = tt::failover(fabric, kill, interval, Duration::from_millis(a.reprov_ms.max(500))).await;
    t.failover(&f);
    t.set("cluster_size", n as f64);
    t.set("orphaned_switches", orphans as f64);
    let remastered = *remaster.lock().unwrap();
    match remastered {
        Some(x) => t.set("remaster_s", x),
        None => t.note(&format!(
            "the switches {victim_name} mastered were not all re-elected within 10 s"
        )),
    }
    let after = after.lock().unwrap().clone();
    // The killed member started again under its name while frames flow
    // (its switches reconnect to it): the masters move back to it as
    // placement says, and what that costs the data plane is measured
    // the same way as the kill.
    let rejoined: Arc<std::sync::Mutex<Option<Result<crate::peers::Peer, crate::peers::PeerError>>>> = Arc::default();
    let rejoin_s: Arc<std::sync::Mutex<Option<f64>>> = Arc::default();
    let (slot, r, back) = (rejoined.clone(), rejoin_s.clone(), before.clone());
    let (endpoints, name, sp) = (endpoints.to_string(), victim_name.clone(), a.slave_packet_ins.clone());
    // Where the switches reconnect: the port it listened on.
    let port = victim_port;
    let restart = Box::new(move || {
        let at = Instant::now();
        let started = crate::peers::start_member(&endpoints, &bench_cluster_name(), &name, "paths", &sp, Some(port));
        let ok = started.is_ok();
        *slot.lock().unwrap() = Some(started);
        if ok {
            std::thread::spawn(move || {
                while at.elapsed() < Duration::from_secs(10) {
                    let as_before = cluster_map(survivor).is_some_and(|m| {
                        m.len() == back.len()
                            && back
                                .iter()
                                .all(|(d, (who, _))| m.get(d).is_some_and(|x| x.0 == *who && x.1 == n))
                    });
                    if as_before {
                        *r.lock().unwrap() = Some(at.elapsed().as_secs_f64());
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
    });
    // Long enough for the handover: the restart comes at 40 % (2 s), the
    // masters move back once it has had its switches for
    // `cluster::Config::handover_after` (2 s), and traffic runs on 1 s.
    let g = tt::failover(fabric, restart, interval, Duration::from_millis(a.reprov_ms.max(5000))).await;
    let started = rejoined.lock().unwrap().take();
    match started {
        Some(Ok(p)) => {
            members[victim] = Some(p);
            if let Some(x) = g.gap_s {
                t.set("rejoin_gap_s", x);
            }
            t.set("rejoin_lost_frames", g.lost as f64);
            // (Polled until 10 s after the restart; the traffic above is shorter.)
            let wait = Instant::now();
            while rejoin_s.lock().unwrap().is_none() && wait.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let took = *rejoin_s.lock().unwrap();
            match took {
                Some(x) => t.set("rejoin_s", x),
                None => t.note(&format!(
                    "after {victim_name} rejoined, the masters were not as before the kill within 10 s"
                )),
            }
        }
        Some(Err(e)) => t.note(&format!("{victim_name} could not be started again: {e}")),
        None => t.note(&format!("{victim_name} was not started again")),
    }
    let which = if control {
        format!("not the master of the last host's switch {egress:#x} ({master} is), the control")
    } else {
        format!("master of the last host's switch {egress:#x}")
    };
    t.note(&format!(
        "masters before: {}; killed {victim_name} ({which}, {orphans} switches in all); after: {}",
        describe(&before),
        after.as_ref().map(describe).unwrap_or_else(|| "unknown".into())
    ));
}

fn mean_of(seconds: &[Option<f64>]) -> Option<f64> {
    let got: Vec<f64> = seconds.iter().flatten().copied().collect();
    (got.len() == seconds.len() && !got.is_empty()).then(|| got.iter().sum::<f64>() / got.len() as f64)
}

/// One trial with the fabric spread over `fleet`'s workers: every part
/// brought up at once, then discovery (the controller's view polled from
/// here until it holds every link) or change detection (once it does, the
/// failure made on the workers concerned), then every part stopped. The
/// trial, and each worker's part as it stood at the end.
async fn spread_trial(
    a: &CtlConfig,
    s: &Scenario,
    targets: &[SocketAddr],
    version: u8,
    nb: &Northbound,
    fleet: &fleet::coordinator::Fleet,
) -> Result<(Trial, Vec<fleet::coordinator::FabricPart>), LabError> {
    let td = Duration::from_secs(a.td_s.max(1));
    let mut t = Trial::new();
    t.set("switches", s.spec.switches.len() as f64);
    let expected = s.spec.links.len() * 2;
    t.set("links", expected as f64);
    // (Dealt out before the clock starts: the partition is the
    // coordinator's work, not the controller's.)
    let spread = fleet::coordinator::SpreadFabric::new(fleet, &s.spec);
    let start = std::time::Instant::now();
    let up = spread.up(targets, version, td, 0).await;
    if up.is_ok() {
        let (seen, seconds, note) = tt::view_complete(nb, expected, start, td).await;
        match s.failure {
            None => {
                t.set("links_seen", seen as f64);
                if let Some(x) = seconds {
                    t.set("discovery_s", x);
                }
                t.note(&note);
            }
            Some(_) if seconds.is_none() => t.note(&note),
            Some(failure) => t.change(&tt::change_detection(&spread, nb, failure, td).await),
        }
    }
    // Every part stops, whether or not all came up.
    let stopped = spread.stop().await;
    let up = up.map_err(LabError::setup)?;
    let parts = stopped.map_err(LabError::setup)?;
    let connected: u64 = up.iter().map(|p| p.counts.connected).sum();
    t.set("connected", connected as f64);
    // Frames lost between the machines: sent by one part, taken by none.
    let sent: u64 = parts.iter().map(|p| p.counts.frames_to_other_parts).sum();
    let taken: u64 = parts.iter().map(|p| p.counts.frames_from_other_parts).sum();
    t.set("frames_lost_between_parts", sent.saturating_sub(taken) as f64);
    if sent > taken {
        t.note(&format!(
            "{} of {sent} frames between the workers' parts were lost on the way",
            sent - taken
        ));
    }
    if (connected as usize) < s.spec.switches.len() {
        t.note(&format!(
            "{connected} of {} switches connected within Td",
            s.spec.switches.len()
        ));
    }
    Ok((t, parts))
}

/// Runs one trial of `a.test` on a fresh fabric connected to `targets`.
async fn trial(
    a: &CtlConfig,
    s: &Scenario,
    targets: Vec<SocketAddr>,
    version: u8,
    nb: &Northbound,
    ctl: &mut Controller,
) -> Trial {
    let td = Duration::from_secs(a.td_s.max(1));
    let opts = ctlbench::fabric::Options {
        targets: targets.clone(),
        version,
        timeout: td,
        malformed_per_mille: (a.malformed_percent.clamp(0.0, 100.0) * 10.0).round() as u32,
        shard: None,
        // A cluster's killed member is started again (its rejoin
        // measured): the switches connect to it again, as real ones do
        // (every 100 ms here; Open vSwitch backs off from 1 s to 8 s).
        reconnect: (a.test == "failover" && a.cluster > 0).then_some(Duration::from_millis(100)),
    };
    let mut t = Trial::new();
    t.set("switches", s.spec.switches.len() as f64);
    t.set("links", s.spec.links.len() as f64 * 2.0);
    // A cluster's members (the failover test reads them itself).
    let cluster = match ctl {
        Controller::Cluster { members, .. } if a.test != "failover" => Some(member_rests(members)),
        _ => None,
    };
    let switches: Vec<u64> = s.spec.switches.iter().map(|s| s.0).collect();
    if a.test == "discovery" || a.test == "discovery-size" {
        // In a cluster the clock runs from the switches' connection, the
        // members' election included: the cluster's own discovery time.
        let start = Instant::now();
        let fabric = Fabric::start_with(s.spec.clone(), opts).await;
        let d = tt::discovery_on(&fabric, start, nb, td).await;
        t.set("links_seen", d.links_seen as f64);
        if let Some(x) = d.seconds {
            t.set("discovery_s", x);
        }
        t.note(&d.note);
        if let Some(rests) = &cluster {
            let left = td.saturating_sub(start.elapsed()).max(Duration::from_secs(1));
            match settled_map(rests[0], &switches, rests.len(), left).await {
                Some((m, _)) => t.note(&format!("masters: {}", describe(&m))),
                None => t.note("mastership had not settled by the end of the trial"),
            }
        }
        fabric.stop();
        return t;
    }
    let fabric = Fabric::start_with(s.spec.clone(), opts).await;
    if let Some(rests) = &cluster {
        // RFC 8456's cluster mode: the trial starts once every switch has
        // one master and is connected to every member.
        match settled_map(rests[0], &switches, rests.len(), td).await {
            Some((m, secs)) => {
                t.set("settle_s", secs);
                t.note(&format!("masters: {}", describe(&m)));
            }
            None => {
                t.note(&format!(
                    "mastership did not settle within Td ({} s): no trial",
                    td.as_secs()
                ));
                fabric.stop();
                return t;
            }
        }
    }
    let ready = if a.test == "change-detection" {
        tt::wait_for_view(&fabric, nb, td).await.map(|_| ())
    } else {
        tt::prepare(&fabric, nb, td, a.host_macs.max(1)).await
    };
    if let Err(e) = ready {
        t.note(&e.to_string());
        fabric.stop();
        return t;
    }
    match a.test.as_str() {
        "reactive-paths" => {
            let p = tt::reactive_provisioning(&fabric, td).await;
            if let Some(m) = mean_of(&p.seconds) {
                t.set("reactive_path_s", m);
            }
            t.note(&p.note);
            let r = tt::reactive_rate(&fabric, a.host_macs.max(1), td).await;
            t.set("reactive_rate_per_s", r.per_second);
            t.set("rate_paths", r.paths as f64);
            t.set("rate_reached", r.reached as f64);
            t.note(&r.note);
        }
        "proactive-paths" => {
            let p = tt::proactive_provisioning(&fabric, nb, td).await;
            if let Some(m) = mean_of(&p.seconds) {
                t.set("proactive_path_s", m);
            }
            t.note(&p.note);
            if p.seconds.iter().any(|s| s.is_some()) {
                let r = tt::proactive_rate(&fabric, nb, a.host_macs.max(1), td).await;
                t.set("proactive_rate_per_s", r.per_second);
                t.set("rate_paths", r.paths as f64);
                t.set("rate_reached", r.reached as f64);
                t.note(&r.note);
            }
        }
        "change-detection" => {
            let c = tt::change_detection(&fabric, nb, s.failure.unwrap_or(tt::Failure::Link), td).await;
            t.change(&c);
        }
        "reprovisioning" => {
            let interval = Duration::from_micros(a.reprov_interval_us.max(100));
            let r = tt::reprovisioning(&fabric, interval, Duration::from_millis(a.reprov_ms.max(500))).await;
            if r.note.is_empty() {
                t.set("reprovision_s", r.forward.gap_s.max(r.reverse.gap_s));
            }
            t.set("lost_frames", (r.forward.lost + r.reverse.lost) as f64);
            t.set("gap_forward_s", r.forward.gap_s);
            t.set("gap_reverse_s", r.reverse.gap_s);
            t.set("lost_forward", r.forward.lost as f64);
            t.set("lost_reverse", r.reverse.lost as f64);
            t.set("sent_each_way", r.forward.sent as f64);
            t.note(&r.note);
        }
        "failover" if matches!(ctl, Controller::Cluster { .. }) => {
            let Controller::Cluster { members, etcd, .. } = ctl else {
                unreachable!()
            };
            let endpoints = etcd.endpoints();
            cluster_failover(a, &fabric, members, &endpoints, td, &mut t).await;
        }
        "failover" => {
            let Controller::Pair { active, standby } = ctl else {
                t.note("the failover test needs an active/standby pair");
                fabric.stop();
                return t;
            };
            // The standby must have learnt the network from what the active one sees.
            let standby_nb = standby.rest.clone().unwrap_or(Northbound::None);
            if let Err(e) = tt::wait_for_view(&fabric, &standby_nb, td).await {
                t.note(&format!("the standby's view: {e}"));
            }
            let active = active.take();
            let kill = Box::new(move || drop(active));
            let interval = Duration::from_micros(a.reprov_interval_us.max(100));
            let f = tt::failover(&fabric, kill, interval, Duration::from_millis(a.reprov_ms.max(500))).await;
            t.failover(&f);
            if let Northbound::Sdnlab(rest, _) = standby_nb {
                let role = match ctlbench::northbound::http_get(rest, "/stats").await {
                    Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body)
                        .map(|v| v["role"].as_str().unwrap_or("").to_string())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                let took_over = role.starts_with("active (took over");
                t.set("standby_took_over", if took_over { 1.0 } else { 0.0 });
                if !took_over {
                    t.note(&format!("the standby reports its role as '{role}'"));
                }
            }
        }
        "table-capacity-proactive" => {
            let c = tt::table_capacity_proactive(&fabric, nb, a.table_step.max(1), a.table_max.max(1), td).await;
            t.set("table_flows", c.flows as f64);
            t.set("destinations", c.destinations as f64);
            t.note(&c.note);
        }
        _ => {
            let c = tt::table_capacity(&fabric, a.table_step.max(1), a.table_max.max(1), td).await;
            t.set("table_flows", c.flows as f64);
            t.set("destinations", c.destinations as f64);
            t.note(&c.note);
        }
    }
    let malformed = fabric.stats.malformed_sent.load(std::sync::atomic::Ordering::Relaxed);
    if malformed > 0 {
        t.set("malformed_sent", malformed as f64);
    }
    fabric.stop();
    t
}

/// RFC 8456 DoS handling applied to a topology test: `attackers` emulated
/// switches (datapath ids from 0x7e00_0000, outside every fabric) send
/// `pps` PACKET_INs per second in all, whatever the controller answers
/// (only TCP back-pressure slows them), for as long as the returned runtime
/// lives, on a thread of their own.
/// The flood: its runtime, and the PACKET_INs per second it sent in each 250 ms loop.
type Flood = (tokio::runtime::Runtime, std::sync::Arc<std::sync::Mutex<Vec<f64>>>);

// Text on purpose: said as `LabError::Setup`, the runtime's own words after what it was for.
fn start_flood(target: SocketAddr, attackers: usize, pps: f64, version: u8) -> Result<Flood, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("the flood's runtime: {e}"))?;
    let cfg = ctlbench::Config {
        target,
        switches: attackers.max(1),
        macs: 100,
        mode: ctlbench::Mode::Flood,
        version,
        loops: 1_000_000,
        loop_ms: 250,
        warmup: 0,
        window: 64,
        connect_rate: 0.0,
        first_dpid: 0x7e00_0000,
        ports: 4,
        malformed_per_mille: 0,
        offered_rate: pps,
        vlan: None,
        answers: ctlbench::Answers::Buffer,
        unanswered_after_ms: 0,
        // One event loop: the flood must not take the cores of what it floods.
        threads: 1,
        // In a cluster, the first member is flooded.
        members: Vec::new(),
    };
    let rates = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = rates.clone();
    rt.spawn(async move {
        ctlbench::run(cfg, |l| seen.lock().unwrap().push(l.requests_per_s)).await;
    });
    // Let the flood build up before the test starts.
    std::thread::sleep(Duration::from_millis(500));
    Ok((rt, rates))
}

/// Checks what only the topology tests need: the fabrics (with hosts
/// where the test sends traffic), a northbound API for a `target`, and no
/// `target` for failover.
pub(crate) fn check(a: &CtlConfig) -> Result<(), LabError> {
    scenarios(a).map_err(LabError::Config)?;
    if a.target.is_some() && a.northbound.is_none() {
        return Err(LabError::Config(format!(
            "--test {} with --target needs --northbound (sdnlab:HOST:PORT, osken:HOST:PORT or none)",
            a.test
        )));
    }
    if a.test == "failover" && a.target.is_some() {
        return Err(LabError::Config("--test failover kills the active controller, so sdnlab starts the pair: use the default or --peer sdnlab, not --target".into()));
    }
    Ok(())
}

/// Runs one topology test, trial by trial, scenario by scenario.
pub fn run(a: &CtlConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    check(a)?;
    if place.workers.is_some() {
        if a.flood_pps > 0.0 {
            return Err(LabError::Config(
                "--flood-pps with --workers: the flood runs on this machine only; leave one of them out".into(),
            ));
        }
        if a.malformed_percent > 0.0 {
            return Err(LabError::Config(
                "--malformed-percent with --workers: leave one of them out (the fabric's parts would each send their own share)".into(),
            ));
        }
    }
    // Each scenario, and the config its trials run with: one per cluster
    // size when the run sweeps them (0: standalone), named after it.
    let sizes = a.cluster_sizes()?;
    let list: Vec<(Scenario, CtlConfig)> = scenarios(a)
        .map_err(LabError::Config)?
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
        .collect();
    let clustered = a.cluster > 0 || sizes.iter().any(|&n| n > 0);
    let explicit_nb = a.northbound.as_deref().map(Northbound::parse).transpose()?;
    let app = if a.app == "l2-learning" {
        default_app(&a.test).to_string()
    } else {
        a.app.clone()
    };
    if a.embedded() {
        controller::catalog::build(&app.split(',').collect::<Vec<_>>())?;
    }
    controller::runtime::raise_fd_limit();
    // Failover needs roles, which OpenFlow 1.0 does not have.
    let version = if a.ofp == "1.0" && a.test != "failover" {
        ofwire::OFP10_VERSION
    } else {
        ofwire::OFP13_VERSION
    };
    let run_id = place.name(&format!("ctl-{}", a.test));
    let dir = place.dir(&run_id);
    let mut metrics = metrics(&a.test);
    if a.test == "failover" && clustered {
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
    let main_metric = metrics[0].name.clone();
    let mut meta = Meta {
        benchmark: format!("bench ctl --test {}", a.test),
        parameters: serde_json::json!({"openflow": if version == ofwire::OFP13_VERSION { "1.3" } else { "1.0" }, "trials": a.trials,
            "scenarios": list.iter().map(|(s, _)| s.name.clone()).collect::<Vec<_>>(), "td_s": a.td_s,
            "northbound": a.northbound, "host_macs": a.host_macs, "reprov_interval_us": a.reprov_interval_us,
            "reprov_ms": a.reprov_ms, "table_step": a.table_step, "table_max": a.table_max,
            "malformed_percent": a.malformed_percent, "flood_attackers": if a.flood_pps > 0.0 { a.attackers } else { 0 }, "flood_pps": a.flood_pps,
            "app": if a.embedded() { Some(&app) } else { None },
            // RFC 8456's setup: standalone, or a cluster of identical members.
            "rfc8456_mode": if clustered { "cluster" } else { "standalone" },
            "cluster_size": sizes.iter().copied().max().unwrap_or(a.cluster), "cluster_sizes": sizes,
            "switch_connections": if clustered { "every switch to every member" } else { "one controller" },
            "kill": if a.test == "failover" && clustered { Some(&a.kill) } else { None }}),
        metrics,
        ..started(&run_id)
    };
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Ctl(a.clone()))?;
    let fleet = super::connect_fleet(place, &rt, &mut meta, obs, "the fabric's switches")?;
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
                        super::start_spread_cluster(f, &rt, a, &app, &mut meta, obs).map_err(LabError::setup)?;
                    let nb = explicit_nb
                        .clone()
                        .unwrap_or(Northbound::Sdnlab(c.members[0].rest, None));
                    let targets = c.members.iter().map(|m| m.openflow).collect();
                    (targets, nb, who, Controller::External)
                }
                None => start_controller(a, &app, &explicit_nb)?,
            };
            if meta.targets.is_empty() {
                meta.targets.push(who);
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
                        let sample = Sample::of(
                            "shard",
                            s.name.clone(),
                            trial_no,
                            [
                                ("switches", p.switches as f64),
                                ("connected", p.counts.connected as f64),
                                ("lldp_packet_ins", p.counts.lldp_packet_ins as f64),
                                ("frames_to_other_parts", p.counts.frames_to_other_parts as f64),
                                ("frames_from_other_parts", p.counts.frames_from_other_parts as f64),
                                ("refused_datagrams", p.counts.refused_datagrams as f64),
                            ],
                        )
                        .noted(Some(format!("worker {}", p.worker)));
                        writer.append(&sample).map_err(crate::rundir::io_error(&dir))?;
                    }
                    t
                }
                None => super::or_interrupted!(rt, trial(a, s, targets, version, &nb, &mut ctl), writer, meta, dir),
            };
            let host = watch.finish();
            if let Some(reason) = &host.reason {
                t.note(&format!("host-bound: {reason}"));
                meta.events
                    .push(format!("{} trial {trial_no}: host-bound: {reason}", s.name));
            }
            if let Some((f, rates)) = flood {
                f.shutdown_background();
                let r = rates.lock().unwrap();
                if !r.is_empty() {
                    t.set("flood_packet_ins_per_s", r.iter().sum::<f64>() / r.len() as f64);
                }
            }
            ctl.stop();
            if let Some(f) = spread_cluster {
                rt.block_on(f.cluster_down()).map_err(LabError::setup)?;
            }
            let main = t.values.get(&main_metric).copied();
            let shown: Vec<String> = meta
                .metrics
                .iter()
                .filter_map(|m| t.values.get(&m.name).map(|v| format!("{} {v:.4}", m.name)))
                .collect();
            say(
                obs,
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
                ),
            );
            let note = main.is_none().then(|| {
                invalid += 1;
                all_converged = false;
                let n = format!("{} trial {trial_no}: {}", s.name, t.note);
                meta.events.push(n.clone());
                n
            });
            let sample = Sample::trial(s.name.clone(), trial_no, t.values)
                .noted(note.or((!t.note.is_empty()).then_some(t.note)));
            writer.append(&sample).map_err(crate::rundir::io_error(&dir))?;
            std::thread::sleep(Duration::from_millis(a.cooldown_ms));
        }
        if a.test == "discovery-size" {
            if !all_converged {
                meta.events.push(format!(
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
        if !meta.events.iter().any(|e| e.starts_with("network discovery size")) {
            meta.events.push(format!(
                "network discovery size: at least {n} switches (the largest tried)"
            ));
        }
    }
    let outcome = finish_run(writer, &mut meta, &dir, obs)?;
    // Growing until discovery fails is discovery-size's purpose, not an invalid run.
    let invalid = if a.test == "discovery-size" { 0 } else { invalid };
    Ok(super::incomplete(
        outcome,
        invalid,
        "did not complete (see the report)",
        obs,
    ))
}
