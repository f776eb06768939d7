//! The network experiment (`experiment = "net"`): bring a topology up,
//! every host pings every other, iperf3 runs between the pairs named, and
//! the network comes down. On one machine through netlab, or spread over
//! workers (`sdnlab run --workers`, crate `fleet`): switches balanced over
//! them, links between them carried as VXLAN, each worker's clock offset
//! in `meta.json`.

use crate::rundir::{fail_run, io_error, open_run, started, Place};
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, Sample};
use serde::{Deserialize, Serialize};

/// A network to bring up and check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetConfig {
    /// A built-in shape (`single,N`, `linear,N`, `tree,D,F`,
    /// `leaf-spine,S,L,H`) or a topology file (netlab's TOML), as `sdnlab
    /// net up` takes them.
    pub topology: String,
    /// The switches: "bridge", "ovs" or "sdnlab".
    pub switch: String,
    /// Their controller (HOST:PORT), for "ovs" and "sdnlab".
    pub controller: Option<String>,
    /// Pings from every host to every other (0: no pings).
    pub ping_count: u32,
    /// iperf3 (TCP) runs, each "CLIENT>SERVER" (host names).
    pub iperf: Vec<String>,
    /// Length of each iperf3 run, seconds.
    pub iperf_s: u32,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            topology: "leaf-spine,2,3,1".into(),
            switch: "bridge".into(),
            controller: None,
            ping_count: 2,
            iperf: Vec::new(),
            iperf_s: 3,
        }
    }
}

/// A `NetConfig` read: the topology, the switch kind, the iperf3 pairs
/// (client, server).
type Read = (netlab::topo::Topology, netlab::run::SwitchKind, Vec<(String, String)>);

impl NetConfig {
    /// Every parameter checked, and read: the topology, the switch kind
    /// and the iperf3 pairs.
    fn read(&self) -> Result<Read, LabError> {
        let topo = netlab::topo::load(&self.topology)
            .map_err(|e| LabError::Config(format!("topology = \"{}\": {}", self.topology, e.join("; "))))?;
        let kind = self
            .switch
            .parse::<netlab::run::SwitchKind>()
            .map_err(|e| LabError::Config(format!("switch = {e}")))?;
        crate::check::range("ping-count", self.ping_count, 0, 100)?;
        crate::check::range("iperf-s", self.iperf_s, 1, 3600)?;
        let mut pairs = Vec::new();
        for p in &self.iperf {
            let (a, b) = p
                .split_once('>')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
                .ok_or_else(|| LabError::Config(format!("iperf = \"{p}\": write \"CLIENT>SERVER\", two hosts")))?;
            for h in [&a, &b] {
                if topo.host(h).is_none() {
                    return Err(LabError::Config(format!("iperf: no host '{h}' in the topology")));
                }
            }
            pairs.push((a, b));
        }
        Ok((topo, kind, pairs))
    }

    pub fn validate(&self) -> Result<(), LabError> {
        self.read().map(|_| ())
    }
}

/// What the checks found: the pings, and each iperf3 run's figures.
type Checked = (
    Vec<netlab::run::PingResult>,
    Vec<(String, Result<netlab::run::IperfResult, String>)>,
);

fn say(obs: &dyn Observer, s: String) {
    obs.event(Event::Line(&s));
}

