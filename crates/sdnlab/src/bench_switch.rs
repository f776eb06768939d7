//! `sdnlab bench switch`: the switch forwarding benchmark's command line.
//! It only parses: the flags map onto `lab::switch::SwitchConfig` (whose
//! defaults they show), and `lab` runs the experiment.

use clap::Args;
use lab::switch::SwitchConfig;
use std::path::PathBuf;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct SwitchBenchArgs {
    /// Switches under test, comma-separated: sdnlab (AF_PACKET ports), sdnlab-afxdp (AF_XDP
    /// ports), sdnlab-fastpath (AF_XDP ports with the in-kernel fast path), ovs (system
    /// ports), ovs-afxdp, bridge, xdp-patch (not a switch: every frame redirected to the
    /// other port by XDP, the floor of a hop in the kernel), veth (no hop).
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = SwitchConfig::default().duts
    )]
    pub dut: Vec<String>,
    /// Frame size in bytes, FCS included (64 is RFC 2544's smallest).
    #[arg(long, default_value_t = SwitchConfig::default().frame)]
    pub frame: usize,
    /// Seconds per trial.
    #[arg(long, default_value_t = SwitchConfig::default().seconds)]
    pub seconds: f64,
    /// Extra non-matching rules installed before measuring, comma-separated (OpenFlow switches).
    #[arg(long, value_delimiter = ',', default_values_t = SwitchConfig::default().rules)]
    pub rules: Vec<usize>,
    /// FLOW_MODs sent to time insertion (OpenFlow switches).
    #[arg(long, default_value_t = SwitchConfig::default().flow_mods)]
    pub flow_mods: usize,
    /// Zero-loss search stops when the bracket is this fraction of the rate.
    #[arg(long, default_value_t = SwitchConfig::default().resolution)]
    pub resolution: f64,
    /// Rounds: each round measures every extra-rules count in turn (the table filled and
    /// emptied again between them), so 0 and 1,000,000 rules are compared in alternation;
    /// the summary gives the median of the rounds.
    #[arg(long, default_value_t = SwitchConfig::default().rounds)]
    pub rounds: usize,
    /// Skip the iperf3 TCP trial.
    #[arg(long)]
    pub no_tcp: bool,
    /// How test frames are sent: xdp (an XDP program in live-frame mode transmits them from
    /// inside the kernel; GRO is turned on at the veth that receives them, for every switch
    /// alike) or afpacket (an AF_PACKET socket, sendmmsg).
    #[arg(long, default_value = "xdp")]
    pub generator: traffic::run::GenMethod,
    /// How the receiving host takes test frames: xdp (an XDP program hands them to an
    /// AF_XDP socket, no socket buffer; frames it cannot take reach an AF_PACKET ring) or
    /// afpacket (an AF_PACKET ring only, every frame through the stack).
    #[arg(long, default_value = "xdp")]
    pub receiver: traffic::run::RecvMethod,
    /// A smoke run: short trials, a coarse search, 10,000 extra rules.
    #[arg(long)]
    pub quick: bool,
    /// Run directory (default results/bench-switch-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the experiment file these flags describe, and run nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `sdnlab bench switch`: the flags as an experiment, printed or run.
pub fn run(a: SwitchBenchArgs) -> std::process::ExitCode {
    let config = SwitchConfig {
        duts: a.dut,
        frame: a.frame,
        seconds: a.seconds,
        rules: a.rules,
        flow_mods: a.flow_mods,
        resolution: a.resolution,
        rounds: a.rounds,
        tcp: !a.no_tcp,
        generator: a.generator,
        receiver: a.receiver,
        quick: a.quick,
    };
    let how = crate::run_cmd::Show {
        json: a.json,
        print_config: a.print_config,
        ..Default::default()
    };
    crate::run_cmd::run(&lab::Experiment::Switch(config), a.out, how)
}
