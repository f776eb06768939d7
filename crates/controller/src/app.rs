//! The application API. An application is instantiated once per switch
//! (state such as a MAC table lives with the switch's session, on that
//! session's worker thread: no locks on the PACKET_IN path). Several
//! applications run in the order given; a PACKET_IN goes to each in turn
//! until one says it is done with it.

pub use crate::driver::Context;
use ofconn::{Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::Message;

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
    /// The session ended.
    fn switch_down(&mut self, _datapath_id: u64) {}
    /// Called whenever the switch's session wakes up (at least at the time
    /// last returned): periodic work such as LLDP probes. Returns when next.
    fn on_timer(&mut self, _sw: &mut Session, _now: std::time::Instant) -> Option<std::time::Instant> {
        None
    }
}

/// Makes the per-switch instance of an application. The context reaches
/// the other switches (network-wide apps such as `paths` steer them).
pub type AppFactory = std::sync::Arc<dyn Fn(&Context) -> Box<dyn SwitchApp> + Send + Sync>;

/// The applications `--app` can name.
pub fn by_name(name: &str) -> Result<AppFactory, String> {
    Ok(match name {
        "l2-learning" => {
            std::sync::Arc::new(|_: &Context| Box::new(crate::apps::L2Learning::default()) as Box<dyn SwitchApp>)
        }
        "hub" => std::sync::Arc::new(|_: &Context| Box::new(crate::apps::Hub) as Box<dyn SwitchApp>),
        "null" => std::sync::Arc::new(|_: &Context| Box::new(crate::apps::NullResponder) as Box<dyn SwitchApp>),
        other => {
            return Err(format!(
                "unknown app '{other}': available are l2-learning, hub, null (topology and paths are not built yet)"
            ))
        }
    })
}
