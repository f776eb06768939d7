//! The durations and counts of a `bench dp` run, every one resolved
//! (`--quick` and the RFCs' defaults applied): what its procedures run.

/// A run's durations and counts.
pub(crate) struct Plan {
    pub(crate) frames: Vec<usize>,
    pub(crate) trial_s: f64,
    pub(crate) search_s: f64,
    pub(crate) resolution: f64,
    pub(crate) latency_s: f64,
    pub(crate) repetitions: usize,
    pub(crate) b2b_repetitions: usize,
    pub(crate) b2b_s: f64,
    pub(crate) overload_s: f64,
    pub(crate) recovery_s: f64,
    pub(crate) recovery_repetitions: usize,
    pub(crate) scenario_rate: f64,
    pub(crate) scenario_s: f64,
    pub(crate) scenario_repetitions: usize,
    pub(crate) scenario_frame: usize,
    pub(crate) table_rules: usize,
    pub(crate) capacity_max: usize,
    pub(crate) iperf_s: f64,
    pub(crate) udp_mbit: Vec<f64>,
    pub(crate) long_path: usize,
    pub(crate) parallel: usize,
}
