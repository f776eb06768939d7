//! The data-path benchmark's procedures on a built bed: RFC 2544's
//! throughput, back-to-back and recovery searches (the bed as an
//! `rfc2544::Device` at one frame size), iperf3's TCP and UDP steps, and
//! the path and parallel-bridge figures.

use super::*;

/// RFC 2544 26.1 with a confirmation at full duration (RFC 9004's loss
/// verification): the rate and its confirming trial.
pub(super) fn throughput<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
) -> Result<rfc2544::Throughput<Trial>, BedError> {
    let search = rfc2544::Search {
        resolution: p.resolution,
        search_s: p.search_s,
        trial_s: p.trial_s,
    };
    rfc2544::throughput(&mut AtFrame { r, frame }, search).map_err(|e| BedError::Search {
        frame,
        source: Box::new(e),
    })
}

/// The longest loss-free burst, by binary search between 1 frame and
/// `b2b_s` seconds at the generator's full rate; `b2b_repetitions`
/// searches, each recorded as a figure.
pub(super) fn back_to_back<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
    max_rate: f64,
) -> Result<rfc2544::BackToBack, BedError> {
    let longest = (p.b2b_s * max_rate) as u64;
    let b = rfc2544::back_to_back(&mut AtFrame { r, frame }, longest, p.b2b_repetitions, max_rate).map_err(
        |e| match e {
            rfc2544::MethodError::Device(d) => d,
            e => BedError::Search {
                frame,
                source: Box::new(e),
            },
        },
    )?;
    for (rep, frames) in b.bursts.iter().enumerate() {
        r.figure(
            format!("{frame}B"),
            rep as u32,
            &[("frame_bytes", frame as f64), ("b2b_frames", *frames as f64)],
            Vec::new(),
        );
    }
    Ok(b)
}

/// RFC 2544 26.5: offered 110 % of the throughput rate (at most the
/// generator's), then 50 % of that; the time from the reduction to the
/// last frame lost (0 if none was lost after it). Seconds, and whether
/// the overload lost anything at all.
pub(super) fn recovery<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
    tput: f64,
    max_rate: f64,
) -> Result<(f64, bool), BedError> {
    let over = (tput * 1.1).min(max_rate);
    let spec = GenSpec {
        then: Some((Duration::from_secs_f64(p.recovery_s), over * 0.5)),
        ..r.bed.load(frame, Some(over), p.overload_s)
    };
    let t = r.run_spec("recovery", frame, &spec)?;
    let Some((change_ns, change_seq)) = t.gen.second_phase else {
        return Err(BedError::Tool {
            what: "the generator".into(),
            detail: "did not report its second phase".into(),
        });
    };
    let overloaded = t.rx.last_missing_before(change_seq).is_some();
    let recovery_s = match t.rx.last_missing_before(t.sent) {
        Some(seq) if seq >= change_seq => {
            t.rx.sent_ns_near(seq)
                .map_or(p.recovery_s, |at| at.saturating_sub(change_ns) as f64 / 1e9)
        }
        _ => 0.0,
    };
    Ok((recovery_s, overloaded))
}

/// iperf3 TCP (repeated) and UDP raised step by step, with the switch
/// core's CPU over each run; a summary row.
pub(super) fn iperf_tests(r: &mut Runner, p: &Plan, tcp: bool, udp: bool) -> Result<String, BedError> {
    let mut tcp_cell = "-".to_string();
    if tcp {
        let mut rates = Vec::new();
        for i in 0..p.scenario_repetitions.min(5) {
            let gbps = r.tcp(p.iperf_s)?;
            r.figure("tcp".into(), i as u32, &[("tcp_gbit_s", gbps)], Vec::new());
            rates.push(gbps);
        }
        tcp_cell = format!("{:.2} (mean of {})", stats::mean(&rates), rates.len());
    }
    let mut steps = Vec::new();
    if udp {
        for &mbit in &p.udp_mbit {
            let cpu = r.bed.cores.map(|(_, sw)| CpuSampler::start(sw));
            let (got, lost, jitter) = iperf_udp(r.bed, p.iperf_s, mbit)?;
            let cpu = cpu.map(CpuSampler::finish);
            r.record(json!({"test": "udp", "seconds": p.iperf_s, "offered_mbit_s": mbit,
                "received_mbit_s": got, "lost_percent": lost, "jitter_ms": jitter, "cpu": cpu}))?;
            steps.push(format!("{mbit:.0}→{got:.0} ({lost:.1} %)"));
        }
    }
    Ok(format!(
        "| {} | {tcp_cell} | {} |\n",
        r.dut,
        if steps.is_empty() {
            "-".to_string()
        } else {
            steps.join(", ")
        }
    ))
}

