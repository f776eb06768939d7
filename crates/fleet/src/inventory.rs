//! The inventory file: where the workers are and the credentials to reach
//! them with.
//!
//! ```toml
//! credentials = "lab-creds"        # ca.pem, coordinator.pem, coordinator-key.pem
//! workers = ["10.0.0.1:7700", "rack2-a:7700"]
//! # or, instead of workers, one name that resolves to every worker
//! # (a Kubernetes headless Service):
//! # discover = "sdnlab-workers.sdnlab.svc.cluster.local:7700"
//! lease_s = 15          # workers tear down after this long without a word
//! vxlan_port = 4789     # the tunnels' UDP port
//! vni_base = 6100000    # link i of a topology gets VNI vni_base + i
//! underlay_mtu = 1500   # the workers' network; tunnels get 50 bytes less
//! ```
//!
//! Relative paths are from the file's own directory. Workers' addresses
//! must be IPv4 (they carry the tunnels).

use crate::creds::{Credentials, Role};
use crate::FleetError;
use serde::Deserialize;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};

/// The port `sdnlab worker` listens on by default.
pub const DEFAULT_PORT: u16 = 7700;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    credentials: PathBuf,
    #[serde(default)]
    workers: Vec<String>,
    discover: Option<String>,
    #[serde(default = "lease_s")]
    lease_s: u64,
    #[serde(default = "vxlan_port")]
    vxlan_port: u16,
    #[serde(default = "vni_base")]
    vni_base: u32,
    #[serde(default = "underlay_mtu")]
    underlay_mtu: u32,
}

fn lease_s() -> u64 {
    15
}
fn vxlan_port() -> u16 {
    4789
}
fn vni_base() -> u32 {
    6_100_000
}
fn underlay_mtu() -> u32 {
    1500
}

/// A read inventory, workers resolved.
#[derive(Clone, Debug)]
pub struct Inventory {
    pub path: PathBuf,
    pub credentials: Credentials,
    /// What the file names each worker by, and its address.
    pub workers: Vec<(String, SocketAddrV4)>,
    pub lease_s: u64,
    pub vxlan_port: u16,
    pub vni_base: u32,
    pub underlay_mtu: u32,
}

