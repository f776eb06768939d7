//! One trial on a bed: the generator's load sent, the receiver's count,
//! the switch's counters and CPU; iperf3's TCP and UDP runs.

use super::*;

pub(crate) struct Trial {
    pub(crate) offered_pps: f64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) rx_pps: f64,
    pub(crate) latency_us_p50: f64,
    pub(crate) latency_us_p99: f64,
    pub(crate) latency_us_p999: f64,
    pub(crate) latency_us_min: f64,
    pub(crate) latency_us_mean: f64,
    pub(crate) latency_us_max: f64,
    pub(crate) reordered: u64,
    pub(crate) duplicates: u64,
    pub(crate) receiver_drops: u64,
    /// How far the latencies may be off because the generator's and the
    /// receiver's clocks are two machines' (µs; 0 on one machine).
    pub(crate) clock_uncertainty_us: f64,
    pub(crate) gen: traffic::run::GenReport,
    pub(crate) rx: traffic::run::RecvReport,
}

impl Trial {
    /// What a live view is told of this trial when it ends.
    pub(crate) fn figures(&self, system: &str, test: &str, frame: usize) -> crate::TrialFigures {
        crate::TrialFigures {
            system: system.to_string(),
            test: test.to_string(),
            frame,
            offered_pps: self.offered_pps,
            sent: self.sent,
            received: self.received,
            latency_us: (self.received > 0).then_some([self.latency_us_p50, self.latency_us_p99, self.latency_us_max]),
        }
    }
}

impl crate::method::rfc2544::Observed for Trial {
    fn sent(&self) -> u64 {
        self.sent
    }
    fn received(&self) -> u64 {
        self.received
    }
    fn offered_pps(&self) -> f64 {
        self.offered_pps
    }
    fn rx_pps(&self) -> f64 {
        self.rx_pps
    }
}

/// The test frames of a trial on `bed`: `frame` bytes (FCS included)
/// from the generating host to a MAC nobody owns, 16 streams (UDP source
/// ports), `seconds` at `rate` (None: flat out).
pub(crate) fn load(bed: &Bed, frame: usize, rate: Option<f64>, seconds: f64) -> GenSpec {
    GenSpec {
        streams: 16,
        method: bed.generator,
        core: bed.cores.map(|(gen, _)| gen),
        ..GenSpec::new(
            Some(bed.gen_ns()),
            bed.gen_if(),
            Template::udp(frame - 4, GEN_MAC, SINK_MAC, [10, 66, 0, 1], [10, 66, 0, 99], 0),
            rate,
            Duration::from_secs_f64(seconds),
        )
    }
}

/// Sends `spec`'s frames and counts what arrives at the receiving host,
/// after the traffic has stopped and drained.
pub(crate) fn run_trial(bed: &Bed, spec: &GenSpec) -> Result<Trial, BedError> {
    bed.stop.check()?;
    if let Some(rm) = &bed.remote {
        let (g, r, uncertainty) = rm.rt.block_on(rm.fleet.tester_trial(
            rm.gen.0,
            (rm.rcv.0, &rm.rcv.1),
            bed.receiver,
            spec,
            Duration::from_millis(100),
            Duration::from_secs(2),
        ))?;
        return Ok(Trial::of(g, r, uncertainty));
    }
    let rx = Receiver::start_on(
        Some(&bed.rcv_ns()),
        &bed.rcv_if(),
        bed.cores.map(|(gen, _)| gen),
        bed.receiver,
    )
    .map_err(BedError::io("the receiver"))?;
    let g = generate(spec).map_err(BedError::io("the generator"))?;
    // RFC 2544 section 23 waits 2 s for residual frames; a switch that has
    // delivered everything is done long before, so stop after 100 ms of
    // silence and wait the 2 s only for one still delivering.
    let r = rx.finish_when_quiet(Duration::from_millis(100), Duration::from_secs(2));
    Ok(Trial::of(g, r, 0.0))
}

impl Trial {
    /// A trial of what the generator sent and the receiver counted.
    pub(super) fn of(g: traffic::run::GenReport, r: traffic::run::RecvReport, clock_uncertainty_us: f64) -> Trial {
        Trial {
            offered_pps: g.achieved_pps,
            sent: g.sent,
            received: r.received - r.duplicates,
            rx_pps: (r.received - r.duplicates) as f64 / g.elapsed_s,
            latency_us_p50: r.latency_us_p50,
            latency_us_p99: r.latency_us_p99,
            latency_us_p999: r.latency_us_p999,
            latency_us_min: r.latency_us_min,
            latency_us_mean: r.latency_us_mean,
            latency_us_max: r.latency_us_max,
            reordered: r.reordered,
            duplicates: r.duplicates,
            receiver_drops: r.receiver_drops,
            clock_uncertainty_us,
            gen: g,
            rx: r,
        }
    }
}

