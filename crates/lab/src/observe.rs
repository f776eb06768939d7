//! How an experiment tells its caller what is happening, and what it hands
//! back. The runner emits [`Event`]s as it goes (the command line draws a
//! progress bar or plain lines from them; a coordinator could forward
//! them); every measurement is on disk before the event about it is sent.

use std::path::PathBuf;

/// Something the person (or program) watching a run may want to know.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    /// A message worth a line of its own: what starts, what failed, where results are.
    Line(&'a str),
    /// This many steps (trials, cases) are planned from now on.
    Plan { steps: u64 },
    /// One planned step is done; `status` says how it went.
    Step { status: &'a str },
    /// A transient status that replaces the previous one (a counter while a step runs).
    Status(&'a str),
    /// The planned steps are over.
    PlanDone,
    /// cbench's loop: one measured loop of `switches` emulated switches,
    /// each one's responses in it (`per_switch`), in OpenFlow `version`.
    CbenchLoop {
        switches: usize,
        responses_per_s: f64,
        per_switch: &'a [u64],
        version: u8,
    },
    /// cbench's end of a scenario: every measured loop's responses/s.
    CbenchScenario { switches: usize, rates: &'a [f64] },
    /// What shows the system under test from outside while it is measured:
    /// its name and its ports' root-namespace interfaces (a label, e.g.
    /// "s1 in", and the interface), for a live view's counters.
    Watch {
        system: &'a str,
        ports: &'a [(String, String)],
    },
    /// A trial begins: its test and frame size, what it offers (frames/s;
    /// `None`: as fast as the generator can) and for how long.
    TrialStart {
        test: &'a str,
        frame: usize,
        offered_pps: Option<f64>,
        seconds: f64,
    },
    /// A trial ended (it is on disk already): what it measured.
    TrialEnd(&'a TrialFigures),
}

/// What one trial measured, for a live view (the full record is the run's
/// `trials.jsonl`).
#[derive(Clone, Debug, Default)]
pub struct TrialFigures {
    pub system: String,
    pub test: String,
    pub frame: usize,
    /// Frames/s the generator achieved.
    pub offered_pps: f64,
    pub sent: u64,
    pub received: u64,
    /// One-way latency in microseconds: median, 99th percentile, largest.
    pub latency_us: Option<[f64; 3]>,
}

/// Receives a run's events. Implementations must be cheap: they are called
/// from the measuring thread between measurements.
pub trait Observer: Sync {
    fn event(&self, e: Event<'_>);
}

/// An observer that ignores everything (tests, nested runs).
pub struct Quiet;

impl Observer for Quiet {
    fn event(&self, _: Event<'_>) {}
}

/// What a finished run hands back.
#[derive(Debug)]
pub struct Outcome {
    /// The run directory (results, report, experiment.toml).
    pub dir: PathBuf,
    /// The results as the terminal shows them.
    pub table: String,
    /// The results as one JSON value (for `--json`).
    pub json: serde_json::Value,
    /// Trials or tests that did not complete or were not valid; the run is
    /// on disk either way, and a caller exits non-zero when this is not 0.
    pub incomplete: usize,
}
