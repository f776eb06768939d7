//! RFC 8456 tests that need a topology, on an emulated fabric
//! (`fabric`), read through a northbound adapter (`northbound`).
//!
//! Network Topology Discovery Time: from the first switch's connection to
//! the moment the controller's view holds every link of the fabric (both
//! directions), polled every 10 ms; "did not converge within Td" when it
//! never does.
//!
//! Reactive Path Provisioning Time: per host pair, from the first frame
//! sent to its arrival at the other host.

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

/// Reactive Path Provisioning Time (RFC 8456): the controller already knows
/// the fabric and the hosts; from the moment TP1 sends its first frame to a
/// destination to the moment that frame arrives at TP2 (the path being set
/// up on the way), per host pair.
#[derive(Clone, Debug, Serialize)]
pub struct Provisioning {
    pub pairs: usize,
    /// Per pair: seconds from send to arrival; None when it never arrived within `td`.
    pub seconds: Vec<Option<f64>>,
    pub note: String,
}

/// An IPv4/UDP frame between emulated hosts `from` and `to` (1-based).
pub fn host_frame(from: u8, to: [u8; 6]) -> Vec<u8> {
    let mut f = to.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, from]);
    f.extend_from_slice(&[
        0x08, 0x00, 0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, from, 10, 0, 0, 250,
    ]);
    f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
    f
}

/// Measures each ordered pair (host 0 -> host k) on a running fabric whose
/// hosts have announced themselves.
pub async fn reactive_provisioning(fabric: &Fabric, td: Duration) -> Provisioning {
    let n = fabric.spec.hosts.len();
    let mut seconds = Vec::new();
    for to in 1..n {
        for h in 0..n {
            fabric.take_received(h);
        }
        let dst = [0x02, 0, 0, 0, 0, to as u8 + 1];
        let sent = Instant::now();
        fabric.send_from_host(0, host_frame(1, dst));
        let mut got = None;
        while sent.elapsed() < td {
            if let Some((at, _)) = fabric.take_received(to).first() {
                got = Some(at.duration_since(sent).as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        seconds.push(got);
    }
    let missing = seconds.iter().filter(|s| s.is_none()).count();
    Provisioning {
        pairs: seconds.len(),
        note: if missing > 0 {
            format!(
                "{missing} first frame(s) did not arrive within {:.1} s",
                td.as_secs_f64()
            )
        } else {
            String::new()
        },
        seconds,
    }
}
