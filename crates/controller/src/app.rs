//! The application API. An application is instantiated once per switch
//! (state such as a MAC table lives with the switch's session, on that
//! session's worker thread: no locks on the PACKET_IN path). Several
//! applications run in the order given; a PACKET_IN goes to each in turn
//! until one says it is done with it.

pub use crate::driver::Context;
use crate::paths::Paths;
use crate::topology::Topology;
use ofconn::{Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::Message;
use std::sync::Arc;
use std::time::Duration;

/// What an application did with a PACKET_IN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Later applications do not see it.
    Done,
    /// Pass it on to the next application.
    Continue,
}

/// One application's view of one switch. `sw` is the switch's session:
/// write messages with `sw.send10/send13` or the `ofwire::hot` writers on
/// `sw.transmit()`.
pub trait SwitchApp: Send {
    fn name(&self) -> &'static str;
    /// The handshake is complete.
    fn switch_up(&mut self, _sw: &mut Session, _info: &SwitchInfo) {}
    /// A PACKET_IN (zero-copy view, valid during the call).
    fn packet_in(&mut self, _sw: &mut Session, _pi: &PacketInView) -> Verdict {
        Verdict::Continue
    }
    /// Any other message from the switch (PORT_STATUS, FLOW_REMOVED, stats replies, errors...).
    fn message(&mut self, _sw: &mut Session, _msg: &Message) {}
    /// The switch left (its session ended and no newer session for the
    /// same datapath id replaced it).
    fn switch_down(&mut self, _datapath_id: u64) {}
    /// Called whenever the switch's session wakes up (at least at the time
    /// last returned): periodic work such as LLDP probes. Returns when next.
    fn on_timer(&mut self, _sw: &mut Session, _now: std::time::Instant) -> Option<std::time::Instant> {
        None
    }
}

/// Makes the per-switch instance of an application. The context reaches
/// the other switches (network-wide apps such as `paths` steer them).
pub type AppFactory = Arc<dyn Fn(&Context) -> Box<dyn SwitchApp> + Send + Sync>;

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

/// Builds the applications named, in order. `paths` needs `topology`: it is
/// added just before `paths` when not named.
pub fn build<S: AsRef<str>>(names: &[S]) -> Result<AppSet, String> {
    let mut set = AppSet::default();
    let mut names: Vec<&str> = names.iter().map(|n| n.as_ref()).collect();
    if let Some(i) = names.iter().position(|n| *n == "paths" || *n == "paths-proactive") {
        if !names.contains(&"topology") {
            names.insert(i, "topology");
        }
    }
    for name in names {
        if set.names.iter().any(|n| n == name) {
            return Err(format!("app '{name}' is named twice"));
        }
        let factory: AppFactory = match name {
            "topology" => {
                let t = Topology::new(PROBE_INTERVAL, LINK_TIMEOUT);
                set.topology = Some(t.clone());
                Arc::new(move |_: &Context| Box::new(t.app()) as Box<dyn SwitchApp>)
            }
            "paths" | "paths-proactive" => {
                if set.paths.is_some() {
                    return Err("run one of 'paths' and 'paths-proactive', not both".into());
                }
                let t = set.topology.clone().ok_or(format!(
                    "app '{name}' must come after 'topology' (it uses the links topology finds)"
                ))?;
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
pub fn by_name(name: &str) -> Result<AppFactory, String> {
    Ok(match name {
        "l2-learning" => Arc::new(|_: &Context| Box::new(crate::apps::L2Learning::default()) as Box<dyn SwitchApp>),
        "hub" => Arc::new(|_: &Context| Box::new(crate::apps::Hub) as Box<dyn SwitchApp>),
        "null" => Arc::new(|_: &Context| Box::new(crate::apps::NullResponder) as Box<dyn SwitchApp>),
        "topology" => build(&["topology"])?.factories.remove(0),
        "paths" | "paths-proactive" => {
            return Err(format!(
                "app '{name}' runs after 'topology': build both with app::build"
            ))
        }
        other => return Err(format!("unknown app '{other}': available are {NAMES}")),
    })
}
