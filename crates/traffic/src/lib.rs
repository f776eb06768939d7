//! Traffic for switch benchmarks.
//!
//! - `frame`: test frames (Ethernet/IPv4/UDP) carrying a magic number, a
//!   stream id, a sequence number and the send time, so a receiver counts
//!   loss, reordering and duplicates and measures one-way latency (same
//!   clock: same machine);
//! - `run`: a generator (paced, or as fast as it can) and a receiver, each
//!   on a thread whose AF_PACKET socket lives in a given network namespace;
//! - `flow`: a measured flow between two hosts (a paced sender, a counting
//!   receiver), the ends possibly on different machines.

pub mod flow;
pub mod frame;
pub mod run;
