//! `sdnlab bench dp`: switches benchmarked by RFC 2544 (section 26) with
//! RFC 9004's updates, frame size by frame size, then the OpenFlow
//! data-plane scenarios of the papers (`scenarios`), on the test bed
//! `bench switch` uses (two host namespaces, each switch under test in
//! turn, the in-kernel generator and the kernel-timestamping receiver).
//!
//! - throughput: binary search for the highest rate with no frame lost
//!   (short search trials), then a confirmation trial at that rate for the
//!   full duration; a lost frame there steps the rate down and confirms
//!   again;
//! - latency at the throughput rate: every frame is timestamped, so each
//!   repetition gives min, mean, median, 99th and 99.9th percentiles and
//!   the delay variation (99.9th percentile minus minimum, RFC 5481's PDV);
//! - frame loss rate: from the most the generator offers down in 10 %
//!   steps until two trials in a row lose nothing;
//! - back-to-back (RFC 9004): bursts at the generator's full rate, binary
//!   search for the longest burst with no loss, repeated; reported with
//!   the implied and the corrected buffer time (below);
//! - system recovery: 110 % of the throughput rate (or the generator's
//!   most, if lower), then 50 % of it; the time from the drop in rate to
//!   the last frame lost.
//!
//! Defaults follow the RFCs (60 s trials, latency 120 s repeated 20
//! times, back-to-back 50 times, its seven Ethernet frame sizes);
//! `--quick` is a smoke run. A trial in which the receiver's own ring
//! dropped frames, or the generator fell more than 10 % short of the asked
//! rate, is marked invalid and repeated once (more than 1 % short is
//! flagged; the trial stands at the rate really offered). Every trial goes to
//! `trials.jsonl` as it ends, with the switch core's CPU shares each
//! second and the switch's own OpenFlow port counters over the trial;
//! the figures go through the report engine (`samples.jsonl`,
//! `summary.csv`, `report.html`).

mod plan;
mod scenarios;

use crate::check::{Conflict, ParamError};
use crate::method::rfc2544;
use crate::rundir::Place;
use crate::switch::bed::on_dut;
use crate::switch::bed::runner::{AtFrame, Ports, Runner, TrialBed, TrialLog};
use crate::switch::bed::{
    iperf, iperf_udp, load, open_bed, open_chain, run_trial, Bed, BedError, CpuSampler, Dut, OfClient, OnBed, Trial,
};
use crate::{Event, Experiment, LabError, Observer, Outcome};
use plan::Plan;
use report::{Meta, Metric, Target};
use serde_json::json;
use stats::Better;
use std::time::Duration;
use traffic::run::GenSpec;

mod config;
mod procedures;
pub use config::*;
use procedures::*;

/// A test's summary row into its table, or its failure into the run's
/// events (the other tests go on).
fn add_row(
    table: &mut String,
    events: &mut Vec<String>,
    obs: &dyn Observer,
    what: &str,
    row: Result<String, BedError>,
) {
    match row {
        Ok(row) => table.push_str(&row),
        Err(e) => {
            obs.event(Event::Line(&format!("{what}: {e}")));
            events.push(format!("{what}: {e}"));
        }
    }
}

