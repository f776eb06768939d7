//! Load balancing for a virtual IP (MISSION.md section B): the `lb`
//! controller app (`app`), its replica-choice policies (`policy`, pure
//! logic), its TOML configuration (`config`), the frames it reads and
//! writes (`packet`), the agent that runs beside each replica (`agent`),
//! the replicas' nginx (`replica`) and the HTTP clients that load them
//! (`load`).

pub mod agent;
pub mod app;
pub mod config;
pub mod load;
pub mod offline;
pub mod packet;
pub mod policy;
pub mod replica;

pub use app::{FlowKey, Lb, MetricsSnapshot};

/// Why the load balancer, a replica or a load could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum LbError {
    /// A file, a program or a namespace of ours, and what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A configuration that says something wrong: the field and what it accepts.
    #[error("{0}")]
    Config(String),
    #[error("no interface '{0}' in this network namespace (give the replica's data interface with --interface)")]
    NoInterface(String),
    #[error("nginx did not listen on port {port} within 10 s: {last_line}")]
    NotListening { port: u16, last_line: String },
    /// A thread of ours (`what`) panicked.
    #[error("{0} panicked")]
    Panicked(&'static str),
    /// httperf ended without its summary: its last line, and what it said on stderr.
    #[error("httperf printed no summary: {0}")]
    NoSummary(String),
}

impl LbError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LbError {
        let what = what.into();
        move |source| LbError::Io { what, source }
    }
}
pub use config::Config;
