//! `sdnlab bench lb`: the load-balancing experiment's command line. It
//! only parses: the flags are `lab::lb::LbConfig`'s own (flattened, with
//! their defaults), and `lab` runs it.

use lab::lb::LbConfig;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct LbBenchArgs {
    #[command(flatten)]
    pub config: LbConfig,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench lb`: the flags as an experiment, printed or run.
pub fn run(a: LbBenchArgs) -> std::process::ExitCode {
    a.show.run(&lab::Experiment::Lb(a.config))
}
