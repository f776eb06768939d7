//! One switch's trials in `bench dp`: the plan (every duration and count,
//! resolved), and the runner that runs a trial on the bed, repeats an
//! invalid one once, and writes each to `trials.jsonl` as it ends, with
//! the switch core's CPU shares and its OpenFlow port counters. Shared by
//! the RFC 2544 tests (`super`) and the OpenFlow scenarios (`scenarios`).

use crate::switch::bed::{load, run_trial, Bed, BedError, CpuSampler, OfClient, Trial};
use report::Sample;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use traffic::run::GenSpec;

/// The OpenFlow numbers of the switch's ports towards the generating and
/// the receiving host.
#[derive(Clone, Copy)]
pub(crate) struct Ports {
    pub(crate) inp: u32,
    pub(crate) out: u32,
}

impl Ports {
    pub(crate) fn in_port(&self) -> ofwire::oxm::Oxm {
        ofwire::oxm::Oxm::InPort(self.inp)
    }
    pub(crate) fn output(&self) -> ofwire::v13::Action {
        ofwire::v13::Action::Output {
            port: self.out,
            max_len: 0,
        }
    }
}

pub(crate) struct Plan {
    pub(crate) frames: Vec<usize>,
    pub(crate) trial_s: f64,
    pub(crate) search_s: f64,
    pub(crate) resolution: f64,
    pub(crate) latency_s: f64,
    pub(crate) repetitions: usize,
    pub(crate) b2b_repetitions: usize,
    pub(crate) b2b_s: f64,
    pub(crate) overload_s: f64,
    pub(crate) recovery_s: f64,
    pub(crate) recovery_repetitions: usize,
    pub(crate) scenario_rate: f64,
    pub(crate) scenario_s: f64,
    pub(crate) scenario_repetitions: usize,
    pub(crate) scenario_frame: usize,
    pub(crate) table_rules: usize,
    pub(crate) capacity_max: usize,
    pub(crate) iperf_s: f64,
    pub(crate) udp_mbit: Vec<f64>,
    pub(crate) long_path: usize,
    pub(crate) parallel: usize,
}

/// Runs trials on one switch and writes each to `trials.jsonl` as it ends.
pub(crate) struct Runner<'a> {
    pub(crate) bed: &'a Bed,
    pub(crate) dut: &'a str,
    pub(crate) of_addr: Option<std::net::SocketAddr>,
    pub(crate) trials: &'a mut std::fs::File,
    pub(crate) run: &'a mut crate::rundir::Run,
    /// The OpenFlow ports towards the generating and the receiving host.
    pub(crate) ports: Ports,
    /// What went wrong without stopping the run (goes to the report's events).
    pub(crate) problems: Vec<String>,
    /// Told of each trial as it starts and ends (a live view).
    pub(crate) obs: &'a dyn crate::Observer,
    /// Trials run, and why each host-bound one was (see `crate::host`).
    pub(crate) trials_run: usize,
    pub(crate) host_bound: Vec<String>,
    /// The operational bound of the last trial run (frames/s).
    pub(crate) last_bound: Option<crate::host::Bound>,
    /// Trials whose median latency is smaller than the two clocks'
    /// offset is known (ports on two workers).
    pub(crate) clock_loose: Vec<String>,
}

/// Each port's (received, sent) packets, by the switch's OpenFlow statistics.
fn port_counts(addr: Option<std::net::SocketAddr>) -> Option<BTreeMap<u32, (u64, u64)>> {
    let stats = OfClient::connect(addr?).ok()?.port_stats().ok()?;
    Some(
        stats
            .iter()
            .map(|p| (p.port_no, (p.counters.rx_packets, p.counters.tx_packets)))
            .collect(),
    )
}