fn metrics() -> Vec<Metric> {
    vec![
        Metric::new("throughput_fps", "frames/s", Better::Higher)
            .titled("Throughput")
            .measured("RFC 2544 section 26.1 with RFC 9004: a binary search for the highest rate at which no frame is lost, confirmed by a trial at full duration; a scenario is a switch at one frame size"),
        Metric::new("latency_mean_us", "µs", Better::Lower)
            .titled("Latency, mean")
            .measured("RFC 2544 section 26.2: every frame timestamped at the throughput rate, repeated; the mean of each trial"),
        Metric::new("latency_p50_us", "µs", Better::Lower)
            .titled("Latency, median")
            .measured("RFC 2544 section 26.2: the median of every frame's latency in each trial"),
        Metric::new("latency_p999_us", "µs", Better::Lower)
            .titled("Latency, 99.9th percentile")
            .measured("RFC 2544 section 26.2: the 99.9th percentile of every frame's latency in each trial"),
        Metric::new("pdv_us", "µs", Better::Lower)
            .titled("Delay variation")
            .measured("RFC 5481's packet delay variation: the 99.9th percentile of latency minus its minimum, per trial"),
        Metric::new("b2b_frames", "frames", Better::Higher)
            .titled("Back-to-back burst")
            .measured("RFC 2544 section 26.4 with RFC 9004 section 3: the longest burst at the generator's full rate that crosses without loss, by binary search, repeated"),
        Metric::new("recovery_ms", "ms", Better::Lower)
            .titled("System recovery time")
            .measured("RFC 2544 section 26.5: 110 % of the throughput rate, then 50 %; the time from the drop in rate to the last frame lost"),
        Metric::new("rules", "rules", Better::Higher)
            .titled("Flow table capacity")
            .measured("OpenFlow scenario `capacity`: rules added until the switch refuses them or its table statistics stop growing"),
        Metric::new("flow_mods_per_s", "FLOW_MODs/s", Better::Higher)
            .titled("Rule insertion rate")
            .measured("OpenFlow scenario `insertion`: FLOW_MODs pipelined, then a barrier; FLOW_MODs per second to its reply"),
        Metric::new("first_packet_ms", "ms", Better::Lower)
            .titled("Rule to first forwarded frame")
            .measured("OpenFlow scenario `insertion`: from a FLOW_MOD sent under steady load to the first frame it forwards"),
        Metric::new("tcp_gbit_s", "Gbit/s", Better::Higher)
            .titled("TCP throughput")
            .measured("iperf3, one TCP stream, the hosts' offloads left on"),
        Metric::new("forwarding_fps", "frames/s", Better::Higher)
            .titled("Forwarding rate, generator flat out")
            .measured("frames received per second with the generator at its full rate (paths and parallel bridges)"),
    ]
}

/// Runs the benchmark into `place`.
pub fn run(args: &DpConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let p = plan(args)?;
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::setup(
            "bench dp needs root (network namespaces, AF_PACKET, XDP)",
        ));
    }
    check_place(args, place)?;
    let run_id = place.name("bench-dp");
    let dir = place.dir(&run_id);
    let dir = std::path::absolute(&dir).map_err(crate::rundir::io_error(&dir))?;
    let meta = meta(args, &p, run_id);
    let links = crate::switch::bed::Links {
        generator: args.generator,
        receiver: args.receiver,
        // Jumbo frames need every link's MTU raised.
        mtu: p.frames.iter().any(|f| *f > 1518).then_some(9000),
        stop: place.stop.clone(),
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Dp(args.clone()), &place.stop)?;
    let trials_path = dir.join("trials.jsonl");
    let mut log = TrialLog::create(&trials_path)?;
    let wants = |t: DpTest| args.tests.contains(&t);
    let mut tables = Tables::new();
    for &d in &args.duts {
        let dut = d.name();
        let (bed, of_addr, ports) = open_dut(args, d, &dir, links.clone(), place, &mut run, obs)?;
        let mut runner = Runner::new(&bed, dut, of_addr, &mut log, &mut run, obs);
        runner.ports = ports;
        if RFC_TESTS.into_iter().any(wants) {
            for &frame in &p.frames {
                let row = frame_row(&mut runner, frame, &p, &wants)?;
                tables.rfc.push_str(&row);
            }
        }
        other_tests(&mut runner, d, &p, &dir, &wants, &mut tables);
        runner.close();
        drop(bed);
    }
    let summary = tables.render(&wants);
    let summary_path = dir.join("summary.md");
    std::fs::write(&summary_path, &summary).map_err(crate::rundir::io_error(&summary_path))?;
    let done = run.finish()?;
    let trials = trials_path.display().to_string();
    let report_path = dir.join("report.html").display().to_string();
    Ok(Outcome {
        table: format!("{summary}\ntrials: {trials}\nreport: {report_path}\n"),
        json: json!({"dir": dir, "trials": trials, "report": report_path, "events": done.meta.events}),
        dir,
        incomplete: 0,
    })
}

