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
pub use bed::Dut;
use bed::{filler_rules, iperf, open_bed, remove_filler, trial, BedError, OfClient, Trial};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use serde_json::json;
use stats::Better;
use std::io::Write;
use std::time::{Duration, Instant};
use traffic::run::{GenMethod, RecvMethod};

/// The switch forwarding benchmark. The defaults compare every switch
/// kind at 64-byte frames, 2 s trials, with 0 and 1,000,000 extra rules.
/// Its fields are `sdnlab bench switch`'s flags too (the command line
/// flattens them): each declared once, with its default and help.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct SwitchConfig {
    /// Switches under test, comma-separated: sdnlab (AF_PACKET ports),
    /// sdnlab-afxdp (AF_XDP ports), sdnlab-fastpath (AF_XDP ports with the
    /// in-kernel fast path), ovs (system ports), ovs-afxdp, bridge,
    /// xdp-patch (not a switch: every frame redirected to the other port
    /// by XDP, the floor of a hop in the kernel), veth (no hop).
    #[arg(long = "dut", value_name = "DUT", value_delimiter = ',', default_values_t = SwitchConfig::default().duts)]
    pub duts: Vec<Dut>,
    /// Frame size in bytes, FCS included (64 is RFC 2544's smallest).
    #[arg(long, default_value_t = SwitchConfig::default().frame)]
    pub frame: usize,
    /// Seconds per trial.
    #[arg(long, default_value_t = SwitchConfig::default().seconds)]
    pub seconds: f64,
    /// Extra non-matching rules installed before measuring, comma-separated
    /// (OpenFlow switches).
    #[arg(long, value_delimiter = ',', default_values_t = SwitchConfig::default().rules)]
    pub rules: Vec<usize>,
    /// FLOW_MODs sent to time insertion (OpenFlow switches).
    #[arg(long, default_value_t = SwitchConfig::default().flow_mods)]
    pub flow_mods: usize,
    /// The zero-loss search stops when the bracket is this fraction of the rate.
    #[arg(long, default_value_t = SwitchConfig::default().resolution)]
    pub resolution: f64,
    /// Rounds: each measures every extra-rules count in turn (the table
    /// filled and emptied again between them), so 0 and 1,000,000 rules
    /// are compared in alternation; the summary gives the median of the rounds.
    #[arg(long, default_value_t = SwitchConfig::default().rounds)]
    pub rounds: usize,
    /// The iperf3 TCP trial (`--no-tcp` leaves it out).
    #[arg(long = "no-tcp", action = clap::ArgAction::SetFalse, help = "Skip the iperf3 TCP trial")]
    pub tcp: bool,
    /// How test frames are sent: xdp (an XDP program in live-frame mode
    /// transmits them from inside the kernel; GRO is turned on at the veth
    /// that receives them, for every switch alike) or afpacket (an
    /// AF_PACKET socket, sendmmsg).
    #[arg(long, default_value = "xdp")]
    pub generator: GenMethod,
    /// How the receiving host takes test frames: xdp (an XDP program hands
    /// them to an AF_XDP socket, no socket buffer; frames it cannot take
    /// reach an AF_PACKET ring) or afpacket (an AF_PACKET ring only, every
    /// frame through the stack).
    #[arg(long, default_value = "xdp")]
    pub receiver: RecvMethod,
    /// A smoke run: short trials, a coarse search, 10,000 extra rules.
    #[arg(long)]
    pub quick: bool,
}