impl Runner<'_> {
    /// One trial of `spec`, repeated once if invalid; recorded either way.
    pub(crate) fn run_spec(&mut self, test: &str, frame: usize, spec: &GenSpec) -> Result<Trial, BedError> {
        let (t, valid) = self.run_once(test, frame, spec, |_| Ok(()))?;
        if valid {
            return Ok(t);
        }
        Ok(self.run_once(test, frame, spec, |_| Ok(()))?.0)
    }

    /// One trial of `spec` with `during` run while the frames flow (it gets
    /// the switch's OpenFlow address); recorded; the trial and whether it
    /// is valid (the receiver dropped nothing, the generator kept the rate).
    pub(crate) fn run_once(
        &mut self,
        test: &str,
        frame: usize,
        spec: &GenSpec,
        during: impl FnOnce(Option<std::net::SocketAddr>) -> Result<(), BedError>,
    ) -> Result<(Trial, bool), BedError> {
        let rate = spec.rate_pps.filter(|_| spec.burst.is_none());
        self.obs.event(crate::Event::TrialStart {
            test,
            frame,
            offered_pps: rate,
            seconds: spec.duration.as_secs_f64(),
        });
        let before = port_counts(self.of_addr);
        let cpu = self.bed.cores.map(|(_, sw)| CpuSampler::start(sw));
        let host = crate::host::HostWatch::start(self.bed.path_processes(), crate::host::Rule::default());
        let (bed, of_addr) = (self.bed, self.of_addr);
        let (t, r) = std::thread::scope(|s| {
            let trial = s.spawn(|| run_trial(bed, spec));
            let r = during(of_addr);
            (
                trial
                    .join()
                    .unwrap_or_else(|_| Err(BedError::Refused("the trial's thread panicked".into()))),
                r,
            )
        });
        let cpu = cpu.map(CpuSampler::finish);
        let host = host.finish();
        self.trials_run += 1;
        if let Some(r) = &host.reason {
            self.host_bound.push(format!("{test} {frame} B: {r}"));
        }
        let t = t?;
        r?;
        if t.received > 0 && t.clock_uncertainty_us > t.latency_us_p50 {
            self.clock_loose.push(format!("{test} {frame} B"));
        }
        let after = port_counts(self.of_addr);
        let switch_ports = match (before, after) {
            (Some(b), Some(a)) => json!(a
                .iter()
                .map(|(port, (rx, tx))| {
                    let (rx0, tx0) = b.get(port).copied().unwrap_or_default();
                    (
                        port.to_string(),
                        json!({"rx": rx - rx0.min(*rx), "tx": tx - tx0.min(*tx)}),
                    )
                })
                .collect::<serde_json::Map<_, _>>()),
            _ => serde_json::Value::Null,
        };
        // Where the frames were lost, by the switch's own counters: before
        // it counted them in (the ingress veth or its receive ring), or
        // in it and after (its egress, the receiving veth).
        let counted = |port: u32, dir: &str| switch_ports[port.to_string()][dir].as_u64();
        let loss_split = match (counted(self.ports.inp, "rx"), counted(self.ports.out, "tx")) {
            (Some(rx_in), Some(tx_out)) => json!({
                "before_switch": t.sent as i64 - rx_in as i64,
                "in_switch": rx_in as i64 - tx_out as i64,
                "after_switch": tx_out as i64 - t.received as i64,
            }),
            _ => serde_json::Value::Null,
        };
        // The operational bound per frame: each element's CPU seconds per
        // frame received (frames in flight are not known: 1/D_max).
        let bound = crate::host::Bound::of("frame", host.demands(t.received as f64), None);
        self.last_bound = bound.clone();
        let short = rate.is_some_and(|r| t.offered_pps < 0.99 * r);
        let far_short = rate.is_some_and(|r| t.offered_pps < FAR_SHORT * r);
        let valid = t.receiver_drops == 0 && !far_short;
        let v = json!({
            "dut": self.dut, "test": test, "frame": frame, "seconds": spec.duration.as_secs_f64(),
            "asked_pps": rate, "burst": spec.burst, "offered_pps": t.offered_pps,
            "sent": t.sent, "received": t.received, "lost": t.sent.saturating_sub(t.received),
            "reordered": t.reordered, "duplicates": t.duplicates,
            "latency_us": {"min": t.latency_us_min, "mean": t.latency_us_mean, "p50": t.latency_us_p50,
                "p99": t.latency_us_p99, "p999": t.latency_us_p999, "max": t.latency_us_max},
            "receiver_drops": t.receiver_drops, "received_via": t.rx.via, "clock_uncertainty_us": t.clock_uncertainty_us, "generator_short": short, "valid": valid,
            "switch_ports": switch_ports, "loss_split": loss_split, "cpu": cpu, "generator": t.gen,
            "host_bound": host.host_bound, "host": host, "bound": bound,
            "ended_unix_s": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0),
        });
        let _ = writeln!(self.trials, "{v}");
        let _ = self.trials.flush();
        self.obs
            .event(crate::Event::TrialEnd(&t.figures(self.dut, test, frame)));
        Ok((t, valid))
    }

    pub(crate) fn run(&mut self, test: &str, frame: usize, rate: Option<f64>, seconds: f64) -> Result<Trial, BedError> {
        let spec = load(self.bed, frame, rate, seconds);
        self.run_spec(test, frame, &spec)
    }

    /// A figure of this runner's switch in `condition` ("64B", "tcp"),
    /// for the report: its statistics, and the verdicts against the other
    /// switches in the same condition.
    pub(crate) fn figure(&mut self, condition: String, trial: u32, values: &[(&str, f64)], cdf: Vec<(f64, f64)>) {
        let scenario = format!("{} {condition}", self.dut);
        let s = Sample::trial(scenario, trial, values.iter().copied())
            .with_cdf(cdf)
            .under_test(self.dut, condition);
        if let Err(e) = self.run.sample(&s) {
            self.problems.push(format!("writing a sample: {e}"));
        }
    }
}

/// A bound as a table cell: frames/s and its bottleneck.
pub(crate) fn bound_cell(b: &Option<crate::host::Bound>) -> String {
    match b {
        Some(b) => format!("{:.0} ({})", b.bound, b.bottleneck),
        None => "-".into(),
    }
}

impl Runner<'_> {
    /// One line for the run's events when trials' latencies were smaller
    /// than the clocks' offset is known.
    pub(crate) fn clock_loose_summary(&self) -> Option<String> {
        let first = self.clock_loose.first()?;
        Some(format!(
            "{}: in {} of {} trials the median latency was below what the two workers' clocks are known within: those latencies say little; the first: {first}",
            self.dut,
            self.clock_loose.len(),
            self.trials_run
        ))
    }

    /// One line for the run's events when trials were host-bound.
    pub(crate) fn host_bound_summary(&self) -> Option<String> {
        let first = self.host_bound.first()?;
        Some(format!(
            "{}: {} of {} trials were host-bound (a core of the measured path saturated: the figure says as much about this host as about the switch); the first: {first}",
            self.dut,
            self.host_bound.len(),
            self.trials_run
        ))
    }
}

pub(crate) fn lost(t: &Trial) -> bool {
    t.received < t.sent
}

/// A paced trial whose generator offered less than this share of the asked
/// rate is repeated once. The generator shares its core with the receiver
/// and, on a veth, with the switch's receive softirq; on two cores it
/// falls 2-8 % short in every paced trial (it skips the frames it was
/// preempted past rather than send them back to back). Such a trial
/// stands, flagged, at the rate it really offered (the figure reported);
/// only a bigger gap (a hiccup, not the machine's steady state) is worth
/// a repeat. The searches move by the asked rate, the control variable.
const FAR_SHORT: f64 = 0.9;
