//! The fleet's errors, typed at the crate's boundary.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A credentials file that cannot be read or used.
    #[error("{path}: {message}")]
    Credentials { path: PathBuf, message: String },
    /// An inventory file that says something wrong.
    #[error("inventory {path}: {message}")]
    Inventory { path: PathBuf, message: String },
    /// A worker that cannot be reached, refused us or broke the protocol.
    #[error("worker {worker}: {message}")]
    Worker { worker: String, message: String },
    /// A worker whose connection was lost in the middle of a run.
    #[error("worker {worker} lost: {message}")]
    Lost { worker: String, message: String },
    /// What a worker answered a call with.
    #[error("worker {worker} failed: {message}")]
    Failed { worker: String, message: String },
    /// What a worker sent packed (round trips, a receiver's index) that
    /// does not unpack.
    #[error("worker {worker}: {source}")]
    Unpack {
        worker: String,
        source: crate::shard::PackError,
    },
    /// A topology that cannot be split as asked.
    #[error("{0}")]
    Partition(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
