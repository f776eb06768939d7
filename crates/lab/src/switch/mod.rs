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
//! `trials.jsonl` as it ends, by the runner `bench dp` uses too
//! (`bed::runner`).
//!
//! The two hosts are namespaces of this run (prefix `sbsw`); everything is
//! removed at the end, on error too. The test bed is `bed`, shared with
//! the data-path benchmark (`crate::dp`).

pub mod bed;

use crate::check::{at_least_one, range, real};
use crate::rundir::Place;
use crate::{Event, Experiment, LabError, Observer, Outcome};
use bed::runner::{AtFrame, Runner, TrialBed, TrialLog};
pub use bed::Dut;
use bed::{filler_rules, on_dut, open_bed, remove_filler, OfClient};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use serde_json::json;
use stats::Better;
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
        at_least_one("dut", &self.duts, "switch")?;
        range("frame", self.frame, 64, 1518)?;
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
                version: bed::dut_version(*d),
                ..Target::named(d.name())
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
    let mut log = TrialLog::create(&samples_path)?;
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
        let (bed, of_addr) = open_bed(bed::OnBed::Started(d), &dir, links, None).map_err(on_dut(dut))?;
        let watched: Vec<(String, String)> = bed
            .ports
            .iter()
            .flat_map(|(a, b)| [("in".to_string(), a.clone()), ("out".to_string(), b.clone())])
            .collect();
        obs.event(Event::Watch {
            system: dut,
            ports: &watched,
        });
        let mut r = Runner::new(&bed, dut, of_addr, &mut log, &mut run, obs);
        let mut on = OnSwitch {
            p: &p,
            dut,
            of_addr,
            obs,
            insert_rate: None,
            installed: 0,
        };
        if let Some(addr) = of_addr {
            on.insertion_rate(addr, &mut r)?;
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
                r.context = json!({"rules": extra, "round": round})
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let row = measure(cfg, &p, &mut r, on.insert_rate)?;
                let values = [
                    "max_rx_pps",
                    "zero_loss_pps",
                    "latency_us_p50",
                    "tcp_gbit_s",
                    "flow_mods_per_s",
                ]
                .into_iter()
                .filter_map(|k| Some((k, row[k].as_f64()?)));
                r.run.sample(
                    &Sample::trial(format!("{dut}, {extra} extra rules"), round as u32, values)
                        .under_test(dut, format!("{extra} extra rules")),
                )?;
                rows.push(row);
            }
        }
        r.close();
        drop(bed);
    }
    let table = summary_table(&rows);
    let summary_path = dir.join("summary.md");
    std::fs::write(&summary_path, &table).map_err(crate::rundir::io_error(&summary_path))?;
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
    p: &'a Plan,
    dut: &'a str,
    of_addr: Option<std::net::SocketAddr>,
    obs: &'a dyn Observer,
    insert_rate: Option<f64>,
    installed: usize,
}

impl OnSwitch<'_> {
    /// The insertion rate: `flow_mods` distinct rules, timed to the
    /// barrier's reply, then removed again.
    fn insertion_rate(&mut self, addr: std::net::SocketAddr, r: &mut Runner) -> Result<(), LabError> {
        let (dut, flow_mods) = (self.dut, self.p.flow_mods);
        let mut c = OfClient::connect(addr).map_err(on_dut(dut))?;
        let mods = filler_rules(flow_mods, 0x0080_0000, 2);
        let ofconn::blocking::Installed { seconds: s, errors } = c
            .install(&mods)
            .map_err(|e| LabError::setup(format!("{dut}: flow mods: {e}")))?;
        self.insert_rate = Some(flow_mods as f64 / s);
        r.record(
            json!({"test": "flow_mod_insertion", "flow_mods": flow_mods, "seconds": s, "errors": errors, "per_s": flow_mods as f64 / s}),
        )
        .map_err(on_dut(dut))?;
        self.obs.event(Event::Line(&format!(
            "{dut}: {flow_mods} FLOW_MODs in {s:.2} s ({:.0}/s, {errors} errors)",
            flow_mods as f64 / s
        )));
        let mut del = ofwire::v13::FlowMod::add(100);
        del.command = ofwire::v13::FlowModCommand::Delete;
        del.match_ = ofwire::oxm::Match::new(vec![ofwire::oxm::Oxm::EthType(0x0800)]);
        c.install(&[del])
            .map_err(|e| LabError::setup(format!("{dut}: removing the timed rules: {e}")))?;
        Ok(())
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
}

