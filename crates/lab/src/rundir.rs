//! Run directories: where a run goes, its name, the metadata it starts
//! with, the resolved `experiment.toml` written before anything is
//! measured, and the writer its samples go through (crate `report`).

use crate::{Experiment, LabError};
use report::{Meta, RunWriter};
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

/// Creates the run directory with its `experiment.toml` and `meta.json`,
/// and the runtime the trials run on.
pub fn open_run(dir: &Path, meta: &Meta, e: &Experiment) -> Result<(RunWriter, tokio::runtime::Runtime), LabError> {
    if dir.join("samples.jsonl").exists() {
        return Err(LabError::Config(format!(
            "{} already holds a run: choose another --out",
            dir.display()
        )));
    }
    write_experiment(dir, e)?;
    let writer = RunWriter::create(dir, meta).map_err(|source| LabError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| LabError::Setup(format!("cannot start the runtime: {e}")))?;
    Ok((writer, rt))
}

/// Ends a run that cannot go on: the error is the run's last event in its
/// meta.json (beside what was measured before it), then goes up.
pub fn fail_run(writer: RunWriter, meta: &mut Meta, e: LabError) -> LabError {
    meta.events.push(e.to_string());
    meta.finished_unix = Some(report::now_unix());
    let _ = writer.finish(meta);
    e
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
