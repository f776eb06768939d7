//! The topology model: hosts, switches, links and an optional management
//! network; the built-in shapes (`single,N`, `linear,N`, `tree,D,F`,
//! `leaf-spine,S,L,H`); the TOML file format and its validation. Pure data:
//! nothing here touches the kernel.

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;

/// A host: a network namespace with one data interface (`eth0`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    pub ip: Ipv4Addr,
    pub prefix_len: u8,
    pub mac: [u8; 6],
    pub gateway: Option<Ipv4Addr>,
    /// Address on the management segment (interface `mgmt0`), if there is one.
    pub mgmt_ip: Option<Ipv4Addr>,
}

/// A switch; its kind is chosen when the network comes up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Switch {
    pub name: String,
    pub dpid: u64,
    /// OpenFlow versions offered, e.g. `["OpenFlow13"]` (OpenFlow switches only).
    pub protocols: Vec<String>,
    /// `HOST:PORT` of this switch's controller, overriding the run's.
    pub controller: Option<String>,
}

/// A link between two nodes (at least one a switch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub a: String,
    pub b: String,
    /// Rate limit in Mbit/s (tc tbf on both ends).
    pub rate_mbit: Option<f64>,
    /// Queue limit in packets for the rate limiter.
    pub queue_packets: Option<u32>,
}

/// The management segment: every host gets `mgmt0` on one extra bridge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mgmt {
    pub subnet: Ipv4Addr,
    pub prefix_len: u8,
    /// The root namespace's own address on the segment, so a controller
    /// there reaches agents on the hosts (none by default).
    pub root_ip: Option<Ipv4Addr>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Topology {
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    pub links: Vec<Link>,
    pub mgmt: Option<Mgmt>,
}

/// Node names become parts of interface names (15 bytes at most), so they
/// are short and plain.
pub const MAX_NAME_LEN: usize = 12;

