//! The switch managed through OVSDB (`sdnlab switch --ovsdb REMOTE`), the
//! way `ovs-vswitchd` is managed: Open vSwitch's own database and tools
//! (`ovsdb-server`, `ovs-vsctl`) configure its bridges, ports and
//! controllers, and read back its ports' numbers, states and statistics.
//!
//! - `datum`: RFC 7047's values and the replica a monitor keeps (wire);
//! - `config`: what the rows ask of the switch (logic, no I/O);
//! - `client`: the JSON-RPC connection (I/O);
//! - `manager`: running the bridges as asked and writing back.

pub mod client;
pub mod config;
pub mod datum;
pub mod manager;