/// The ports must be where the switch is: with `--workers`, an external
/// switch whose ports each name their worker; without, local interfaces.
fn check_place(args: &DpConfig, place: &Place) -> Result<(), LabError> {
    if place.workers.is_some() {
        if let Some(d) = args.duts.iter().find(|d| **d != DpDut::External) {
            return Err(Conflict::new(
                "over workers, bench dp tests an external switch whose ports are on the workers' machines: give --dut external --external-ports WORKER:IF,WORKER:IF (the switches sdnlab starts run on this machine: leave --workers out)",
            )
            .with("dut", d)
            .flag("workers")
            .into());
        }
        if let Some(p) = args
            .external_ports
            .iter()
            .find(|p| crate::switch::bed::split_remote_port(p).is_none())
        {
            return Err(Conflict::new("name each port's worker: WORKER:IF")
                .with("external-ports", p)
                .flag("workers")
                .into());
        }
    } else if let Some(p) = args.external_ports.iter().find(|p| p.contains(':')) {
        return Err(ParamError::new(
            "external-ports",
            p,
            "names a worker's port: give --workers FILE (an interface name has no ':')",
        )
        .into());
    }
    Ok(())
}

/// The run's metadata: the switches under test, each with its version,
/// and every parameter the plan resolved.
fn meta(args: &DpConfig, p: &Plan, run_id: String) -> Meta {
    Meta {
        run_id,
        benchmark: "bench dp".into(),
        command: std::env::args().collect(),
        sdnlab_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: report::now_unix(),
        setup: report::Setup::detect(),
        targets: args
            .duts
            .iter()
            .map(|d| Target {
                name: d.name().to_string(),
                version: match (d, args.external_openflow) {
                    (DpDut::External, Some(a)) => OfClient::connect(a)
                        .and_then(|mut c| c.describe())
                        .unwrap_or_else(|e| format!("(OpenFlow description unavailable: {e})")),
                    (DpDut::External, None) => "not started by sdnlab".to_string(),
                    (DpDut::Started(s), _) => crate::switch::bed::dut_version(*s),
                },
                address: match d {
                    DpDut::External => format!(
                        "{} via {}",
                        args.external_openflow.map(|a| a.to_string()).unwrap_or_default(),
                        args.external_ports.join(", ")
                    ),
                    _ => String::new(),
                },
                ..Target::default()
            })
            .collect(),
        parameters: json!({
            "frames": p.frames, "trial_seconds": p.trial_s, "search_seconds": p.search_s,
            "resolution": p.resolution, "latency_seconds": p.latency_s, "repetitions": p.repetitions,
            "b2b_repetitions": p.b2b_repetitions, "b2b_seconds": p.b2b_s,
            "overload_seconds": p.overload_s, "recovery_seconds": p.recovery_s,
            "recovery_repetitions": p.recovery_repetitions, "scenario_rate": p.scenario_rate,
            "scenario_seconds": p.scenario_s, "scenario_repetitions": p.scenario_repetitions,
            "scenario_frame": p.scenario_frame, "table_rules": p.table_rules, "capacity_max": p.capacity_max,
            "iperf_seconds": p.iperf_s, "udp_mbit": p.udp_mbit, "long_path": p.long_path, "parallel": p.parallel,
            "generator": args.generator, "receiver": args.receiver, "tests": args.tests, "limit_mbit": args.limit_mbit,
            "external_ports": args.external_ports, "external_openflow": args.external_openflow,
            "external_of_ports": args.external_of_ports,
            "ports": "two veth pairs: generator namespace - switch - receiver namespace",
            "cores": "generator and receiver on core 0, the switch on the last core",
            "methodology": "RFC 2544 section 26.1-26.5 with RFC 9004 (back-to-back, buffer time); throughput confirmed at full duration; latency of every frame (kernel receive time minus send time); delay variation = p99.9 - min",
        }),
        metrics: metrics(),
        ..Meta::default()
    }
}

/// The summary's tables, a row added per switch (and per frame size).
struct Tables {
    rfc: String,
    scenarios: scenarios::Tables,
    paths: String,
    parallel: String,
    iperf: String,
}

