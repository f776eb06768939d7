//! sdnlab's controller as a cluster. N identical members coordinate
//! through a real etcd: a member is a key held by its lease, a switch's
//! master is a key claimed by transaction (create revision 0 -> put, held
//! by the claimant's lease), and the claim's create revision is the
//! OpenFlow generation id, so it rises with every new master. Watches keep
//! every member's view; no consensus code of our own.
//!
//! `placement` says which member should master a switch (no I/O);
//! `member` is the etcd side, run on a thread of its own and driven by the
//! controller through a `Handle`; `etcd` starts a private etcd (1, 3 or
//! more members) for a run or a test.

pub mod etcd;
pub mod member;
pub mod placement;

pub use member::{start, Config, Error, Handle, Mastership, Notice, Role};
