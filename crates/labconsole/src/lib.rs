//! What a person at a terminal sees of the lab: the `sdnlab>` prompt over
//! an emulated network (Mininet's commands and sdnlab's own), and the live
//! view of a running experiment.
//!
//! - [`command`]: the prompt's language, I/O-free (parsing, Mininet's
//!   node-name substitution, tab completion);
//! - [`session`]: what each command does to the run;
//! - [`prompt`]: line editing, history and completion around a session;
//! - [`flows`], [`graph`], [`watch`]: a flow table, the topology and port
//!   counters as a person reads them;
//! - [`live`]: an experiment's progress events drawn as a dashboard.

pub mod command;
pub mod error;
pub mod flows;
pub mod graph;
pub mod live;
pub mod prompt;
pub mod session;
pub mod watch;

pub use error::ConsoleError;
pub use session::{Console, Lab, Rest};
