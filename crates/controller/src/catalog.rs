//! The built-in applications by name (`--app`): the factories that make
//! each switch's instances, in order, and the shared state of the
//! network-wide ones (`topology`, `paths`) that the REST API reads.

use crate::app::{AppFactory, Context, SwitchApp};
use crate::paths::Paths;
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Duration;

/// The names `--app` accepts.
pub const NAMES: &str = "l2-learning, hub, topology, paths, paths-proactive, null";

/// Applications chosen by name, with the shared state of the network-wide
/// ones (for the REST API).
#[derive(Clone, Default)]
pub struct AppSet {
    /// In the order they see events.
    pub names: Vec<String>,
    pub factories: Vec<AppFactory>,
    pub topology: Option<Arc<Topology>>,
    pub paths: Option<Arc<Paths>>,
}

/// LLDP probe interval and link timeout of `topology`.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);
pub const LINK_TIMEOUT: Duration = Duration::from_millis(3500);

/// Why a set of applications cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AppError {
    #[error("unknown app '{0}': available are {NAMES}")]
    Unknown(String),
    #[error("app '{0}' is named twice")]
    Twice(String),
    #[error("run one of 'paths' and 'paths-proactive', not both")]
    BothPaths,
    #[error("app '{0}' must come after 'topology' (it uses the links topology finds)")]
    NeedsTopology(String),
    /// `by_name` of an app with state others read (`paths`).
    #[error("app '{0}' runs after 'topology': build both with app::build")]
    NeedsBuild(String),
}

/// Builds the applications named, in order. `paths` needs `topology`: it is
/// added just before `paths` when not named.
pub fn build<S: AsRef<str>>(names: &[S]) -> Result<AppSet, AppError> {
    let mut set = AppSet::default();
    let mut names: Vec<&str> = names.iter().map(|n| n.as_ref()).collect();
    if let Some(i) = names.iter().position(|n| *n == "paths" || *n == "paths-proactive") {
        if !names.contains(&"topology") {
            names.insert(i, "topology");
        }
    }
    for name in names {
        if set.names.iter().any(|n| n == name) {
            return Err(AppError::Twice(name.to_string()));
        }
        let factory: AppFactory = match name {
            "topology" => {
                let t = Topology::new(PROBE_INTERVAL, LINK_TIMEOUT);
                set.topology = Some(t.clone());
                Arc::new(move |_: &Context| Box::new(t.app()) as Box<dyn SwitchApp>)
            }
            "paths" | "paths-proactive" => {
                if set.paths.is_some() {
                    return Err(AppError::BothPaths);
                }
                let t = set
                    .topology
                    .clone()
                    .ok_or_else(|| AppError::NeedsTopology(name.to_string()))?;
                let p = Paths::with_mode(t, name == "paths");
                set.paths = Some(p.clone());
                Arc::new(move |ctx: &Context| Box::new(p.app(ctx)) as Box<dyn SwitchApp>)
            }
            other => by_name(other)?,
        };
        set.names.push(name.to_string());
        set.factories.push(factory);
    }
    Ok(set)
}

/// One application by name (`topology` and `paths` with state of their own,
/// which nothing else can read: use `build` to reach it).
pub fn by_name(name: &str) -> Result<AppFactory, AppError> {
    Ok(match name {
        "l2-learning" => Arc::new(|_: &Context| Box::new(crate::apps::L2Learning::default()) as Box<dyn SwitchApp>),
        "hub" => Arc::new(|_: &Context| Box::new(crate::apps::Hub) as Box<dyn SwitchApp>),
        "null" => Arc::new(|_: &Context| Box::new(crate::apps::NullResponder::default()) as Box<dyn SwitchApp>),
        "topology" => build(&["topology"])?.factories.remove(0),
        "paths" | "paths-proactive" => return Err(AppError::NeedsBuild(name.to_string())),
        other => return Err(AppError::Unknown(other.to_string())),
    })
}