impl Topology {
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    pub fn is_switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s.name == name)
    }

    /// Every problem with the topology, one line each (empty when valid).
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let mut names = HashSet::new();
        for n in self
            .hosts
            .iter()
            .map(|h| &h.name)
            .chain(self.switches.iter().map(|s| &s.name))
        {
            if !names.insert(n.as_str()) {
                p.push(format!(
                    "name '{n}' is used twice (names are shared by hosts and switches)"
                ));
            }
            if n.is_empty() || n.len() > MAX_NAME_LEN || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                p.push(format!("name '{n}' must be 1 to {MAX_NAME_LEN} letters, digits or '_'"));
            }
        }
        let mut ips: HashMap<Ipv4Addr, &str> = HashMap::new();
        let mut macs: HashMap<[u8; 6], &str> = HashMap::new();
        for h in &self.hosts {
            if let Some(other) = ips.insert(h.ip, &h.name) {
                p.push(format!("address {} is given to both '{other}' and '{}'", h.ip, h.name));
            }
            if let Some(other) = macs.insert(h.mac, &h.name) {
                p.push(format!(
                    "MAC {} is given to both '{other}' and '{}'",
                    fmt_mac(&h.mac),
                    h.name
                ));
            }
            if h.prefix_len > 32 {
                p.push(format!("host '{}': prefix length {} exceeds 32", h.name, h.prefix_len));
            }
            if h.mac[0] & 1 == 1 {
                p.push(format!(
                    "host '{}': MAC {} is a multicast address",
                    h.name,
                    fmt_mac(&h.mac)
                ));
            }
            if let (Some(m), Some(mgmt)) = (h.mgmt_ip, &self.mgmt) {
                if Some(m) == mgmt.root_ip {
                    p.push(format!(
                        "host '{}': management address {m} is the root namespace's (mgmt.root_ip)",
                        h.name
                    ));
                }
                if !same_subnet(m, mgmt.subnet, mgmt.prefix_len) {
                    p.push(format!(
                        "host '{}': management address {m} is outside {}/{}",
                        h.name, mgmt.subnet, mgmt.prefix_len
                    ));
                }
            }
        }
        if let Some(m) = &self.mgmt {
            if let Some(r) = m.root_ip.filter(|r| !same_subnet(*r, m.subnet, m.prefix_len)) {
                p.push(format!("mgmt.root_ip {r} is outside {}/{}", m.subnet, m.prefix_len));
            }
        }
        let mut dpids: HashMap<u64, &str> = HashMap::new();
        for s in &self.switches {
            if let Some(other) = dpids.insert(s.dpid, &s.name) {
                p.push(format!(
                    "datapath id {:#x} is given to both '{other}' and '{}'",
                    s.dpid, s.name
                ));
            }
            for v in &s.protocols {
                if !matches!(v.as_str(), "OpenFlow10" | "OpenFlow13") {
                    p.push(format!(
                        "switch '{}': protocol '{v}' is not OpenFlow10 or OpenFlow13",
                        s.name
                    ));
                }
            }
            if let Some(c) = &s.controller {
                if c.parse::<std::net::SocketAddr>().is_err() {
                    p.push(format!(
                        "switch '{}': controller '{c}' is not HOST:PORT (e.g. 127.0.0.1:6653)",
                        s.name
                    ));
                }
            }
        }
        let mut host_links: HashMap<&str, usize> = HashMap::new();
        let mut pairs = HashSet::new();
        for (i, l) in self.links.iter().enumerate() {
            let n = i + 1;
            for end in [&l.a, &l.b] {
                if !names.contains(end.as_str()) {
                    p.push(format!("link {n} ({} - {}): unknown node '{end}'", l.a, l.b));
                }
                if self.host(end).is_some() {
                    *host_links.entry(end.as_str()).or_default() += 1;
                }
            }
            if l.a == l.b {
                p.push(format!("link {n}: '{}' is linked to itself", l.a));
            }
            if self.host(&l.a).is_some() && self.host(&l.b).is_some() {
                p.push(format!(
                    "link {n} ({} - {}): hosts connect through switches, not directly",
                    l.a, l.b
                ));
            }
            let key = if l.a < l.b {
                (l.a.as_str(), l.b.as_str())
            } else {
                (l.b.as_str(), l.a.as_str())
            };
            if !pairs.insert(key) {
                p.push(format!("link {n} ({} - {}): the same pair is linked twice", l.a, l.b));
            }
            if let Some(r) = l.rate_mbit {
                if !(r > 0.0 && r.is_finite()) {
                    p.push(format!("link {n}: rate must be a positive number of Mbit/s"));
                }
            }
            if l.queue_packets.is_some() && l.rate_mbit.is_none() {
                p.push(format!(
                    "link {n}: a queue size needs a rate (it sizes the rate limiter's queue)"
                ));
            }
        }
        for h in &self.hosts {
            match host_links.get(h.name.as_str()).copied().unwrap_or(0) {
                0 => p.push(format!("host '{}' has no link", h.name)),
                1 => {}
                k => p.push(format!(
                    "host '{}' has {k} links; a host has one data interface",
                    h.name
                )),
            }
        }
        p
    }
}

pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

fn same_subnet(a: Ipv4Addr, net: Ipv4Addr, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len.min(32)) };
    u32::from(a) & mask == u32::from(net) & mask
}

/// Host number `i` (from 1): 10.0.0.i/8 style addresses and a locally
/// administered MAC, as Mininet numbers them.
fn numbered_host(i: usize) -> Host {
    let n = i as u32;
    Host {
        name: format!("h{i}"),
        ip: Ipv4Addr::from(0x0a00_0000 | n),
        prefix_len: 8,
        mac: [0x02, 0, (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8],
        gateway: None,
        mgmt_ip: None,
    }
}

fn switch(name: String, dpid: u64) -> Switch {
    Switch {
        name,
        dpid,
        protocols: Vec::new(),
        controller: None,
    }
}

fn link(a: &str, b: &str) -> Link {
    Link {
        a: a.into(),
        b: b.into(),
        rate_mbit: None,
        queue_packets: None,
    }
}

/// Why a built-in shape cannot be built; the message names the spec.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("'{spec}': expected {usage}")]
    Arity { spec: String, usage: &'static str },
    #[error("'{spec}': '{part}' is not a positive whole number (expected {usage})")]
    NotPositive {
        spec: String,
        part: String,
        usage: &'static str,
    },
    #[error("'{spec}': {hosts} hosts is more than 4096")]
    TooManyHosts { spec: String, hosts: String },
    #[error(
        "unknown shape '{0}': use single,N linear,N tree,DEPTH,FANOUT leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF or a .toml file"
    )]
    Unknown(String),
}