/// iperf3 from the generating host to the receiving one for `seconds`:
/// TCP, or UDP at `udp_mbit`; its JSON report.
pub(crate) fn iperf3(bed: &Bed, seconds: f64, udp_mbit: Option<f64>) -> Result<serde_json::Value, BedError> {
    bed.stop.check()?;
    // Both ends on the measuring side's core, as the generator and the
    // receiver are: on the switch's core they would fight a polling
    // switch for it and their own losses would count as the switch's.
    let pin: Vec<String> = bed
        .cores
        .map(|(gen, _)| vec!["taskset".to_string(), "-c".to_string(), gen.to_string()])
        .unwrap_or_default();
    // Pinned through taskset when there is a core to pin to.
    let run_in = |ns: &str, argv: &[String]| -> Result<Command, BedError> {
        let mut c = nsexec::command(ns, &argv[0])?;
        c.args(&argv[1..]);
        Ok(c)
    };
    let with_pin =
        |tool: &[&str]| -> Vec<String> { pin.iter().cloned().chain(tool.iter().map(|s| s.to_string())).collect() };
    netlab::install::need(&[netlab::install::IPERF3])?;
    let mut server = run_in(&bed.rcv_ns(), &with_pin(&["iperf3", "-s", "-1", "-p", "5411"]))?
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(BedError::io("iperf3"))?;
    std::thread::sleep(Duration::from_millis(300));
    let secs = format!("{}", seconds.ceil().max(1.0) as u64);
    // A path that drops the handshake (an XDP patch loses the sender's
    // checksum offload state; so do Open vSwitch's AF_XDP ports) fails in
    // 5 s, not after the kernel's two minutes of SYN retries: on a bed of
    // veths the handshake crosses in well under a millisecond.
    let mut args = with_pin(&[
        "iperf3",
        "-c",
        "10.66.0.2",
        "-p",
        "5411",
        "-J",
        "--connect-timeout",
        "5000",
        "-t",
        &secs,
    ]);
    if let Some(mbit) = udp_mbit {
        args.extend([
            "-u".to_string(),
            "-b".to_string(),
            format!("{}K", (mbit * 1000.0) as u64),
        ]);
    }
    let out = run_in(&bed.gen_ns(), &args)?.output().map_err(BedError::io("iperf3"));
    let _ = server.kill();
    let _ = server.wait();
    let v: serde_json::Value = serde_json::from_slice(&out?.stdout).map_err(|e| BedError::Tool {
        what: "iperf3 output".into(),
        detail: e.to_string(),
    })?;
    if v["error"].is_string() {
        return Err(BedError::Tool {
            what: "iperf3".into(),
            detail: v["error"].to_string(),
        });
    }
    Ok(v)
}

/// TCP throughput in Gbit/s, as iperf3's receiver counts it.
pub(crate) fn iperf(bed: &Bed, seconds: f64) -> Result<f64, BedError> {
    let v = iperf3(bed, seconds, None)?;
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|b| b / 1e9)
        .ok_or_else(|| BedError::Tool {
            what: "iperf3".into(),
            detail: "reported no received rate".into(),
        })
}

/// UDP at `mbit`: (Mbit/s received, % lost, jitter in ms), as iperf3's server reports them.
pub(crate) fn iperf_udp(bed: &Bed, seconds: f64, mbit: f64) -> Result<(f64, f64, f64), BedError> {
    let v = iperf3(bed, seconds, Some(mbit))?;
    let sum = &v["end"]["sum"];
    let received = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .or_else(|| {
            let sent = sum["bits_per_second"].as_f64()?;
            Some(sent * (1.0 - sum["lost_percent"].as_f64()? / 100.0))
        })
        .ok_or_else(|| BedError::Tool {
            what: "iperf3".into(),
            detail: "reported no UDP rate".into(),
        })?;
    Ok((
        received / 1e6,
        sum["lost_percent"].as_f64().unwrap_or(f64::NAN),
        sum["jitter_ms"].as_f64().unwrap_or(f64::NAN),
    ))
}
