//! Traffic for switch benchmarks.
//!
//! - `frame`: test frames (Ethernet/IPv4/UDP) carrying a magic number, a
//!   stream id, a sequence number and the send time, so a receiver counts
//!   loss, reordering and duplicates and measures one-way latency (same
//!   clock: same machine);
//! - `run`: a generator (paced, or as fast as it can) and a receiver, each
//!   on a thread whose AF_PACKET socket lives in a given network namespace.

pub mod frame;
pub mod run;
