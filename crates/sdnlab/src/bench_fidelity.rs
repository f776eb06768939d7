//! `sdnlab bench fidelity`: sdnlab's emulation against Mininet's, the
//! command line. It only parses: the flags are
//! `lab::fidelity::FidelityConfig`'s own (flattened), and `lab` runs it.

use clap::Args;
use lab::fidelity::FidelityConfig;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct FidelityBenchArgs {
    #[command(flatten)]
    pub config: FidelityConfig,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench fidelity`: the flags as an experiment, printed or run.
pub fn run(a: FidelityBenchArgs) -> std::process::ExitCode {
    a.show.run(&lab::Experiment::Fidelity(a.config))
}
