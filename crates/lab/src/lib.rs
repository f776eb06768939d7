//! sdnlab's experiments as a library. Each experiment is a serde config
//! with every parameter and its documented default (`ctl::CtlConfig`, ...),
//! gathered in [`Experiment`], the content of an `experiment.toml`; a
//! runner takes the config, a place for the run and an [`Observer`] for
//! progress, and returns an [`Outcome`] or a typed [`LabError`]. Suites
//! (`ctl::suite`) compose configs. Every run directory holds the resolved
//! `experiment.toml` beside the results (`report`'s model), so a run can be
//! repeated exactly from its own directory.
//!
//! Nothing here parses a command line or draws on a terminal: that is the
//! `sdnlab` binary's job.

pub mod check;
pub mod ctl;
pub mod dp;
mod error;
pub mod experiment;
pub mod fidelity;
pub mod gen;
pub mod host;
pub mod hostport;
pub mod lb;
pub mod method;
pub mod net;
pub mod observe;
pub mod peers;
pub mod rundir;
pub mod stop;
pub mod switch;

pub use error::LabError;
pub use experiment::Experiment;
pub use observe::{Event, Observer, Outcome, TrialFigures};
