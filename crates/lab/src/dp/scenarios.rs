//! The OpenFlow data-plane scenarios of `sdnlab bench dp` (the papers'
//! slides): each installs its rules through OpenFlow 1.3 first (every
//! other rule removed), then offers a steady load and records each
//! frame's latency, repetition by repetition (CDFs and confidence
//! intervals come from the report engine):
//!
//! - `match`: the same forwarding by in_port only, + MACs, + IPv4
//!   addresses, + UDP ports, and on every field of the frame;
//! - `table`: one rule alone, then behind a table of non-matching rules;
//! - `rewrite`: MAC, IPv4 address, VLAN priority (tag pushed), DSCP, UDP
//!   port rewritten, each checked in the frames that arrive;
//! - `legacy`: OpenFlow forwarding against the switch's L2 `NORMAL`
//!   action (Open vSwitch) or the Linux bridge, as a speedup;
//! - `capacity`: rules added until the switch refuses them or its table
//!   statistics stop growing, then a sample of them checked to forward;
//! - `insertion`: FLOW_MODs per second to the barrier, and the time from a
//!   FLOW_MOD to the first frame it forwards, against when the BARRIER
//!   reply came (a reply before the rule forwards is a switch that lies).

use super::plan::Plan;
use super::{DpDut, DpTest};
use crate::switch::bed::runner::{Ports, Runner};
use crate::switch::bed::{
    delete_all, filler_rules, forward_rules, load, BedError, Dut, OfClient, Trial, GEN_MAC, SINK_MAC,
};
use ctlbench::method::TableGrowth;
use ofwire::oxm::{Match, Oxm};
use ofwire::types::MacAddr;
use ofwire::v13::{Action, FlowMod, Instruction};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;
use traffic::frame::Template;
use traffic::run::{now_ns, GenSpec, SeqProbe};

pub(crate) const SCENARIOS: [DpTest; 6] = [
    DpTest::Match,
    DpTest::Table,
    DpTest::Rewrite,
    DpTest::Legacy,
    DpTest::Capacity,
    DpTest::Insertion,
];

/// A frame rewritten to this MAC still belongs to nobody on the receiving host.
const OTHER_MAC: [u8; 6] = [2, 0x66, 0, 0, 0, 0x98];
const GEN_IP: Ipv4Addr = Ipv4Addr::new(10, 66, 0, 1);
const SINK_IP: Ipv4Addr = Ipv4Addr::new(10, 66, 0, 99);
const OTHER_IP: Ipv4Addr = Ipv4Addr::new(10, 66, 0, 98);
/// The UDP ports of the scenarios' single stream.
const UDP_SRC: u16 = 10000;
const UDP_DST: u16 = 5001;
const PORT_NORMAL: u32 = 0xffff_fffa;

/// The rows of the scenario tables, and the legacy comparison across switches.
#[derive(Default)]
pub(crate) struct Tables {
    rows: Vec<String>,
    /// (switch, OpenFlow mean latency µs, OpenFlow max rate, legacy name, legacy latency, legacy max rate).
    legacy: Vec<(String, f64, f64, String, f64, f64)>,
    bridge: Option<(f64, f64)>,
}

impl Tables {
    fn row(&mut self, dut: &str, scenario: &str, variant: &str, result: String, check: String) {
        self.rows
            .push(format!("| {dut} | {scenario} | {variant} | {result} | {check} |"));
    }

    pub(crate) fn render(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let mut s = String::from("| switch | scenario | variant | result | check |\n|---|---|---|---|---|\n");
        for r in &self.rows {
            s.push_str(r);
            s.push('\n');
        }
        let mut speedups = self.legacy.clone();
        if let Some((lat, max)) = self.bridge {
            for (dut, of_lat, of_max, ..) in self.legacy.iter().filter(|l| l.3.is_empty()) {
                speedups.push((dut.clone(), *of_lat, *of_max, "Linux bridge".into(), lat, max));
            }
        }
        speedups.retain(|l| !l.3.is_empty());
        if !speedups.is_empty() {
            s.push_str("\n| switch | legacy mode | OpenFlow mean latency (µs) | legacy mean latency (µs) | legacy speedup, latency | OpenFlow max rate (frames/s) | legacy max rate | legacy speedup, rate |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
            for (dut, of_lat, of_max, name, lat, max) in speedups {
                s.push_str(&format!(
                    "| {dut} | {name} | {of_lat:.1} | {lat:.1} | {:.2}x | {of_max:.0} | {max:.0} | {:.2}x |\n",
                    of_lat / lat,
                    max / of_max
                ));
            }
        }
        s
    }
}

fn output(port: u32) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(vec![Action::Output { port, max_len: 0 }])]
}