impl Default for SwitchConfig {
    fn default() -> SwitchConfig {
        SwitchConfig {
            // Every switch but the XDP patch, a reference asked for by name.
            duts: Dut::ALL.iter().copied().filter(|d| *d != Dut::XdpPatch).collect(),
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

/// The durations and counts of a run, `--quick` applied.
struct Plan {
    seconds: f64,
    resolution: f64,
    rules: Vec<usize>,
    flow_mods: usize,
    /// The pause after a big table change (see `plan`).
    settle: Duration,
}

fn plan(cfg: &SwitchConfig) -> Plan {
    let quick = cfg.quick;
    Plan {
        seconds: if quick { cfg.seconds.min(0.5) } else { cfg.seconds },
        resolution: if quick { cfg.resolution.max(0.1) } else { cfg.resolution },
        rules: if quick {
            cfg.rules.iter().map(|&r| r.min(10_000)).collect()
        } else {
            cfg.rules.clone()
        },
        flow_mods: if quick {
            cfg.flow_mods.min(10_000)
        } else {
            cfg.flow_mods
        },
        // After a big table change a switch may still be digesting it when
        // the next trial starts: Open vSwitch revalidates its datapath
        // flows in threads that share the switch's core with its packet
        // thread. Every switch gets the same pause before it is measured.
        settle: Duration::from_secs_f64(if quick { 0.3 } else { 3.0 }),
    }
}

/// `trials.jsonl`: every trial as it ends. A write that fails is kept
/// and returned at the round's end (the trials' callbacks cannot return it).
struct TrialLog {
    file: std::fs::File,
    path: std::path::PathBuf,
    error: Option<LabError>,
    /// Host-bound trials (see `crate::host`): the switch and why, for the
    /// run's events.
    host_bound: Vec<(String, String)>,
}

impl TrialLog {
    fn write(&mut self, v: &serde_json::Value) {
        if let Err(e) = writeln!(self.file, "{v}").and_then(|_| self.file.flush()) {
            self.error.get_or_insert(crate::rundir::io_error(&self.path)(e));
        }
    }

    fn check(&mut self) -> Result<(), LabError> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// Runs the benchmark into `place`.
pub fn run(cfg: &SwitchConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    cfg.validate()?;
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::setup(
            "bench switch needs root (network namespaces, AF_PACKET)",
        ));
    }
    let p = plan(cfg);
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
                name: d.name().to_string(),
                version: bed::dut_version(d.name()),
                ..Target::default()
            })
            .collect(),
        parameters: json!({
            "frame": cfg.frame, "seconds": p.seconds, "rules": p.rules, "flow_mods": p.flow_mods, "rounds": cfg.rounds,
            "resolution": p.resolution, "tcp": cfg.tcp, "generator": cfg.generator, "receiver": cfg.receiver,
            "settle_s_after_table_changes": p.settle.as_secs_f64(),
            "pinning": "generator and receiver on core 0, the switch process on the last core (OVS: pmd-cpu-mask too); kernel switches (bridge, xdp-patch, veth) where the kernel runs them",
        }),
        metrics: metrics(),
        ..crate::rundir::started(&run_id)
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Switch(cfg.clone()), &place.stop)?;
    // Every trial as it ends; the report's samples are one per switch,
    // rule count and round.
    let samples_path = dir.join("trials.jsonl");
    let mut log = TrialLog {
        file: std::fs::File::create(&samples_path).map_err(crate::rundir::io_error(&samples_path))?,
        path: samples_path.clone(),
        error: None,
        host_bound: Vec::new(),
    };
    let mut rows: Vec<serde_json::Value> = Vec::new();
    for &d in &cfg.duts {
        let dut = d.name();
        let rule_counts: Vec<usize> = if d.openflow() { p.rules.clone() } else { vec![0] };
        let links = bed::Links {
            generator: cfg.generator,
            receiver: cfg.receiver,
            mtu: None,
            stop: place.stop.clone(),
        };
        let (bed, of_addr) =
            open_bed(dut, &dir, links, None, None).map_err(|e| LabError::setup(format!("{dut}: {e}")))?;
        let watched: Vec<(String, String)> = bed
            .ports
            .iter()
            .flat_map(|(a, b)| [("in".to_string(), a.clone()), ("out".to_string(), b.clone())])
            .collect();
        obs.event(Event::Watch {
            system: dut,
            ports: &watched,
        });
        let mut on = OnSwitch {
            cfg,
            p: &p,
            dut,
            bed: &bed,
            of_addr,
            obs,
            insert_rate: None,
            installed: 0,
        };
        if let Some(addr) = of_addr {
            on.insertion_rate(addr, &mut log)?;
        }
        // Let ARP and IPv6 chatter (and the timed FLOW_MODs' removal)
        // settle before counting.
        std::thread::sleep(if of_addr.is_some() {
            p.settle
        } else {
            Duration::from_millis(300)
        });
        for round in 0..cfg.rounds.max(1) {
            for &extra in &rule_counts {
                on.fill_table(extra)?;
                let row = on.round(round, extra, &mut log)?;
                log.check()?;
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
                        .under_test(dut, format!("{extra} extra rules")),
                )?;
                rows.push(row);
            }
        }
        drop(bed);
    }
    let table = summary_table(&rows);
    let summary_path = dir.join("summary.md");
    std::fs::write(&summary_path, &table).map_err(crate::rundir::io_error(&summary_path))?;
    for dut in cfg.duts.iter().map(|d| d.name()) {
        let mine: Vec<&String> = log
            .host_bound
            .iter()
            .filter(|(d, _)| d == dut)
            .map(|(_, r)| r)
            .collect();
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

/// One switch under test on its bed: the rules in its table so far, and
/// its FLOW_MOD insertion rate once timed.
struct OnSwitch<'a> {
    cfg: &'a SwitchConfig,
    p: &'a Plan,
    dut: &'a str,
    bed: &'a bed::Bed,
    of_addr: Option<std::net::SocketAddr>,
    obs: &'a dyn Observer,
    insert_rate: Option<f64>,
    installed: usize,
}

