//! `bench dp`'s configuration: every parameter with its default, its flag
//! (the command line flattens the config) and its checks, and the plan a
//! run follows (`--quick` and the defaults resolved).

use super::plan::Plan;
use crate::check::{range, real, Conflict, ParamError};
use crate::switch::bed::Dut;
use crate::LabError;
use serde::{Deserialize, Serialize};
use traffic::run::{GenMethod, RecvMethod};

/// The data-plane benchmark. The defaults follow the RFCs: 60 s trials,
/// 20 latency trials of 120 s, 50 back-to-back searches, the seven
/// Ethernet frame sizes, every test, on sdnlab, Open vSwitch and the
/// Linux bridge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
#[command(allow_negative_numbers = true)]
pub struct DpConfig {
    /// Switches under test, comma-separated: sdnlab, sdnlab-afxdp,
    /// sdnlab-fastpath, ovs, ovs-afxdp, bridge, veth, external (see
    /// --external-ports).
    #[arg(long = "dut", value_delimiter = ',', default_values_t = DpConfig::default().duts)]
    pub duts: Vec<DpDut>,
    /// The `external` switch: the two interfaces of this machine that lead
    /// to it (frames leave by the first and come back by the second). They
    /// are moved into the bench's host namespaces for the run, and back.
    /// With --workers, WORKER:IF each: interfaces on the workers' machines,
    /// left where they are.
    #[arg(long, value_delimiter = ',')]
    pub external_ports: Vec<String>,
    /// The external switch's OpenFlow listener (HOST:PORT), to install the
    /// rules and read its counters; without it, only the RFC 2544 and
    /// iperf tests run, on whatever the switch does.
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::hostport::parse)]
    pub external_openflow: Option<std::net::SocketAddr>,
    /// The OpenFlow numbers of the external switch's ports behind
    /// --external-ports.
    #[arg(long, value_delimiter = ',', default_values_t = DpConfig::default().external_of_ports)]
    pub external_of_ports: Vec<u32>,
    /// Frame sizes in bytes, FCS included (64..=9000); default RFC 2544's
    /// 64,128,256,512,1024,1280,1518 (with --quick: 64,512,1518). Frames
    /// over 1518 bytes (jumbo) raise every link's MTU to 9000 and go out
    /// by AF_PACKET when longer than the XDP generator's page allows.
    #[arg(long, value_delimiter = ',')]
    pub frames: Option<Vec<usize>>,
    /// Tests, comma-separated: RFC 2544's throughput, latency, loss, b2b
    /// (back-to-back), recovery; iperf3's tcp and udp (raised step by
    /// step); paths (one switch against a chain of --long-path), parallel
    /// (--parallel bridges loaded at once); the OpenFlow scenarios match, table,
    /// rewrite, legacy, capacity, insertion. Default: all.
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = DpConfig::default().tests
    )]
    pub tests: Vec<DpTest>,
    /// Seconds of a throughput confirmation trial and of each frame loss trial.
    #[arg(long, default_value_t = DpConfig::default().trial_seconds)]
    pub trial_seconds: f64,
    /// Seconds of each throughput search trial.
    #[arg(long, default_value_t = DpConfig::default().search_seconds)]
    pub search_seconds: f64,
    /// The search stops when its bracket is this fraction of the rate.
    #[arg(long, default_value_t = DpConfig::default().resolution)]
    pub resolution: f64,
    /// Seconds of each latency trial.
    #[arg(long, default_value_t = DpConfig::default().latency_seconds)]
    pub latency_seconds: f64,
    /// Latency trials per frame size (RFC 2544: at least 20).
    #[arg(long, default_value_t = DpConfig::default().repetitions)]
    pub repetitions: usize,
    /// Back-to-back searches per frame size (RFC 2544 / 9004: at least 50).
    #[arg(long, default_value_t = DpConfig::default().b2b_repetitions)]
    pub b2b_repetitions: usize,
    /// The longest burst tried, in seconds at the generator's full rate (RFC 2544: at least 2).
    #[arg(long, default_value_t = DpConfig::default().b2b_seconds)]
    pub b2b_seconds: f64,
    /// System recovery: seconds of overload (RFC 2544: at least 60), then of the reduced rate.
    #[arg(long, default_value_t = DpConfig::default().overload_seconds)]
    pub overload_seconds: f64,
    #[arg(long, default_value_t = DpConfig::default().recovery_seconds)]
    pub recovery_seconds: f64,
    /// System recovery trials per frame size.
    #[arg(long, default_value_t = DpConfig::default().recovery_repetitions)]
    pub recovery_repetitions: usize,
    /// OpenFlow scenarios: the offered rate (frames/s), seconds and repetitions of each latency trial.
    #[arg(long, default_value_t = DpConfig::default().scenario_rate)]
    pub scenario_rate: f64,
    #[arg(long, default_value_t = DpConfig::default().scenario_seconds)]
    pub scenario_seconds: f64,
    #[arg(long, default_value_t = DpConfig::default().scenario_repetitions)]
    pub scenario_repetitions: usize,
    /// Frame size of the OpenFlow scenarios.
    #[arg(long, default_value_t = DpConfig::default().scenario_frame)]
    pub scenario_frame: usize,
    /// Non-matching rules that fill the table in the `table` scenario.
    #[arg(long, default_value_t = DpConfig::default().table_rules)]
    pub table_rules: usize,
    /// The `capacity` scenario stops adding rules at this many.
    #[arg(long, default_value_t = DpConfig::default().capacity_max)]
    pub capacity_max: usize,
    /// iperf3 tests (`tcp`, `udp`): seconds per run, and the UDP loads raised step by step (Mbit/s).
    #[arg(long, default_value_t = DpConfig::default().iperf_seconds)]
    pub iperf_seconds: f64,
    #[arg(long, value_delimiter = ',', default_values_t = DpConfig::default().udp_mbit)]
    pub udp_mbit: Vec<f64>,
    /// Switches in the long path of the `paths` test.
    #[arg(long, default_value_t = DpConfig::default().long_path)]
    pub long_path: usize,
    /// Bridges (two ports each) loaded at once in the `parallel` test.
    #[arg(long, default_value_t = DpConfig::default().parallel)]
    pub parallel: usize,
    /// How test frames are sent (see `bench switch --generator`).
    #[arg(long, default_value = "xdp")]
    pub generator: GenMethod,
    /// How the receiving host takes test frames (see `bench switch --receiver`). AF_PACKET
    /// here by default: these tests go up to 9018-byte frames, longer than an AF_XDP chunk
    /// holds, and one receive path serves every size.
    #[arg(long, default_value = "afpacket")]
    pub receiver: RecvMethod,
    /// Limits the switch's port towards the receiver to this many Mbit/s
    /// (a tbf qdisc): a known bottleneck, to check that the bench finds
    /// it. Only switches that send through the port's qdisc feel it (the
    /// Linux bridge, Open vSwitch's `system` ports); sdnlab's ports
    /// bypass it.
    #[arg(long)]
    pub limit_mbit: Option<f64>,
    /// A smoke run: frames 64, 512 and 1518, 1 s trials (0.5 s searches),
    /// 5 % resolution, one 1 s latency trial, short bursts and scenarios.
    #[arg(long)]
    pub quick: bool,
}