fn rule(fields: Vec<Oxm>, actions: Vec<Action>) -> FlowMod {
    FlowMod {
        match_: Match::new(fields),
        instructions: vec![Instruction::ApplyActions(actions)],
        ..FlowMod::add(10)
    }
}

/// Every other rule removed, then `rules`; (seconds to the barrier, errors).
fn replace_rules(addr: std::net::SocketAddr, rules: &[FlowMod]) -> Result<(f64, u64), BedError> {
    let mut c = OfClient::connect(addr).map_err(BedError::of("connecting to the switch"))?;
    c.install(&[delete_all()])
        .map_err(BedError::of("emptying its tables"))?;
    c.install(rules)
        .map(|i| (i.seconds, i.errors))
        .map_err(BedError::of("installing the rules"))
}

/// The scenarios' frames: one stream, to `dst_ip`.
fn scenario_load(r: &Runner, p: &Plan, dst_ip: Ipv4Addr, rate: f64, seconds: f64) -> GenSpec {
    GenSpec {
        streams: 1,
        template: Template::udp(
            p.scenario_frame - 4,
            GEN_MAC,
            SINK_MAC,
            GEN_IP.octets(),
            dst_ip.octets(),
            0,
        ),
        ..load(r.bed, p.scenario_frame, Some(rate), seconds)
    }
}

/// The scenario's latency trials, each a figure of `<dut> <scenario> <variant>`.
fn latency_trials(r: &mut Runner, p: &Plan, scenario: &str, variant: &str) -> Result<Vec<Trial>, BedError> {
    let spec = scenario_load(r, p, SINK_IP, p.scenario_rate, p.scenario_s);
    let mut out = Vec::new();
    for i in 0..p.scenario_repetitions {
        let t = r.run_spec(&format!("{scenario}:{variant}"), p.scenario_frame, &spec)?;
        let name = format!("{scenario} {variant}");
        if t.received > 0 {
            r.figure(
                name,
                i as u32,
                &[
                    ("latency_mean_us", t.latency_us_mean),
                    ("latency_p50_us", t.latency_us_p50),
                    ("latency_p999_us", t.latency_us_p999),
                    ("pdv_us", t.latency_us_p999 - t.latency_us_min),
                ],
                t.rx.latency_cdf.clone(),
            );
        }
        out.push(t);
    }
    Ok(out)
}

/// "mean [95 % CI] / p99.9 µs, loss" over the repetitions.
fn latency_cell(ts: &[Trial]) -> String {
    let means: Vec<f64> = ts
        .iter()
        .filter(|t| t.received > 0)
        .map(|t| t.latency_us_mean)
        .collect();
    if means.is_empty() {
        return "nothing forwarded".into();
    }
    let (lo, hi) = if means.len() >= 2 {
        stats::ci_bootstrap(&means, 0.95, 10_000, 8456)
    } else {
        (f64::NAN, f64::NAN)
    };
    let p999 = stats::mean(&ts.iter().map(|t| t.latency_us_p999).collect::<Vec<_>>());
    let (sent, got) = ts.iter().fold((0, 0), |(s, g), t| (s + t.sent, g + t.received));
    format!(
        "latency mean {:.1} µs [{lo:.1}, {hi:.1}], p99.9 {p999:.0} µs; {} of {sent} frames lost",
        stats::mean(&means),
        sent.saturating_sub(got)
    )
}

fn forwarded_check(ts: &[Trial]) -> String {
    if ts.iter().all(|t| t.received > 0) {
        "forwarded".into()
    } else {
        "FAILED: frames not forwarded".into()
    }
}

