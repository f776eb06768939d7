//! Benchmark results on disk and the reports made from them, shared by
//! every `sdnlab bench`. A run is a directory:
//!
//! - `meta.json`: the setup RFC 8456 asks a report to state (CPU model,
//!   cores, memory, OS, kernel, the controllers measured with their version
//!   and command, sdnlab's version, every parameter, start and end times);
//! - `samples.jsonl`: one JSON object per measurement, appended and flushed
//!   as it is measured, before anything is summarised;
//! - `summary.json`, `summary.csv`: per scenario and metric, the statistics
//!   (`stats`), and per metric the best scenario with the pairwise tests;
//! - `report.html`: all of it in one self-contained page (inline SVG box
//!   plots and round-trip CDFs; no script, no network).
//!
//! `load` reads a run back, so reports can be rebuilt and runs compared.

pub mod compare;
pub mod html;
pub mod suite;
mod text;
pub mod verdict;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

/// The machine and software a run measured on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Setup {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub hostname: String,
}

impl Setup {
    /// Reads /proc and /etc; fields it cannot read stay empty.
    pub fn detect() -> Setup {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        Setup {
            cpu_model,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            memory_bytes,
            os,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        }
    }
}

/// A system under test.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    pub version: String,
    /// How it was started ("" when sdnlab did not start it).
    pub command: String,
    pub address: String,
}

/// How a metric reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Metric {
    /// The identifier in samples and summaries (`discovery_s`).
    pub name: String,
    /// The unit, or what the number counts.
    pub unit: String,
    pub better: stats::Better,
    /// The metric in plain words for reports ("Topology discovery time");
    /// empty in runs written before titles (the name is shown then).
    #[serde(default)]
    pub title: String,
    /// How it is measured, in a sentence or two, with the section of the
    /// method it follows ("RFC 2544 section 26.1: ..."); empty when the
    /// experiment does not say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
}

impl Metric {
    pub fn new(name: &str, unit: &str, better: stats::Better) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            better,
            title: String::new(),
            method: String::new(),
        }
    }

    /// The same metric with how it is measured.
    pub fn measured(mut self, method: &str) -> Metric {
        self.method = method.into();
        self
    }

    /// The same metric with its name in plain words.
    pub fn titled(mut self, title: &str) -> Metric {
        self.title = title.into();
        self
    }

    /// How a report names it: the title, or the identifier made readable.
    pub fn display_name(&self) -> String {
        if self.title.is_empty() {
            self.name.replace('_', " ")
        } else {
            self.title.clone()
        }
    }
}

/// The version of the results model (docs/RESULTS.md) this crate writes;
/// runs written before it was versioned read as 0.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Meta {
    /// The results model's version (`SCHEMA_VERSION` when written).
    #[serde(default)]
    pub schema: u32,
    pub run_id: String,
    /// What was run: "bench ctl", ...
    pub benchmark: String,
    /// The command line.
    pub command: Vec<String>,
    pub sdnlab_version: String,
    pub started_unix: f64,
    pub finished_unix: Option<f64>,
    /// `started_unix` and `finished_unix` in ISO 8601 (UTC), written with the file.
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    pub setup: Setup,
    pub targets: Vec<Target>,
    pub parameters: serde_json::Value,
    pub metrics: Vec<Metric>,
    /// What happened that is not a number (a controller that died, refused...).
    #[serde(default)]
    pub events: Vec<String>,
}

/// The kind of a sample that records the instrument's own ceiling (the
/// load driver against a reference responder), never a measurement of the
/// target: the statistics leave it out.
pub const CEILING_KIND: &str = "ceiling";

/// One measurement. `kind` is "trial" for a trial's figures (what the
/// statistics use), `CEILING_KIND` for the instrument's own ceiling (left
/// out of them), and anything else (e.g. "loop") for finer samples.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sample {
    pub kind: String,
    pub scenario: String,
    pub trial: u32,
    #[serde(default)]
    pub index: u32,
    pub unix: f64,
    pub values: BTreeMap<String, f64>,
    /// Round-trip distribution as (microseconds, cumulative fraction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtt_cdf: Vec<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The system under test, when one run measures several side by side
    /// (the switch in `bench dp`, the policy in `bench lb`): its samples
    /// are compared with the other systems' in the same `condition`, and
    /// the report writes the verdicts (`verdict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// What is held equal when systems are compared ("64B", "5 extra
    /// rules"); the scenario is the system and the condition together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

impl Sample {
    /// A `trial` sample taken now: a trial's figures, what the statistics use.
    pub fn trial<K: Into<String>>(
        scenario: impl Into<String>,
        trial: u32,
        values: impl IntoIterator<Item = (K, f64)>,
    ) -> Sample {
        Sample::of("trial", scenario, trial, values)
    }