/// Runs `c` into `place`: on this machine, or over `place.workers`.
pub fn run(c: &NetConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let (topo, kind, pairs) = c.read()?;
    let inventory = match &place.workers {
        Some(p) => Some(fleet::inventory::Inventory::load(p).map_err(|e| LabError::Config(e.to_string()))?),
        None => None,
    };
    let run_id = place.name("net");
    let dir = place.dir(&run_id);
    let mut meta = Meta {
        benchmark: "net".into(),
        parameters: serde_json::json!({
            "topology": c.topology, "switch": c.switch, "ping_count": c.ping_count, "iperf": c.iperf, "iperf_s": c.iperf_s,
            "hosts": topo.hosts.len(), "switches": topo.switches.len(), "links": topo.links.len(),
        }),
        metrics: vec![
            Metric::new("reached_share", "share", stats::Better::Higher).titled("Host pairs that reach each other"),
            Metric::new("iperf_mbit_s", "Mbit/s", stats::Better::Higher).titled("iperf3 TCP throughput"),
        ],
        ..started(&run_id)
    };
    let (mut writer, rt) = open_run(&dir, &meta, &Experiment::Net(c.clone()))?;
    let where_ = match &inventory {
        Some(inv) => format!("over {} worker(s)", inv.workers.len()),
        None => "on this machine".into(),
    };
    say(
        obs,
        format!(
            "sdnlab net: {} ({} hosts, {} switches, {}) {where_}; results in {}",
            c.topology,
            topo.hosts.len(),
            topo.switches.len(),
            c.switch,
            dir.display()
        ),
    );
    let write = |w: &mut report::RunWriter, s: Sample| w.append(&s).map_err(io_error(&dir));
    let mut incomplete = 0;
    let controller = c.controller.clone();
    let checked: Result<Checked, LabError> = rt.block_on(async {
        let mut iperfs = Vec::new();
        match &inventory {
            None => {
                let net = netlab::run::Net::up(
                    topo.clone(),
                    netlab::run::UpOptions {
                        kind,
                        controller,
                        keep_loops: false,
                        ssl: None,
                        ovsdb: false,
                        part: None,
                    },
                )
                .await
                .map_err(LabError::Setup)?;
                let pings = if c.ping_count > 0 {
                    net.ping_all(c.ping_count).await
                } else {
                    Vec::new()
                };
                for (a, b) in &pairs {
                    let r = netlab::run::iperf(&net.state, a, b, c.iperf_s, None, &|_, _| {}).await;
                    iperfs.push((format!("{a}>{b}"), r));
                }
                net.down().await.map_err(LabError::Setup)?;
                Ok((pings, iperfs))
            }
            Some(inv) => {
                let fleet = fleet::coordinator::Fleet::connect(inv).await.map_err(LabError::setup)?;
                meta.parameters["workers"] = fleet.clocks();
                let spread = fleet.net_up(&topo, kind, controller).await.map_err(LabError::setup)?;
                meta.parameters["links_between_workers"] = spread.cut.into();
                let pings = if c.ping_count > 0 {
                    spread.ping_all(c.ping_count).await.map_err(LabError::setup)?
                } else {
                    Vec::new()
                };
                for (a, b) in &pairs {
                    let r = spread.iperf(a, b, c.iperf_s).await;
                    if let Err(e @ fleet::FleetError::Lost { .. }) = r {
                        return Err(LabError::setup(e));
                    }
                    let what = format!(
                        "{a}>{b} ({} -> {})",
                        spread.worker_of(a).unwrap_or("?"),
                        spread.worker_of(b).unwrap_or("?")
                    );
                    iperfs.push((what, r.map_err(|e| e.to_string())));
                }
                spread.down().await.map_err(LabError::setup)?;
                Ok((pings, iperfs))
            }
        }
    });
    let (pings, iperfs) = match checked {
        Ok(x) => x,
        Err(e) => return Err(fail_run(writer, &mut meta, e)),
    };
    let mut reached = 0;
    for p in &pings {
        if p.received > 0 {
            reached += 1;
        }
        let mut values = vec![("sent", p.sent as f64), ("received", p.received as f64)];
        if let Some(rtt) = p.rtt_avg_ms {
            values.push(("rtt_avg_ms", rtt));
        }
        write(
            &mut writer,
            Sample::of("ping", format!("{}>{}", p.from, p.to), 0, values),
        )?;
    }
    if !pings.is_empty() {
        let share = reached as f64 / pings.len() as f64;
        if reached < pings.len() {
            incomplete += 1;
            let missing: Vec<String> = pings
                .iter()
                .filter(|p| p.received == 0)
                .take(8)
                .map(|p| format!("{}>{}", p.from, p.to))
                .collect();
            meta.events.push(format!(
                "{} of {} host pairs do not reach each other (first: {})",
                pings.len() - reached,
                pings.len(),
                missing.join(", ")
            ));
        }
        write(
            &mut writer,
            Sample::trial(
                "pingall",
                0,
                [
                    ("reached_share", share),
                    ("pairs", pings.len() as f64),
                    ("reached", reached as f64),
                ],
            ),
        )?;
    }
    for (what, r) in &iperfs {
        match r {
            Ok(r) => write(
                &mut writer,
                Sample::trial(
                    format!("iperf {what}"),
                    0,
                    [
                        ("iperf_mbit_s", r.received_bps / 1e6),
                        ("retransmits", r.retransmits as f64),
                    ],
                ),
            )?,
            Err(e) => {
                incomplete += 1;
                meta.events.push(format!("iperf3 {what}: {e}"));
            }
        }
    }
    meta.finished_unix = Some(report::now_unix());
    let summary = writer.finish(&meta).map_err(io_error(&dir))?;
    for e in &meta.events {
        say(obs, format!("sdnlab net: {e}"));
    }
    say(
        obs,
        format!("sdnlab net: report in {}", dir.join("report.html").display()),
    );
    Ok(Outcome {
        dir: dir.clone(),
        table: format!(
            "{} of {} host pairs reach each other\n{}",
            reached,
            pings.len(),
            report::terminal_table(&summary, &meta.metrics)
        ),
        json: serde_json::json!({ "run": dir, "summary": summary, "reached": reached, "pairs": pings.len() }),
        incomplete,
    })
}