/// Throughput (RFC 2544, 64-byte frames), latency at the scenario rate
/// and iperf3 TCP across the runner's bed.
pub(super) fn path_figures(r: &mut Runner, p: &Plan, label: &str) -> Result<PathFigures, BedError> {
    // Flat out first: a path that never forwards without some loss (a
    // zero-loss search finds nothing) still shows how much it carries.
    let max = r.run("path_max", 64, None, p.search_s)?.rx_pps;
    let bound = r.last_bound.clone();
    let zero_loss = throughput(r, 64, p).ok().map(|t| t.rate);
    let mut lat = Vec::new();
    for _ in 0..p.scenario_repetitions {
        let t = r.run("path_latency", 64, Some(p.scenario_rate), p.scenario_s)?;
        lat.push(t.latency_us_mean);
    }
    let gbps = iperf(r.bed, p.iperf_s)?;
    let lat = stats::mean(&lat);
    let mut values = vec![("forwarding_fps", max), ("latency_mean_us", lat), ("tcp_gbit_s", gbps)];
    if let Some(rate) = zero_loss {
        values.push(("throughput_fps", rate));
    }
    r.figure(format!("path {label}"), 0, &values, Vec::new());
    Ok(PathFigures {
        zero_loss,
        max,
        bound,
        lat,
        gbps,
    })
}

/// One path's figures: zero-loss throughput (None: no rate held without
/// loss), flat-out forwarding rate, mean latency, TCP.
pub(super) struct PathFigures {
    pub(super) zero_loss: Option<f64>,
    pub(super) max: f64,
    /// The flat-out trial's operational bound.
    pub(super) bound: Option<crate::host::Bound>,
    pub(super) lat: f64,
    pub(super) gbps: f64,
}

/// The open-platform paper's short and long paths: one switch, then a
/// chain of `long_path` switches (for Open vSwitch, bridges of the same
/// daemon joined by veths). A summary row.
pub(super) fn paths(r: &mut Runner, sw: Dut, p: &Plan, dir: &std::path::Path) -> Result<String, BedError> {
    let one = path_figures(r, p, "1 switch")?;
    let chain_dir = dir.join(format!("{}-chain", r.dut));
    let (chain, addrs) = open_chain(sw, &chain_dir, r.bed.links(), "c", p.long_path, r.bed.ovs.as_ref())?;
    std::thread::sleep(Duration::from_millis(300));
    let long = {
        let mut cr = Runner::new(&chain, r.dut, addrs.first().copied(), &mut *r.log, &mut *r.run, r.obs);
        cr.ports = r.ports;
        let figures = path_figures(&mut cr, p, &format!("{} switches", p.long_path));
        // What went wrong on the chain goes to the run's events too.
        let mut problems = std::mem::take(&mut cr.problems);
        r.problems.append(&mut problems);
        r.trials_run += cr.trials_run;
        r.host_bound.append(&mut cr.host_bound);
        figures
    };
    if let Some(ovs) = r.bed.ovs.as_ref() {
        for i in 0..chain.ports.len() {
            let _ = ovs.vsctl(&["--if-exists", "del-br", &chain.bridge_name(i)]);
        }
    }
    drop(chain);
    let long = long?;
    let zl = |f: &PathFigures| f.zero_loss.map_or("none".to_string(), |r| format!("{r:.0}"));
    Ok(format!(
        "| {} | {} / {} | {:.0} / {:.0} | {} / {} | {:.1} / {:.1} | {:.2} / {:.2} |\n",
        r.dut,
        zl(&one),
        zl(&long),
        one.max,
        long.max,
        bound_cell(&one.bound),
        bound_cell(&long.bound),
        one.lat,
        long.lat,
        one.gbps,
        long.gbps
    ))
}