    /// A sample of `kind` (`loop`, `round`, `case`, ...) taken now.
    pub fn of<K: Into<String>>(
        kind: &str,
        scenario: impl Into<String>,
        trial: u32,
        values: impl IntoIterator<Item = (K, f64)>,
    ) -> Sample {
        Sample {
            kind: kind.into(),
            scenario: scenario.into(),
            trial,
            index: 0,
            unix: now_unix(),
            values: values.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            rtt_cdf: Vec::new(),
            note: None,
            system: None,
            condition: None,
        }
    }

    /// A sample of `system` (the system under test) in `condition`, to be
    /// compared with the other systems of the run in the same condition.
    pub fn under_test(mut self, system: impl Into<String>, condition: impl Into<String>) -> Sample {
        self.system = Some(system.into());
        self.condition = Some(condition.into());
        self
    }

    /// Its place within the trial.
    pub fn at(mut self, index: u32) -> Sample {
        self.index = index;
        self
    }

    /// What the numbers do not say.
    pub fn noted(mut self, note: Option<String>) -> Sample {
        self.note = note;
        self
    }

    /// With the round-trip distribution.
    pub fn with_cdf(mut self, cdf: Vec<(f64, f64)>) -> Sample {
        self.rtt_cdf = cdf;
        self
    }
}

/// A Unix time in ISO 8601, UTC, to the second: 2026-11-25T13:22:54Z.
pub fn iso8601(unix: f64) -> String {
    let secs = if unix.is_finite() && unix > 0.0 { unix as u64 } else { 0 };
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// `meta` with its times also in ISO 8601, as written to meta.json.
fn dated(meta: &Meta) -> Meta {
    Meta {
        schema: SCHEMA_VERSION,
        started: iso8601(meta.started_unix),
        finished: meta.finished_unix.map(iso8601),
        ..meta.clone()
    }
}

pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A run being written.
pub struct RunWriter {
    pub dir: PathBuf,
    samples: std::fs::File,
}

fn ctx(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn write_json(path: &Path, v: &impl Serialize) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(v).map_err(io::Error::other)?;
    std::fs::write(path, bytes).map_err(|e| ctx(path, e))
}

impl RunWriter {
    /// Creates `dir` (it must not hold a run already) and writes `meta.json`.
    pub fn create(dir: &Path, meta: &Meta) -> io::Result<RunWriter> {
        if dir.join("samples.jsonl").exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already holds a run: choose another --out", dir.display()),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| ctx(dir, e))?;
        write_json(&dir.join("meta.json"), &dated(meta))?;
        let path = dir.join("samples.jsonl");
        let samples = std::fs::File::create(&path).map_err(|e| ctx(&path, e))?;
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            samples,
        })
    }

    /// Appends a sample and flushes it to the file.
    pub fn append(&mut self, s: &Sample) -> io::Result<()> {
        let line = serde_json::to_string(s).map_err(io::Error::other)?;
        writeln!(self.samples, "{line}")?;
        self.samples.flush()
    }

    /// Writes the final `meta.json`, then summaries and the HTML report from
    /// what is on disk.
    pub fn finish(self, meta: &Meta) -> io::Result<Summary> {
        write_json(&self.dir.join("meta.json"), &dated(meta))?;
        let run = load(&self.dir)?;
        write_outputs(&self.dir, &[run])
    }
}

/// Adds `event` to the run in `dir` (once) and writes its outputs again:
/// what happened after the run wrote its end (it was interrupted) shows
/// in meta.json and the report.
pub fn add_event(dir: &Path, event: &str) -> io::Result<Summary> {
    let mut run = load(dir)?;
    if !run.meta.events.iter().any(|e| e == event) {
        run.meta.events.push(event.to_string());
        write_json(&dir.join("meta.json"), &dated(&run.meta))?;
    }
    write_outputs(dir, &[run])
}

/// A run read back.
#[derive(Clone, Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub meta: Meta,
    pub samples: Vec<Sample>,
}

