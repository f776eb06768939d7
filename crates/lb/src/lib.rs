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
pub use config::Config;
