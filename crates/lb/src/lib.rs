//! Load balancing for a virtual IP (MISSION.md section B): the `lb`
//! controller app (`app`), its replica-choice policies (`policy`, pure
//! logic), its TOML configuration (`config`), the frames it reads and
//! writes (`packet`) and the agent that runs beside each replica (`agent`).

pub mod agent;
pub mod app;
pub mod config;
pub mod offline;
pub mod packet;
pub mod policy;
pub mod replica;

pub use app::{FlowKey, Lb, MetricsSnapshot};
pub use config::Config;
