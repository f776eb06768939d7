//! `sdnlab bench dp`: the data-plane benchmark's command line (RFC 2544 /
//! 9004 and the OpenFlow scenarios). It only parses: the flags are
//! `lab::dp::DpConfig`'s own (flattened, with their defaults), with
//! `--workers` and where the results go; `lab` runs it.

use clap::Args;
use lab::dp::DpConfig;
use std::path::PathBuf;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct DpBenchArgs {
    #[command(flatten)]
    pub config: DpConfig,
    /// The external switch's ports are on the machines of this inventory's workers
    /// (--external-ports WORKER:IF,WORKER:IF): the generator runs on the first's, the
    /// receiver on the second's (docs/manual/workers.md).
    #[arg(long, value_name = "FILE")]
    pub workers: Option<PathBuf>,
    #[command(flatten)]
    pub show: crate::run_cmd::Output,
}

/// `sdnlab bench dp`: the flags as an experiment, printed or run.
pub fn run(a: DpBenchArgs) -> std::process::ExitCode {
    a.show.run_on(&lab::Experiment::Dp(a.config), a.workers)
}
