//! `sdnlab bench gen`: the traffic generators' command line. It only
//! parses: the flags map onto `lab::gen::GenConfig`, and `lab` runs it.

use clap::Args;
use lab::gen::GenConfig;
use std::path::PathBuf;

#[derive(Args)]
#[command(allow_negative_numbers = true)]
pub struct GenBenchArgs {
    /// Generators, comma-separated: sdnlab-xdp, sdnlab-afpacket, trafgen, tcpreplay.
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = GenConfig::default().generators
    )]
    pub generator: Vec<String>,
    /// Seconds each generator runs (the rate is counted over all but its first 0.5 s
    /// and last 0.25 s).
    #[arg(long, default_value_t = GenConfig::default().seconds)]
    pub seconds: f64,
    /// Runs of each generator, alternated; the summary gives the median.
    #[arg(long, default_value_t = GenConfig::default().rounds)]
    pub rounds: usize,
    /// Run directory (default results/bench-gen-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the experiment file these flags describe, and run nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `sdnlab bench gen`: the flags as an experiment, printed or run.
pub fn run(a: GenBenchArgs) -> std::process::ExitCode {
    let config = GenConfig {
        generators: a.generator,
        seconds: a.seconds,
        rounds: a.rounds,
    };
    let how = crate::run_cmd::Show {
        json: a.json,
        print_config: a.print_config,
        ..Default::default()
    };
    crate::run_cmd::run(&lab::Experiment::Gen(config), a.out, how)
}
