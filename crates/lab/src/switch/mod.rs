//! `sdnlab bench switch`: forwarding between two veths through each switch
//! under test, side by side in one run with the same generator and
//! receiver: sdnlab's switch, Open vSwitch's userspace datapath with
//! `system` (AF_PACKET) and `afxdp` ports, the Linux bridge, an XDP patch
//! between the two ports (no switch: the least a hop in the kernel costs)
//! and a direct veth pair with no hop at all (the machine's limit). Per
//! switch: the most the receiver gets with the generator flat out, the
//! highest zero-loss rate (binary search), TCP throughput (iperf3, hosts'
//! offloads left on), FLOW_MOD insertion rate, and all of it again with a
//! million extra rules in the table. Every trial is written to
//! `samples.jsonl` as it ends.
//!
//! The two hosts are namespaces of this run (prefix `sbsw`); everything is
//! removed at the end, on error too. The test bed is `bed`, shared with
//! the data-path benchmark (`crate::dp`).

pub mod bed;

use crate::check::{range, real};
use crate::rundir::Place;
use crate::{Event, Experiment, LabError, Observer, Outcome};
use bed::{filler_rules, iperf, open_bed, remove_filler, trial, BedError, OfClient, Trial, DUTS};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use serde_json::json;
use stats::Better;
use std::io::Write;
use std::time::{Duration, Instant};
use traffic::run::{GenMethod, RecvMethod};

/// The switch forwarding benchmark. The defaults compare every switch
/// kind at 64-byte frames, 2 s trials, with 0 and 1,000,000 extra rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SwitchConfig {
    /// Switches under test: sdnlab (AF_PACKET ports), sdnlab-afxdp,
    /// sdnlab-fastpath, ovs (system ports), ovs-afxdp, bridge, xdp-patch
    /// (not a switch: the floor of a hop in the kernel), veth (no hop).
    pub duts: Vec<String>,
    /// Frame size in bytes, FCS included (64 is RFC 2544's smallest).
    pub frame: usize,
    /// Seconds per trial.
    pub seconds: f64,
    /// Extra non-matching rules installed before measuring (OpenFlow switches).
    pub rules: Vec<usize>,
    /// FLOW_MODs sent to time insertion (OpenFlow switches).
    pub flow_mods: usize,
    /// The zero-loss search stops when the bracket is this fraction of the rate.
    pub resolution: f64,
    /// Rounds: each measures every extra-rules count in turn; the summary
    /// gives the median of the rounds.
    pub rounds: usize,
    /// The iperf3 TCP trial.
    pub tcp: bool,
    /// How test frames are sent: "xdp" or "afpacket".
    pub generator: GenMethod,
    /// How the receiving host takes them: "xdp" or "afpacket".
    pub receiver: RecvMethod,
    /// A smoke run: short trials, a coarse search, 10,000 extra rules.
    pub quick: bool,
}

impl Default for SwitchConfig {
    fn default() -> SwitchConfig {
        SwitchConfig {
            // Every switch but the XDP patch, a reference asked for by name.
            duts: DUTS
                .iter()
                .filter(|d| **d != "xdp-patch")
                .map(|d| d.to_string())
                .collect(),
            frame: 64,
            seconds: 2.0,
            rules: vec![0, 1_000_000],
            flow_mods: 100_000,
            resolution: 0.02,
            rounds: 1,
            tcp: true,
            generator: GenMethod::Xdp,
            receiver: RecvMethod::Xdp,
            quick: false,
        }
    }
}

impl SwitchConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), LabError> {
        if self.duts.is_empty() {
            return Err(LabError::Config("--dut: name at least one switch".into()));
        }
        if let Some(d) = self.duts.iter().find(|d| !DUTS.contains(&d.as_str())) {
            return Err(LabError::Config(format!(
                "unknown switch '{d}' in --dut: choose from {}",
                DUTS.join(", ")
            )));
        }
        if !(64..=1518).contains(&self.frame) {
            return Err(LabError::Config(format!("--frame {} is outside 64..=1518", self.frame)));
        }
        range("rounds", self.rounds, 1, 1000)?;
        real("seconds", self.seconds, 0.1, 3600.0)?;
        real("resolution", self.resolution, 0.001, 0.5)?;
        range("flow-mods", self.flow_mods, 1, 10_000_000)?;
        for r in &self.rules {
            range("rules", *r, 0, 10_000_000)?;
        }
        Ok(())
    }
}

