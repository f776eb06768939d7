//! `sdnlab bench gen`: the traffic generators' command line. It only
//! parses: the flags are `lab::gen::GenConfig`'s own (flattened), and
//! `lab` runs it.

use clap::Args;
use lab::gen::GenConfig;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct GenBenchArgs {
    #[command(flatten)]
    pub config: GenConfig,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench gen`: the flags as an experiment, printed or run.
pub fn run(a: GenBenchArgs) -> std::process::ExitCode {
    a.show.run(&lab::Experiment::Gen(a.config))
}
