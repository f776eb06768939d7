//! `sdnlab bench lb`: the load-balancing experiment's command line. It
//! only parses: the flags map onto `lab::lb::LbConfig` (whose defaults
//! they show), and `lab` runs it.

use lab::lb::LbConfig;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct LbBenchArgs {
    /// A smoke run: concurrency 20 and 60, one repetition of 1.5 s, the
    /// policies round-robin, txbytes, load and load-prev-delta (unless --policy).
    #[arg(long)]
    pub quick: bool,
    /// Policies to compare (default: all eleven): round-robin, random, txbytes, cpuq-load,
    /// load, load-prev-delta, least-connections, power-of-two, weighted, maglev, load-prev-adaptive.
    #[arg(long = "policy", value_delimiter = ',')]
    pub policies: Vec<String>,
    /// The OpenFlow switch between clients and replicas.
    #[arg(long, default_value = "sdnlab", value_parser = ["sdnlab", "ovs"])]
    pub switch: String,
    /// Results directory (default results/bench-lb-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Loads: homogeneous (every request 100 KB), heterogeneous (video chunks).
    #[arg(long = "load", value_delimiter = ',', default_values_t = LbConfig::default().loads,
          value_parser = ["homogeneous", "heterogeneous"])]
    pub loads: Vec<String>,
    /// Concurrency levels: new connections (requests) per second offered by the client.
    #[arg(long, value_delimiter = ',', default_values_t = LbConfig::default().concurrency)]
    pub concurrency: Vec<u32>,
    /// Repetitions of every point (the paper used 33).
    #[arg(long, default_value_t = LbConfig::default().repetitions)]
    pub repetitions: u32,
    /// Seconds of load per repetition.
    #[arg(long, default_value_t = LbConfig::default().seconds)]
    pub seconds: f64,
    /// Clients: open-loop (ours: latency from each request's intended start) and httperf.
    #[arg(long = "client", value_delimiter = ',', default_values_t = LbConfig::default().clients,
          value_parser = ["open-loop", "httperf"])]
    pub clients: Vec<String>,
    /// The `load` policy's alpha values (default 0.3,0.5,0.7,1; --quick: 0.7).
    #[arg(long, value_delimiter = ',')]
    pub alpha: Vec<f64>,
    /// Which port counter `load` reads: rx (responses: server work), tx (requests, the
    /// paper's formula), or both (each a variant; default both, --quick rx).
    #[arg(long, value_parser = ["rx", "tx", "both"])]
    pub load_counter: Option<String>,
    /// PortStats polling period of the statistics-driven policies (the paper: 10 ms).
    #[arg(long, default_value_t = LbConfig::default().stats_period_ms)]
    pub stats_period_ms: f64,
    /// load-prev-delta's per-flow addition, bytes/s (the paper: 13 KB/s).
    #[arg(long, default_value_t = LbConfig::default().delta)]
    pub delta: f64,
    /// Each replica's link rate, Mbit/s: what makes the replicas the bottleneck here.
    #[arg(long, default_value_t = LbConfig::default().replica_mbit)]
    pub replica_mbit: f64,
    /// Seed of the heterogeneous load and of the random policies.
    #[arg(long, default_value_t = LbConfig::default().seed)]
    pub seed: u64,
    /// Print the experiment file these flags describe, and run nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Distinct video sessions in the heterogeneous load.
    #[arg(long, default_value_t = LbConfig::default().sessions)]
    pub sessions: usize,
}

/// `sdnlab bench lb`: the flags as an experiment, printed or run.
pub fn run(a: LbBenchArgs) -> std::process::ExitCode {
    let config = LbConfig {
        quick: a.quick,
        policies: a.policies,
        switch: a.switch,
        loads: a.loads,
        concurrency: a.concurrency,
        repetitions: a.repetitions,
        seconds: a.seconds,
        clients: a.clients,
        alpha: a.alpha,
        load_counter: a.load_counter,
        stats_period_ms: a.stats_period_ms,
        delta: a.delta,
        replica_mbit: a.replica_mbit,
        seed: a.seed,
        sessions: a.sessions,
    };
    let how = crate::run_cmd::Show {
        json: a.json,
        print_config: a.print_config,
        ..Default::default()
    };
    crate::run_cmd::run(&lab::Experiment::Lb(config), a.out, how)
}
