//! The errors an experiment returns: a configuration the method cannot run
//! (the caller's mistake, one line naming what to change), a system or tool
//! that could not be set up, or results that could not be written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A configuration the method cannot run that is no one parameter's or
    /// parameters' (those are `Param` and `Conflict`): a workers' inventory
    /// that cannot be read, a scenario list left empty. The text names
    /// options as the command line spells them.
    #[error("{0}")]
    Config(String),
    /// One parameter outside what it accepts, said by the command line
    /// as `--name VALUE: ...` and by a file's reader at the key's line.
    #[error(transparent)]
    Param(#[from] crate::check::ParamError),
    /// Parameters that do not go together, or one that needs another.
    #[error(transparent)]
    Conflict(#[from] crate::check::Conflict),
    /// The system under test, a peer or a tool could not be started or reached.
    #[error("{0}")]
    Setup(String),
    /// A peer controller could not be installed or started.
    #[error(transparent)]
    Peer(#[from] crate::peers::PeerError),
    /// The load balancer's test bed (its configuration, nginx, a load).
    #[error(transparent)]
    Lb(#[from] lb::LbError),
    /// Controller apps named wrongly (`--app`).
    #[error(transparent)]
    App(#[from] controller::catalog::AppError),
    /// An emulated network could not be built, used or taken down.
    #[error(transparent)]
    Net(#[from] netlab::NetError),
    /// The etcd a cluster of sdnlab's controller was to run on.
    #[error(transparent)]
    Etcd(#[from] cluster::etcd::EtcdError),
    /// The controller to measure (`--target`) refused or did not answer a
    /// connection before the run started.
    #[error("cannot reach the controller at {addr}: {source} (is it running and listening there?)")]
    Unreachable {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The run directory or one of its files could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The experiment file is not one sdnlab can read.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    /// A controller's northbound API: an adapter written wrongly (the
    /// caller's mistake), or one that could not be read or written.
    #[error(transparent)]
    Northbound(#[from] ctlbench::northbound::NorthboundError),
    /// Stopped by SIGINT or SIGTERM: every process and file the run made
    /// is gone, what it measured is in `dir` (`sdnlab report DIR`).
    #[error("interrupted; partial results in {}", dir.display())]
    Interrupted { dir: PathBuf },
}

impl LabError {
    /// A system, peer or tool that could not be set up, in its own words.
    pub fn setup(e: impl std::fmt::Display) -> LabError {
        LabError::Setup(e.to_string())
    }

    /// Whether the caller (command line or file) is at fault, rather than the machine.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LabError::Config(_)
                | LabError::Param(_)
                | LabError::Conflict(_)
                | LabError::File { .. }
                | LabError::App(_)
                | LabError::Net(netlab::NetError::Topology(_) | netlab::NetError::NotFound(_))
                | LabError::Northbound(ctlbench::northbound::NorthboundError::BadAdapter(_))
        )
    }
}
