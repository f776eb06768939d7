//! The network experiment (`experiment = "net"`): bring a topology up,
//! every host pings every other, iperf3 runs between the pairs named,
//! test-frame flows run between the pairs named (all at once: loss,
//! reordering, one-way latency, each interval as it is counted), and the
//! network comes down. On one machine through netlab, or spread over
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
    /// Test-frame flows (UDP, sdnlab's generator and receiver), each
    /// "FROM>TO"; they run at once, after iperf3.
    pub flows: Vec<String>,
    /// Each flow's rate, frames per second.
    pub flow_pps: f64,
    /// Each flow's length, seconds.
    pub flow_s: f64,
    /// Each flow's frame size, bytes without the FCS (60 is the 64-byte
    /// frame of RFC 2544).
    pub flow_bytes: usize,
    /// How often a flow's receiver reports what it counted, ms.
    pub interval_ms: u32,
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
            flows: Vec::new(),
            flow_pps: 1000.0,
            flow_s: 3.0,
            flow_bytes: 60,
            interval_ms: 1000,
        }
    }
}

/// A `NetConfig` read.
struct Read {
    topo: netlab::topo::Topology,
    kind: netlab::run::SwitchKind,
    /// iperf3's (client, server) pairs.
    pairs: Vec<(String, String)>,
    flows: Vec<netlab::flow::Flow>,
}

/// "A>B" items of `key`: pairs of two different hosts of `topo`.
fn host_pairs(key: &str, items: &[String], topo: &netlab::topo::Topology) -> Result<Vec<(String, String)>, LabError> {
    let mut pairs = Vec::new();
    for p in items {
        let (a, b) = p
            .split_once('>')
            .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
            .ok_or_else(|| LabError::Config(format!("{key} = \"{p}\": write \"FROM>TO\", two hosts")))?;
        for h in [&a, &b] {
            if topo.host(h).is_none() {
                return Err(LabError::Config(format!("{key}: no host '{h}' in the topology")));
            }
        }
        pairs.push((a, b));
    }
    Ok(pairs)
}

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
        let pairs = host_pairs("iperf", &self.iperf, &topo)?;
        crate::check::real("flow-pps", self.flow_pps, 1.0, 10_000_000.0)?;
        crate::check::real("flow-s", self.flow_s, 0.1, 3600.0)?;
        crate::check::range("flow-bytes", self.flow_bytes, traffic::frame::MIN_LEN, 9000)?;
        crate::check::range("interval-ms", self.interval_ms, 10, 60_000)?;
        let mut flows = Vec::new();
        for (i, (a, b)) in host_pairs("flows", &self.flows, &topo)?.into_iter().enumerate() {
            let mut f = netlab::flow::Flow::between(&topo, i as u32 + 1, &a, &b).map_err(LabError::Config)?;
            f.rate_pps = self.flow_pps;
            f.seconds = self.flow_s;
            f.frame_bytes = self.flow_bytes;
            flows.push(f);
        }
        Ok(Read {
            topo,
            kind,
            pairs,
            flows,
        })
    }

    pub fn validate(&self) -> Result<(), LabError> {
        self.read().map(|_| ())
    }
}

/// What the checks found: the pings, each iperf3 run's figures, and the
/// flows' (or why they did not run).
type Checked = (
    Vec<netlab::run::PingResult>,
    Vec<(String, Result<netlab::run::IperfResult, String>)>,
    Result<Vec<netlab::flow::FlowResult>, String>,
);

fn say(obs: &dyn Observer, s: String) {
    obs.event(Event::Line(&s));
}