impl OnSwitch<'_> {
    /// The insertion rate: `flow_mods` distinct rules, timed to the
    /// barrier's reply, then removed again.
    fn insertion_rate(&mut self, addr: std::net::SocketAddr, log: &mut TrialLog) -> Result<(), LabError> {
        let (dut, flow_mods) = (self.dut, self.p.flow_mods);
        let mut c = OfClient::connect(addr).map_err(|e| LabError::setup(format!("{dut}: {e}")))?;
        let mods = filler_rules(flow_mods, 0x0080_0000, 2);
        let ofconn::blocking::Installed { seconds: s, errors } = c
            .install(&mods)
            .map_err(|e| LabError::setup(format!("{dut}: flow mods: {e}")))?;
        self.insert_rate = Some(flow_mods as f64 / s);
        log.write(
            &json!({"dut": dut, "test": "flow_mod_insertion", "flow_mods": flow_mods, "seconds": s, "errors": errors, "per_s": flow_mods as f64 / s}),
        );
        self.obs.event(Event::Line(&format!(
            "{dut}: {flow_mods} FLOW_MODs in {s:.2} s ({:.0}/s, {errors} errors)",
            flow_mods as f64 / s
        )));
        let mut del = ofwire::v13::FlowMod::add(100);
        del.command = ofwire::v13::FlowModCommand::Delete;
        del.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0800)]);
        c.install(&[del])
            .map_err(|e| LabError::setup(format!("{dut}: removing the timed rules: {e}")))?;
        log.check()
    }

    /// `extra` rules in the table: emptied first when it holds more, then
    /// filled up, each change followed by the settling pause.
    fn fill_table(&mut self, extra: usize) -> Result<(), LabError> {
        let (dut, installed) = (self.dut, self.installed);
        let Some(addr) = self.of_addr else {
            return Ok(());
        };
        if extra < installed {
            OfClient::connect(addr)
                .and_then(|mut c| c.install(&[remove_filler()]))
                .map_err(|e| LabError::setup(format!("{dut}: emptying the table: {e}")))?;
            self.installed = 0;
            std::thread::sleep(self.p.settle);
        }
        if extra > self.installed {
            // A fresh connection: one left idle through the trials may
            // have been dropped for an unanswered echo.
            let t = Instant::now();
            OfClient::connect(addr)
                .and_then(|mut c| c.install(&filler_rules(extra - self.installed, self.installed as u32, 2)))
                .map_err(|e| LabError::setup(format!("{dut}: filling the table: {e}")))?;
            self.obs.event(Event::Line(&format!(
                "{dut}: {extra} extra rules in the table ({:.1} s)",
                t.elapsed().as_secs_f64()
            )));
            self.installed = extra;
            std::thread::sleep(self.p.settle);
        }
        Ok(())
    }

    /// One round at one rule count: flat out, the zero-loss search, the
    /// TCP trial; every trial logged as it ends. The round's row.
    fn round(&self, round: usize, extra: usize, log: &mut TrialLog) -> Result<serde_json::Value, LabError> {
        let OnSwitch {
            cfg, p, dut, bed, obs, ..
        } = *self;
        let of_addr = self.of_addr;
        let (max, max_host) = observed_trial(obs, dut, "flat_out", bed, cfg.frame, None, p.seconds)
            .map_err(|e| LabError::setup(format!("{dut}: {e}")))?;
        let mut record = |kind: &str, t: &Trial, host: &crate::host::HostLoad| {
            let bound = crate::host::Bound::of("frame", host.demands(t.received as f64), None);
            let v = json!({"switch_ports": port_stats(of_addr),"dut": dut, "rules": extra, "round": round, "test": kind, "frame": cfg.frame, "seconds": p.seconds,
                "offered_pps": t.offered_pps, "sent": t.sent, "received": t.received, "rx_pps": t.rx_pps,
                "latency_us_p50": t.latency_us_p50, "latency_us_p99": t.latency_us_p99,
                "receiver_drops": t.receiver_drops, "received_via": t.rx.via,
                "host_bound": host.host_bound, "host": host, "bound": bound});
            log.write(&v);
            if let Some(r) = &host.reason {
                log.host_bound
                    .push((dut.to_string(), format!("{kind}, {extra} rules: {r}")));
            }
        };
        record("max", &max, &max_host);
        // Zero-loss search between nothing and what the generator can
        // offer (RFC 2544's search, without its long confirmation).
        let mut paced = Paced {
            bed,
            frame: cfg.frame,
            record: &mut record,
            dut,
            obs,
        };
        let best = crate::method::rfc2544::loss_free_search(&mut paced, &max, p.resolution, p.seconds)
            .map_err(|e| LabError::setup(format!("{dut}: {e}")))?
            .trial;
        let tcp = if !cfg.tcp {
            None
        } else {
            // A failed TCP trial (Open vSwitch's AF_XDP ports drop
            // checksum-offloaded segments) is a result too: on record
            // with its reason, "-" in the summary.
            let outcome = iperf(bed, p.seconds.max(2.0));
            let v = match &outcome {
                Ok(g) => json!({"dut": dut, "rules": extra, "round": round, "test": "tcp", "gbit_s": g}),
                Err(e) => {
                    obs.event(Event::Line(&format!("{dut}: the TCP trial failed: {e}")));
                    json!({"dut": dut, "rules": extra, "round": round, "test": "tcp", "error": e.to_string()})
                }
            };
            log.write(&v);
            outcome.ok()
        };
        let row = json!({
            "dut": dut, "rules": extra, "round": round,
            "max_rx_pps": max.rx_pps, "generator_pps": max.offered_pps,
            "zero_loss_pps": best.as_ref().map(|b| b.offered_pps).unwrap_or(0.0),
            "latency_us_p50": best.as_ref().map(|b| b.latency_us_p50),
            "tcp_gbit_s": tcp, "flow_mods_per_s": self.insert_rate,
        });
        obs.event(Event::Line(&row.to_string()));
        Ok(row)
    }
}

