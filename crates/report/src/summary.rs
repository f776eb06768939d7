//! What the runs add up to: per scenario and metric, the statistics, the
//! best system and why, and the notes a reader needs (too few trials,
//! systems that disagree).

use super::*;

/// One scenario's statistics for one metric.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub scenario: String,
    pub metric: String,
    /// "trials", or "loops" when the scenario had a single trial.
    pub over: String,
    pub summary: stats::Summary,
    pub ci95_bootstrap: (f64, f64),
}

impl Cell {
    /// The statistics of `values`, one scenario's figures for `metric`
    /// over `over` ("trials" or "loops"), with the bootstrap interval
    /// (10,000 resamples, a fixed seed: a report rebuilds to the same numbers).
    pub fn of(scenario: &str, metric: &str, over: &str, values: &[f64]) -> Cell {
        Cell {
            scenario: scenario.into(),
            metric: metric.into(),
            over: over.into(),
            summary: stats::summary(values),
            ci95_bootstrap: stats::ci_bootstrap(values, 0.95, 10_000, 8456),
        }
    }

    /// The columns of a cell in `summary.csv`, in `csv_row`'s order.
    pub const CSV_HEADER: &'static str =
        "scenario,metric,over,n,mean,median,stdev,min,max,q25,q75,ci95_t_low,ci95_t_high,ci95_boot_low,ci95_boot_high";