/// Paced trials on a bed, each recorded as it ends: the device the
/// zero-loss search runs against.
struct Paced<'a, 'r> {
    bed: &'a bed::Bed,
    frame: usize,
    record: &'r mut dyn FnMut(&str, &Trial, &crate::host::HostLoad),
    dut: &'a str,
    obs: &'a dyn Observer,
}

/// One trial, with the observer told as it starts and ends, and the host
/// watched while it runs.
fn observed_trial(
    obs: &dyn Observer,
    dut: &str,
    test: &str,
    bed: &bed::Bed,
    frame: usize,
    rate: Option<f64>,
    seconds: f64,
) -> Result<(Trial, crate::host::HostLoad), BedError> {
    obs.event(Event::TrialStart {
        test,
        frame,
        offered_pps: rate,
        seconds,
    });
    let watch = crate::host::HostWatch::start(bed.path_processes(), crate::host::Rule::default());
    let t = trial(bed, frame, rate, seconds);
    let host = watch.finish();
    let t = t?;
    obs.event(Event::TrialEnd(&t.figures(dut, test, frame)));
    Ok((t, host))
}

impl crate::method::rfc2544::Device for Paced<'_, '_> {
    type Error = BedError;
    type Trial = Trial;
    fn trial(&mut self, _test: &'static str, rate: Option<f64>, seconds: f64) -> Result<Trial, BedError> {
        let t = observed_trial(
            self.obs,
            self.dut,
            "zero_loss_search",
            self.bed,
            self.frame,
            rate,
            seconds,
        )?;
        let (t, host) = t;
        (self.record)("zero_loss_search", &t, &host);
        Ok(t)
    }
    fn burst(&mut self, _frames: u64) -> Result<(bool, f64), BedError> {
        Err(BedError::Refused("bench switch sends no bursts".into()))
    }
}

/// The figures of the report, one sample per switch, rule count and round.
fn metrics() -> Vec<Metric> {
    vec![
        Metric::new("zero_loss_pps", "frames/s", Better::Higher).titled("Zero-loss forwarding rate"),
        Metric::new("max_rx_pps", "frames/s", Better::Higher).titled("Forwarding rate, generator flat out"),
        Metric::new("latency_us_p50", "µs", Better::Lower).titled("Median latency at the zero-loss rate"),
        Metric::new("tcp_gbit_s", "Gbit/s", Better::Higher).titled("TCP throughput (iperf3)"),
        Metric::new("flow_mods_per_s", "FLOW_MODs/s", Better::Higher).titled("Rule insertion rate"),
    ]
}

