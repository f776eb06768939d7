//! RFC 8456 tests that need a topology, on an emulated fabric
//! (`fabric`), read through a northbound adapter (`northbound`).
//!
//! Network Topology Discovery Time: from the first switch's connection to
//! the moment the controller's view holds every link of the fabric (both
//! directions), polled every 10 ms; "did not converge within Td" when it
//! never does.

use crate::fabric::{Fabric, Spec};
use crate::northbound::Northbound;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize)]
pub struct Discovery {
    pub switches: usize,
    pub links_expected: usize,
    pub links_seen: usize,
    /// Seconds to a complete view; None when it did not converge within `td`.
    pub seconds: Option<f64>,
    pub connected: u64,
    pub adapter: &'static str,
    pub note: String,
}

/// Runs one discovery trial.
pub async fn discovery_time(spec: Spec, target: SocketAddr, version: u8, nb: &Northbound, td: Duration) -> Discovery {
    let links_expected = spec.links.len() * 2;
    let switches = spec.switches.len();
    let start = Instant::now();
    let fabric = Fabric::start(spec, target, version, td).await;
    let connected = fabric.stats.connected.load(std::sync::atomic::Ordering::Relaxed);
    let mut seen = 0;
    let mut last_error = String::new();
    let mut seconds = None;
    let mut blind = false;
    while start.elapsed() < td {
        match nb.links().await {
            Ok(Some(n)) => {
                seen = n;
                if n >= links_expected {
                    seconds = Some(start.elapsed().as_secs_f64());
                    break;
                }
            }
            Ok(None) => {
                blind = true;
                break;
            }
            Err(e) => last_error = e,
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let note = if blind {
        "the northbound adapter cannot read the controller's view".to_string()
    } else if seconds.is_none() {
        let why = if last_error.is_empty() {
            String::new()
        } else {
            format!("; last error: {last_error}")
        };
        format!(
            "did not converge within {:.1} s ({seen} of {links_expected} links){why}",
            td.as_secs_f64()
        )
    } else {
        String::new()
    };
    fabric.stop();
    Discovery {
        switches,
        links_expected,
        links_seen: seen,
        seconds,
        connected,
        adapter: nb.name(),
        note,
    }
}