impl Default for DpConfig {
    fn default() -> DpConfig {
        DpConfig {
            duts: [Dut::Sdnlab, Dut::Ovs, Dut::Bridge].map(DpDut::Started).to_vec(),
            external_ports: Vec::new(),
            external_openflow: None,
            external_of_ports: vec![1, 2],
            frames: None,
            tests: DpTest::ALL.to_vec(),
            trial_seconds: 60.0,
            search_seconds: 10.0,
            resolution: 0.01,
            latency_seconds: 120.0,
            repetitions: 20,
            b2b_repetitions: 50,
            b2b_seconds: 2.0,
            overload_seconds: 60.0,
            recovery_seconds: 10.0,
            recovery_repetitions: 5,
            scenario_rate: 100_000.0,
            scenario_seconds: 10.0,
            scenario_repetitions: 10,
            scenario_frame: 128,
            table_rules: 100_000,
            capacity_max: 1_000_000,
            iperf_seconds: 10.0,
            udp_mbit: vec![100.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1500.0, 2000.0],
            long_path: 3,
            parallel: 3,
            generator: GenMethod::Xdp,
            receiver: RecvMethod::AfPacket,
            limit_mbit: None,
            quick: false,
        }
    }
}

impl DpConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), LabError> {
        plan(self).map(drop)
    }
}

