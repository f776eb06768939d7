//! The application API. An application is instantiated once per switch
//! (state such as a MAC table lives with the switch's session, on that
//! session's worker thread: no locks on the PACKET_IN path). Several
//! applications run in the order given; a PACKET_IN goes to each in turn
//! until one says it is done with it.

pub use crate::shared::Context;
use ofconn::{Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::Message;
use std::sync::Arc;

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
