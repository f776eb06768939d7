//! What a running emulated network leaves on disk so another process
//! (`sdnlab net down`, `clean`) can find and remove it: the options it was
//! brought up with, its hosts, links and switch processes. Plain data, no
//! behaviour: `run` writes it, `ovs` and `sdnsw` fill their parts.

use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// One port of a switch: its OpenFlow number (in link order, from 1, as
/// every switch kind numbers them), its root-namespace interface and the
/// node at the other end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Port {
    pub no: u32,
    pub interface: String,
    pub peer: String,
}

pub const STATE_ROOT: &str = "/run/sdnlab/net";
pub const NETNS_PREFIX: &str = "sdnlab-";
pub const LINK_PREFIX: &str = "sl";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchKind {
    /// The Linux bridge: the papers' "legacy mode" baseline.
    Bridge,
    /// Open vSwitch, userspace datapath, run privately by netlab.
    Ovs,
    /// sdnlab's own userspace OpenFlow switch, one process per switch.
    Sdnlab,
}

impl State {
    /// Host `name`'s namespace; the error names the run's hosts.
    pub fn netns_of(&self, name: &str) -> Result<&str, crate::NetError> {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.netns.as_str())
            .ok_or_else(|| {
                crate::NetError::NotFound(format!(
                    "no host '{name}' in run {} (hosts: {})",
                    self.id,
                    self.hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(" ")
                ))
            })
    }

    /// Each switch's ports, in the order the switch numbers them.
    pub fn ports(&self) -> Vec<(String, Vec<Port>)> {
        let mut out: Vec<(String, Vec<Port>)> = self.switches.iter().map(|(n, _)| (n.clone(), Vec::new())).collect();
        let is_switch = |n: &str| self.switches.iter().any(|(s, _)| s == n);
        for l in &self.links {
            let ends: Vec<(&str, &str, &str)> = if l.root_ends.len() == 1 {
                let (sw, other) = if is_switch(&l.a) { (&l.a, &l.b) } else { (&l.b, &l.a) };
                vec![(sw, l.root_ends[0].as_str(), other)]
            } else {
                vec![
                    (&l.a, l.root_ends[0].as_str(), &l.b),
                    (&l.b, l.root_ends[1].as_str(), &l.a),
                ]
            };
            for (sw, interface, peer) in ends {
                if let Some((_, ports)) = out.iter_mut().find(|(n, _)| n == sw) {
                    ports.push(Port {
                        no: ports.len() as u32 + 1,
                        interface: interface.to_string(),
                        peer: peer.to_string(),
                    });
                }
            }
        }
        out
    }

    /// The number switch `sw` gives its port on `interface`, in `ports`
    /// (what [`State::ports`] returned).
    pub fn port_no(ports: &[(String, Vec<Port>)], sw: &str, interface: &str) -> Option<u32> {
        ports
            .iter()
            .find(|(n, _)| n == sw)
            .and_then(|(_, ps)| ps.iter().find(|p| p.interface == interface))
            .map(|p| p.no)
    }

    /// The run directory.
    pub fn dir(&self) -> PathBuf {
        std::path::Path::new(STATE_ROOT).join(&self.id)
    }
}

impl std::fmt::Display for SwitchKind {
    /// Its name, as `--switch` and files give it.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            SwitchKind::Bridge => "bridge",
            SwitchKind::Ovs => "ovs",
            SwitchKind::Sdnlab => "sdnlab",
        })
    }
}

/// A switch kind that is not one of [`SwitchKind`]'s.
#[derive(Debug, thiserror::Error)]
#[error("unknown switch kind '{0}': use bridge, ovs or sdnlab")]
pub struct UnknownSwitchKind(pub String);

impl std::str::FromStr for SwitchKind {
    type Err = UnknownSwitchKind;
    fn from_str(s: &str) -> Result<Self, UnknownSwitchKind> {
        // The names `Display` gives.
        [SwitchKind::Bridge, SwitchKind::Ovs, SwitchKind::Sdnlab]
            .into_iter()
            .find(|k| k.to_string() == s)
            .ok_or_else(|| UnknownSwitchKind(s.into()))
    }
}