/// The whitebox paper's several bridges loaded at once: `parallel`
/// bridges of two ports, each between its own pair of hosts, flat out
/// one alone then all together, and the latency of each at the scenario
/// rate while all carry it. A summary row.
pub(super) fn parallel(r: &mut Runner, sw: Dut, p: &Plan, dir: &std::path::Path) -> Result<String, BedError> {
    let mut extra = Vec::new();
    for i in 1..p.parallel {
        let d = dir.join(format!("{}-bridge{}", r.dut, i + 1));
        let bed = open_chain(sw, &d, r.bed.links(), &format!("p{i}"), 1, r.bed.ovs.as_ref())?.0;
        extra.push(bed);
    }
    std::thread::sleep(Duration::from_millis(300));
    let beds: Vec<&Bed> = std::iter::once(r.bed).chain(extra.iter()).collect();
    let bridges = beds.len();
    let at_once = |rate: Option<f64>, seconds: f64| -> Result<Vec<Trial>, BedError> {
        std::thread::scope(|s| {
            let runs: Vec<_> = beds
                .iter()
                .map(|b| s.spawn(move || run_trial(b, &load(b, 64, rate, seconds))))
                .collect();
            runs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(BedError::Refused("a trial's thread panicked".into())))
                })
                .collect()
        })
    };
    let alone = run_trial(r.bed, &load(r.bed, 64, None, p.search_s))?;
    let cpu = r.bed.cores.map(|(_, sw)| CpuSampler::start(sw));
    let mut path: Vec<(String, u32)> = beds.iter().flat_map(|b| b.path_processes()).collect();
    path.sort_by_key(|p| p.1);
    path.dedup_by_key(|p| p.1);
    let watch = crate::host::HostWatch::start(path, crate::host::Rule::default());
    let all = at_once(None, p.search_s);
    let host = watch.finish();
    let cpu = cpu.map(CpuSampler::finish);
    let all = all?;
    let received: u64 = all.iter().map(|t| t.received).sum();
    let bound = crate::host::Bound::of("frame", host.demands(received as f64), None);
    if let Some(reason) = &host.reason {
        r.host_bound.push(format!("parallel, all at once: {reason}"));
    }
    let loaded = at_once(Some(p.scenario_rate), p.scenario_s)?;
    if let Some(ovs) = r.bed.ovs.as_ref() {
        for b in &extra {
            let _ = ovs.vsctl(&["--if-exists", "del-br", &b.bridge_name(0)]);
        }
    }
    drop(beds);
    drop(extra);
    let aggregate: f64 = all.iter().map(|t| t.rx_pps).sum();
    let per: Vec<String> = all.iter().map(|t| format!("{:.0}", t.rx_pps)).collect();
    let lat: Vec<String> = loaded.iter().map(|t| format!("{:.1}", t.latency_us_mean)).collect();
    let lost: u64 = loaded.iter().map(|t| t.sent.saturating_sub(t.received)).sum();
    r.record(json!({"test": "parallel", "bridges": bridges, "alone_rx_pps": alone.rx_pps,
            "all_rx_pps": all.iter().map(|t| t.rx_pps).collect::<Vec<_>>(), "all_offered_pps": all.iter().map(|t| t.offered_pps).collect::<Vec<_>>(),
            "loaded_rate_pps": p.scenario_rate, "loaded_latency_us_mean": loaded.iter().map(|t| t.latency_us_mean).collect::<Vec<_>>(),
            "loaded_lost": lost, "cpu": cpu, "host_bound": host.host_bound, "host": host, "bound": bound}))?;
    r.figure(
        format!("parallel {bridges} bridges"),
        0,
        &[("throughput_fps", aggregate)],
        Vec::new(),
    );
    Ok(format!(
        "| {} | {bridges} | {:.0} | {aggregate:.0} ({}) | {} | {} ({lost} lost) |\n",
        r.dut,
        alone.rx_pps,
        per.join(" + "),
        bound_cell(&bound),
        lat.join(" / ")
    ))
}

/// A bound as a table cell: frames/s and its bottleneck.
pub(crate) fn bound_cell(b: &Option<crate::host::Bound>) -> String {
    match b {
        Some(b) => format!("{:.0} ({})", b.bound, b.bottleneck),
        None => "-".into(),
    }
}