impl Inventory {
    /// Reads `path` and resolves its workers.
    pub fn load(path: &Path) -> Result<Inventory, FleetError> {
        let bad = |message: String| FleetError::Inventory {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let f: File = toml::from_str(&text).map_err(|e| bad(e.message().replace('\n', " ")))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let creds_dir = base.join(&f.credentials);
        let mut workers = Vec::new();
        match (&f.discover, f.workers.is_empty()) {
            (Some(_), false) => return Err(bad("name workers or discover, not both".into())),
            (None, true) => {
                return Err(bad(
                    "no workers: write workers = [\"HOST:PORT\", ...] or discover = \"NAME:PORT\"".into(),
                ))
            }
            (None, false) => {
                for w in &f.workers {
                    let addrs = resolve(w).map_err(|e| bad(e.to_string()))?;
                    workers.push((w.clone(), addrs[0]));
                }
            }
            (Some(name), true) => {
                let mut addrs = resolve(name).map_err(|e| bad(e.to_string()))?;
                addrs.sort();
                addrs.dedup();
                workers = addrs.into_iter().map(|a| (a.to_string(), a)).collect();
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (name, a) in &workers {
            if !seen.insert(*a) {
                return Err(bad(format!("worker {name} ({a}) is named twice")));
            }
        }
        if f.lease_s == 0 || f.lease_s > 3600 {
            return Err(bad(format!("lease_s = {}: choose 1 to 3600 seconds", f.lease_s)));
        }
        if f.vni_base == 0 || f.vni_base >= 1 << 24 {
            return Err(bad(format!("vni_base = {}: choose 1 to 16777215", f.vni_base)));
        }
        if !(626..=65535).contains(&f.underlay_mtu) {
            return Err(bad(format!(
                "underlay_mtu = {}: choose 626 to 65535 (VXLAN takes 50)",
                f.underlay_mtu
            )));
        }
        Ok(Inventory {
            path: path.to_path_buf(),
            credentials: Credentials::in_dir(&creds_dir, Role::Coordinator),
            workers,
            lease_s: f.lease_s,
            vxlan_port: f.vxlan_port,
            vni_base: f.vni_base,
            underlay_mtu: f.underlay_mtu,
        })
    }
}

/// Why a worker's name gives no address to reach it at.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}: '{1}' is not a port")]
    Port(String, String),
    #[error("{0}: an IPv6 address; the tunnels need IPv4")]
    Ipv6(String),
    #[error("cannot read /etc/resolv.conf: {0}")]
    Conf(std::io::Error),
    #[error("cannot resolve {0}: {1}")]
    Lookup(String, hickory_resolver::error::ResolveError),
    #[error("cannot resolve {0}: the resolver failed")]
    Panicked(String),
    #[error("{0} has no IPv4 address (the tunnels need one)")]
    NoIpv4(String),
}

/// Every IPv4 address `name` (HOST:PORT, or HOST for the default port)
/// resolves to: the hosts file, then DNS as /etc/resolv.conf says (search
/// domains included), read by hickory rather than the C library, so a
/// static binary alone in a container resolves as well as any.
pub fn resolve(name: &str) -> Result<Vec<SocketAddrV4>, ResolveError> {
    let (host, port) = match name.rsplit_once(':') {
        Some((h, p)) => match p.parse::<u16>() {
            Ok(p) => (h.to_string(), p),
            Err(_) => return Err(ResolveError::Port(name.to_string(), p.to_string())),
        },
        None => (name.to_string(), DEFAULT_PORT),
    };
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(vec![SocketAddrV4::new(ip, port)]);
    }
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Err(ResolveError::Ipv6(name.to_string()));
    }
    // The resolver runs a runtime of its own: on a thread of its own, so
    // this works from inside another runtime too.
    let h = host.clone();
    let found = std::thread::spawn(move || -> Result<Vec<std::net::Ipv4Addr>, ResolveError> {
        let r = hickory_resolver::Resolver::from_system_conf().map_err(ResolveError::Conf)?;
        let ips = r
            .lookup_ip(h.as_str())
            .map_err(|e| ResolveError::Lookup(h.clone(), e))?;
        Ok(ips
            .iter()
            .filter_map(|ip| match ip {
                std::net::IpAddr::V4(v4) => Some(v4),
                std::net::IpAddr::V6(_) => None,
            })
            .collect())
    })
    .join()
    .map_err(|_| ResolveError::Panicked(host.clone()))??;
    if found.is_empty() {
        return Err(ResolveError::NoIpv4(name.to_string()));
    }
    Ok(found.into_iter().map(|ip| SocketAddrV4::new(ip, port)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fleet-inv-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("workers.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn an_inventory_reads_with_defaults_and_bad_ones_say_what_is_wrong() {
        let p = write("credentials = \"c\"\nworkers = [\"127.0.0.1:7701\", \"127.0.0.2\"]\n");
        let inv = Inventory::load(&p).unwrap();
        assert_eq!(inv.workers[1].1, "127.0.0.2:7700".parse().unwrap());
        assert_eq!(inv.credentials.ca, p.parent().unwrap().join("c/ca.pem"));
        assert_eq!((inv.lease_s, inv.vxlan_port, inv.underlay_mtu), (15, 4789, 1500));
        // Names go through the hosts file.
        assert!(resolve("localhost:7700")
            .unwrap()
            .contains(&"127.0.0.1:7700".parse().unwrap()));
        assert!(resolve("127.0.0.1:x").unwrap_err().to_string().contains("not a port"));
        for (text, says) in [
            ("credentials = \"c\"\n", "no workers"),
            (
                "credentials = \"c\"\nworkers = [\"127.0.0.1\"]\ndiscover = \"x\"\n",
                "not both",
            ),
            (
                "credentials = \"c\"\nworkers = [\"127.0.0.1\", \"127.0.0.1:7700\"]\n",
                "named twice",
            ),
            (
                "credentials = \"c\"\nworkers = [\"127.0.0.1\"]\nlease_s = 0\n",
                "lease_s",
            ),
            (
                "credentials = \"c\"\nworkers = [\"127.0.0.1\"]\nleese_s = 3\n",
                "leese_s",
            ),
        ] {
            let e = Inventory::load(&write(text)).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
