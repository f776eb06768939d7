//! netlab: emulated networks in Linux network namespaces, for `sdnlab net`
//! and for the benchmarks. Hosts are namespaces joined by veth links to
//! switches (Linux bridge, Open vSwitch's userspace datapath or sdnlab's
//! own switch) in the root namespace; everything created carries the run's
//! prefix and is removed on teardown.

pub mod beds;
pub mod error;
pub mod install;
pub mod kernel;
pub mod ovs;
pub mod ports;
pub mod private;
pub mod procs;
pub mod run;
pub mod sdnsw;
pub mod shaper;
pub mod state;
pub mod topo;

pub use error::NetError;