impl Tables {
    fn new() -> Tables {
        Tables {
            rfc: String::from(
                "| switch | frame (B) | throughput (frames/s) | throughput (Mbit/s, L2) | latency mean / p50 / p99.9 (µs) | delay variation (µs) | loss at 100 % / 90 % / 80 % of max (%) | back-to-back (frames; implied / corrected buffer, ms) | recovery (ms) |\n|---|---:|---:|---:|---|---:|---|---|---:|\n",
            ),
            scenarios: scenarios::Tables::default(),
            paths: String::from(
                "| switch | throughput, 64 B, 1 switch / long path (frames/s) | flat-out forwarding, 64 B, 1 switch / long path (frames/s) | its operational bound, 1 switch / long path (frames/s, bottleneck) | latency mean at the scenario rate (µs) | iperf3 TCP (Gbit/s) |\n|---|---|---|---|---|---|\n",
            ),
            parallel: String::from(
                "| switch | bridges | one alone, flat out (frames/s) | all at once, flat out: total (each) | its operational bound (frames/s, bottleneck) | latency mean at the scenario rate, all loaded (µs) |\n|---|---:|---:|---|---|---|\n",
            ),
            iperf: String::from(
                "| switch | iperf3 TCP (Gbit/s) | iperf3 UDP, offered → received Mbit/s (loss) |\n|---|---:|---|\n",
            ),
        }
    }

    /// The summary: the tables of the tests that were asked for.
    fn render(self, wants: &dyn Fn(DpTest) -> bool) -> String {
        let only = |asked: bool, table: String| if asked { table } else { String::new() };
        format!(
            "{}\n{}\n{}\n{}\n{}",
            only(RFC_TESTS.into_iter().any(wants), self.rfc),
            only(IPERF_TESTS.into_iter().any(wants), self.iperf),
            only(wants(DpTest::Paths), self.paths),
            only(wants(DpTest::Parallel), self.parallel),
            self.scenarios.render()
        )
    }
}

/// Opens the bed for one switch under test: its OpenFlow address, the
/// ports frames enter and leave by, the rate limit asked for, and the
/// live view told which ports to watch.
fn open_dut(
    args: &DpConfig,
    d: DpDut,
    dir: &std::path::Path,
    links: crate::switch::bed::Links,
    place: &Place,
    run: &mut crate::rundir::Run,
    obs: &dyn Observer,
) -> Result<(Bed, Option<std::net::SocketAddr>, Ports), LabError> {
    let dut = d.name();
    let on = match d {
        DpDut::Started(s) => OnBed::Started(s),
        DpDut::External => OnBed::External(crate::switch::bed::External {
            ifaces: (args.external_ports[0].clone(), args.external_ports[1].clone()),
            openflow: args.external_openflow,
            of_ports: (args.external_of_ports[0], args.external_of_ports[1]),
        }),
    };
    let ports = match &on {
        OnBed::External(e) => Ports {
            inp: e.of_ports.0,
            out: e.of_ports.1,
        },
        OnBed::Started(_) => Ports::default(),
    };
    let (bed, of_addr) = open_bed(on, dir, links, place.workers.as_deref()).map_err(on_dut(dut))?;
    if let Some(rm) = &bed.remote {
        run.meta.parameters["workers"] = rm.fleet.clocks();
        run.meta.parameters["external_ports_seen"] = json!(rm.seen);
        run.meta.parameters["ports"] = json!(format!(
            "frames leave by {} and come back by {}, each in its worker's own namespace",
            rm.name(&rm.gen),
            rm.name(&rm.rcv)
        ));
        run.meta.parameters["cores"] = json!("the workers' schedulers' choice");
        run.meta.events.extend(rm.fleet.clock_warnings());
        let line = match rm.clock_uncertainty_us() {
            0.0 => format!("{dut}: both ports on one worker: latencies on one clock"),
            u => format!(
                "{dut}: the ports are on two workers: every latency has their clocks' offset taken off, known within {u:.1} us"
            ),
        };
        obs.event(Event::Line(&line));
        run.meta.events.push(line);
    }
    if let (Some(mbit), Some((_, towards_receiver))) = (args.limit_mbit, bed.ports.last()) {
        let tbf = netlab::shaper::Tbf {
            rate_kbit: (mbit * 1000.0) as u64,
            burst_kb: 16,
            queue: netlab::shaper::Queue::LatencyMs(20),
        };
        netlab::shaper::shape(None, towards_receiver, tbf)
            .map_err(|e| LabError::setup(format!("--limit-mbit: {e}")))?;
    }
    std::thread::sleep(Duration::from_millis(300));
    let watched: Vec<(String, String)> = bed
        .ports
        .iter()
        .enumerate()
        .flat_map(|(i, (a, b))| {
            let n = if bed.ports.len() > 1 {
                format!("s{} ", i + 1)
            } else {
                String::new()
            };
            [(format!("{n}in"), a.clone()), (format!("{n}out"), b.clone())]
        })
        .collect();
    obs.event(Event::Watch {
        system: dut,
        ports: &watched,
    });
    Ok((bed, of_addr, ports))
}

