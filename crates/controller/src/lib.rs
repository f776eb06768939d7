//! The sdnlab controller: a multi-worker OpenFlow 1.0/1.3 runtime
//! (`runtime`), the per-switch application API (`app`) and the built-in
//! applications (`apps`).

pub mod app;
pub mod apps;
pub mod catalog;
pub mod cluster_state;
pub mod driver;
pub mod embedded;
pub mod flows;
pub mod lldp;
pub mod mactable;
pub mod paths;
pub mod rest;
pub mod rest_access;
pub mod runtime;
pub mod shared;
pub mod tls;
pub mod topology;
mod worker;