/// Runs `c` into `place`: on this machine, or over `place.workers`.
pub fn run(c: &NetConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let Read {
        topo,
        kind,
        pairs,
        flows,
    } = c.read()?;
    let inventory = match &place.workers {
        Some(p) => Some(fleet::inventory::Inventory::load(p).map_err(|e| LabError::Config(e.to_string()))?),
        None => None,
    };
    if let Some(inv) = &inventory {
        // Every interface of a spread network has the underlay's MTU less
        // VXLAN's 50 bytes; a longer frame would not leave its host.
        let most = inv.underlay_mtu as usize - 50 + 14;
        if !flows.is_empty() && c.flow_bytes > most {
            return Err(LabError::Config(format!(
                "--flow-bytes {}: frames over workers hold at most {most} bytes (underlay_mtu {} less VXLAN's 50, plus Ethernet's 14)",
                c.flow_bytes, inv.underlay_mtu
            )));
        }
    }
    let run_id = place.name("net");
    let dir = place.dir(&run_id);
    let mut meta = Meta {
        benchmark: "net".into(),
        parameters: serde_json::json!({
            "topology": c.topology, "switch": c.switch, "ping_count": c.ping_count, "iperf": c.iperf, "iperf_s": c.iperf_s,
            "flows": c.flows, "flow_pps": c.flow_pps, "flow_s": c.flow_s, "flow_bytes": c.flow_bytes, "interval_ms": c.interval_ms,
            "hosts": topo.hosts.len(), "switches": topo.switches.len(), "links": topo.links.len(),
        }),
        metrics: vec![
            Metric::new("reached_share", "share", stats::Better::Higher).titled("Host pairs that reach each other"),
            Metric::new("iperf_mbit_s", "Mbit/s", stats::Better::Higher).titled("iperf3 TCP throughput"),
            Metric::new("flow_loss_ratio", "share", stats::Better::Lower).titled("Test frames lost"),
            Metric::new("latency_us_p50", "µs", stats::Better::Lower).titled("One-way latency, median"),
            Metric::new("latency_us_p99", "µs", stats::Better::Lower).titled("One-way latency, 99th percentile"),
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
    let mut write_errors = Vec::new();
    let names: Vec<String> = flows.iter().map(netlab::flow::Flow::name).collect();
    let interval_s = c.interval_ms as f64 / 1e3;
    // Each flow's intervals go to disk as they are counted.
    let mut on_interval = |i: usize, iv: &traffic::run::Interval| {
        let s = Sample::of(
            "flow-interval",
            names[i].clone(),
            0,
            [
                ("frames", iv.frames as f64),
                ("rate_pps", iv.frames as f64 / interval_s),
                // (Not the flow's own metrics' names: an interval's
                // figures are a time series, not trials of the flow.)
                ("p50_us", iv.latency_us_p50),
                ("p99_us", iv.latency_us_p99),
                ("max_us", iv.latency_us_max),
                ("end_unix_ns", iv.end_ns as f64),
            ],
        )
        .at(iv.index);
        if let Err(e) = writer.append(&s) {
            write_errors.push(e);
        }
        say(
            obs,
            format!(
                "sdnlab net: flow {} interval {}: {} frames, latency p50 {} µs",
                names[i], iv.index, iv.frames, iv.latency_us_p50
            ),
        );
    };
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
                let flowed = if flows.is_empty() {
                    Ok(Vec::new())
                } else {
                    let every = std::time::Duration::from_millis(c.interval_ms.into());
                    tokio::task::block_in_place(|| netlab::flow::run(&net.state, &flows, every, &mut on_interval))
                };
                net.down().await.map_err(LabError::Setup)?;
                Ok((pings, iperfs, flowed))
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
                let flowed = if flows.is_empty() {
                    Ok(Vec::new())
                } else {
                    match spread.flows(&flows, c.interval_ms, &mut on_interval).await {
                        Err(e @ fleet::FleetError::Lost { .. }) => return Err(LabError::setup(e)),
                        r => r.map_err(|e| e.to_string()),
                    }
                };
                for (f, name) in flows.iter().zip(&names) {
                    let (a, b) = (spread.worker_of(&f.from.host), spread.worker_of(&f.to.host));
                    meta.parameters["flow_workers"][name] = serde_json::json!([a, b]);
                }
                spread.down().await.map_err(LabError::setup)?;
                Ok((pings, iperfs, flowed))
            }
        }
    });
    if let Some(e) = write_errors.into_iter().next() {
        return Err(io_error(&dir)(e));
    }
    let (pings, iperfs, flowed) = match checked {
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
    match &flowed {
        Ok(results) => {
            for r in results {
                incomplete += flow_sample(r, &mut writer, &mut meta.events).map_err(io_error(&dir))?;
            }
        }
        Err(e) => {
            incomplete += 1;
            meta.events.push(format!("flows: {e}"));
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

/// Writes flow `r`'s figures as a sample, and its warnings as events;
/// 1 if its figures cannot be trusted (the receiver lost frames itself).
fn flow_sample(
    r: &netlab::flow::FlowResult,
    w: &mut report::RunWriter,
    events: &mut Vec<String>,
) -> std::io::Result<usize> {
    let (name, rx) = (r.flow.name(), &r.received);
    w.append(&Sample::trial(
        format!("flow {name}"),
        0,
        [
            ("flow_loss_ratio", r.loss_ratio()),
            ("sent", r.sent.sent as f64),
            ("received", rx.received as f64),
            ("lost", r.lost() as f64),
            ("duplicates", rx.duplicates as f64),
            ("reordered", rx.reordered as f64),
            ("latency_us_p50", rx.latency_us_p50),
            ("latency_us_p99", rx.latency_us_p99),
            ("latency_us_max", rx.latency_us_max),
            ("clock_uncertainty_us", r.clock_uncertainty_us),
            ("achieved_pps", r.sent.achieved_pps),
        ],
    ))?;
    if rx.received > 0 && r.clock_uncertainty_us > rx.latency_us_p50 {
        events.push(format!(
            "flow {name}: its ends' clocks are known within {:.0} µs, more than its median one-way latency ({:.0} µs): read its latencies as bounds",
            r.clock_uncertainty_us, rx.latency_us_p50
        ));
    }
    if rx.early > 0 {
        events.push(format!(
            "flow {name}: {} frames arrived before they were sent by the clocks' offset (it is off by more than their latency); counted at 1 µs",
            rx.early
        ));
    }
    if rx.receiver_drops > 0 {
        events.push(format!(
            "flow {name}: the receiver's own ring dropped {} frames: its loss is the instrument's, not the network's",
            rx.receiver_drops
        ));
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut NetConfig)) -> Result<(), LabError> {
        let mut c = NetConfig::default();
        f(&mut c);
        c.validate()
    }

    #[test]
    fn flows_are_checked_and_read_as_numbered_streams() {
        let mut c = NetConfig {
            flows: vec!["h1>h3".into(), " h2 > h1 ".into()],
            flow_pps: 500.0,
            ..NetConfig::default()
        };
        let r = c.read().unwrap();
        assert_eq!(r.flows.len(), 2);
        assert_eq!((r.flows[0].stream, r.flows[1].stream), (1, 2));
        assert_eq!(
            (r.flows[1].from.host.as_str(), r.flows[1].to.host.as_str()),
            ("h2", "h1")
        );
        assert_eq!(r.flows[0].rate_pps, 500.0);
        let h3 = r.topo.host("h3").unwrap();
        assert_eq!((r.flows[0].to.mac, r.flows[0].to.ip), (h3.mac, h3.ip));
        for (bad, says) in [
            (vec!["h1>h9"], "no host 'h9'"),
            (vec!["h1"], "FROM>TO"),
            (vec!["h1>h1"], "FROM>TO"),
        ] {
            c.flows = bad.iter().map(|s| s.to_string()).collect();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(says) && e.starts_with("flows"), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
        let e = with(|c| c.flow_bytes = 59).unwrap_err().to_string();
        assert!(e.contains("--flow-bytes 59"), "{e}");
        let e = with(|c| c.flow_pps = f64::NAN).unwrap_err().to_string();
        assert!(e.contains("--flow-pps"), "{e}");
        let e = with(|c| c.interval_ms = 0).unwrap_err().to_string();
        assert!(e.contains("--interval-ms"), "{e}");
    }
}