/// Reads a run directory (a truncated last line, from a run that was
/// killed, is skipped).
pub fn load(dir: &Path) -> io::Result<Run> {
    let meta_path = dir.join("meta.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| ctx(&meta_path, e))?;
    let meta: Meta = serde_json::from_str(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", meta_path.display())))?;
    let path = dir.join("samples.jsonl");
    let f = std::fs::File::open(&path).map_err(|e| ctx(&path, e))?;
    let mut samples = Vec::new();
    for line in io::BufReader::new(f).lines() {
        if let Ok(s) = serde_json::from_str::<Sample>(&line?) {
            samples.push(s);
        }
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        meta,
        samples,
    })
}

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
fn scenario_key(run: &Run, s: &Sample, many: bool) -> String {
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
fn system_of<'a>(runs: &'a [Run], scenario: &str) -> Option<(&'a str, &'a str)> {
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

/// A CSV field in quotes, its own quotes doubled (RFC 4180).
pub(crate) fn csv_quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Writes summary.json, summary.csv and report.html into `dir`.
pub fn write_outputs(dir: &Path, runs: &[Run]) -> io::Result<Summary> {
    let summary = summarise(runs);
    write_json(&dir.join("summary.json"), &summary)?;
    let mut csv = String::from(
        "scenario,metric,over,n,mean,median,stdev,min,max,q25,q75,ci95_t_low,ci95_t_high,ci95_boot_low,ci95_boot_high\n",
    );
    for c in &summary.cells {
        let s = &c.summary;
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            csv_quoted(&c.scenario),
            c.metric,
            c.over,
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
            c.ci95_bootstrap.0,
            c.ci95_bootstrap.1
        ));
    }
    let path = dir.join("summary.csv");
    std::fs::write(&path, csv).map_err(|e| ctx(&path, e))?;
    let path = dir.join("report.html");
    std::fs::write(&path, html::render(runs, &summary)).map_err(|e| ctx(&path, e))?;
    // An experiment with a table of its own wrote it before; the others
    // get the summary's. The verdicts go below either (replacing those of
    // an earlier build of the report).
    let path = dir.join("summary.md");
    let own = std::fs::read_to_string(&path).ok();
    let table = match &own {
        Some(own) => own.split(VERDICTS_HEADING).next().unwrap_or("").to_string(),
        None => markdown_table(&summary, &metrics(runs)),
    };
    let verdicts = markdown_verdicts(&summary, &metrics(runs));
    let text = if verdicts.is_empty() {
        table
    } else {
        format!("{}\n\n{verdicts}", table.trim_end())
    };
    if own.as_ref() != Some(&text) {
        std::fs::write(&path, text).map_err(|e| ctx(&path, e))?;
    }
    Ok(summary)
}

/// The heading of the verdicts in `summary.md`.
const VERDICTS_HEADING: &str = "## Verdicts";

/// The verdicts between systems under test in Markdown, one line each
/// (empty when the run names no systems).
pub fn markdown_verdicts(summary: &Summary, metrics: &[Metric]) -> String {
    if summary.verdicts.is_empty() {
        return String::new();
    }
    let n = verdict::tested(&summary.verdicts);
    let mut out = format!(
        "{VERDICTS_HEADING}\n\nEvery pair of systems measured in the same condition; Mann-Whitney U, two-sided, Holm-corrected over the run's {n} comparisons; a difference is shown at p < 0.05.\n\n"
    );
    // Many pairs with too few trials (a sweep run once): one line for them.
    let untested = summary.verdicts.len() - n;
    let fold = untested > 12;
    if fold {
        out.push_str(&format!(
            "- {untested} pairs had too few trials to compare (at least 2 each in a condition; more repetitions or rounds).\n"
        ));
    }
    for v in summary.verdicts.iter().filter(|v| !(fold && v.p.is_nan())) {
        let Some(m) = metrics.iter().find(|m| m.name == v.metric) else {
            continue;
        };
        let at = if v.scenario.is_empty() {
            String::new()
        } else {
            format!(", {}", v.scenario)
        };
        out.push_str(&format!(
            "- {} ({}){at}: {}\n",
            m.display_name(),
            html::unit_text(&m.unit),
            verdict::markdown(v, m, n)
        ));
    }
    out
}

/// The summary as a Markdown table (`summary.md`): per scenario and
/// metric, in plain words with the unit, n, median, mean and the 95 %
/// bootstrap interval; then the best scenario per metric.
pub fn markdown_table(summary: &Summary, metrics: &[Metric]) -> String {
    let named: BTreeMap<&str, &Metric> = metrics.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut out =
        String::from("| scenario | metric | n | median | mean | 95 % CI (bootstrap) |\n|---|---|---:|---:|---:|---|\n");
    for c in &summary.cells {
        let s = &c.summary;
        let metric = named.get(c.metric.as_str()).map_or(c.metric.clone(), |m| {
            format!("{} ({})", m.display_name(), html::unit_text(&m.unit))
        });
        out.push_str(&format!(
            "| {} | {metric} | {} {} | {} | {} | {} |\n",
            c.scenario.replace('|', "\\|"),
            s.n,
            c.over,
            fmt_num(s.median),
            fmt_num(s.mean),
            c.ci_text()
        ));
    }
    if !summary.best.is_empty() {
        out.push('\n');
    }
    for b in &summary.best {
        let metric = named
            .get(b.metric.as_str())
            .map_or(b.metric.clone(), |m| m.display_name());
        out.push_str(&format!(
            "- best {metric}: {} ({})\n",
            b.scenario,
            best_reason(summary, b)
        ));
    }
    for n in &summary.notes {
        out.push_str(&format!("\nNote: {n}\n"));
    }
    out
}

