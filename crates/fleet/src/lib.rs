//! Experiments spread over several machines. A [`worker`] runs on each
//! machine as root and does what one coordinator asks over a mutually
//! authenticated TLS channel (certificates of one lab CA, [`creds`]):
//! bring up its part of a topology through netlab, with VXLAN tunnels for
//! the links to other machines, run commands on its hosts, and tear it all
//! down when told, when the coordinator's connection closes, or when the
//! coordinator has been silent for longer than its lease. The
//! [`coordinator`] side finds the workers ([`inventory`]), measures each
//! one's clock against its own ([`clock`]), splits a topology over them
//! ([`partition`]) or the controller benchmark's switches ([`shard`]) and
//! makes the calls; [`proto`] is what goes over the wire.

pub mod clock;
pub mod coordinator;
pub mod creds;
mod error;
pub mod inventory;
pub mod partition;
pub mod proto;
pub mod shard;
pub mod worker;

pub use error::FleetError;