fn ip_header_ok(f: &[u8], at: usize) -> bool {
    let Some(h) = f.get(at..at + 20) else { return false };
    let mut s = 0u32;
    for w in h.chunks(2) {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s == 0xffff
}

/// Whether a received frame carries the rewrite named `variant`.
pub(crate) fn rewrite_seen(variant: &str, f: &[u8]) -> bool {
    let tagged = f.get(12..14) == Some(&[0x81, 0x00]);
    let l3 = if tagged { 18 } else { 14 };
    match variant {
        "mac" => f.get(0..6) == Some(&OTHER_MAC),
        "ipv4" => f.get(l3 + 16..l3 + 20) == Some(&OTHER_IP.octets()) && ip_header_ok(f, l3),
        "vlan-pcp" => {
            tagged
                && f.get(14).is_some_and(|b| b >> 5 == 5)
                && f.get(14..16)
                    .is_some_and(|t| u16::from_be_bytes([t[0], t[1]]) & 0xfff == 10)
        }
        "dscp" => f.get(l3 + 1).is_some_and(|tos| tos >> 2 == 46) && ip_header_ok(f, l3),
        "udp-port" => f.get(l3 + 22..l3 + 24) == Some(&6000u16.to_be_bytes()),
        _ => true,
    }
}

/// in_port, and what OpenFlow requires before a field may be set (its
/// prerequisites: IPv4 for addresses and DSCP, UDP for its ports).
fn rewrite_match(variant: &str, pp: Ports) -> Vec<Oxm> {
    let mut m = vec![pp.in_port()];
    if matches!(variant, "ipv4" | "dscp" | "udp-port") {
        m.push(Oxm::EthType(0x0800));
    }
    if variant == "udp-port" {
        m.push(Oxm::IpProto(17));
    }
    m
}

fn rewrite_actions(variant: &str, pp: Ports) -> Vec<Action> {
    let mut a = match variant {
        "mac" => vec![Action::SetField(Oxm::EthDst(MacAddr(OTHER_MAC), None))],
        "ipv4" => vec![Action::SetField(Oxm::Ipv4Dst(OTHER_IP, None))],
        "vlan-pcp" => vec![
            Action::PushVlan(0x8100),
            Action::SetField(Oxm::VlanVid(0x1000 | 10, None)),
            Action::SetField(Oxm::VlanPcp(5)),
        ],
        "dscp" => vec![Action::SetField(Oxm::IpDscp(46))],
        "udp-port" => vec![Action::SetField(Oxm::UdpDst(6000))],
        _ => Vec::new(),
    };
    a.push(pp.output());
    a
}

fn match_fields(variant: &str, pp: Ports) -> Vec<Oxm> {
    let mut m = vec![pp.in_port()];
    let level = ["in_port", "macs", "ips", "udp", "exact"]
        .iter()
        .position(|v| *v == variant)
        .unwrap_or(0);
    if level >= 1 {
        m.extend([
            Oxm::EthDst(MacAddr(SINK_MAC), None),
            Oxm::EthSrc(MacAddr(GEN_MAC), None),
        ]);
    }
    if level >= 2 {
        m.extend([
            Oxm::EthType(0x0800),
            Oxm::Ipv4Src(GEN_IP, None),
            Oxm::Ipv4Dst(SINK_IP, None),
        ]);
    }
    if level >= 3 {
        m.extend([Oxm::IpProto(17), Oxm::UdpSrc(UDP_SRC), Oxm::UdpDst(UDP_DST)]);
    }
    if level >= 4 {
        m.extend([Oxm::VlanVid(0, None), Oxm::IpDscp(0), Oxm::IpEcn(0)]);
    }
    m
}

/// Runs the `wanted` scenarios on the runner's switch, then puts its
/// forwarding rules back.
pub(crate) fn run_all(
    r: &mut Runner,
    d: DpDut,
    p: &Plan,
    wanted: &[DpTest],
    tables: &mut Tables,
) -> Result<(), BedError> {
    let dut = r.dut.to_string();
    let Some(addr) = r.of_addr else {
        // No OpenFlow: the Linux bridge is the legacy mode the others are compared with.
        if d == DpDut::Started(Dut::Bridge) && wanted.contains(&DpTest::Legacy) {
            let ts = latency_trials(r, p, "legacy", "bridge")?;
            let max = r.run("legacy_max", p.scenario_frame, None, p.scenario_s)?;
            tables.row(&dut, "legacy", "Linux bridge", latency_cell(&ts), forwarded_check(&ts));
            tables.bridge = Some((mean_latency(&ts), max.rx_pps));
        }
        return Ok(());
    };
    let result = scenarios(r, d, p, wanted, tables, addr);
    let restore = replace_rules(addr, &forward_rules(r.ports.inp, r.ports.out));
    result.and(restore.map(drop))
}

fn mean_latency(ts: &[Trial]) -> f64 {
    stats::mean(
        &ts.iter()
            .filter(|t| t.received > 0)
            .map(|t| t.latency_us_mean)
            .collect::<Vec<_>>(),
    )
}

fn scenarios(
    r: &mut Runner,
    d: DpDut,
    p: &Plan,
    wanted: &[DpTest],
    tables: &mut Tables,
    addr: std::net::SocketAddr,
) -> Result<(), BedError> {
    let dut = r.dut.to_string();
    let pp = r.ports;
    if wanted.contains(&DpTest::Match) {
        for variant in ["in_port", "macs", "ips", "udp", "exact"] {
            let (_, errors) = replace_rules(addr, &[rule(match_fields(variant, pp), vec![pp.output()])])?;
            if errors > 0 {
                tables.row(&dut, "match", variant, "rule refused".into(), "-".into());
                continue;
            }
            let ts = latency_trials(r, p, "match", variant)?;
            tables.row(&dut, "match", variant, latency_cell(&ts), forwarded_check(&ts));
        }
    }
    if wanted.contains(&DpTest::Table) {
        for (variant, fill) in [("1 rule", 0), ("full", p.table_rules)] {
            let mut rules = vec![rule(vec![pp.in_port()], vec![pp.output()])];
            rules.extend(filler_rules(fill, 0, pp.out));
            let (_, errors) = replace_rules(addr, &rules)?;
            let ts = latency_trials(r, p, "table", variant)?;
            let variant = format!("{variant} ({} rules)", rules.len());
            let check = if errors > 0 {
                format!("{errors} rules refused; {}", forwarded_check(&ts))
            } else {
                forwarded_check(&ts)
            };
            tables.row(&dut, "table", &variant, latency_cell(&ts), check);
        }
    }
    if wanted.contains(&DpTest::Rewrite) {
        for variant in ["none", "mac", "ipv4", "vlan-pcp", "dscp", "udp-port"] {
            let (_, errors) = replace_rules(addr, &[rule(rewrite_match(variant, pp), rewrite_actions(variant, pp))])?;
            if errors > 0 {
                tables.row(&dut, "rewrite", variant, "rule refused".into(), "-".into());
                continue;
            }
            let ts = latency_trials(r, p, "rewrite", variant)?;
            let seen = ts
                .iter()
                .filter_map(|t| t.rx.sample.as_deref())
                .all(|f| rewrite_seen(variant, f))
                && ts.iter().any(|t| t.rx.sample.is_some());
            let check = match (variant, seen) {
                ("none", _) => forwarded_check(&ts),
                (_, true) => "rewrite seen in received frames".into(),
                (_, false) => "FAILED: rewrite not in received frames".into(),
            };
            tables.row(&dut, "rewrite", variant, latency_cell(&ts), check);
        }
    }
    if wanted.contains(&DpTest::Legacy) {
        replace_rules(addr, &[rule(vec![pp.in_port()], vec![pp.output()])])?;
        let of = latency_trials(r, p, "legacy", "openflow")?;
        let of_max = r.run("legacy_max", p.scenario_frame, None, p.scenario_s)?.rx_pps;
        tables.row(
            &dut,
            "legacy",
            "openflow (in_port rule)",
            latency_cell(&of),
            forwarded_check(&of),
        );
        let mut legacy = (String::new(), f64::NAN, f64::NAN);
        if matches!(d, DpDut::Started(Dut::Ovs | Dut::OvsAfxdp)) {
            replace_rules(
                addr,
                &[FlowMod {
                    instructions: output(PORT_NORMAL),
                    ..FlowMod::add(10)
                }],
            )?;
            let ts = latency_trials(r, p, "legacy", "normal")?;
            let max = r.run("legacy_max", p.scenario_frame, None, p.scenario_s)?.rx_pps;
            tables.row(
                &dut,
                "legacy",
                "NORMAL (L2 learning)",
                latency_cell(&ts),
                forwarded_check(&ts),
            );
            legacy = ("NORMAL action".into(), mean_latency(&ts), max);
        }
        tables
            .legacy
            .push((dut.clone(), mean_latency(&of), of_max, legacy.0, legacy.1, legacy.2));
    }
    if wanted.contains(&DpTest::Capacity) {
        capacity(r, p, tables, addr)?;
    }
    if wanted.contains(&DpTest::Insertion) {
        insertion(r, p, tables, addr)?;
    }
    Ok(())
}

/// Exact IPv4 destination rules, from 12.0.0.0 up.
fn capacity_rule(i: u32, pp: Ports) -> FlowMod {
    rule(
        vec![
            Oxm::EthType(0x0800),
            Oxm::Ipv4Dst(Ipv4Addr::from(0x0c00_0000 + i), None),
        ],
        vec![pp.output()],
    )
}

fn capacity(r: &mut Runner, p: &Plan, tables: &mut Tables, addr: std::net::SocketAddr) -> Result<(), BedError> {
    let dut = r.dut.to_string();
    let pp = r.ports;
    replace_rules(addr, &[])?;
    let chunk = (p.capacity_max / 20).clamp(1000.min(p.capacity_max), 50_000);
    let mut c = OfClient::connect(addr).map_err(BedError::of("connecting to the switch"))?;
    // RFC 8456's table-growth rule (the one the controller tests use):
    // stop at a refused rule, or when a step adds under a tenth of itself.
    let mut growth = TableGrowth::new(chunk as u64, p.capacity_max as u64, Duration::MAX, 0);
    let mut refused = 0u64;
    while let Some(batch) = growth.next_step() {
        let mods: Vec<FlowMod> = batch.clone().map(|i| capacity_rule(i as u32, pp)).collect();
        let errors = c.install(&mods).map_err(BedError::of("installing the rules"))?.errors;
        let now = c.active_rules().map_err(BedError::of("counting its rules"))?;
        refused += errors;
        let failure = (errors > 0).then(|| format!("the switch refused {errors} rules"));
        growth.record(now, failure, Duration::ZERO);
    }
    let (added, active) = (growth.destinations(), growth.flows());
    let stop = match growth.note() {
        n if n.is_empty() => "the most asked for".to_string(),
        n => n,
    };
    // A sample of the rules, spread over those installed, checked in the
    // data plane: with no other rule, only the rule itself can forward.
    let samples = 8.min(active as usize).max(1);
    let mut verified = 0;
    let mut highest = 0;
    for k in 0..samples {
        let i = (active as usize - 1) * k / (samples - 1).max(1);
        let dst = Ipv4Addr::from(0x0c00_0000 + i as u32);
        let spec = scenario_load(r, p, dst, 10_000.0, 0.3);
        let t = r.run_spec("capacity_verify", p.scenario_frame, &spec)?;
        if t.received > 0 {
            verified += 1;
            highest = highest.max(i + 1);
        }
    }
    r.figure("capacity".into(), 0, &[("rules", active as f64)], Vec::new());
    tables.row(
        &dut,
        "capacity",
        &format!("up to {}", p.capacity_max),
        format!("{active} rules in the tables ({added} sent, {refused} refused; stopped: {stop})"),
        format!("{verified} of {samples} sampled rules forward (the highest verified: rule {highest})"),
    );
    Ok(())
}

fn insertion(r: &mut Runner, p: &Plan, tables: &mut Tables, addr: std::net::SocketAddr) -> Result<(), BedError> {
    let dut = r.dut.to_string();
    let pp = r.ports;
    replace_rules(addr, &[])?;
    let mods = filler_rules(p.table_rules, 0, pp.out);
    let installed = OfClient::connect(addr)
        .and_then(|mut c| c.install(&mods))
        .map_err(BedError::of("installing the rules"))?;
    let (secs, errors) = (installed.seconds, installed.errors);
    let per_s = mods.len() as f64 / secs;
    r.figure("insertion".into(), 0, &[("flow_mods_per_s", per_s)], Vec::new());
    tables.row(
        &dut,
        "insertion",
        &format!("{} rules, one batch, to the barrier", mods.len()),
        format!("{per_s:.0} FLOW_MODs/s"),
        format!("{errors} refused"),
    );
    if r.bed.remote.is_some() {
        r.problems.push(format!(
            "{dut}: insertion: the delay to the first frame forwarded left out: it reads the generator's progress as it sends, and with --workers the generator is on another machine"
        ));
        return Ok(());
    }
    let seconds = p.scenario_s.max(1.0);
    let (mut delays, mut dropped_after, mut lies) = (Vec::new(), Vec::new(), 0);
    for i in 0..p.scenario_repetitions {
        replace_rules(addr, &[])?;
        // The generator's sequence number read when the BARRIER_REPLY is in:
        // every frame numbered from it on left after the reply, so a
        // switch whose reply is true forwards all of them. (Send times
        // cannot say this: the generator may send nothing for a while
        // after the reply, when the measuring side's own threads take its
        // core.)
        let probe = Arc::new(SeqProbe::default());
        let spec = GenSpec {
            seq_probe: Some(probe.clone()),
            ..scenario_load(r, p, SINK_IP, p.scenario_rate, seconds)
        };
        let mut at_reply = (0u64, 0u64);
        // Once only: a repeat would find the rule in place.
        let (t, _) = r.run_once("insertion_delay", p.scenario_frame, &spec, |a| {
            let Some(a) = a else { return Ok(()) };
            let mut c = OfClient::connect(a).map_err(BedError::of("connecting to the switch"))?;
            std::thread::sleep(Duration::from_secs_f64(seconds * 0.3));
            let sent = now_ns();
            c.install(&[rule(vec![pp.in_port()], vec![pp.output()])])
                .map_err(BedError::of("installing the rules"))?;
            at_reply = (sent, probe.next_seq());
            Ok(())
        })?;
        let (sent, next_seq) = at_reply;
        if t.received == 0 || sent == 0 {
            continue;
        }
        // From the FLOW_MOD to the first frame out of the switch.
        let delay_ms = t.rx.first_rx_ns.saturating_sub(sent) as f64 / 1e6;
        // Frames sent after the reply and still dropped: those from
        // `next_seq` up to the first that came through.
        let lost = (next_seq..t.gen.sent).take_while(|&s| !t.rx.got(s)).count();
        if lost > 0 {
            lies += 1;
        }
        r.figure(
            "insertion".into(),
            i as u32,
            &[("first_packet_ms", delay_ms), ("dropped_after_barrier", lost as f64)],
            Vec::new(),
        );
        delays.push(delay_ms);
        dropped_after.push(lost);
    }
    let most_dropped = dropped_after.iter().copied().max().unwrap_or(0);
    let interval_us = 1e6 / p.scenario_rate;
    let check = if delays.is_empty() {
        "FAILED: the new rule forwarded nothing".to_string()
    } else if lies == 0 {
        format!(
            "BARRIER_REPLY honest in {} of {}: every frame sent after it was forwarded",
            delays.len(),
            delays.len()
        )
    } else {
        format!(
            "BARRIER_REPLY before the rule forwarded in {lies} of {}: up to {most_dropped} frames sent after the reply were dropped (~{:.0} µs of frames at one every {interval_us:.0} µs)",
            delays.len(),
            most_dropped as f64 * interval_us
        )
    };
    tables.row(
        &dut,
        "insertion",
        "FLOW_MOD to first frame forwarded",
        if delays.is_empty() {
            "-".into()
        } else {
            format!(
                "{:.2} ms mean, {:.2} ms max",
                stats::mean(&delays),
                delays.iter().cloned().fold(0.0, f64::max)
            )
        },
        check,
    );
    Ok(())
}
