//! `sdnlab bench dp`: the data-plane benchmark's command line (RFC 2544 /
//! 9004 and the OpenFlow scenarios). It only parses: the flags map onto
//! `lab::dp::DpConfig` (whose defaults they show), and `lab` runs it.

use clap::Args;
use lab::dp::DpConfig;
use std::path::PathBuf;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct DpBenchArgs {
    /// Switches under test, comma-separated: sdnlab, sdnlab-afxdp,
    /// sdnlab-fastpath, ovs, ovs-afxdp, bridge, veth, external (see
    /// --external-ports).
    #[arg(long, value_delimiter = ',', default_values_t = DpConfig::default().duts)]
    pub dut: Vec<String>,
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
    pub tests: Vec<String>,
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
    pub generator: traffic::run::GenMethod,
    /// How the receiving host takes test frames (see `bench switch --receiver`). AF_PACKET
    /// here by default: these tests go up to 9018-byte frames, longer than an AF_XDP chunk
    /// holds, and one receive path serves every size.
    #[arg(long, default_value = "afpacket")]
    pub receiver: traffic::run::RecvMethod,
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
    /// Run directory (default results/bench-dp-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The external switch's ports are on the machines of this inventory's workers
    /// (--external-ports WORKER:IF,WORKER:IF): the generator runs on the first's, the
    /// receiver on the second's (docs/manual/workers.md).
    #[arg(long, value_name = "FILE")]
    pub workers: Option<PathBuf>,
    /// Print the experiment file these flags describe, and run nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `sdnlab bench dp`: the flags as an experiment, printed or run.
pub fn run(a: DpBenchArgs) -> std::process::ExitCode {
    let config = DpConfig {
        duts: a.dut,
        external_ports: a.external_ports,
        external_openflow: a.external_openflow,
        external_of_ports: a.external_of_ports,
        frames: a.frames,
        tests: a.tests,
        trial_seconds: a.trial_seconds,
        search_seconds: a.search_seconds,
        resolution: a.resolution,
        latency_seconds: a.latency_seconds,
        repetitions: a.repetitions,
        b2b_repetitions: a.b2b_repetitions,
        b2b_seconds: a.b2b_seconds,
        overload_seconds: a.overload_seconds,
        recovery_seconds: a.recovery_seconds,
        recovery_repetitions: a.recovery_repetitions,
        scenario_rate: a.scenario_rate,
        scenario_seconds: a.scenario_seconds,
        scenario_repetitions: a.scenario_repetitions,
        scenario_frame: a.scenario_frame,
        table_rules: a.table_rules,
        capacity_max: a.capacity_max,
        iperf_seconds: a.iperf_seconds,
        udp_mbit: a.udp_mbit,
        long_path: a.long_path,
        parallel: a.parallel,
        generator: a.generator,
        receiver: a.receiver,
        limit_mbit: a.limit_mbit,
        quick: a.quick,
    };
    let how = crate::run_cmd::Show {
        json: a.json,
        print_config: a.print_config,
        ..Default::default()
    };
    crate::run_cmd::run_on(&lab::Experiment::Dp(config), a.out, a.workers, how)
}
