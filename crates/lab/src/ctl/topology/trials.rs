//! One topology trial: the fabric connected, one procedure of
//! `ctlbench::topology_tests` run against the controller (a cluster's
//! failover too), and the flood of the DoS variant.

use super::*;
use crate::ctl::CtlTest;

/// What one trial measured: its values, and why a figure is missing.
pub(super) struct Trial {
    pub(super) values: BTreeMap<String, f64>,
    pub(super) note: String,
}

impl Trial {
    pub(super) fn new() -> Trial {
        Trial {
            values: BTreeMap::new(),
            note: String::new(),
        }
    }

    pub(super) fn set(&mut self, k: &str, v: f64) {
        self.values.insert(k.to_string(), v);
    }

    /// A change-detection test's figures.
    pub(super) fn change(&mut self, c: &tt::ChangeDetection) {
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
    pub(super) fn failover(&mut self, f: &tt::Failover) {
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

    pub(super) fn note(&mut self, n: &str) {
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
pub(super) async fn cluster_failover(
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
    let control = a.kill == crate::ctl::Kill::NonMaster;
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
    let (endpoints, name, sp) = (endpoints.to_string(), victim_name.clone(), a.slave_packet_ins);
    // Where the switches reconnect: the port it listened on.
    let port = victim_port;
    let restart = Box::new(move || {
        let at = Instant::now();
        let started = crate::peers::start_member(&endpoints, &bench_cluster_name(), &name, "paths", sp, Some(port));
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
    if let Some(p) = record_rejoin(started, &g, &rejoin_s, &victim_name, t).await {
        members[victim] = Some(p);
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

/// What the killed member's restart cost (`g`, the traffic meanwhile) and
/// how long until the masters were as before the kill (`rejoin_s`, polled
/// for 10 s); the member started again, for the trial to keep and stop.
async fn record_rejoin(
    started: Option<Result<crate::peers::Peer, crate::peers::PeerError>>,
    g: &tt::Failover,
    rejoin_s: &std::sync::Mutex<Option<f64>>,
    victim_name: &str,
    t: &mut Trial,
) -> Option<crate::peers::Peer> {
    match started {
        Some(Ok(p)) => {
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
            Some(p)
        }
        Some(Err(e)) => {
            t.note(&format!("{victim_name} could not be started again: {e}"));
            None
        }
        None => {
            t.note(&format!("{victim_name} was not started again"));
            None
        }
    }
}

pub(super) fn mean_of(seconds: &[Option<f64>]) -> Option<f64> {
    let got: Vec<f64> = seconds.iter().flatten().copied().collect();
    (got.len() == seconds.len() && !got.is_empty()).then(|| got.iter().sum::<f64>() / got.len() as f64)
}

/// One trial with the fabric spread over `fleet`'s workers: every part
/// brought up at once, then discovery (the controller's view polled from
/// here until it holds every link) or change detection (once it does, the
/// failure made on the workers concerned), then every part stopped. The
/// trial, and each worker's part as it stood at the end.
pub(super) async fn spread_trial(
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
pub(super) async fn trial(
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
        reconnect: (a.test == CtlTest::Failover && a.cluster > 0).then_some(Duration::from_millis(100)),
    };
    let mut t = Trial::new();
    t.set("switches", s.spec.switches.len() as f64);
    t.set("links", s.spec.links.len() as f64 * 2.0);
    // A cluster's members (the failover test reads them itself).
    let cluster = match ctl {
        Controller::Cluster { members, .. } if a.test != CtlTest::Failover => Some(member_rests(members)),
        _ => None,
    };
    let switches: Vec<u64> = s.spec.switches.iter().map(|s| s.0).collect();
    if a.test == CtlTest::Discovery || a.test == CtlTest::DiscoverySize {
        discovery(s, opts, nb, td, cluster.as_deref(), &switches, &mut t).await;
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
    let ready = if a.test == CtlTest::ChangeDetection {
        tt::wait_for_view(&fabric, nb, td).await.map(|_| ())
    } else {
        tt::prepare(&fabric, nb, td, a.host_macs.max(1)).await
    };
    if let Err(e) = ready {
        t.note(&e.to_string());
        fabric.stop();
        return t;
    }
    match a.test {
        CtlTest::ReactivePaths => {
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
        CtlTest::ProactivePaths => {
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
        CtlTest::ChangeDetection => {
            let c = tt::change_detection(&fabric, nb, s.failure.unwrap_or(tt::Failure::Link), td).await;
            t.change(&c);
        }
        CtlTest::Reprovisioning => {
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
        CtlTest::Failover if matches!(ctl, Controller::Cluster { .. }) => {
            let Controller::Cluster { members, etcd, .. } = ctl else {
                unreachable!()
            };
            let endpoints = etcd.endpoints();
            cluster_failover(a, &fabric, members, &endpoints, td, &mut t).await;
        }
        CtlTest::Failover => {
            if !pair_failover(a, &fabric, ctl, td, &mut t).await {
                fabric.stop();
                return t;
            }
        }
        CtlTest::TableCapacityProactive => {
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

/// The active/standby pair's failover: the standby's view of the network
/// awaited, the active one killed, the gap and the frames lost measured,
/// and the standby's own word that it took over. False when `ctl` is not
/// a pair (said in the trial's note).
async fn pair_failover(a: &CtlConfig, fabric: &Fabric, ctl: &mut Controller, td: Duration, t: &mut Trial) -> bool {
    let Controller::Pair { active, standby } = ctl else {
        t.note("the failover test needs an active/standby pair");
        return false;
    };
    // The standby must have learnt the network from what the active one sees.
    let standby_nb = standby.rest.clone().unwrap_or(Northbound::None);
    if let Err(e) = tt::wait_for_view(fabric, &standby_nb, td).await {
        t.note(&format!("the standby's view: {e}"));
    }
    let active = active.take();
    let kill = Box::new(move || drop(active));
    let interval = Duration::from_micros(a.reprov_interval_us.max(100));
    let f = tt::failover(fabric, kill, interval, Duration::from_millis(a.reprov_ms.max(500))).await;
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
    true
}

/// The discovery tests' trial: the fabric connected, the time until the
/// controller's view holds every link (in a cluster, the members' election
/// included), and the masters once settled.
async fn discovery(
    s: &Scenario,
    opts: ctlbench::fabric::Options,
    nb: &Northbound,
    td: Duration,
    cluster: Option<&[SocketAddr]>,
    switches: &[u64],
    t: &mut Trial,
) {
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
    if let Some(rests) = cluster {
        let left = td.saturating_sub(start.elapsed()).max(Duration::from_secs(1));
        match settled_map(rests[0], switches, rests.len(), left).await {
            Some((m, _)) => t.note(&format!("masters: {}", describe(&m))),
            None => t.note("mastership had not settled by the end of the trial"),
        }
    }
    fabric.stop();
}

/// RFC 8456 DoS handling applied to a topology test: `attackers` emulated
/// switches (datapath ids from 0x7e00_0000, outside every fabric) send
/// `pps` PACKET_INs per second in all, whatever the controller answers
/// (only TCP back-pressure slows them), for as long as the returned runtime
/// lives, on a thread of their own.
/// The flood: its runtime, and the PACKET_INs per second it sent in each 250 ms loop.
pub(super) type Flood = (tokio::runtime::Runtime, std::sync::Arc<std::sync::Mutex<Vec<f64>>>);

// Text on purpose: said as `LabError::Setup`, the runtime's own words after what it was for.
pub(super) fn start_flood(target: SocketAddr, attackers: usize, pps: f64, version: u8) -> Result<Flood, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("the flood's runtime: {e}"))?;
    let cfg = ctlbench::Config {
        switches: attackers.max(1),
        macs: 100,
        mode: ctlbench::Mode::Flood,
        version,
        loops: 1_000_000,
        loop_ms: 250,
        warmup: 0,
        window: 64,
        first_dpid: 0x7e00_0000,
        offered_rate: pps,
        // One event loop: the flood must not take the cores of what it
        // floods. In a cluster, the first member is flooded (no members).
        threads: 1,
        ..ctlbench::Config::new(target)
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