/// Parses a built-in shape: `single,N`, `linear,N`, `tree,DEPTH,FANOUT`,
/// `leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF`.
pub fn shape(spec: &str) -> Result<Topology, ShapeError> {
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    let nums = |want: usize, usage: &'static str| {
        if parts.len() != want + 1 {
            return Err(ShapeError::Arity {
                spec: spec.into(),
                usage,
            });
        }
        parts[1..]
            .iter()
            .map(|p| match p.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(ShapeError::NotPositive {
                    spec: spec.into(),
                    part: p.to_string(),
                    usage,
                }),
            })
            .collect::<Result<Vec<usize>, ShapeError>>()
    };
    let mut t = Topology::default();
    match parts[0] {
        "single" => {
            let n = nums(1, "single,N")?[0];
            t.switches.push(switch("s1".into(), 1));
            for i in 1..=n {
                t.hosts.push(numbered_host(i));
                t.links.push(link(&format!("h{i}"), "s1"));
            }
        }
        "linear" => {
            let n = nums(1, "linear,N")?[0];
            for i in 1..=n {
                t.switches.push(switch(format!("s{i}"), i as u64));
                t.hosts.push(numbered_host(i));
                t.links.push(link(&format!("h{i}"), &format!("s{i}")));
                if i > 1 {
                    t.links.push(link(&format!("s{}", i - 1), &format!("s{i}")));
                }
            }
        }
        "tree" => {
            let v = nums(2, "tree,DEPTH,FANOUT")?;
            let (depth, fanout) = (v[0], v[1]);
            if fanout.checked_pow(depth as u32).is_none_or(|h| h > 4096) {
                return Err(ShapeError::TooManyHosts {
                    spec: spec.into(),
                    hosts: format!("{fanout}^{depth}"),
                });
            }
            // Breadth-first numbering: switch k's children are k*F+1 .. k*F+F (k from 0).
            let mut level = vec![0usize];
            let mut next_switch = 1;
            t.switches.push(switch("s1".into(), 1));
            for d in 1..=depth {
                let mut children = Vec::new();
                for &parent in &level {
                    for _ in 0..fanout {
                        if d == depth {
                            let h = t.hosts.len() + 1;
                            t.hosts.push(numbered_host(h));
                            t.links.push(link(&format!("s{}", parent + 1), &format!("h{h}")));
                        } else {
                            next_switch += 1;
                            t.switches.push(switch(format!("s{next_switch}"), next_switch as u64));
                            t.links
                                .push(link(&format!("s{}", parent + 1), &format!("s{next_switch}")));
                            children.push(next_switch - 1);
                        }
                    }
                }
                level = children;
            }
        }
        "leaf-spine" => {
            let v = nums(3, "leaf-spine,SPINES,LEAVES,HOSTS_PER_LEAF")?;
            let (spines, leaves, per_leaf) = (v[0], v[1], v[2]);
            if leaves * per_leaf > 4096 {
                return Err(ShapeError::TooManyHosts {
                    spec: spec.into(),
                    hosts: (leaves * per_leaf).to_string(),
                });
            }
            for s in 1..=spines {
                t.switches.push(switch(format!("spine{s}"), 0x100 + s as u64));
            }
            for l in 1..=leaves {
                let leaf = format!("leaf{l}");
                t.switches.push(switch(leaf.clone(), 0x200 + l as u64));
                for s in 1..=spines {
                    t.links.push(link(&format!("spine{s}"), &leaf));
                }
                for _ in 0..per_leaf {
                    let h = t.hosts.len() + 1;
                    t.hosts.push(numbered_host(h));
                    t.links.push(link(&format!("h{h}"), &leaf));
                }
            }
        }
        other => return Err(ShapeError::Unknown(other.into())),
    }
    Ok(t)
}