/// A switch `bench dp` measures: one that sdnlab starts, or an external
/// one (a hardware switch behind `--external-ports`). Its names are
/// [`Dut`]'s and `external`, the same on the command line, in a file and
/// in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DpDut {
    Started(Dut),
    External,
}

impl DpDut {
    /// Every one: [`Dut::ALL`]'s order, then `external`.
    pub const ALL: [DpDut; Dut::ALL.len() + 1] = {
        let mut all = [DpDut::External; Dut::ALL.len() + 1];
        let mut i = 0;
        while i < Dut::ALL.len() {
            all[i] = DpDut::Started(Dut::ALL[i]);
            i += 1;
        }
        all
    };
    /// Every one's name, in [`DpDut::ALL`]'s order.
    pub const NAMES: [&'static str; Dut::ALL.len() + 1] = {
        let mut names = ["external"; Dut::ALL.len() + 1];
        let mut i = 0;
        while i < Dut::ALL.len() {
            names[i] = Dut::ALL[i].name();
            i += 1;
        }
        names
    };

    pub const fn name(self) -> &'static str {
        match self {
            DpDut::Started(d) => d.name(),
            DpDut::External => "external",
        }
    }
}

impl std::fmt::Display for DpDut {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl clap::ValueEnum for DpDut {
    fn value_variants<'a>() -> &'a [Self] {
        &DpDut::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

impl Serialize for DpDut {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DpDut {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DpDut, D::Error> {
        let name = String::deserialize(d)?;
        DpDut::ALL
            .into_iter()
            .find(|x| x.name() == name)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, &DpDut::NAMES))
    }
}

crate::check::choice! {
    /// A test of `bench dp`.
    pub enum DpTest {
        /// RFC 2544 26.1: the highest rate without loss, confirmed.
        Throughput = "throughput",
        /// RFC 2544 26.2: every frame's latency at the throughput rate.
        Latency = "latency",
        /// RFC 2544 26.3: frame loss from the full rate down.
        Loss = "loss",
        /// RFC 2544 26.4 with RFC 9004: the longest loss-free burst.
        B2b = "b2b",
        /// RFC 2544 26.5: system recovery after an overload.
        Recovery = "recovery",
        /// iperf3, TCP.
        Tcp = "tcp",
        /// iperf3, UDP raised step by step.
        Udp = "udp",
        /// One switch against a chain of them.
        Paths = "paths",
        /// Bridges loaded at once.
        Parallel = "parallel",
        /// OpenFlow: latency by the fields a rule matches.
        Match = "match",
        /// OpenFlow: latency with one rule and with a full table.
        Table = "table",
        /// OpenFlow: latency with header rewrites.
        Rewrite = "rewrite",
        /// OpenFlow against the Linux bridge's legacy forwarding.
        Legacy = "legacy",
        /// OpenFlow: rules added until the table is full.
        Capacity = "capacity",
        /// OpenFlow: FLOW_MOD rate and rule to first frame.
        Insertion = "insertion",
    }
}

pub const RFC_TESTS: [DpTest; 5] = [
    DpTest::Throughput,
    DpTest::Latency,
    DpTest::Loss,
    DpTest::B2b,
    DpTest::Recovery,
];
pub const IPERF_TESTS: [DpTest; 2] = [DpTest::Tcp, DpTest::Udp];

pub(super) fn plan(args: &DpConfig) -> Result<Plan, LabError> {
    check_external(args)?;
    let frames = args.frames.clone().unwrap_or_else(|| {
        if args.quick {
            vec![64, 512, 1518]
        } else {
            vec![64, 128, 256, 512, 1024, 1280, 1518]
        }
    });
    check_numbers(args, &frames)?;
    Ok(if args.quick {
        Plan {
            frames,
            trial_s: 0.5,
            search_s: 0.3,
            resolution: 0.05,
            latency_s: 0.5,
            repetitions: 1,
            b2b_repetitions: 1,
            b2b_s: 0.05,
            overload_s: 0.5,
            recovery_s: 0.5,
            recovery_repetitions: 1,
            scenario_rate: 20_000.0,
            scenario_s: 0.3,
            scenario_repetitions: 2,
            scenario_frame: args.scenario_frame,
            table_rules: 1000,
            capacity_max: 5000,
            iperf_s: 1.0,
            udp_mbit: vec![100.0, 400.0],
            long_path: args.long_path,
            parallel: args.parallel,
        }
    } else {
        Plan {
            frames,
            trial_s: args.trial_seconds,
            search_s: args.search_seconds,
            resolution: args.resolution,
            latency_s: args.latency_seconds,
            repetitions: args.repetitions,
            b2b_repetitions: args.b2b_repetitions,
            b2b_s: args.b2b_seconds,
            overload_s: args.overload_seconds,
            recovery_s: args.recovery_seconds,
            recovery_repetitions: args.recovery_repetitions,
            scenario_rate: args.scenario_rate,
            scenario_s: args.scenario_seconds,
            scenario_repetitions: args.scenario_repetitions,
            scenario_frame: args.scenario_frame,
            table_rules: args.table_rules,
            capacity_max: args.capacity_max,
            iperf_s: args.iperf_seconds,
            udp_mbit: args.udp_mbit.clone(),
            long_path: args.long_path,
            parallel: args.parallel,
        }
    })
}

/// An external switch comes with its ports, and its ports and OpenFlow
/// listener only with it (the switches and tests are typed: a name
/// `bench dp` does not know never gets this far).
fn check_external(args: &DpConfig) -> Result<(), LabError> {
    let has_external = args.duts.contains(&DpDut::External);
    if has_external && args.external_ports.len() != 2 {
        return Err(
            Conflict::new("needs --external-ports IF1,IF2 (the interfaces that lead to it)")
                .with("dut", DpDut::External)
                .into(),
        );
    }
    if !has_external {
        let given = [
            ("external-ports", !args.external_ports.is_empty()),
            ("external-openflow", args.external_openflow.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, given)| *given) {
            return Err(Conflict::new("only with --dut external").flag(name).into());
        }
    }
    if args.external_of_ports.len() != 2 || args.external_of_ports.iter().any(|p| *p == 0 || *p > 0xffff_ff00) {
        let given: Vec<String> = args.external_of_ports.iter().map(|p| p.to_string()).collect();
        return Err(ParamError::new(
            "external-of-ports",
            given.join(","),
            "give two OpenFlow port numbers, e.g. 1,2",
        )
        .into());
    }
    Ok(())
}

/// Every size, duration, rate and count in its range: one line each, no
/// silent substitute.
fn check_numbers(args: &DpConfig, frames: &[usize]) -> Result<(), LabError> {
    for f in frames {
        range("frames", *f, 64, 9000)?;
    }
    range("scenario-frame", args.scenario_frame, 64, 1518)?;
    real("resolution", args.resolution, 0.001, 0.5)?;
    for m in &args.udp_mbit {
        real("udp-mbit", *m, 0.1, 100_000.0)?;
    }
    range("long-path", args.long_path, 2, 8)?;
    range("parallel", args.parallel, 2, 8)?;
    real("iperf-seconds", args.iperf_seconds, 1.0, 86_400.0)?;
    real("b2b-seconds", args.b2b_seconds, 0.001, 10.0)?;
    if let Some(m) = args.limit_mbit {
        real("limit-mbit", m, 0.1, 100_000.0)?;
    }
    // Counts and durations the checks above leave open: one line each, no
    // silent substitute (a 0 used to become 1, a NaN ran).
    let counts = [
        ("repetitions", args.repetitions),
        ("b2b-repetitions", args.b2b_repetitions),
        ("recovery-repetitions", args.recovery_repetitions),
        ("scenario-repetitions", args.scenario_repetitions),
    ];
    for (name, v) in counts {
        range(name, v, 1, 100_000)?;
    }
    range("table-rules", args.table_rules, 0, 10_000_000)?;
    range("capacity-max", args.capacity_max, 1, 100_000_000)?;
    for (name, v) in [
        ("trial-seconds", args.trial_seconds),
        ("search-seconds", args.search_seconds),
        ("latency-seconds", args.latency_seconds),
        ("overload-seconds", args.overload_seconds),
        ("recovery-seconds", args.recovery_seconds),
        ("scenario-seconds", args.scenario_seconds),
    ] {
        real(name, v, 0.2, 86_400.0)?;
    }
    real("scenario-rate", args.scenario_rate, 1.0, 10e6)?;
    Ok(())
}