/// Runs the benchmark into `place`.
pub fn run(cfg: &SwitchConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    cfg.validate()?;
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::setup(
            "bench switch needs root (network namespaces, AF_PACKET)",
        ));
    }
    let seconds = if cfg.quick { cfg.seconds.min(0.5) } else { cfg.seconds };
    let resolution = if cfg.quick {
        cfg.resolution.max(0.1)
    } else {
        cfg.resolution
    };
    let rules: Vec<usize> = if cfg.quick {
        cfg.rules.iter().map(|&r| r.min(10_000)).collect()
    } else {
        cfg.rules.clone()
    };
    let flow_mods = if cfg.quick {
        cfg.flow_mods.min(10_000)
    } else {
        cfg.flow_mods
    };
    // After a big table change a switch may still be digesting it when the
    // next trial starts: Open vSwitch revalidates its datapath flows in
    // threads that share the switch's core with its packet thread. Every
    // switch gets the same pause before it is measured.
    let settle = Duration::from_secs_f64(if cfg.quick { 0.3 } else { 3.0 });
    let run_id = place.name("bench-switch");
    let dir = place.dir(&run_id);
    // Open vSwitch's sockets need an absolute path.
    let dir = std::path::absolute(&dir).map_err(crate::rundir::io_error(&dir))?;
    let meta = Meta {
        benchmark: "bench switch".into(),
        targets: cfg
            .duts
            .iter()
            .map(|d| Target {
                name: d.clone(),
                version: bed::dut_version(d),
                ..Target::default()
            })
            .collect(),
        parameters: json!({
            "frame": cfg.frame, "seconds": seconds, "rules": rules, "flow_mods": flow_mods, "rounds": cfg.rounds,
            "resolution": resolution, "tcp": cfg.tcp, "generator": cfg.generator, "receiver": cfg.receiver,
            "settle_s_after_table_changes": settle.as_secs_f64(),
            "pinning": "generator and receiver on core 0, the switch process on the last core (OVS: pmd-cpu-mask too); kernel switches (bridge, xdp-patch, veth) where the kernel runs them",
        }),
        metrics: metrics(),
        ..crate::rundir::started(&run_id)
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Switch(cfg.clone()))?;
    // Every trial as it ends; the report's samples are one per switch,
    // rule count and round.
    let samples_path = dir.join("trials.jsonl");
    let mut samples = std::fs::File::create(&samples_path).map_err(crate::rundir::io_error(&samples_path))?;
    let mut rows: Vec<serde_json::Value> = Vec::new();
    // Host-bound trials (see `crate::host`), for the run's events.
    let mut host_bound: Vec<(String, String)> = Vec::new();
    for dut in &cfg.duts {
        let openflow = matches!(
            dut.as_str(),
            "sdnlab" | "sdnlab-afxdp" | "sdnlab-fastpath" | "ovs" | "ovs-afxdp"
        );
        let rule_counts: Vec<usize> = if openflow { rules.clone() } else { vec![0] };
        let (bed, of_addr) = match open_bed(
            dut,
            &dir,
            bed::Links {
                generator: cfg.generator,
                receiver: cfg.receiver,
                mtu: None,
            },
            None,
            None,
        ) {
            Ok(b) => b,
            Err(e) => return Err(LabError::setup(format!("{dut}: {e}"))),
        };
        let watched: Vec<(String, String)> = bed
            .ports
            .iter()
            .flat_map(|(a, b)| [("in".to_string(), a.clone()), ("out".to_string(), b.clone())])
            .collect();
        obs.event(Event::Watch {
            system: dut,
            ports: &watched,
        });
        let mut insert_rate = None;
        if let Some(addr) = of_addr {
            let mut c = match OfClient::connect(addr) {
                Ok(c) => c,
                Err(e) => return Err(LabError::setup(format!("{dut}: {e}"))),
            };
            // Insertion rate: flow_mods distinct rules, then removed again.
            let mods = filler_rules(flow_mods, 0x0080_0000, 2);
            match c.install(&mods) {
                Ok(ofconn::blocking::Installed { seconds: s, errors }) => {
                    insert_rate = Some(flow_mods as f64 / s);
                    let v = json!({"dut": dut, "test": "flow_mod_insertion", "flow_mods": flow_mods, "seconds": s, "errors": errors, "per_s": flow_mods as f64 / s});
                    let _ = writeln!(samples, "{v}");
                    obs.event(Event::Line(&format!(
                        "{dut}: {flow_mods} FLOW_MODs in {s:.2} s ({:.0}/s, {errors} errors)",
                        flow_mods as f64 / s
                    )));
                }
                Err(e) => return Err(LabError::setup(format!("{dut}: flow mods: {e}"))),
            }
            let mut del = ofwire::v13::FlowMod::add(100);
            del.command = ofwire::v13::FlowModCommand::Delete;
            del.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0800)]);
            if let Err(e) = c.install(&[del]) {
                return Err(LabError::setup(format!("{dut}: removing the timed rules: {e}")));
            }
        }
        // Let ARP and IPv6 chatter (and the timed FLOW_MODs' removal)
        // settle before counting.
        std::thread::sleep(if of_addr.is_some() {
            settle
        } else {
            Duration::from_millis(300)
        });
        let mut installed = 0usize;
        let plan: Vec<(usize, usize)> = (0..cfg.rounds.max(1))
            .flat_map(|round| rule_counts.iter().map(move |&extra| (round, extra)))
            .collect();
        for (round, extra) in plan {
            if extra < installed {
                if let Some(addr) = of_addr {
                    if let Err(e) = OfClient::connect(addr).and_then(|mut c| c.install(&[remove_filler()])) {
                        return Err(LabError::setup(format!("{dut}: emptying the table: {e}")));
                    }
                    installed = 0;
                    std::thread::sleep(settle);
                }
            }
            if extra > installed {
                // A fresh connection: one left idle through the trials may
                // have been dropped for an unanswered echo.
                if let Some(addr) = of_addr {
                    let t = Instant::now();
                    let filled = OfClient::connect(addr)
                        .and_then(|mut c| c.install(&filler_rules(extra - installed, installed as u32, 2)));
                    if let Err(e) = filled {
                        return Err(LabError::setup(format!("{dut}: filling the table: {e}")));
                    }
                    obs.event(Event::Line(&format!(
                        "{dut}: {extra} extra rules in the table ({:.1} s)",
                        t.elapsed().as_secs_f64()
                    )));
                    installed = extra;
                    std::thread::sleep(settle);
                }
            }
            let (max, max_host) = match observed_trial(obs, dut, "flat_out", &bed, cfg.frame, None, seconds) {
                Ok(t) => t,
                Err(e) => return Err(LabError::setup(format!("{dut}: {e}"))),
            };
            let stats = |addr: Option<std::net::SocketAddr>| {
                addr.and_then(|a| OfClient::connect(a).ok())
                    .and_then(|mut c| c.port_stats().ok())
                    .map(|v| {
                        v.iter()
                            .map(|p| {
                                let c = &p.counters;
                                json!({"port": p.port_no, "rx": c.rx_packets, "tx": c.tx_packets,
                                    "rx_dropped": c.rx_dropped, "tx_dropped": c.tx_dropped})
                            })
                            .collect::<Vec<_>>()
                    })
            };
            let mut record = |kind: &str, t: &Trial, host: &crate::host::HostLoad| {
                let bound = crate::host::Bound::of("frame", host.demands(t.received as f64), None);
                let v = json!({"switch_ports": stats(of_addr),"dut": dut, "rules": extra, "round": round, "test": kind, "frame": cfg.frame, "seconds": seconds,
                    "offered_pps": t.offered_pps, "sent": t.sent, "received": t.received, "rx_pps": t.rx_pps,
                    "latency_us_p50": t.latency_us_p50, "latency_us_p99": t.latency_us_p99,
                    "receiver_drops": t.receiver_drops, "received_via": t.rx.via,
                    "host_bound": host.host_bound, "host": host, "bound": bound});
                let _ = writeln!(samples, "{v}");
                let _ = samples.flush();
                if let Some(r) = &host.reason {
                    host_bound.push((dut.clone(), format!("{kind}, {extra} rules: {r}")));
                }
            };
            record("max", &max, &max_host);
            // Zero-loss search between nothing and what the generator can
            // offer (RFC 2544's search, without its long confirmation).
            let mut paced = Paced {
                bed: &bed,
                frame: cfg.frame,
                record: &mut record,
                dut,
                obs,
            };
            let best = crate::method::rfc2544::loss_free_search(&mut paced, &max, resolution, seconds)
                .map_err(|e| LabError::setup(format!("{dut}: {e}")))?
                .trial;
            let tcp = if !cfg.tcp {
                None
            } else {
                // A failed TCP trial (Open vSwitch's AF_XDP ports drop
                // checksum-offloaded segments) is a result too: on record
                // with its reason, "-" in the summary.
                let outcome = iperf(&bed, seconds.max(2.0));
                let v = match &outcome {
                    Ok(g) => json!({"dut": dut, "rules": extra, "round": round, "test": "tcp", "gbit_s": g}),
                    Err(e) => {
                        obs.event(Event::Line(&format!("{dut}: the TCP trial failed: {e}")));
                        json!({"dut": dut, "rules": extra, "round": round, "test": "tcp", "error": e.to_string()})
                    }
                };
                let _ = writeln!(samples, "{v}");
                outcome.ok()
            };
            let row = json!({
                "dut": dut, "rules": extra, "round": round,
                "max_rx_pps": max.rx_pps, "generator_pps": max.offered_pps,
                "zero_loss_pps": best.as_ref().map(|b| b.offered_pps).unwrap_or(0.0),
                "latency_us_p50": best.as_ref().map(|b| b.latency_us_p50),
                "tcp_gbit_s": tcp, "flow_mods_per_s": insert_rate,
            });
            obs.event(Event::Line(&row.to_string()));
            let values = [
                "max_rx_pps",
                "zero_loss_pps",
                "latency_us_p50",
                "tcp_gbit_s",
                "flow_mods_per_s",
            ]
            .into_iter()
            .filter_map(|k| Some((k, row[k].as_f64()?)));
            run.sample(
                &Sample::trial(format!("{dut}, {extra} extra rules"), round as u32, values)
                    .under_test(dut.clone(), format!("{extra} extra rules")),
            )?;
            rows.push(row);
        }
        drop(bed);
    }
    // One line per switch and rule count: the median of its rounds.
    let mut table = String::from(
        "| switch | extra rules | rounds | generator pps | max received pps | zero-loss pps | zero-loss, % of veth pair | zero-loss, % of xdp-patch | zero-loss, x OVS's best | p50 latency at zero loss (µs) | TCP Gbit/s | FLOW_MOD/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let median = |group: &[&serde_json::Value], key: &str| -> Option<f64> {
        let v: Vec<f64> = group.iter().filter_map(|r| r[key].as_f64()).collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    let num = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in &rows {
        let k = (
            r["dut"].as_str().unwrap_or("").to_string(),
            r["rules"].as_u64().unwrap_or(0),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let group_of = |dut: &str, extra: u64| -> Vec<&serde_json::Value> {
        rows.iter()
            .filter(|r| r["dut"] == dut && r["rules"].as_u64() == Some(extra))
            .collect()
    };
    // The two references of this run, when they ran: the bare pair (no
    // hop) and the XDP patch (the cheapest hop).
    let reference = |dut: &str| median(&group_of(dut, 0), "zero_loss_pps").filter(|&r| r > 0.0);
    let (veth_rate, patch_rate) = (reference("veth"), reference("xdp-patch"));
    let share = |rate: Option<f64>, of: Option<f64>| num(rate.zip(of).map(|(r, of)| 100.0 * r / of), 1);
    // Open vSwitch's best zero-loss rate in this run, over its port kinds
    // and rule counts (issue 7's yardstick).
    let ovs_best = keys
        .iter()
        .filter(|(dut, _)| dut.starts_with("ovs"))
        .filter_map(|(dut, extra)| median(&group_of(dut, *extra), "zero_loss_pps"))
        .reduce(f64::max)
        .filter(|&r| r > 0.0);
    for (dut, extra) in keys {
        let group = group_of(&dut, extra);
        let zero_loss = median(&group, "zero_loss_pps");
        table.push_str(&format!(
            "| {dut} | {extra} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            group.len(),
            num(median(&group, "generator_pps"), 0),
            num(median(&group, "max_rx_pps"), 0),
            num(zero_loss, 0),
            share(zero_loss, veth_rate),
            share(zero_loss, patch_rate),
            num(zero_loss.zip(ovs_best).map(|(r, best)| r / best), 2),
            num(median(&group, "latency_us_p50"), 0),
            num(median(&group, "tcp_gbit_s"), 2),
            num(median(&group, "flow_mods_per_s"), 0),
        ));
    }
    std::fs::write(dir.join("summary.md"), &table).map_err(crate::rundir::io_error(&dir))?;
    for dut in &cfg.duts {
        let mine: Vec<&String> = host_bound.iter().filter(|(d, _)| d == dut).map(|(_, r)| r).collect();
        if let Some(first) = mine.first() {
            let line = format!(
                "{dut}: {} trials were host-bound (a core of the measured path saturated: the figure says as much about this host as about the switch); the first: {first}",
                mine.len()
            );
            obs.event(Event::Line(&line));
            run.meta.events.push(line);
        }
    }
    run.finish()?;
    let trials = samples_path.display().to_string();
    let report_path = dir.join("report.html").display().to_string();
    Ok(Outcome {
        table: format!("{table}\ntrials: {trials}\nreport: {report_path}\n"),
        json: json!({"dir": dir, "rows": rows, "trials": trials, "report": report_path}),
        dir,
        incomplete: 0,
    })
}
