//! Why a network could not be brought up, changed, measured or taken
//! down: one error type for the crate, carrying its sources (the kernel's
//! and the tools' own words) for the command line to print in one line.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The topology (or this machine's part of it) cannot be built as given.
    #[error("{0}")]
    Topology(String),
    /// No host, switch or link of that name in the run; the text names it
    /// (and, where it helps, those there are).
    #[error("{0}")]
    NotFound(String),
    /// The run is not in a state that allows it (a switch already stopped,
    /// no Open vSwitch in this run, TLS where the switch has none, ...).
    #[error("{0}")]
    Refused(String),
    /// A file, a namespace or a process of ours, and what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// Netlink or another kernel call, in the kernel's words.
    #[error(transparent)]
    Kernel(#[from] io::Error),
    /// A program the network runs (tc, iperf3, a switch) failed; its words.
    #[error("{what}: {detail}")]
    Tool { what: String, detail: String },
    /// A program run through `nsexec` (tc, ping) that did not start or failed.
    #[error(transparent)]
    Exec(#[from] nsexec::ToolError),
    /// A program the run needs is not installed and was not installed now.
    #[error(transparent)]
    Install(#[from] crate::install::InstallError),
    /// Teardown left things behind: each, with why.
    #[error("{}", .0.join("; "))]
    Leftovers(Vec<String>),
    /// A run's state could not be encoded.
    #[error(transparent)]
    State(#[from] serde_json::Error),
    /// A run's state file is not one this sdnlab reads.
    #[error("{}: {source}", path.display())]
    StateFile {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl NetError {
    /// An `io::Error` with what it was for.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetError {
        let what = what.into();
        move |source| NetError::Io { what, source }
    }
}