/// One frame size's RFC 2544 tests on one switch: its row of the table.
fn frame_row<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
    wants: &dyn Fn(DpTest) -> bool,
) -> Result<String, LabError> {
    let dut = r.dut;
    let condition = format!("{frame}B");
    let tput = if [DpTest::Throughput, DpTest::Latency, DpTest::B2b, DpTest::Recovery]
        .into_iter()
        .any(wants)
    {
        throughput_figure(r, frame, p, &condition)
    } else {
        None
    };
    let lat = match (wants(DpTest::Latency), tput) {
        (true, Some(rate)) => latency_figures(r, frame, p, rate, &condition)?,
        _ => Vec::new(),
    };
    let max_rate = if wants(DpTest::Loss) || wants(DpTest::B2b) || wants(DpTest::Recovery) {
        let t = r.run("loss_max", frame, None, p.search_s).map_err(on_dut(dut))?;
        Some(t.offered_pps)
    } else {
        None
    };
    let losses: Vec<f64> = match (wants(DpTest::Loss), max_rate) {
        (true, Some(max)) => rfc2544::frame_loss_rate(&mut AtFrame { r: &mut *r, frame }, max, p.trial_s)
            .map_err(on_dut(dut))?
            .iter()
            .map(|(_, pct)| *pct)
            .collect(),
        _ => Vec::new(),
    };
    let b2b_cell = match (wants(DpTest::B2b), max_rate) {
        (true, Some(max)) => match back_to_back(r, frame, p, max).map_err(on_dut(dut))? {
            b if b.unbounded => format!("≥ {:.0} (no loss at the longest burst)", b.frames),
            b => {
                let (implied, corrected) = tput.map_or((f64::NAN, f64::NAN), |t| rfc2544::buffer_times_ms(&b, t));
                format!(
                    "{:.0} at {:.0}/s; {implied:.3} / {corrected:.3}",
                    b.frames, b.burst_rate
                )
            }
        },
        _ => "-".to_string(),
    };
    let recovery_cell = match (wants(DpTest::Recovery), tput, max_rate) {
        (true, Some(t), Some(max)) => recovery_figures(r, frame, p, t, max, &condition)?,
        _ => "-".to_string(),
    };
    Ok(rfc_row(dut, frame, tput, &lat, &losses, &b2b_cell, &recovery_cell))
}

/// The throughput search at one frame size, recorded as a figure; a
/// failed search is told and leaves the tests that need its rate out.
fn throughput_figure<B: TrialBed>(r: &mut Runner<'_, B>, frame: usize, p: &Plan, condition: &str) -> Option<f64> {
    let dut = r.dut;
    match throughput(r, frame, p) {
        Ok(t) => {
            let rate = t.rate;
            r.obs.event(Event::Line(&format!(
                "{dut}: {frame} B: throughput {rate:.0} frames/s{}",
                if t.generator_bound {
                    " (the generator's ceiling: nothing was lost at its full rate)"
                } else {
                    ""
                }
            )));
            r.figure(
                condition.to_string(),
                0,
                &[("frame_bytes", frame as f64), ("throughput_fps", rate)],
                Vec::new(),
            );
            Some(rate)
        }
        Err(e) => {
            r.obs.event(Event::Line(&format!("{dut}: {e}")));
            None
        }
    }
}

