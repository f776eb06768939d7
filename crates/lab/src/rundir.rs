//! Run directories: where a run goes, its name, the metadata it starts
//! with, the resolved `experiment.toml` written before anything is
//! measured, and [`Run`], which owns the directory, the metadata and the
//! writer its samples go through (crate `report`) from open to finish.

use crate::{Experiment, LabError};
use report::{Meta, RunWriter, Sample, Summary};
use std::path::{Path, PathBuf};

/// Where a run goes and what it is called in reports.
#[derive(Clone, Debug, Default)]
pub struct Place {
    /// The run directory (default `results/<kind>-<time>`).
    pub dir: Option<PathBuf>,
    /// The run's name in reports (default `<kind>-<time>`).
    pub name: Option<String>,
    /// An inventory of workers to spread the run over (crate `fleet`);
    /// None: this machine alone.
    pub workers: Option<PathBuf>,
    /// The directory `dir` last handed out: where a run that failed on its
    /// way (a stop signal) left what it measured.
    pub handed: std::sync::Arc<std::sync::Mutex<Option<PathBuf>>>,
    /// The run's stop token: stopped, the run ends at its next trial with
    /// what it measured (the command line stops it on SIGINT and SIGTERM).
    pub stop: crate::stop::Stop,
}

impl Place {
    pub fn at(dir: impl Into<PathBuf>) -> Place {
        Place {
            dir: Some(dir.into()),
            ..Default::default()
        }
    }

    /// The run's name: the one given, or `<kind>-<time>`.
    pub fn name(&self, kind: &str) -> String {
        self.name.clone().unwrap_or_else(|| format!("{kind}-{}", time_tag()))
    }

    /// The run's directory: the one given, or `results/<name>`.
    pub fn dir(&self, name: &str) -> PathBuf {
        let d = self.dir.clone().unwrap_or_else(|| PathBuf::from("results").join(name));
        *self.handed.lock().unwrap_or_else(|e| e.into_inner()) = Some(d.clone());
        d
    }
}

/// The metadata every run starts with (its name, the command line,
/// sdnlab's version, the start time, the machine).
pub fn started(run_id: &str) -> Meta {
    Meta {
        run_id: run_id.to_string(),
        command: std::env::args().collect(),
        sdnlab_version: env!("CARGO_PKG_VERSION").into(),
        started_unix: report::now_unix(),
        setup: report::Setup::detect(),
        ..Default::default()
    }
}

/// Writes the resolved experiment as `DIR/experiment.toml`.
pub fn write_experiment(dir: &Path, e: &Experiment) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|source| LabError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join("experiment.toml");
    std::fs::write(&path, e.to_toml()).map_err(|source| LabError::Io { path, source })
}

/// An error writing a run's files.
pub fn io_error(dir: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |source| LabError::Io {
        path: dir.to_path_buf(),
        source,
    }
}

/// A UTC time tag for run names: 20261122T212046Z.
pub fn time_tag() -> String {
    report::iso8601(report::now_unix()).replace(['-', ':'], "")
}

/// One run of an experiment, from its directory made to its summary and
/// report written. Every sample goes to disk through it as it is measured;
/// it ends in one of two ways: [`Run::finish`], or [`Run::fail`] with the
/// error as the run's last event. A run dropped without either (an error
/// went up through `?`) still gets its end written: its finish time, an
/// event saying it ended early, and the summary of what was measured.
pub struct Run {
    dir: PathBuf,
    /// What the run is and what happened: the experiment's parameters,
    /// targets and metrics, and the events said as it went.
    pub meta: Meta,
    /// `None` once the run has ended.
    writer: Option<RunWriter>,
    /// Its place's stop token, checked between trials.
    pub stop: crate::stop::Stop,
}

/// What a finished run leaves: where it is, its metadata and its summary.
pub struct Finished {
    pub dir: PathBuf,
    pub meta: Meta,
    pub summary: Summary,
}

impl Run {
    /// Creates `dir` with its `experiment.toml` and `meta.json`; refuses a
    /// directory that already holds a run.
    pub fn open(dir: &Path, meta: Meta, e: &Experiment, stop: &crate::stop::Stop) -> Result<Run, LabError> {
        if dir.join("samples.jsonl").exists() {
            return Err(
                crate::check::ParamError::new("out", dir.display(), "already holds a run: choose another").into(),
            );
        }
        write_experiment(dir, e)?;
        let writer = RunWriter::create(dir, &meta).map_err(io_error(dir))?;
        Ok(Run {
            dir: dir.to_path_buf(),
            meta,
            writer: Some(writer),
            stop: stop.clone(),
        })
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends `s` to the run's samples (on disk before anything sums it up).
    pub fn sample(&mut self, s: &Sample) -> Result<(), LabError> {
        match &mut self.writer {
            Some(w) => w.append(s).map_err(io_error(&self.dir)),
            None => Err(self.ended()),
        }
    }

    /// Adds `line` to the run's events (meta.json, the report's warnings).
    pub fn event(&mut self, line: impl Into<String>) {
        self.meta.events.push(line.into());
    }

    /// Ends a run that cannot go on: `e` becomes its last event, beside what
    /// was measured before it; returns `e` for the caller to send up.
    pub fn fail(&mut self, e: LabError) -> LabError {
        self.end_with(e.to_string());
        e
    }

    /// If the run has not ended: `event` is its last, then its finish time,
    /// summary and report (a failure to write them is logged: the caller
    /// is already on its way out with the error that ended the run).
    fn end_with(&mut self, event: String) {
        if let Some(w) = self.writer.take() {
            self.meta.events.push(event);
            self.meta.finished_unix = Some(report::now_unix());
            if let Err(w) = w.finish(&self.meta) {
                tracing::warn!(
                    "{}: the ended run's summary could not be written: {w}",
                    self.dir.display()
                );
            }
        }
    }

    /// What a run that has already ended says to a sample or a finish.
    fn ended(&self) -> LabError {
        LabError::Io {
            path: self.dir.clone(),
            source: std::io::Error::other("the run has already ended"),
        }
    }

    /// `r`'s value, or the run failed with its error.
    pub fn or_fail<T, E: Into<LabError>>(&mut self, r: Result<T, E>) -> Result<T, LabError> {
        r.map_err(|e| self.fail(e.into()))
    }

    /// The run failed as interrupted by a stop signal, its samples so far
    /// on disk (`or_interrupted!` says it when a trial is cut short).
    pub fn interrupted(&mut self) -> LabError {
        let dir = self.dir.clone();
        self.fail(LabError::Interrupted { dir })
    }

    /// Ends the run: its finish time, then its summary and report written.
    pub fn finish(mut self) -> Result<Finished, LabError> {
        let Some(w) = self.writer.take() else {
            return Err(self.ended());
        };
        self.meta.finished_unix = Some(report::now_unix());
        let summary = w.finish(&self.meta).map_err(io_error(&self.dir))?;
        Ok(Finished {
            dir: std::mem::take(&mut self.dir),
            meta: std::mem::take(&mut self.meta),
            summary,
        })
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.end_with("the run ended early: the command's error says why".into());
    }
}

/// The runtime a run's trials run on.
pub fn runtime() -> Result<tokio::runtime::Runtime, LabError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| LabError::Setup(format!("cannot start the runtime: {e}")))
}

