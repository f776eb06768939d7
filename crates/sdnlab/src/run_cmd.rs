//! `sdnlab run FILE.toml`, and what every experiment command ends with:
//! validate the experiment (one line and exit 2 when a value is out of
//! range), print it (`--print-config`) or run it with progress on stderr,
//! then print its results on stdout (a table, or JSON).

use lab::rundir::Place;
use lab::{Experiment, LabError};
use std::path::PathBuf;
use std::process::ExitCode;

/// How the results are shown.
#[derive(Clone, Copy, Default)]
pub struct Show {
    pub json: bool,
    pub cbench_output: bool,
    pub print_config: bool,
}

/// Where a benchmark's run goes and how its results are shown: the flags
/// the `sdnlab bench` commands share.
#[derive(clap::Args)]
pub struct Output {
    /// Run directory (default: a new one under results/, named for the
    /// benchmark and the time).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the experiment file these flags describe, and run nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
}

impl Output {
    /// Validates and runs (or prints) `e` as these flags say.
    pub fn run(self, e: &Experiment) -> ExitCode {
        self.run_on(e, None)
    }

    /// Like [`Output::run`], spread over the workers of inventory `workers`.
    pub fn run_on(self, e: &Experiment, workers: Option<PathBuf>) -> ExitCode {
        let how = Show {
            json: self.json,
            print_config: self.print_config,
            ..Show::default()
        };
        run_on(e, self.out, workers, how)
    }
}

/// `--no-live`: plain progress lines even on a terminal.
pub static NO_LIVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn fail(e: &LabError) -> ExitCode {
    eprintln!("sdnlab: {e}");
    ExitCode::from(match e {
        // As a shell reports a command SIGINT ended.
        LabError::Interrupted { .. } => 130,
        e if e.is_usage() => 2,
        _ => 1,
    })
}

/// Validates and runs (or prints) `e` into `out` (default under results/),
/// spread over the workers of inventory `workers` when given.
pub fn run_on(e: &Experiment, out: Option<PathBuf>, workers: Option<PathBuf>, how: Show) -> ExitCode {
    if let Err(err) = e.validate() {
        return fail(&err);
    }
    if how.print_config {
        print!("{}", e.to_toml());
        return ExitCode::SUCCESS;
    }
    let mut progress = labconsole::live::Progress::new(!NO_LIVE.load(std::sync::atomic::Ordering::Relaxed));
    progress.cbench_output = how.cbench_output;
    let place = Place {
        dir: out,
        workers,
        ..Default::default()
    };
    // SIGINT and SIGTERM stop the run at its next trial (its testbed
    // removed, what it measured kept), except a network's, which ends its
    // own way. The handlers only set the run's stop flag.
    if !matches!(e, Experiment::Net(_)) {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            if let Err(err) = signal_hook::flag::register(sig, place.stop.flag()) {
                eprintln!("sdnlab: cannot watch signal {sig}: {err}");
                return ExitCode::from(1);
            }
        }
    }
    let result = e.run(&place, &progress);
    progress.finish();
    match result {
        Ok(o) => {
            if how.json {
                println!("{}", o.json);
            } else if !how.cbench_output {
                print!("{}", o.table);
            }
            if o.incomplete > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(err) => fail(&err),
    }
}

/// `sdnlab run FILE.toml`.
pub fn run_file(file: &std::path::Path, out: Option<PathBuf>, workers: Option<PathBuf>, how: Show) -> ExitCode {
    match Experiment::load(file) {
        Ok(e) => run_on(&e, out, workers, how),
        Err(err) => fail(&err),
    }
}