/// One round at one rule count on the runner's switch: flat out, the
/// zero-loss search, the TCP trial; every trial recorded as it ends. The
/// round's row.
fn measure<B: TrialBed>(
    cfg: &SwitchConfig,
    p: &Plan,
    r: &mut Runner<'_, B>,
    insert_rate: Option<f64>,
) -> Result<serde_json::Value, LabError> {
    let dut = r.dut;
    let max = r.run("flat_out", cfg.frame, None, p.seconds).map_err(on_dut(dut))?;
    // Zero-loss search between nothing and what the generator can offer
    // (RFC 2544's search, without its long confirmation).
    let best = crate::method::rfc2544::loss_free_search(
        &mut AtFrame {
            r: &mut *r,
            frame: cfg.frame,
        },
        &max,
        p.resolution,
        p.seconds,
    )
    .map_err(on_dut(dut))?
    .trial;
    let tcp = if !cfg.tcp {
        None
    } else {
        // A failed TCP trial (Open vSwitch's AF_XDP ports drop
        // checksum-offloaded segments) is a result too: on record with
        // its reason, "-" in the summary.
        match r.tcp(p.seconds.max(2.0)) {
            Ok(g) => Some(g),
            Err(e) => {
                r.obs.event(Event::Line(&format!("{dut}: the TCP trial failed: {e}")));
                None
            }
        }
    };
    let row = json!({
        "dut": dut, "rules": r.context.get("rules"), "round": r.context.get("round"),
        "max_rx_pps": max.rx_pps, "generator_pps": max.offered_pps,
        "zero_loss_pps": best.as_ref().map(|b| b.offered_pps).unwrap_or(0.0),
        "latency_us_p50": best.as_ref().map(|b| b.latency_us_p50),
        "tcp_gbit_s": tcp, "flow_mods_per_s": insert_rate,
    });
    r.obs.event(Event::Line(&row.to_string()));
    Ok(row)
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

    /// A round on a switch in memory: flat out, then the search, whose
    /// rate is the switch's within the resolution; each trial on record
    /// with the round's rules and number; the row from them.
    #[test]
    fn a_round_finds_the_switchs_zero_loss_rate_and_records_every_trial() {
        use bed::runner::fake::{records, scratch_run, FakeSwitch};
        let (dir, mut run, mut log) = scratch_run();
        let mut sw = FakeSwitch::new(300_000.0, 1_000_000.0);
        // The second trial (the search's first) is invalid: run again.
        sw.receiver_drops_at = vec![1];
        let cfg = SwitchConfig {
            seconds: 0.5,
            ..SwitchConfig::default()
        };
        let p = plan(&cfg);
        let mut r = Runner::new(&sw, "fake", None, &mut log, &mut run, &crate::observe::Quiet);
        r.context = json!({"rules": 1000, "round": 2}).as_object().cloned().unwrap();
        let row = measure(&cfg, &p, &mut r, Some(5000.0)).unwrap();
        drop(r);
        let zero_loss = row["zero_loss_pps"].as_f64().unwrap();
        assert!(
            (300_000.0 * (1.0 - cfg.resolution)..=302_000.0).contains(&zero_loss),
            "{row}"
        );
        assert_eq!(row["generator_pps"], 1_000_000.0);
        assert_eq!((row["rules"].as_u64(), row["round"].as_u64()), (Some(1000), Some(2)));
        assert_eq!(row["flow_mods_per_s"], 5000.0);
        assert_eq!(row["tcp_gbit_s"], 300_000.0 * 1500.0 * 8.0 / 1e9);
        let recs = records(dir.path());
        let tests: Vec<&str> = recs.iter().map(|v| v["test"].as_str().unwrap()).collect();
        assert_eq!(tests[0], "flat_out");
        assert_eq!(
            tests[1..3],
            ["throughput_search", "throughput_search"],
            "the invalid one run again"
        );
        assert_eq!(recs[1]["asked_pps"], recs[2]["asked_pps"]);
        assert_eq!(tests.last(), Some(&"tcp"));
        assert!(recs
            .iter()
            .all(|v| v["rules"] == 1000 && v["round"] == 2 && v["dut"] == "fake"));
        // The search's row is its best loss-free trial, on record.
        assert!(recs.iter().any(|v| v["offered_pps"] == zero_loss && v["lost"] == 0));
    }
}