/// The latency trials at the throughput rate, each recorded as a figure.
fn latency_figures<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
    rate: f64,
    condition: &str,
) -> Result<Vec<Trial>, LabError> {
    let mut lat = Vec::new();
    for i in 0..p.repetitions {
        let t = r
            .run("latency", frame, Some(rate), p.latency_s)
            .map_err(on_dut(r.dut))?;
        r.figure(
            condition.to_string(),
            i as u32,
            &[
                ("frame_bytes", frame as f64),
                ("latency_mean_us", t.latency_us_mean),
                ("latency_p50_us", t.latency_us_p50),
                ("latency_p999_us", t.latency_us_p999),
                ("pdv_us", t.latency_us_p999 - t.latency_us_min),
            ],
            t.rx.latency_cdf.clone(),
        );
        lat.push(t)
    }
    Ok(lat)
}

/// The system recovery trials, each recorded as a figure: the table's
/// cell (their mean, and whether the overload lost anything).
fn recovery_figures<B: TrialBed>(
    r: &mut Runner<'_, B>,
    frame: usize,
    p: &Plan,
    tput: f64,
    max: f64,
    condition: &str,
) -> Result<String, LabError> {
    let mut times = Vec::new();
    let mut overloaded = false;
    for i in 0..p.recovery_repetitions {
        let (s, o) = recovery(r, frame, p, tput, max).map_err(on_dut(r.dut))?;
        overloaded |= o;
        r.figure(
            condition.to_string(),
            i as u32,
            &[("frame_bytes", frame as f64), ("recovery_ms", s * 1e3)],
            Vec::new(),
        );
        times.push(s * 1e3);
    }
    Ok(format!(
        "{:.1}{}",
        stats::mean(&times),
        if overloaded { "" } else { " (overload lost nothing)" }
    ))
}