/// The switch's own port counters (OpenFlow port statistics), if it has
/// an OpenFlow address and answers.
fn port_stats(addr: Option<std::net::SocketAddr>) -> Option<Vec<serde_json::Value>> {
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
}

/// The summary: one line per switch and rule count, the median of its
/// rounds, set against the run's references (the bare veth pair, the XDP
/// patch, Open vSwitch's best).
fn summary_table(rows: &[serde_json::Value]) -> String {
    let mut table = String::from(
        "| switch | extra rules | rounds | generator pps | max received pps | zero-loss pps | zero-loss, % of veth pair | zero-loss, % of xdp-patch | zero-loss, x OVS's best | p50 latency at zero loss (µs) | TCP Gbit/s | FLOW_MOD/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let median = |group: &[&serde_json::Value], key: &str| -> Option<f64> {
        let v: Vec<f64> = group.iter().filter_map(|r| r[key].as_f64()).collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    let num = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let mut keys: Vec<(String, u64)> = Vec::new();
    for r in rows {
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
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(dut: &str, rules: u64, round: usize, zero_loss: f64) -> serde_json::Value {
        json!({"dut": dut, "rules": rules, "round": round, "max_rx_pps": 2.0 * zero_loss,
            "generator_pps": 1e6, "zero_loss_pps": zero_loss, "latency_us_p50": 10.0,
            "tcp_gbit_s": null, "flow_mods_per_s": 5000.0})
    }

    /// The cells of the summary's line for `dut` at `rules`.
    fn cells(table: &str, dut: &str, rules: u64) -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("| {dut} | {rules} |")))
            .unwrap_or_else(|| panic!("no line for {dut} at {rules} rules in\n{table}"));
        line.split('|').map(|c| c.trim().to_string()).collect()
    }

    #[test]
    fn the_summary_gives_each_switchs_median_against_the_runs_references() {
        let rows = [
            row("veth", 0, 0, 1000.0),
            row("xdp-patch", 0, 0, 500.0),
            row("ovs", 0, 0, 260.0),
            row("ovs", 1000, 0, 325.0),
            row("sdnlab", 0, 0, 500.0),
            row("sdnlab", 0, 1, 700.0),
            row("sdnlab", 0, 2, 650.0),
        ];
        let t = summary_table(&rows);
        // One line per switch and rule count, in the order they ran.
        let order: Vec<&str> = t.lines().skip(2).map(|l| l.split('|').nth(1).unwrap().trim()).collect();
        assert_eq!(order, ["veth", "xdp-patch", "ovs", "ovs", "sdnlab"]);
        let c = cells(&t, "sdnlab", 0);
        assert_eq!(c[3], "3", "rounds");
        assert_eq!(c[6], "650", "the median of the rounds' zero-loss rates");
        assert_eq!(c[7], "65.0", "% of the bare veth pair");
        assert_eq!(c[8], "130.0", "% of the XDP patch");
        assert_eq!(c[9], "2.00", "x Open vSwitch's best (over its rule counts)");
        assert_eq!(c[11], "-", "no TCP trial: a dash, not a zero");
        assert_eq!(cells(&t, "ovs", 1000)[9], "1.00");
    }

    /// A switch's name is one and the same on the command line, in a file
    /// and on the bed.
    #[test]
    fn every_switch_has_one_name() {
        for &d in Dut::ALL {
            let flag = clap::ValueEnum::to_possible_value(&d).unwrap();
            assert_eq!(flag.get_name(), d.name());
            assert_eq!(serde_json::to_value(d).unwrap(), d.name());
            assert_eq!(d.to_string(), d.name());
        }
    }

    #[test]
    fn a_quick_run_shortens_every_trial_and_caps_the_tables() {
        let full = plan(&SwitchConfig::default());
        assert_eq!(full.rules, vec![0, 1_000_000]);
        assert_eq!(full.settle, Duration::from_secs(3));
        let q = plan(&SwitchConfig {
            quick: true,
            ..SwitchConfig::default()
        });
        assert_eq!((q.seconds, q.resolution, q.flow_mods), (0.5, 0.1, 10_000));
        assert_eq!(q.rules, vec![0, 10_000]);
        assert!(q.settle < full.settle);
    }

    #[test]
    fn a_trial_that_cannot_be_written_is_an_error_of_the_round_not_a_loss() {
        let t = netlab::private::temp_dir("sdnlab-switch-test-").unwrap();
        let path = t.path().join("trials.jsonl");
        std::fs::write(&path, "").unwrap();
        // Opened for reading only: every write fails.
        let mut log = TrialLog {
            file: std::fs::File::open(&path).unwrap(),
            path: path.clone(),
            error: None,
            host_bound: Vec::new(),
        };
        log.write(&json!({"test": "max"}));
        log.write(&json!({"test": "tcp"}));
        let e = log.check().expect_err("the failed write is returned");
        assert!(e.to_string().contains("trials.jsonl"), "{e}");
        assert!(log.check().is_ok(), "said once");
    }
}
