//! `sdnlab bench switch`: the switch forwarding benchmark's command line.
//! It only parses: the flags are `lab::switch::SwitchConfig`'s own
//! (flattened, with their defaults), and `lab` runs the experiment.

use clap::Args;
use lab::switch::SwitchConfig;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct SwitchBenchArgs {
    #[command(flatten)]
    pub config: SwitchConfig,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench switch`: the flags as an experiment, printed or run.
pub fn run(a: SwitchBenchArgs) -> std::process::ExitCode {
    a.show.run(&lab::Experiment::Switch(a.config))
}