/// One row of the RFC 2544 table.
fn rfc_row(
    dut: &str,
    frame: usize,
    tput: Option<f64>,
    lat: &[Trial],
    losses: &[f64],
    b2b_cell: &str,
    recovery_cell: &str,
) -> String {
    let mean = |f: fn(&Trial) -> f64| lat.iter().map(f).sum::<f64>() / lat.len().max(1) as f64;
    let (lat_cell, pdv) = if lat.is_empty() {
        ("-".to_string(), "-".to_string())
    } else {
        (
            format!(
                "{:.1} / {:.0} / {:.0}",
                mean(|t| t.latency_us_mean),
                mean(|t| t.latency_us_p50),
                mean(|t| t.latency_us_p999)
            ),
            format!("{:.0}", mean(|t| t.latency_us_p999 - t.latency_us_min)),
        )
    };
    let loss_cell = if losses.is_empty() {
        "-".to_string()
    } else {
        losses
            .iter()
            .take(3)
            .map(|l| format!("{l:.2}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    format!(
        "| {dut} | {frame} | {} | {} | {lat_cell} | {pdv} | {loss_cell} | {b2b_cell} | {recovery_cell} |\n",
        tput.map(|r| format!("{r:.0}")).unwrap_or_else(|| "-".into()),
        tput.map(|r| format!("{:.1}", r * frame as f64 * 8.0 / 1e6))
            .unwrap_or_else(|| "-".into()),
    )
}

/// The tests after the RFC 2544 ones: iperf3, paths, parallel bridges
/// and the OpenFlow scenarios. A failed one is told and goes to the
/// events; the others go on.
fn other_tests(
    r: &mut Runner,
    d: DpDut,
    p: &Plan,
    dir: &std::path::Path,
    wants: &dyn Fn(DpTest) -> bool,
    tables: &mut Tables,
) {
    let dut = r.dut;
    let obs = r.obs;
    if (wants(DpTest::Tcp) || wants(DpTest::Udp)) && r.bed.remote.is_some() {
        let line = format!(
            "{dut}: tcp, udp left out: iperf3 needs addresses on the ports, and with --workers they stay as their machines have them"
        );
        obs.event(Event::Line(&line));
        r.run.meta.events.push(line);
    } else if wants(DpTest::Tcp) || wants(DpTest::Udp) {
        let row = iperf_tests(r, p, wants(DpTest::Tcp), wants(DpTest::Udp));
        add_row(&mut tables.iperf, &mut r.run.meta.events, obs, dut, row);
    }
    // Paths and parallel bridges start more of the switch: one sdnlab starts.
    let own_switch = match d {
        DpDut::Started(s) if s != Dut::Veth => Some(s),
        _ => None,
    };
    if let Some(s) = own_switch.filter(|_| wants(DpTest::Paths)) {
        let row = paths(r, s, p, dir);
        add_row(
            &mut tables.paths,
            &mut r.run.meta.events,
            obs,
            &format!("{dut}: paths"),
            row,
        );
    }
    if let Some(s) = own_switch.filter(|_| wants(DpTest::Parallel)) {
        let row = parallel(r, s, p, dir);
        let what = format!("{dut}: parallel");
        add_row(&mut tables.parallel, &mut r.run.meta.events, obs, &what, row);
    }
    let wanted: Vec<DpTest> = scenarios::SCENARIOS.into_iter().filter(|s| wants(*s)).collect();
    if !wanted.is_empty() {
        if let Err(e) = scenarios::run_all(r, d, p, &wanted, &mut tables.scenarios) {
            r.run.meta.events.push(format!("{dut}: {e}"));
            obs.event(Event::Line(&format!("{dut}: {e}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2544's tests at one frame size on a switch in memory that
    /// forwards 400 k frames/s and buffers 1,000 frames, its generator at
    /// 1 M: each cell of the row is what that switch implies.
    #[test]
    fn a_frame_sizes_row_is_what_the_switch_in_memory_implies() {
        use crate::switch::bed::runner::fake::{records, scratch_run, FakeSwitch};
        let (dir, mut run, mut log) = scratch_run();
        let sw = FakeSwitch::new(400_000.0, 1_000_000.0);
        let args = DpConfig {
            quick: true,
            ..DpConfig::default()
        };
        let p = plan(&args).unwrap();
        let wants = |t: DpTest| [DpTest::Throughput, DpTest::Latency, DpTest::Loss, DpTest::B2b].contains(&t);
        let mut r = Runner::new(&sw, "fake", None, &mut log, &mut run, &crate::observe::Quiet);
        let row = frame_row(&mut r, 64, &p, &wants).unwrap();
        drop(r);
        let cells: Vec<&str> = row.trim().trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells[..2], ["fake", "64"], "{row}");
        // Throughput: the switch's rate, within the search's resolution
        // (its buffer lets a 0.5 s trial carry 2,000 frames/s more).
        let tput: f64 = cells[2].parse().unwrap();
        assert!((400_000.0 * (1.0 - p.resolution)..=402_000.0).contains(&tput), "{row}");
        assert_eq!(cells[3], format!("{:.1}", tput * 64.0 * 8.0 / 1e6), "Mbit/s");
        // Latency at that rate: the model's mean / median / 99.9th.
        let lat = 10.0 * (1.0 + 4.0 * tput.min(400_000.0) / 400_000.0);
        assert_eq!(cells[4], format!("{lat:.1} / {lat:.0} / {:.0}", 3.0 * lat), "{row}");
        // Frame loss at the generator's full rate: 0.5 s offers 500,000
        // frames, 201,000 cross.
        assert!(cells[6].starts_with("59.80 / "), "{row}");
        // Back-to-back: 60 % of a burst queues, so the longest that fits
        // 1,000 frames is 1,668; RFC 9004's corrected buffer time is the
        // buffer's 1,000 frames at the generator's 1 M/s: 1 ms.
        let (frames, times) = cells[7].split_once("; ").unwrap();
        let frames: f64 = frames.split(' ').next().unwrap().parse().unwrap();
        assert!((1640.0..=1668.0).contains(&frames), "{row}");
        let corrected: f64 = times.split(" / ").nth(1).unwrap().parse().unwrap();
        assert!((corrected - 1.0).abs() < 0.03, "{row}");
        assert_eq!(cells[8], "-", "recovery not asked");
        // Every trial on record, the throughput's confirmed one among them.
        let recs = records(dir.path());
        assert!(recs.iter().any(|v| v["test"] == "throughput_confirm" && v["lost"] == 0));
        assert!(recs.iter().any(|v| v["test"] == "b2b"));
    }

    #[test]
    fn the_ports_must_be_where_the_switch_is() {
        let spread = Place {
            workers: Some("workers.toml".into()),
            ..Place::default()
        };
        let ours = DpConfig {
            duts: vec![DpDut::Started(crate::switch::Dut::Sdnlab)],
            ..DpConfig::default()
        };
        let e = check_place(&ours, &spread).expect_err("our switches run here");
        assert!(
            matches!(e, LabError::Conflict(_)) && e.to_string().contains("--dut external"),
            "{e}"
        );
        let external = DpConfig {
            duts: vec![DpDut::External],
            external_ports: vec!["w1:eth1".into(), "eth2".into()],
            ..DpConfig::default()
        };
        let e = check_place(&external, &spread).expect_err("a port without its worker");
        assert!(e.to_string().contains("--external-ports eth2"), "{e}");
        let e = check_place(&external, &Place::default()).expect_err("a worker's port, no workers");
        assert!(e.to_string().contains("--external-ports w1:eth1"), "{e}");
        let here = DpConfig {
            external_ports: vec!["eth1".into(), "eth2".into()],
            ..external
        };
        assert!(check_place(&here, &Place::default()).is_ok());
    }

    #[test]
    fn an_rfc_2544_row_shows_what_was_measured_and_dashes_for_the_rest() {
        let row = rfc_row("sdnlab", 64, Some(1000.0), &[], &[0.0, 1.5, 2.25, 9.0], "-", "3.0");
        assert_eq!(
            row, "| sdnlab | 64 | 1000 | 0.5 | - | - | 0.00 / 1.50 / 2.25 | - | 3.0 |\n",
            "L2 Mbit/s = frames/s x 64 B x 8; three loss steps at most"
        );
        let none = rfc_row("ovs", 1518, None, &[], &[], "-", "-");
        assert_eq!(none, "| ovs | 1518 | - | - | - | - | - | - | - |\n");
    }

    /// A switch and a test are read by their names, from a file as on the
    /// command line, and an unknown one is refused with the names known.
    #[test]
    fn switches_and_tests_are_read_by_their_names_and_an_unknown_one_refused() {
        let c: DpConfig =
            toml::from_str("duts = [\"ovs-afxdp\", \"external\"]\ntests = [\"b2b\", \"insertion\"]").unwrap();
        assert_eq!(
            (c.duts, c.tests),
            (
                vec![DpDut::Started(crate::switch::Dut::OvsAfxdp), DpDut::External],
                vec![DpTest::B2b, DpTest::Insertion]
            )
        );
        let e = toml::from_str::<DpConfig>("duts = [\"hub\"]").unwrap_err().to_string();
        assert!(e.contains("unknown variant `hub`, expected one of `sdnlab`"), "{e}");
        assert!(e.contains("`veth`, `external`"), "{e}");
        let e = toml::from_str::<DpConfig>("tests = [\"speed\"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `speed`"), "{e}");
        for d in DpDut::ALL {
            let flag = clap::ValueEnum::to_possible_value(&d).unwrap();
            assert_eq!(flag.get_name(), d.name());
            assert_eq!(serde_json::to_value(d).unwrap(), d.name());
            let back: DpDut = serde_json::from_value(serde_json::to_value(d).unwrap()).unwrap();
            assert_eq!(back, d);
        }
        assert_eq!(DpDut::NAMES.len(), DpDut::ALL.len());
    }

    #[test]
    fn the_summary_holds_the_tables_of_the_tests_asked_for() {
        let tests = [DpTest::Throughput, DpTest::Paths];
        let wants = |t: DpTest| tests.contains(&t);
        let s = Tables::new().render(&wants);
        assert!(s.contains("| switch | frame (B) | throughput"), "{s}");
        assert!(s.contains("long path"), "{s}");
        assert!(!s.contains("iperf3 TCP (Gbit/s) | iperf3 UDP"), "{s}");
        assert!(!s.contains("| bridges |"), "{s}");
        let s = Tables::new().render(&|t: DpTest| t == DpTest::Tcp);
        assert!(!s.contains("frame (B)") && s.contains("iperf3 UDP"), "{s}");
    }
}