/// The TOML file format (docs/manual/net.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTopo {
    #[serde(default)]
    host: Vec<FileHost>,
    #[serde(default)]
    switch: Vec<FileSwitch>,
    #[serde(default)]
    link: Vec<FileLink>,
    mgmt: Option<FileMgmt>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    name: String,
    ip: String,
    mac: Option<String>,
    gateway: Option<String>,
    mgmt_ip: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSwitch {
    name: String,
    dpid: Option<u64>,
    #[serde(default)]
    protocols: Vec<String>,
    controller: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    a: String,
    b: String,
    rate_mbit: Option<f64>,
    queue_packets: Option<u32>,
    delay: Option<toml::Value>,
    loss: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMgmt {
    subnet: String,
    root_ip: Option<String>,
}

/// A topology file's address that is not `A.B.C.D[/LEN]`.
#[derive(Debug, thiserror::Error)]
enum CidrError {
    #[error("{what}: '{text}' is not an IPv4 address")]
    NotIpv4 { what: String, text: String },
    #[error("{what}: '{text}' has a bad prefix length")]
    PrefixLength { what: String, text: String },
}

fn parse_cidr(s: &str, what: &str) -> Result<(Ipv4Addr, u8), CidrError> {
    let (ip, len) = s.split_once('/').unwrap_or((s, "24"));
    let ip = ip.parse::<Ipv4Addr>().map_err(|_| CidrError::NotIpv4 {
        what: what.into(),
        text: s.into(),
    })?;
    let len = len
        .parse::<u8>()
        .ok()
        .filter(|l| *l <= 32)
        .ok_or_else(|| CidrError::PrefixLength {
            what: what.into(),
            text: s.into(),
        })?;
    Ok((ip, len))
}

/// Reads `spec` as a built-in shape (`linear,4`), or as a topology file
/// (TOML) when it names one (ends in `.toml`, or is a file); each problem
/// found is one line.
pub fn load(spec: &str) -> Result<Topology, Vec<String>> {
    if spec.ends_with(".toml") || std::path::Path::new(spec).is_file() {
        let text = std::fs::read_to_string(spec).map_err(|e| vec![format!("{spec}: {e}")])?;
        from_toml(&text).map_err(|ps| ps.into_iter().map(|p| format!("{spec}: {p}")).collect())
    } else {
        shape(spec).map_err(|e| vec![e.to_string()])
    }
}

/// Parses and validates a topology file's text. Every problem is one line.
pub fn from_toml(text: &str) -> Result<Topology, Vec<String>> {
    let f: FileTopo = toml::from_str(text).map_err(|e| vec![e.to_string().lines().collect::<Vec<_>>().join(" ")])?;
    let mut problems = Vec::new();
    let mut t = Topology::default();
    if let Some(m) = &f.mgmt {
        match parse_cidr(&m.subnet, "mgmt.subnet") {
            Ok((subnet, prefix_len)) => {
                let root_ip = m.root_ip.as_deref().and_then(|r| match r.parse::<Ipv4Addr>() {
                    Ok(ip) => Some(ip),
                    Err(_) => {
                        problems.push(format!("mgmt.root_ip '{r}' is not an IPv4 address"));
                        None
                    }
                });
                t.mgmt = Some(Mgmt {
                    subnet,
                    prefix_len,
                    root_ip,
                })
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    for (i, h) in f.host.iter().enumerate() {
        let what = format!("host '{}'", h.name);
        let (ip, prefix_len) = parse_cidr(&h.ip, &what).unwrap_or_else(|e| {
            problems.push(e.to_string());
            (Ipv4Addr::UNSPECIFIED, 0)
        });
        let mac = match &h.mac {
            None => numbered_host(i + 1).mac,
            Some(m) => parse_mac(m).unwrap_or_else(|| {
                problems.push(format!("{what}: '{m}' is not a MAC address (aa:bb:cc:dd:ee:ff)"));
                [2, 0, 0, 0, 0, 0]
            }),
        };
        let addr = |s: &Option<String>, field: &str, problems: &mut Vec<String>| {
            s.as_ref().and_then(|g| match g.parse::<Ipv4Addr>() {
                Ok(a) => Some(a),
                Err(_) => {
                    problems.push(format!("{what}: {field} '{g}' is not an IPv4 address"));
                    None
                }
            })
        };
        let gateway = addr(&h.gateway, "gateway", &mut problems);
        let mgmt_ip = addr(&h.mgmt_ip, "mgmt_ip", &mut problems);
        if mgmt_ip.is_some() && f.mgmt.is_none() {
            problems.push(format!("{what}: mgmt_ip given but the file has no [mgmt] section"));
        }
        t.hosts.push(Host {
            name: h.name.clone(),
            ip,
            prefix_len,
            mac,
            gateway,
            mgmt_ip,
        });
    }
    if let Some(m) = &t.mgmt {
        // Hosts without a management address get one in order.
        let base = u32::from(m.subnet);
        for (i, h) in t.hosts.iter_mut().enumerate() {
            if h.mgmt_ip.is_none() {
                h.mgmt_ip = Some(Ipv4Addr::from(base + i as u32 + 1));
            }
        }
    }
    for (i, s) in f.switch.iter().enumerate() {
        t.switches.push(Switch {
            name: s.name.clone(),
            dpid: s.dpid.unwrap_or(i as u64 + 1),
            protocols: s.protocols.clone(),
            controller: s.controller.clone(),
        });
    }
    for (i, l) in f.link.iter().enumerate() {
        for (field, v) in [("delay", &l.delay), ("loss", &l.loss)] {
            if v.is_some() {
                problems.push(format!(
                    "link {} ({} - {}): '{field}' cannot be emulated: this kernel has no netem qdisc (only rate and queue size, via tbf)",
                    i + 1,
                    l.a,
                    l.b
                ));
            }
        }
        t.links.push(Link {
            a: l.a.clone(),
            b: l.b.clone(),
            rate_mbit: l.rate_mbit,
            queue_packets: l.queue_packets,
        });
    }
    problems.extend(t.problems());
    if problems.is_empty() {
        Ok(t)
    } else {
        Err(problems)
    }
}

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (o, p) in m.iter_mut().zip(parts) {
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_have_the_expected_counts_and_are_valid() {
        for (spec, hosts, switches, links) in [
            ("single,4", 4, 1, 4),
            ("linear,16", 16, 16, 31),
            ("tree,2,3", 9, 4, 12),
            ("tree,3,2", 8, 7, 14),
            ("leaf-spine,2,4,25", 100, 6, 108),
        ] {
            let t = shape(spec).unwrap();
            assert_eq!(
                (t.hosts.len(), t.switches.len(), t.links.len()),
                (hosts, switches, links),
                "{spec}"
            );
            assert!(t.problems().is_empty(), "{spec}: {:?}", t.problems());
        }
        assert_eq!(shape("single,3").unwrap().hosts[2].ip, Ipv4Addr::new(10, 0, 0, 3));
    }

    #[test]
    fn bad_shapes_say_what_is_expected() {
        assert!(shape("linear").unwrap_err().to_string().contains("linear,N"));
        assert!(shape("tree,2,x")
            .unwrap_err()
            .to_string()
            .contains("'x' is not a positive whole number"));
        assert!(shape("ring,3")
            .unwrap_err()
            .to_string()
            .contains("unknown shape 'ring'"));
        assert!(shape("single,0").is_err());
        assert!(shape("tree,20,4").unwrap_err().to_string().contains("more than 4096"));
    }

    #[test]
    fn a_good_file_parses() {
        let t = from_toml(
            r#"
            [mgmt]
            subnet = "192.168.100.0/24"
            [[host]]
            name = "web1"
            ip = "10.0.0.1/24"
            mac = "02:00:00:00:00:aa"
            gateway = "10.0.0.254"
            [[host]]
            name = "client"
            ip = "10.0.0.9/24"
            [[switch]]
            name = "s1"
            dpid = 7
            protocols = ["OpenFlow13"]
            controller = "127.0.0.1:6653"
            [[link]]
            a = "web1"
            b = "s1"
            rate_mbit = 100
            queue_packets = 50
            [[link]]
            a = "client"
            b = "s1"
            "#,
        )
        .unwrap();
        assert_eq!(t.hosts[0].mac, [2, 0, 0, 0, 0, 0xaa]);
        assert_eq!(t.hosts[1].mgmt_ip, Some(Ipv4Addr::new(192, 168, 100, 2)));
        assert_eq!(t.switches[0].dpid, 7);
        assert_eq!(t.links[0].rate_mbit, Some(100.0));
    }

    #[test]
    fn a_bad_file_gets_one_line_per_problem() {
        let problems = from_toml(
            r#"
            [[host]]
            name = "h1"
            ip = "10.0.0.1/24"
            [[host]]
            name = "h2"
            ip = "10.0.0.1/24"
            mac = "zz"
            [[switch]]
            name = "s1"
            protocols = ["OpenFlow15"]
            [[link]]
            a = "h1"
            b = "s9"
            delay = "10ms"
            [[link]]
            a = "h2"
            b = "s1"
            "#,
        )
        .unwrap_err();
        let all = problems.join("\n");
        for want in [
            "address 10.0.0.1 is given to both 'h1' and 'h2'",
            "'zz' is not a MAC address",
            "protocol 'OpenFlow15'",
            "unknown node 's9'",
            "'delay' cannot be emulated: this kernel has no netem",
        ] {
            assert!(all.contains(want), "missing '{want}' in:\n{all}");
        }
        assert!(problems.iter().all(|p| !p.contains('\n')));
        let syntax = from_toml("[[host]]\nname = 1").unwrap_err();
        assert_eq!(syntax.len(), 1);
        let unknown = from_toml("[[host]]\nname = \"a\"\nip = \"10.0.0.1\"\ncolour = \"red\"").unwrap_err();
        assert!(unknown[0].contains("colour"), "{unknown:?}");
    }

    #[test]
    fn the_root_namespace_may_join_the_management_network() {
        let base =
            "[[host]]\nname = \"h1\"\nip = \"10.0.0.1\"\n[[switch]]\nname = \"s1\"\n[[link]]\na = \"h1\"\nb = \"s1\"\n";
        let t = from_toml(&format!(
            "[mgmt]\nsubnet = \"10.77.0.0/24\"\nroot_ip = \"10.77.0.254\"\n{base}"
        ))
        .unwrap();
        let m = t.mgmt.as_ref().unwrap();
        assert_eq!(m.root_ip, Some(Ipv4Addr::new(10, 77, 0, 254)));
        assert_eq!(t.hosts[0].mgmt_ip, Some(Ipv4Addr::new(10, 77, 0, 1)));
        let outside = from_toml(&format!(
            "[mgmt]\nsubnet = \"10.77.0.0/24\"\nroot_ip = \"10.78.0.1\"\n{base}"
        ))
        .unwrap_err();
        assert!(
            outside.iter().any(|p| p.contains("root_ip 10.78.0.1 is outside")),
            "{outside:?}"
        );
        let taken = from_toml(&format!(
            "[mgmt]\nsubnet = \"10.77.0.0/24\"\nroot_ip = \"10.77.0.1\"\n{base}"
        ))
        .unwrap_err();
        assert!(taken.iter().any(|p| p.contains("is the root namespace's")), "{taken:?}");
    }
}
