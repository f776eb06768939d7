//! sdnlab's OpenFlow switch model, free of I/O: frames and controller
//! messages in, frames and messages out.
//!
//! - `key`, `matching`: the flow key extracted from frames, matches as
//!   (value, mask) keys;
//! - `classifier`: tuple-space search per table;
//! - `actions`: compiled actions and the header rewrites (checksums kept);
//! - `flow`: rules, groups, meters and their counters;
//! - `pipeline`: tables, FLOW/GROUP/METER/PORT_MOD, forwarding plans;
//! - `roles`: OpenFlow 1.3 controller roles;
//! - `openflow10`: OpenFlow 1.0 translated onto the 1.3 pipeline;
//! - `agent`: the OpenFlow agent (every controller message, PACKET_IN
//!   buffers, FLOW_REMOVED, PORT_STATUS);
//! - `emulated`: pipeline and agent as one switch fed whole frames, the
//!   model behind the controller benchmark's emulated fabrics and the
//!   controller's tests.
//!
//! The switch that runs on real interfaces (ports, datapath threads,
//! controller sessions, the in-kernel fast path) is `switchd`, on top of
//! this crate. Everything here is tested by feeding frames and messages
//! in.

pub mod actions;
pub mod agent;
pub mod classifier;
pub mod emulated;
pub mod flow;
pub mod key;
pub mod matching;
pub mod openflow10;
pub mod pipeline;
pub mod roles;
