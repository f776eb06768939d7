//! Why a console command failed: the line the console prints (`*** ...`)
//! for a bad line, a network that refused, a tool or a switch that failed.

use crate::command::BadLine;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// A line the console cannot read.
    #[error(transparent)]
    Line(#[from] BadLine),
    /// The network refused or failed (a link, a switch, a host's command).
    #[error(transparent)]
    Net(#[from] netlab::NetError),
    /// A program, file or terminal of ours, and what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The terminal's line editor.
    #[error("terminal: {0}")]
    Terminal(#[from] rustyline::error::ReadlineError),
    /// Not possible in this run (the text says why and what to do).
    #[error("{0}")]
    Refused(String),
    /// A switch or the controller's REST API answered with an error.
    #[error("{what}: {detail}")]
    Peer { what: String, detail: String },
}

impl ConsoleError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ConsoleError {
        let what = what.into();
        move |source| ConsoleError::Io { what, source }
    }

    pub(crate) fn refused(why: impl Into<String>) -> ConsoleError {
        ConsoleError::Refused(why.into())
    }
}
