//! `sdnlab bench ctl`: the controller benchmark's command line. It only
//! parses: the flags are `lab::ctl::CtlConfig`'s own (flattened, with their
//! defaults), `--target` and where the results go; `lab` runs the
//! experiment.

use clap::Args;
use lab::ctl::CtlConfig;
use std::path::PathBuf;

#[derive(Args, Clone)]
#[command(allow_negative_numbers = true)]
pub struct CtlArgs {
    #[command(flatten)]
    pub config: CtlConfig,
    /// Controller to measure; default: sdnlab's own, started in this process for each trial.
    /// A cluster at addresses: HOST:PORT,HOST:PORT,... (RFC 8456's cluster mode: every
    /// emulated switch connects to each member).
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]", value_delimiter = ',', value_parser = lab::hostport::parse)]
    pub target: Vec<std::net::SocketAddr>,
    /// Where the run's results go (default results/ctl-<time>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run the emulated switches on the workers of this inventory (needs --target: the
    /// controller they reach, or --cluster N: sdnlab's members and their etcd started on the
    /// workers; docs/manual/workers.md).
    #[arg(long, value_name = "FILE")]
    pub workers: Option<PathBuf>,
    /// Print cbench's own lines (per loop, and its RESULT line per scenario).
    #[arg(long)]
    pub cbench_output: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print the experiment file these options describe (every parameter resolved) and exit:
    /// `sdnlab run FILE` runs it.
    #[arg(long)]
    pub print_config: bool,
}

impl CtlArgs {
    /// The experiment these flags describe (not yet validated): the
    /// config's own flags, and `--target`'s list as the one controller or
    /// the cluster's members.
    pub fn config(&self) -> CtlConfig {
        CtlConfig {
            target: self.target.first().copied(),
            target_members: if self.target.len() > 1 {
                self.target.clone()
            } else {
                Vec::new()
            },
            ..self.config.clone()
        }
    }
}

/// `sdnlab bench ctl`: the flags as an experiment, printed or run.
pub fn run(a: CtlArgs) -> std::process::ExitCode {
    let experiment = lab::Experiment::Ctl(a.config());
    let how = crate::run_cmd::Show {
        json: a.json,
        cbench_output: a.cbench_output,
        print_config: a.print_config,
    };
    crate::run_cmd::run_on(&experiment, a.out.clone(), a.workers.clone(), how)
}