/// A run in a private temporary directory (random, 0700, removed when
/// the guard drops, a failed assertion included): for the experiments'
/// unit tests.
#[cfg(test)]
pub(crate) fn scratch_run(meta: Meta, e: &Experiment) -> (netlab::private::TempDir, Run) {
    let t = netlab::private::temp_dir("sdnlab-lab-test-").expect("a temporary directory");
    let run = Run::open(&t.path().join("run"), meta, e, &Default::default()).expect("a run opens in a new directory");
    (t, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory to be, in a private temporary one (random, 0700)
    /// removed when the guard drops, a failed assertion included.
    fn scratch() -> (netlab::private::TempDir, PathBuf) {
        let t = netlab::private::temp_dir("sdnlab-rundir-test-").unwrap();
        let d = t.path().join("run");
        (t, d)
    }

    fn meta() -> Meta {
        Meta {
            benchmark: "bench ctl".into(),
            metrics: vec![report::Metric::new("x", "1/s", stats::Better::Higher)],
            ..started("test-run")
        }
    }

    fn experiment() -> Experiment {
        Experiment::Ctl(crate::ctl::CtlConfig::default())
    }

    #[test]
    fn a_run_writes_its_samples_as_they_come_and_its_summary_at_the_end() {
        let (_tmp, dir) = scratch();
        let mut run = Run::open(&dir, meta(), &experiment(), &Default::default()).unwrap();
        assert!(dir.join("experiment.toml").is_file() && dir.join("meta.json").is_file());
        run.sample(&Sample::trial("s", 0, [("x", 1.0)])).unwrap();
        // On disk before anything sums it up.
        assert_eq!(report::load(&dir).unwrap().samples.len(), 1);
        run.event("something happened");
        let done = run.finish().unwrap();
        assert_eq!(done.dir, dir);
        let back = report::load(&dir).unwrap();
        assert!(back.meta.finished_unix.is_some());
        assert_eq!(back.meta.events, vec!["something happened".to_string()]);
        assert!(dir.join("report.html").is_file());
        // The directory now holds a run: a second one is refused, naming it.
        let again = Run::open(&dir, meta(), &experiment(), &Default::default())
            .err()
            .expect("refused");
        assert!(
            again.is_usage() && again.to_string().contains("already holds a run"),
            "{again}"
        );
    }

    #[test]
    fn a_failed_run_ends_with_its_error_and_keeps_what_it_measured() {
        let (_tmp, dir) = scratch();
        let mut run = Run::open(&dir, meta(), &experiment(), &Default::default()).unwrap();
        run.sample(&Sample::trial("s", 0, [("x", 2.0)])).unwrap();
        let r: Result<(), LabError> = Err(LabError::setup("the peer died"));
        let e = run.or_fail(r).unwrap_err();
        assert_eq!(e.to_string(), "the peer died");
        // Ended once: a sample after it is an error, not a silent loss.
        assert!(run.sample(&Sample::trial("s", 1, [("x", 3.0)])).is_err());
        drop(run);
        let back = report::load(&dir).unwrap();
        assert_eq!(back.meta.events.last().map(String::as_str), Some("the peer died"));
        assert!(back.meta.finished_unix.is_some());
        assert_eq!(back.samples.len(), 1);
    }

    #[test]
    fn a_run_dropped_on_an_error_still_gets_its_end_written() {
        let (_tmp, dir) = scratch();
        let mut run = Run::open(&dir, meta(), &experiment(), &Default::default()).unwrap();
        run.sample(&Sample::trial("s", 0, [("x", 4.0)])).unwrap();
        drop(run);
        let back = report::load(&dir).unwrap();
        assert!(back.meta.finished_unix.is_some(), "the end written");
        assert!(
            back.meta.events.iter().any(|e| e.contains("ended early")),
            "{:?}",
            back.meta.events
        );
        assert!(dir.join("report.html").is_file(), "the report of what was measured");
    }
}