/// A plain-text table of the summary for the terminal (`metrics` give the units).
pub fn terminal_table(summary: &Summary, metrics: &[Metric]) -> String {
    let units: BTreeMap<&str, &str> = metrics.iter().map(|m| (m.name.as_str(), m.unit.as_str())).collect();
    let mut rows = vec![[
        "scenario".to_string(),
        "metric".into(),
        "n".into(),
        "mean".into(),
        "median".into(),
        "stdev".into(),
        "95% CI (bootstrap)".into(),
    ]];
    for c in &summary.cells {
        let s = &c.summary;
        let unit = units
            .get(c.metric.as_str())
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        rows.push([
            c.scenario.clone(),
            format!("{}{unit}", c.metric),
            format!("{} {}", s.n, c.over),
            fmt_num(s.mean),
            fmt_num(s.median),
            fmt_num(s.stdev),
            c.ci_text(),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (k, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < 3 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if k == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 12));
            out.push('\n');
        }
    }
    for b in &summary.best {
        out.push_str(&format!(
            "best {}: {} ({})\n",
            b.metric,
            b.scenario,
            best_reason(summary, b)
        ));
    }
    for n in &summary.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Why `b` is the best scenario, in words: a test, a median, or a median
/// because no test could show a difference with so few trials.
pub(crate) fn best_reason(summary: &Summary, b: &Best) -> String {
    let fewest = summary
        .cells
        .iter()
        .filter(|c| c.metric == b.metric)
        .map(|c| c.summary.n)
        .min()
        .unwrap_or(0);
    match b.result.chosen_by {
        stats::ChosenBy::Test => "by test: better than every other, p < 0.05".into(),
        stats::ChosenBy::Median if fewest < compare::MIN_A_SIDE => format!(
            "by median: too few trials to test ({fewest} in the smallest scenario; at least {} a side needed)",
            compare::MIN_A_SIDE
        ),
        stats::ChosenBy::Median => "by median: no scenario better than all others".into(),
    }
}

/// Numbers as people read them: thousands separated, sensible decimals.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let decimals = if x.abs() >= 1000.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        3
    };
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if x < 0.0 { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: &str, scenario: &str, trial: u32, v: f64) -> Sample {
        Sample {
            kind: kind.into(),
            scenario: scenario.into(),
            trial,
            index: 0,
            unix: 0.0,
            values: BTreeMap::from([("rate".to_string(), v)]),
            rtt_cdf: vec![(10.0, 0.5), (20.0, 1.0)],
            note: None,
            system: None,
            condition: None,
        }
    }

    /// A report of several systems (a run per peer) opens with what it
    /// shows: per metric the medians, the better one or why there is no
    /// verdict, then the warnings; the setup once, a column per system, a
    /// row said once where all agree, the parameters used (none null,
    /// integers as integers); a metric identical to another in every
    /// trial shown once; microseconds that run to tens of thousands in ms;
    /// a Faucet-style run (new sources learnt) labelled; values spanning
    /// orders of magnitude on a logarithmic axis.
    #[test]
    fn a_report_answers_first_and_says_its_setup_once() {
        let base = std::env::temp_dir().join(format!("sdnlab-report-answers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mut runs = Vec::new();
        for (name, rate, rtt, answers) in [
            ("fast", 1_000_000.0, 5_268_046.0, "buffer"),
            ("slow", 2_000.0, 2_000_000.0, "new-source"),
        ] {
            let dir = base.join(name);
            let meta = Meta {
                run_id: name.into(),
                parameters: serde_json::json!({"switches": 16, "connect_rate": 0.0, "app": null, "answers": answers}),
                events: vec![format!(
                    "switches=16: ... UNRELIABLE: its runs spread more than 20 % ({name})"
                )],
                metrics: vec![
                    Metric::new("rate", "responses/s", stats::Better::Higher).titled("Responses per second"),
                    Metric::new("matched", "matched responses/s", stats::Better::Higher).titled("Matched"),
                    Metric::new("rtt", "us", stats::Better::Lower).titled("Round trip"),
                    Metric::new("errors", "errors", stats::Better::Lower).titled("Errors"),
                    Metric::new("lost", "frames", stats::Better::Lower).titled("Lost"),
                ],
                ..Default::default()
            };
            let mut w = RunWriter::create(&dir, &meta).unwrap();
            for t in 0..5 {
                let mut s = sample("trial", "switches=16", t, rate + t as f64);
                s.values.insert("matched".into(), rate + t as f64);
                s.values.insert("rtt".into(), rtt + t as f64);
                s.values.insert("errors".into(), 0.0);
                s.values.insert("lost".into(), 0.0);
                w.append(&s).unwrap();
            }
            w.finish(&meta).unwrap();
            runs.push(load(&dir).unwrap());
        }
        write_outputs(&base, &runs).unwrap();
        let html = std::fs::read_to_string(base.join("report.html")).unwrap();
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("no '{what}' in the page"));
        assert!(
            at("What this run shows") < at("<h2 id=\"setup\">"),
            "the answers come first"
        );
        assert!(at("UNRELIABLE") < at("<h2 id=\"setup\">"), "the warnings too");
        assert!(html.contains("<b>fast / switches=16</b>"), "the better one named");
        assert!(html.contains("499.5x higher"), "by how much: a factor");
        // The machine said once for both, the runs side by side.
        assert_eq!(html.matches("<td>CPU</td>").count(), 1);
        assert!(html.contains("<th>fast</th><th>slow</th>"));
        assert!(
            html.contains("<td>connect_rate</td><td class=\"l\" colspan=\"2\">0</td>"),
            "integers as integers"
        );
        assert!(!html.contains("<td>app</td>"), "a parameter not used is not listed");
        // Matched responses are the same figure: one section.
        assert!(html.contains("Matched (<code>matched</code>) is the same figure in every trial"));
        assert!(!html.contains("id=\"m-matched\""));
        // Two counts that are zero everywhere are not one figure.
        assert!(html.contains("id=\"m-errors\"") && html.contains("id=\"m-lost\""));
        // 5,268,046 µs reads 5.268 s; no "us" left.
        assert!(
            html.contains("Round trip (time; lower is better)"),
            "{}",
            &html[at("id=\"m-rtt\"")..][..200]
        );
        assert!(
            html.contains("5.268 s") && html.contains("2.000 s"),
            "each time in its unit"
        );
        assert!(
            !html.contains("(us"),
            "{}",
            &html[html.find("(us").unwrap_or(0).saturating_sub(150)..][..300]
        );
        assert!(html.contains("slow / switches=16 (new sources learnt)"));
        assert!(html.contains("(logarithmic axis)"), "1,000,000 against 2,000");
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Two switches in one run, each measured at two frame sizes: the
    /// verdicts compare them per frame size (never across sizes), name
    /// the better one where the corrected test shows it, and say "no
    /// difference shown" where it does not; the page and summary.md
    /// write them out, and rebuilding the report does not repeat them.
    #[test]
    fn one_run_of_several_systems_gets_verdicts_per_condition() {
        let dir = std::env::temp_dir().join(format!("sdnlab-report-verdicts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let meta = Meta {
            run_id: "dp".into(),
            metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher).titled("Throughput")],
            ..Default::default()
        };
        let mut w = RunWriter::create(&dir, &meta).unwrap();
        for t in 0..8 {
            let x = t as f64;
            for (dut, frame, v) in [
                ("sdnlab", "64B", 2000.0 + x),
                ("ovs", "64B", 1000.0 + x),
                ("sdnlab", "1518B", 500.0 + x),
                ("ovs", "1518B", 500.0 + (7 - t) as f64),
            ] {
                let s = sample("trial", &format!("{dut} {frame}"), t, v).under_test(dut, frame);
                w.append(&s).unwrap();
            }
        }
        let summary = w.finish(&meta).unwrap();
        assert!(summary.best.is_empty(), "no best scenario across frame sizes");
        assert_eq!(summary.verdicts.len(), 2, "{:?}", summary.verdicts);
        let at = |c: &str| summary.verdicts.iter().find(|v| v.scenario == c).unwrap();
        assert_eq!(at("64B").better.as_deref(), Some("sdnlab"));
        assert!(at("64B").p_holm < 0.05 && at("64B").p_holm >= at("64B").p);
        assert!(at("1518B").better.is_none(), "{:?}", at("1518B"));
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains(
                "64B: <strong>sdnlab</strong> is better than ovs: median 2,004 against 1,004 frames/s (99.7 % higher"
            ),
            "{html}"
        );
        assert!(
            html.contains("1518B: No difference shown between sdnlab and ovs"),
            "{html}"
        );
        assert!(
            html.contains("Holm-corrected over the report's 2 comparisons"),
            "{html}"
        );
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(
            md.contains("- Throughput (frames/s), 64B: **sdnlab** is better than ovs"),
            "{md}"
        );
        write_outputs(&dir, &[load(&dir).unwrap()]).unwrap();
        let again = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert_eq!(again, md, "a rebuild writes the same summary.md");
        // The sample's system and condition survive the round trip.
        let back = load(&dir).unwrap();
        assert_eq!(back.samples[0].system.as_deref(), Some("sdnlab"));
        assert_eq!(back.samples[0].condition.as_deref(), Some("64B"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Counts and times are never negative, and neither is the interval
    /// shown for them: a t interval over these (0, 0, 0, 1, 5) goes below zero.
    #[test]
    fn csv_fields_keep_their_quotes() {
        assert_eq!(csv_quoted("leaf-spine,2,2,1"), "\"leaf-spine,2,2,1\"");
        assert_eq!(csv_quoted("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn times_are_written_in_iso_8601() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00Z");
        // date -u -d @1795699374 +%FT%TZ
        assert_eq!(iso8601(1_795_699_374.6), "2026-11-26T13:22:54Z");
        assert_eq!(iso8601(951_782_400.0), "2000-02-29T00:00:00Z");
    }

    fn ctl_run(trials: &[f64]) -> Run {
        Run {
            dir: PathBuf::new(),
            meta: Meta {
                benchmark: "bench ctl".into(),
                parameters: serde_json::json!({ "trials": trials.len() }),
                metrics: vec![Metric::new("rate", "/s", stats::Better::Higher)],
                ..Meta::default()
            },
            samples: trials
                .iter()
                .enumerate()
                .map(|(k, v)| sample("trial", "s", k as u32, *v))
                .collect(),
        }
    }

    /// Under RFC 8456's 10 trials, the run says so once; trials a factor
    /// of two apart are called out, naming the widest; an interval from
    /// one or two values is n/a, on the terminal and in summary.md.
    #[test]
    fn small_and_disagreeing_runs_say_so() {
        let s = summarise(&[ctl_run(&[8.5e6, 2.6e6])]);
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(
            s.notes[0].starts_with("2 trial(s) per scenario, under RFC 8456's 10"),
            "{:?}",
            s.notes
        );
        assert!(
            s.notes[1].contains("rate of s: 2,600,000 to 8,500,000 (x3.3)"),
            "{:?}",
            s.notes
        );
        let t = terminal_table(&s, &[]);
        assert!(t.contains("n/a (under 3 values)"), "{t}");
        assert_eq!(t.matches("note: ").count(), 2, "{t}");
        assert!(markdown_table(&s, &[]).contains("Note: Trials disagree"));
        // Ten steady trials: nothing to say, and an interval.
        let s = summarise(&[ctl_run(&[10.0, 11.0, 10.5, 10.2, 10.8, 10.1, 10.9, 10.4, 10.6, 10.3])]);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        assert!(!terminal_table(&s, &[]).contains("n/a"));
        // Another benchmark is not held to RFC 8456's count.
        let mut other = ctl_run(&[10.0, 11.0, 10.5]);
        other.meta.benchmark = "bench dp".into();
        assert!(summarise(&[other]).notes.is_empty());
    }

    #[test]
    fn the_instruments_ceiling_is_never_a_measurement() {
        // One trial: the statistics run over its loops, and the ceiling
        // measured before it (same scenario) is not one of them.
        let runs = [Run {
            dir: PathBuf::new(),
            meta: Meta::default(),
            samples: vec![
                sample(CEILING_KIND, "s", 0, 1000.0),
                sample("loop", "s", 0, 10.0),
                sample("loop", "s", 0, 12.0),
                sample("trial", "s", 0, 11.0),
            ],
        }];
        assert_eq!(values(&runs, "s", "rate"), (vec![10.0, 12.0], "loops"));
    }

    /// Two trials a side with a tenfold gap: no test can show it, and the
    /// best scenario says it was picked by median for that reason; ten a
    /// side, the test shows it.
    #[test]
    fn a_best_scenario_with_too_few_trials_says_so() {
        let run = |n: u32| Run {
            dir: PathBuf::new(),
            meta: Meta {
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples: (0..n)
                .flat_map(|t| {
                    [
                        sample("trial", "fast", t, 100.0 + t as f64),
                        sample("trial", "slow", t, 10.0 + t as f64),
                    ]
                })
                .collect(),
        };
        let few = summarise(&[run(2)]);
        let t = terminal_table(&few, &[]);
        assert!(
            t.contains("best rate: fast (by median: too few trials to test (2 in the smallest scenario"),
            "{t}"
        );
        let many = summarise(&[run(10)]);
        let t = terminal_table(&many, &[]);
        assert!(
            t.contains("best rate: fast (by test: better than every other, p < 0.05)"),
            "{t}"
        );
    }

    #[test]
    fn the_interval_shown_stays_in_the_metric_domain() {
        let meta = Meta {
            metrics: vec![Metric::new("rate", "frames", stats::Better::Lower)],
            ..Default::default()
        };
        let samples: Vec<Sample> = [0.0, 0.0, 0.0, 1.0, 5.0]
            .iter()
            .enumerate()
            .map(|(t, v)| sample("trial", "s", t as u32, *v))
            .collect();
        assert!(stats::summary(&[0.0, 0.0, 0.0, 1.0, 5.0]).ci95.0 < 0.0);
        let runs = [Run {
            dir: PathBuf::new(),
            meta: meta.clone(),
            samples,
        }];
        let summary = summarise(&runs);
        let c = &summary.cells[0];
        assert!(
            c.ci95_bootstrap.0 >= 0.0 && c.ci95_bootstrap.1 <= 5.0,
            "{:?}",
            c.ci95_bootstrap
        );
        let table = terminal_table(&summary, &meta.metrics);
        assert!(!table.lines().skip(2).any(|l| l.contains('-')), "{table}");
        let html = html::render(&runs, &summary);
        assert!(!html.contains(">-0"), "a negative bound in the page");
        assert!(html.contains("bootstrap"));
    }

    #[test]
    fn a_run_is_written_read_back_and_summarised() {
        let dir = std::env::temp_dir().join(format!("sdnlab-report-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let meta = Meta {
            run_id: "t1".into(),
            benchmark: "bench ctl".into(),
            metrics: vec![
                Metric::new("rate", "responses/s", stats::Better::Higher),
                Metric::new("unmeasured", "s", stats::Better::Lower).titled("Never measured"),
            ],
            setup: Setup::detect(),
            ..Default::default()
        };
        let mut w = RunWriter::create(&dir, &meta).unwrap();
        for t in 0..10 {
            w.append(&sample("trial", "switches=1", t, 100.0 + t as f64)).unwrap();
            w.append(&sample("trial", "switches=2", t, 200.0 + t as f64)).unwrap();
        }
        // Samples are on disk before anything is summarised.
        let on_disk = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
        assert_eq!(on_disk.lines().count(), 20);
        let summary = w.finish(&meta).unwrap();
        assert_eq!(summary.cells.len(), 2);
        assert_eq!(summary.cells[1].summary.mean, 204.5);
        assert_eq!(summary.best[0].scenario, "switches=2");
        for f in ["summary.json", "summary.csv", "report.html", "summary.md"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        // The Markdown table names the metric with its unit, a row per scenario.
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(
            md.contains("| switches=2 | rate (responses/s) | 10 trials | 204.5 |"),
            "{md}"
        );
        assert!(md.contains("- best rate: switches=2"), "{md}");
        // An experiment's own table is kept when the report is rebuilt.
        std::fs::write(dir.join("summary.md"), "own table").unwrap();
        write_outputs(&dir, &[load(&dir).unwrap()]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("summary.md")).unwrap(), "own table");
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains("<svg") && html.contains("switches=2") && !html.contains("<script"));
        // A table of contents with a section per metric measured, and the
        // files beside the page linked.
        assert!(html.contains("<a href=\"#m-rate\">rate</a>") && html.contains("<h2 id=\"m-rate\">"));
        assert!(
            !html.contains("Never measured"),
            "a metric with no figure gets no section"
        );
        assert!(html.contains("<a href=\"summary.csv\">"));
        assert!(
            RunWriter::create(&dir, &meta).is_err(),
            "a second run into the same directory"
        );
        // A run killed mid-line still loads.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("samples.jsonl"))
            .unwrap()
            .write_all(b"{\"kind\": \"tri")
            .unwrap();
        assert_eq!(load(&dir).unwrap().samples.len(), 20);
        // Two runs side by side: scenarios carry the run id.
        let a = load(&dir).unwrap();
        let mut b = a.clone();
        b.meta.run_id = "t2".into();
        let both = summarise(&[a, b]);
        assert_eq!(both.cells.len(), 4);
        assert!(both.cells.iter().any(|c| c.scenario == "t2 / switches=1"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// RFC 8456's result format: a row per trial, and the metric against
    /// the network size when trials record one.
    #[test]
    fn every_trial_is_listed_and_plotted_against_the_network_size() {
        let run = |sized: bool| Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "sized".into(),
                metrics: vec![Metric::new("rate", "paths/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples: (0..6)
                .map(|t| {
                    let mut s = sample("trial", if t < 3 { "small" } else { "large" }, t % 3, t as f64);
                    if sized {
                        s.values.insert("switches".into(), if t < 3 { 4.0 } else { 34.0 });
                    }
                    s
                })
                .collect(),
        };
        let with = html::render(&[run(true)], &summarise(&[run(true)]));
        assert!(with.contains("every trial (6 rows)"), "one row per trial");
        assert!(
            with.contains("<tr><td>large</td><td>2</td><td>5.000</td></tr>"),
            "{with}"
        );
        assert!(with.contains("switches (mean rate per size"), "a plot against the size");
        // Means per size: (0+1+2)/3 = 1 at 4 switches, (3+4+5)/3 = 4 at 34.
        assert_eq!(html::by_size(&[run(true)], "rate")[0].1, vec![(4.0, 1.0), (34.0, 4.0)]);
        let without = html::render(&[run(false)], &summarise(&[run(false)]));
        assert!(!without.contains("switches (mean"), "no size, no size plot");
    }

    /// RFC 2544's figures against the frame size: a line per switch (the
    /// scenario without its size).
    #[test]
    fn frame_sizes_give_a_line_per_switch() {
        let mut samples = Vec::new();
        for (t, (dut, frame, fps)) in [
            ("a", 64.0, 10.0),
            ("a", 1518.0, 2.0),
            ("b", 64.0, 30.0),
            ("b", 1518.0, 4.0),
            ("b", 64.0, 50.0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = sample("trial", &format!("{dut} {frame}B"), t as u32, fps);
            s.values.insert("frame_bytes".into(), frame);
            samples.push(s);
        }
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "dp".into(),
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples,
        };
        let lines = html::by_size(std::slice::from_ref(&run), "rate");
        assert_eq!(
            lines,
            vec![
                ("a".to_string(), vec![(64.0, 10.0), (1518.0, 2.0)]),
                ("b".to_string(), vec![(64.0, 40.0), (1518.0, 4.0)])
            ]
        );
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("frame size (bytes) (mean rate per size"));
    }

    /// The load balancer's figures against the offered load: a line per
    /// policy, load and client.
    #[test]
    fn concurrency_gives_a_line_per_policy() {
        let mut samples = Vec::new();
        for (t, (scenario, level, ms)) in [
            ("load homogeneous open-loop", 20.0, 21.0),
            ("load homogeneous open-loop", 200.0, 90.0),
            ("txbytes homogeneous open-loop", 20.0, 20.0),
            ("txbytes homogeneous open-loop", 200.0, 40.0),
            ("txbytes homogeneous open-loop", 200.0, 60.0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = sample("trial", &format!("{scenario} {level}"), t as u32, ms);
            s.values.insert("concurrency".into(), level);
            samples.push(s);
        }
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "lb".into(),
                metrics: vec![Metric::new("rate", "ms", stats::Better::Lower)],
                ..Default::default()
            },
            samples,
        };
        assert_eq!(
            html::by_size(std::slice::from_ref(&run), "rate"),
            vec![
                (
                    "load homogeneous open-loop".to_string(),
                    vec![(20.0, 21.0), (200.0, 90.0)]
                ),
                (
                    "txbytes homogeneous open-loop".to_string(),
                    vec![(20.0, 20.0), (200.0, 50.0)]
                )
            ]
        );
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("concurrency (new connections/s)"));
    }

    /// Samples streamed in intervals (a flow's receiver) are drawn over
    /// the interval's index, a line per scenario, a chart per figure; the
    /// send times (`_ns`) are not figures.
    #[test]
    fn intervals_are_drawn_as_they_were_measured() {
        let mut samples = Vec::new();
        for (scenario, rates) in [("h1>h3", [100.0, 120.0, 110.0]), ("h3>h2", [90.0, 95.0, 99.0])] {
            for (i, r) in rates.into_iter().enumerate() {
                let mut s = sample("flow-interval", scenario, 0, r);
                s.index = i as u32;
                s.values.insert("end_unix_ns".into(), 1e18);
                samples.push(s);
            }
        }
        samples.push(sample("trial", "flow h1>h3", 0, 5.0));
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "net".into(),
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples,
        };
        let charts = html::interval_plots(std::slice::from_ref(&run));
        assert!(charts.contains("<h3>flow-interval: rate</h3>"), "{charts}");
        assert!(!charts.contains("end_unix_ns"), "{charts}");
        assert_eq!(charts.matches("<polyline").count(), 2, "{charts}");
        assert_eq!(charts.matches("<circle").count(), 6, "{charts}");
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("Over time, as measured"));
        let none = Run {
            samples: vec![sample("trial", "s", 0, 1.0)],
            ..run
        };
        assert!(html::interval_plots(std::slice::from_ref(&none)).is_empty());
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(12157045.3), "12,157,045");
        assert_eq!(fmt_num(-1234.0), "-1,234");
        assert_eq!(fmt_num(50.25), "50.2");
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(f64::NAN), "-");
    }
}
