//! sdnlab's userspace OpenFlow switch.
//!
//! - `key`, `matching`: the flow key extracted from frames, matches as
//!   (value, mask) keys;
//! - `classifier`: tuple-space search per table;
//! - `actions`: compiled actions and the header rewrites (checksums kept);
//! - `flow`: rules, groups, meters and their counters;
//! - `pipeline`: tables, FLOW/GROUP/METER/PORT_MOD, forwarding plans;
//! - `roles`: OpenFlow 1.3 controller roles;
//! - `openflow10`: OpenFlow 1.0 translated onto the 1.3 pipeline.
//!
//! Everything above is free of I/O and is tested by feeding frames and
//! messages in.

pub mod actions;
pub mod agent;
pub mod classifier;
pub mod datapath;
pub mod fast_egress;
pub mod flow;
pub mod key;
pub mod matching;
pub mod openflow10;
pub mod pipeline;
/// The ports' frame I/O lives in `packetio`; these names stay for the
/// switch's own code and its users.
pub use packetio::{port, port_xdp};
pub mod roles;
pub mod switch;
