//! `sdnlab bench fidelity`: sdnlab's emulation against Mininet's, the
//! command line. It only parses: the flags map onto
//! `lab::fidelity::FidelityConfig`, and `lab` runs it.

use clap::Args;
use lab::fidelity::FidelityConfig;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct FidelityBenchArgs {
    /// Emulators, comma-separated: sdnlab, mininet (Mininet's Python API, Linux bridges).
    #[arg(long, value_delimiter = ',', default_values_t = FidelityConfig::default().emulators)]
    pub emulator: Vec<lab::fidelity::Emulator>,
    /// Switches of each linear topology, comma-separated (one host per switch)
    /// [default: 1,4,8; with --quick 1,2].
    #[arg(long, value_delimiter = ',')]
    pub switches: Option<Vec<usize>>,
    /// Seconds of each iperf3 run [default: 10; with --quick 2].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// UDP offered rates in Mbit/s, comma-separated, raised in this order
    /// [default: 100,1000,4000; with --quick 100,1000].
    #[arg(long, value_delimiter = ',')]
    pub udp_mbit: Option<Vec<f64>>,
    /// Pings per round-trip measurement [default: 20; with --quick 5].
    #[arg(long)]
    pub pings: Option<usize>,
    /// Rounds, the emulators alternating within each [default: 3; with --quick 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// A smoke run: 1 and 2 switches, 2 s runs, UDP at 100 and 1000 Mbit/s, 5 pings, one
    /// round (flags given beside it still count).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench fidelity`: the flags as an experiment, printed or run.
pub fn run(a: FidelityBenchArgs) -> std::process::ExitCode {
    let base = if a.quick {
        FidelityConfig::quick()
    } else {
        FidelityConfig::default()
    };
    // With --quick, a flag given beside it still wins over the smoke size.
    let config = FidelityConfig {
        emulators: a.emulator,
        switches: a.switches.unwrap_or(base.switches),
        seconds: a.seconds.unwrap_or(base.seconds),
        udp_mbit: a.udp_mbit.unwrap_or(base.udp_mbit),
        pings: a.pings.unwrap_or(base.pings),
        rounds: a.rounds.unwrap_or(base.rounds),
    };
    a.show.run(&lab::Experiment::Fidelity(config))
}