/// What `up` was asked for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UpOptions {
    pub kind: SwitchKind,
    /// Controller for every switch without its own (`HOST:PORT`, or several
    /// comma-separated: one connection each, OpenFlow roles decide); OVS only.
    pub controller: Option<String>,
    /// Keep redundant switch links up. By default netlab leaves the links
    /// outside a spanning tree down, because Linux bridges here run without
    /// STP and simple learning controllers flood forever around a loop.
    #[serde(default)]
    pub keep_loops: bool,
    /// Key, certificate and CA certificate (PEM files) for switches whose
    /// controller is `ssl:HOST:PORT`; OVS only.
    #[serde(default)]
    pub ssl: Option<SslFiles>,
    /// With the `sdnlab` kind: one `sdnlab switch --ovsdb` process runs
    /// every switch as a bridge, configured through the run's own
    /// ovsdb-server with ovs-vsctl exactly as the `ovs` kind is (instead
    /// of one process per switch configured on its command line).
    #[serde(default)]
    pub ovsdb: bool,
    /// Only this machine's part of a topology spread over several (crate
    /// `fleet`); None: the whole topology here.
    #[serde(default)]
    pub part: Option<Part>,
}

impl UpOptions {
    /// Switches of `kind`, and nothing else: no controller, loops broken,
    /// no TLS, no OVSDB, the whole topology here.
    pub fn of(kind: SwitchKind) -> UpOptions {
        UpOptions {
            kind,
            controller: None,
            keep_loops: false,
            ssl: None,
            ovsdb: false,
            part: None,
        }
    }
}

/// One machine's part of a topology spread over several: the nodes it
/// brings up, and a VXLAN tunnel for each link to a node on another one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// Hosts and switches brought up here.
    pub nodes: Vec<String>,
    /// One per link with one end here and the other on another machine.
    pub tunnels: Vec<Tunnel>,
    /// The MTU of every interface of the run, tunnels, veths and hosts'
    /// `eth0` alike (the underlay's less VXLAN's 50 bytes), so a frame that
    /// fits one link fits them all and TCP's MSS follows from the hosts'.
    pub mtu: u32,
}

/// A link of the topology carried between two machines as VXLAN.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tunnel {
    /// The link's index in the topology.
    pub link: usize,
    /// Its VXLAN network identifier (one per link, the same at both ends).
    pub vni: u32,
    /// This machine's underlay address and the other's.
    pub local: Ipv4Addr,
    pub remote: Ipv4Addr,
    /// The UDP port both ends use (4789, IANA's, by default).
    pub port: u16,
}

/// VXLAN's overhead on an IPv4 underlay: outer IPv4 20, UDP 8, VXLAN 8,
/// inner Ethernet 14.
pub const VXLAN_OVERHEAD: u32 = 50;

/// What an OVS switch needs to reach a controller over TLS.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SslFiles {
    pub private_key: PathBuf,
    pub certificate: PathBuf,
    pub ca_certificate: PathBuf,
}

/// Everything needed to find and remove a run, written before anything is created.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub id: String,
    pub options: UpOptions,
    /// The `up` process, if it stays in the foreground.
    pub pid: u32,
    pub hosts: Vec<HostState>,
    pub switches: Vec<(String, String)>,
    pub links: Vec<LinkState>,
    pub ovs: Option<OvsState>,
    /// The sdnlab switch processes (switch kind `sdnlab`).
    #[serde(default)]
    pub sdnlab: Vec<SwitchProcess>,
    /// The topology brought up (so another process can start a stopped
    /// switch again with its datapath id, controller and ports).
    #[serde(default)]
    pub topology: Option<crate::topo::Topology>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostState {
    pub name: String,
    pub netns: String,
    pub ip: Ipv4Addr,
    pub root_end: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkState {
    pub a: String,
    pub b: String,
    /// The root-namespace interfaces of this link (one for host links, two for switch links).
    pub root_ends: Vec<String>,
    /// Left down by netlab to break a loop (see `UpOptions::keep_loops`).
    pub blocked: bool,
    /// Carried to another machine: `root_ends` is then the VXLAN device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<Tunnel>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OvsState {
    pub dir: PathBuf,
    pub ovsdb_pid: u32,
    /// The switch daemon: ovs-vswitchd, or `sdnlab switch --ovsdb`.
    pub vswitchd_pid: u32,
}

/// A running sdnlab switch of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwitchProcess {
    pub name: String,
    pub pid: u32,
    /// Where it listens for OpenFlow tools: `tcp:127.0.0.1:PORT`.
    pub ofp: String,
}