    /// The cell as a line of `summary.csv` (no line end).
    pub fn csv_row(&self) -> String {
        let s = &self.summary;
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            crate::csv_quoted(&self.scenario),
            self.metric,
            self.over,
            s.n,
            s.mean,
            s.median,
            s.stdev,
            s.min,
            s.max,
            s.q25,
            s.q75,
            s.ci95.0,
            s.ci95.1,
            self.ci95_bootstrap.0,
            self.ci95_bootstrap.1
        )
    }

    /// The 95 % interval as tables show it: "low .. high", or "n/a" under
    /// three values (an interval from one or two values would only be
    /// their range).
    pub fn ci_text(&self) -> String {
        if self.summary.n < 3 {
            "n/a (under 3 values)".to_string()
        } else {
            format!(
                "{} .. {}",
                fmt_num(self.ci95_bootstrap.0),
                fmt_num(self.ci95_bootstrap.1)
            )
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Best {
    pub metric: String,
    pub scenario: String,
    pub result: stats::BestScenario,
    pub scenarios: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub runs: Vec<String>,
    pub cells: Vec<Cell>,
    /// Per metric whose samples name no system under test, the best scenario.
    pub best: Vec<Best>,
    /// Per metric whose samples name systems under test (one run), every
    /// pair of systems compared in each condition, Holm-corrected over
    /// the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<verdict::Verdict>,
    /// What the reader must know before trusting the figures, each said
    /// once (`notes`): fewer trials than the method asks, trials that
    /// disagree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// RFC 8456's number of trials per measurement.
pub const RFC8456_TRIALS: u64 = 10;

/// A scenario's trials "disagree wildly" when its largest value is this
/// many times its smallest.
pub const DISAGREE_FACTOR: f64 = 2.0;

/// The run's notes, each said once: a controller benchmark under RFC
/// 8456's 10 trials, and trials that disagree wildly (a factor of
/// `DISAGREE_FACTOR` or more between a scenario's trials, in any figure),
/// naming the widest.
pub fn notes(runs: &[Run], cells: &[Cell]) -> Vec<String> {
    let mut out = Vec::new();
    let fewest = runs
        .iter()
        .filter(|r| r.meta.benchmark.starts_with("bench ctl"))
        .filter_map(|r| r.meta.parameters["trials"].as_u64())
        .min();
    if let Some(n) = fewest.filter(|n| *n < RFC8456_TRIALS) {
        out.push(format!(
            "{n} trial(s) per scenario, under RFC 8456's {RFC8456_TRIALS}: the figures are indicative, and a verdict needs at least {} trials a side.",
            compare::MIN_A_SIDE
        ));
    }
    let mut wide: Vec<(&Cell, f64)> = cells
        .iter()
        .filter(|c| c.over == "trials" && c.summary.n >= 2 && c.summary.min > 0.0)
        .map(|c| (c, c.summary.max / c.summary.min))
        .filter(|(_, f)| *f >= DISAGREE_FACTOR)
        .collect();
    wide.sort_by(|a, b| b.1.total_cmp(&a.1));
    if let Some((c, f)) = wide.first() {
        out.push(format!(
            "Trials disagree: in {} of {} figures a scenario's trials differ by a factor of {DISAGREE_FACTOR} or more; the widest, {} of {}: {} to {} (x{f:.1}). The host may have been busy, or the target is not steady: more trials, or a quieter host.",
            wide.len(),
            cells.iter().filter(|c| c.over == "trials" && c.summary.n >= 2).count(),
            c.metric,
            c.scenario,
            fmt_num(c.summary.min),
            fmt_num(c.summary.max)
        ));
    }
    out
}

/// Scenario names, in first-seen order; prefixed with the run id when
/// several runs are compared.
pub(super) fn scenario_key(run: &Run, s: &Sample, many: bool) -> String {
    if many {
        format!("{} / {}", run.meta.run_id, s.scenario)
    } else {
        s.scenario.clone()
    }
}

/// The values the statistics use: per trial when there are several,
/// otherwise the finer samples of the single trial.
pub fn values(runs: &[Run], scenario: &str, metric: &str) -> (Vec<f64>, &'static str) {
    let many = runs.len() > 1;
    let pick = |trials: bool| -> Vec<f64> {
        runs.iter()
            .flat_map(|r| r.samples.iter().map(move |s| (r, s)))
            .filter(|(r, s)| {
                scenario_key(r, s, many) == scenario && (s.kind == "trial") == trials && s.kind != CEILING_KIND
            })
            .filter_map(|(_, s)| s.values.get(metric).copied())
            .collect()
    };
    let trials = pick(true);
    if trials.len() >= 2 {
        return (trials, "trials");
    }
    let finer = pick(false);
    if finer.len() >= 2 {
        (finer, "loops")
    } else {
        (trials, "trials")
    }
}

pub fn scenarios(runs: &[Run]) -> Vec<String> {
    let many = runs.len() > 1;
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        for s in &r.samples {
            let k = scenario_key(r, s, many);
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Every metric of these runs, once each, in first-seen order.
pub fn metrics<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    for r in runs {
        for m in &r.meta.metrics {
            if !out.iter().any(|o| o.name == m.name) {
                out.push(m.clone());
            }
        }
    }
    out
}

/// The system under test and the condition of `scenario`, if its samples
/// name them.
pub(super) fn system_of<'a>(runs: &'a [Run], scenario: &str) -> Option<(&'a str, &'a str)> {
    let [run] = runs else { return None };
    run.samples
        .iter()
        .find(|s| s.scenario == scenario && s.system.is_some())
        .map(|s| (s.system.as_deref().unwrap_or(""), s.condition.as_deref().unwrap_or("")))
}

/// Statistics of every scenario and metric; per metric, the verdicts
/// between the systems under test when the samples name them, otherwise
/// the best scenario.
pub fn summarise(runs: &[Run]) -> Summary {
    let names = scenarios(runs);
    // Each scenario's system and condition, looked up once.
    let systems: Vec<Option<(&str, &str)>> = names.iter().map(|sc| system_of(runs, sc)).collect();
    let mut cells = Vec::new();
    let mut best = Vec::new();
    let mut groups = Vec::new();
    for m in metrics(runs) {
        let mut per: Vec<(String, Vec<f64>)> = Vec::new();
        for (sc, system) in names.iter().zip(&systems) {
            let (v, over) = values(runs, sc, &m.name);
            if v.is_empty() {
                continue;
            }
            cells.push(Cell::of(sc, &m.name, over, &v));
            if let Some((system, condition)) = *system {
                groups.push(verdict::Group {
                    section: String::new(),
                    metric: m.clone(),
                    condition: condition.into(),
                    system: system.into(),
                    values: v.clone(),
                });
            }
            per.push((sc.clone(), v));
        }
        let compared = groups.iter().any(|g| g.metric.name == m.name);
        if per.len() >= 2 && !compared {
            let slices: Vec<&[f64]> = per.iter().map(|(_, v)| v.as_slice()).collect();
            if let Some(r) = stats::best_scenario(&slices, m.better, stats::TestKind::RankSum, 0.05) {
                best.push(Best {
                    metric: m.name.clone(),
                    scenario: per[r.best].0.clone(),
                    result: r,
                    scenarios: per.iter().map(|(s, _)| s.clone()).collect(),
                });
            }
        }
    }
    Summary {
        runs: runs.iter().map(|r| r.meta.run_id.clone()).collect(),
        notes: notes(runs, &cells),
        cells,
        best,
        verdicts: verdict::compare(&groups),
    }
}
