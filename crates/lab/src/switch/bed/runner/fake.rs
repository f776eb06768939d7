//! A switch in memory for the runner's and the benchmarks' tests (after
//! Faucet's fake table): it forwards up to `capacity_pps` frames a second
//! without loss and the rest of a longer offer is lost, it buffers
//! `buffer` frames of a burst, its generator goes no faster than
//! `generator_pps`; scripted faults make chosen trials invalid. Nothing
//! is sent: a trial is computed from its load.

use super::{BedError, PortCount, TrialBed};
use crate::switch::bed::Trial;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;
use traffic::run::{GenReport, GenSpec, RecvReport};

pub(crate) struct FakeSwitch {
    pub(crate) capacity_pps: f64,
    pub(crate) generator_pps: f64,
    pub(crate) buffer: u64,
    /// The latency of a frame that finds no queue (µs).
    pub(crate) latency_us: f64,
    /// The trials (by their order, from 0) whose receiver drops frames.
    pub(crate) receiver_drops_at: Vec<usize>,
    /// The trials whose generator reaches only this share of the rate.
    pub(crate) generator_short_at: Vec<(usize, f64)>,
    /// Whether it answers port statistics (an OpenFlow switch).
    pub(crate) openflow: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    trials: usize,
    /// Port 1's received and port 2's sent frames.
    rx_in: u64,
    tx_out: u64,
    /// Each trial's asked rate and burst, in order.
    asked: Vec<(Option<f64>, Option<u64>)>,
}

impl FakeSwitch {
    pub(crate) fn new(capacity_pps: f64, generator_pps: f64) -> FakeSwitch {
        FakeSwitch {
            capacity_pps,
            generator_pps,
            buffer: 1000,
            latency_us: 10.0,
            receiver_drops_at: Vec::new(),
            generator_short_at: Vec::new(),
            openflow: true,
            state: Mutex::new(State::default()),
        }
    }

    /// Each trial's asked rate (None: flat out) and burst, in order.
    pub(crate) fn asked(&self) -> Vec<(Option<f64>, Option<u64>)> {
        self.state.lock().unwrap().asked.clone()
    }
}

impl TrialBed for FakeSwitch {
    fn load(&self, frame: usize, rate: Option<f64>, seconds: f64) -> GenSpec {
        let template = traffic::frame::Template::udp(
            frame - 4,
            super::super::GEN_MAC,
            super::super::SINK_MAC,
            [10, 66, 0, 1],
            [10, 66, 0, 99],
            0,
        );
        GenSpec::new(None, "fake".into(), template, rate, Duration::from_secs_f64(seconds))
    }

    fn trial(&self, spec: &GenSpec) -> Result<Trial, BedError> {
        let mut st = self.state.lock().unwrap();
        let i = st.trials;
        st.trials += 1;
        st.asked.push((spec.rate_pps, spec.burst));
        let short = self
            .generator_short_at
            .iter()
            .find(|(at, _)| *at == i)
            .map_or(1.0, |(_, s)| *s);
        let (sent, offered, seconds, lost) = match spec.burst {
            Some(n) => {
                // The burst arrives at the generator's rate and leaves at
                // the switch's: the buffer holds the difference.
                let backlog = n as f64 * (1.0 - self.capacity_pps / self.generator_pps).max(0.0);
                let lost = (backlog - self.buffer as f64).max(0.0) as u64;
                (n, self.generator_pps, n as f64 / self.generator_pps, lost)
            }
            None => {
                let asked = spec.rate_pps.unwrap_or(self.generator_pps).min(self.generator_pps);
                let offered = asked * short;
                let seconds = spec.duration.as_secs_f64();
                let sent = (offered * seconds) as u64;
                let kept = (self.capacity_pps * seconds) as u64 + self.buffer;
                (sent, offered, seconds, sent.saturating_sub(kept))
            }
        };
        let received = sent - lost;
        st.rx_in += sent;
        st.tx_out += received;
        let load = (offered / self.capacity_pps).min(1.0);
        let latency = self.latency_us * (1.0 + 4.0 * load);
        let g = GenReport {
            sent,
            refused: 0,
            elapsed_s: seconds,
            achieved_pps: offered,
            second_phase: None,
        };
        let mut r = RecvReport::default();
        r.received = received;
        r.receiver_drops = if self.receiver_drops_at.contains(&i) { 7 } else { 0 };
        r.latency_us_min = self.latency_us;
        r.latency_us_p50 = latency;
        r.latency_us_mean = latency;
        r.latency_us_p99 = 2.0 * latency;
        r.latency_us_p999 = 3.0 * latency;
        r.latency_us_max = 4.0 * latency;
        r.first_sent_ns = 1;
        r.last_sent_ns = 1 + (seconds * 1e9) as u64;
        r.via = "fake".into();
        Ok(Trial::of(g, r, 0.0))
    }

    fn tcp_gbit_s(&self, _seconds: f64) -> Result<f64, BedError> {
        Ok(self.capacity_pps * 1500.0 * 8.0 / 1e9)
    }

    fn switch_core(&self) -> Option<usize> {
        None
    }

    fn path_processes(&self) -> Vec<(String, u32)> {
        Vec::new()
    }

    fn port_counts(&self, _of: Option<SocketAddr>) -> Option<BTreeMap<u32, PortCount>> {
        let st = self.state.lock().unwrap();
        // What it could not forward, it dropped on its way out.
        let out = PortCount {
            tx: st.tx_out,
            tx_dropped: st.rx_in - st.tx_out,
            ..PortCount::default()
        };
        let inp = PortCount {
            rx: st.rx_in,
            ..PortCount::default()
        };
        self.openflow.then(|| BTreeMap::from([(1, inp), (2, out)]))
    }
}

/// A run directory, its run and its `trials.jsonl`, for a runner in a
/// test (removed with the first).
pub(crate) fn scratch_run() -> (tempfile::TempDir, crate::rundir::Run, super::TrialLog) {
    let dir = netlab::private::temp_dir("sdnlab-runner-test-").unwrap();
    let meta = report::Meta {
        benchmark: "bench switch".into(),
        ..crate::rundir::started("runner-test")
    };
    let e = crate::Experiment::Switch(crate::switch::SwitchConfig::default());
    let run = crate::rundir::Run::open(dir.path(), meta, &e, &crate::stop::Stop::new()).unwrap();
    let log = super::TrialLog::create(&dir.path().join("trials.jsonl")).unwrap();
    (dir, run, log)
}

/// The records of `trials.jsonl` in `dir`.
pub(crate) fn records(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
