//! What Open vSwitch's database asks of the switch, without I/O: from the
//! replica of the Open_vSwitch, Bridge, Port, Interface and Controller
//! tables to the bridges wanted (their ports, controllers, datapath id,
//! fail mode, OpenFlow versions), with a note for every table, column or
//! key set in the database that the switch does not implement (the manager
//! logs each once).

use super::datum::{self, Replica, Row};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

/// What the database asks for.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Want {
    /// The Open_vSwitch row (where cur_cfg is written).
    pub root: Option<String>,
    /// Its next_cfg: written back as cur_cfg once applied.
    pub next_cfg: i64,
    pub bridges: Vec<BridgeWant>,
    /// other_config:stats-update-interval (Open vSwitch's default 5 s).
    pub stats_interval: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BridgeWant {
    pub uuid: String,
    pub name: String,
    pub dpid: u64,
    /// fail_mode secure: nothing forwarded without rules; standalone (the
    /// default, as in Open vSwitch): floods until a controller takes over.
    pub secure: bool,
    /// OpenFlow versions offered (wire numbers, of 1.0 and 1.3).
    pub versions: Vec<u8>,
    pub controllers: Vec<ControllerWant>,
    pub interfaces: Vec<IfaceWant>,
    /// The bridge's own internal interface (OFPP_LOCAL), if its row is there.
    pub local: Option<IfaceWant>,
}

impl BridgeWant {
    /// What cannot change on a running bridge: a change restarts it.
    pub fn restart_key(&self) -> (u64, bool, Vec<u8>, Vec<SocketAddr>, Option<String>) {
        (
            self.dpid,
            self.secure,
            self.versions.clone(),
            self.passive(),
            self.local.as_ref().map(|l| l.name.clone()),
        )
    }

    /// Controllers to connect to.
    pub fn active(&self) -> Vec<SocketAddr> {
        self.controllers
            .iter()
            .filter_map(|c| match c.target {
                Target::Active(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// Addresses to listen on.
    pub fn passive(&self) -> Vec<SocketAddr> {
        self.controllers
            .iter()
            .filter_map(|c| match c.target {
                Target::Passive(a) => Some(a),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ControllerWant {
    pub uuid: String,
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// tcp:IP[:PORT]
    Active(SocketAddr),
    /// ptcp:[PORT][:IP]
    Passive(SocketAddr),
    /// What the switch does not do, and why.
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct IfaceWant {
    pub uuid: String,
    pub name: String,
    pub kind: IfaceKind,
    pub ofport_request: Option<u32>,
    /// The number it had last (the `ofport` the switch wrote before):
    /// taken again if free, so a restart keeps the numbering.
    pub ofport_last: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum IfaceKind {
    /// "" or "system": a Linux interface through AF_PACKET rings.
    System,
    /// "afxdp": through AF_XDP sockets.
    AfXdp,
    /// "internal": a tap the switch creates.
    Internal,
    /// Any other type: not implemented (its row gets an error).
    Unsupported(String),
}

/// The OpenFlow port number of OFPP_LOCAL, as Open vSwitch writes it in
/// the bridge's own Interface row.
pub const LOCAL_OFPORT: i64 = 65534;

/// Parses a Controller target.
pub fn target(t: &str) -> Target {
    use std::net::ToSocketAddrs;
    let resolve = |host: &str, port: &str| -> Option<SocketAddr> {
        let port: u16 = if port.is_empty() { 6653 } else { port.parse().ok()? };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        (host, port).to_socket_addrs().ok()?.next()
    };
    if let Some(rest) = t.strip_prefix("tcp:") {
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && !rest.ends_with(']') => (h, p),
            _ => (rest, ""),
        };
        return match resolve(host, port) {
            Some(a) => Target::Active(a),
            None => Target::Unsupported(format!("{t:?} is not tcp:IP[:PORT]")),
        };
    }
    if let Some(rest) = t.strip_prefix("ptcp:") {
        let (port, host) = rest.split_once(':').unwrap_or((rest, "127.0.0.1"));
        return match resolve(host, port) {
            Some(a) => Target::Passive(a),
            None => Target::Unsupported(format!("{t:?} is not ptcp:[PORT][:IP]")),
        };
    }
    let scheme = t.split(':').next().unwrap_or(t);
    Target::Unsupported(format!(
        "{scheme}: targets are not implemented by sdnlab's switch (tcp: and ptcp: are)"
    ))
}

/// Columns each table's rows may set that the switch acts on, or that say
/// nothing to it (names, references it follows, what it writes itself,
/// external_ids).
fn understood(table: &str) -> &'static [&'static str] {
    match table {
        "Open_vSwitch" => &[
            "bridges",
            "next_cfg",
            "cur_cfg",
            "other_config",
            "external_ids",
            "ovs_version",
            "db_version",
            "system_type",
            "system_version",
            "datapath_types",
            "iface_types",
            "statistics",
            "dpdk_initialized",
            "dpdk_version",
            "datapaths",
        ],
        "Bridge" => &[
            "name",
            "ports",
            "controller",
            "fail_mode",
            "protocols",
            "other_config",
            "external_ids",
            "datapath_type",
            "datapath_id",
            "datapath_version",
            "status",
            "rstp_status",
        ],
        "Port" => &[
            "name",
            "interfaces",
            "external_ids",
            "status",
            "statistics",
            "rstp_status",
            "rstp_statistics",
        ],
        "Interface" => &[
            "name",
            "type",
            "ofport_request",
            "external_ids",
            "ofport",
            "ifindex",
            "mac_in_use",
            "link_state",
            "admin_state",
            "mtu",
            "link_speed",
            "duplex",
            "link_resets",
            "statistics",
            "error",
            "status",
            "lacp_current",
            "bfd_status",
            "cfm_fault",
            "cfm_fault_status",
            "cfm_flap_count",
            "cfm_health",
            "cfm_remote_mpids",
            "cfm_remote_opstate",
        ],
        "Controller" => &["target", "external_ids", "is_connected", "role", "status"],
        _ => &[],
    }
}

/// Keys of other_config the switch acts on.
fn understood_keys(table: &str) -> &'static [&'static str] {
    match table {
        "Open_vSwitch" => &["stats-update-interval"],
        "Bridge" => &["datapath-id"],
        _ => &[],
    }
}

/// Tables the switch follows.
pub const TABLES: [&str; 5] = ["Open_vSwitch", "Bridge", "Port", "Interface", "Controller"];

/// A row's name for notes: its `name` or `target`, else its UUID.
fn label<'a>(uuid: &'a str, row: &'a Row) -> &'a str {
    datum::string(row.get("name"))
        .or_else(|| datum::string(row.get("target")))
        .unwrap_or(uuid)
}

/// Notes on what the database sets that the switch does not implement:
/// one line per table with rows, column set away from its default, or
/// other_config key.
pub fn unimplemented(r: &Replica) -> BTreeSet<String> {
    let mut notes = BTreeSet::new();
    for (table, rows) in &r.tables {
        if rows.is_empty() {
            continue;
        }
        if !TABLES.contains(&table.as_str()) {
            notes.insert(format!(
                "table {table} has rows; sdnlab's switch does not implement it (ignored)"
            ));
            continue;
        }
        for (uuid, row) in rows {
            for (col, v) in row {
                if col == "other_config" {
                    for k in datum::map(Some(v)).keys() {
                        if !understood_keys(table).contains(k) {
                            notes.insert(format!(
                                "{table} other_config:{k} (row {}) is not implemented by sdnlab's switch (ignored)",
                                label(uuid, row)
                            ));
                        }
                    }
                } else if !understood(table).contains(&col.as_str()) && !col.starts_with('_') && !datum::is_default(v) {
                    notes.insert(format!(
                        "{table}.{col} (row {}) is not implemented by sdnlab's switch (ignored)",
                        label(uuid, row)
                    ));
                }
            }
        }
    }
    notes
}

/// The datapath id a bridge gets without other_config:datapath-id: the
/// low 48 bits of its row's UUID, so the same database gives the same id
/// after a restart.
pub fn default_dpid(uuid: &str) -> u64 {
    let hex: String = uuid.chars().filter(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&hex[hex.len().saturating_sub(12)..], 16).unwrap_or(1)
}

/// What the database asks for, and notes on what in it is malformed or
/// not done (a bridge that cannot run as asked is still listed, with what
/// could be honoured).
pub fn want(r: &Replica) -> (Want, BTreeSet<String>) {
    let mut notes = unimplemented(r);
    let mut w = Want {
        stats_interval: Duration::from_secs(5),
        ..Want::default()
    };
    let Some((root_uuid, root)) = r.rows("Open_vSwitch").next() else {
        return (w, notes);
    };
    w.root = Some(root_uuid.clone());
    w.next_cfg = datum::integer(root.get("next_cfg")).unwrap_or(0);
    if let Some(ms) = datum::map(root.get("other_config")).get("stats-update-interval") {
        match ms.parse::<u64>() {
            // Open vSwitch takes at least 5000 ms; a lab may want faster.
            Ok(ms) if ms >= 1000 => w.stats_interval = Duration::from_millis(ms),
            _ => {
                notes.insert(format!(
                    "Open_vSwitch other_config:stats-update-interval={ms:?} is not a number of milliseconds >= 1000; 5000 used"
                ));
            }
        }
    }
    let mut seen_ifaces = BTreeSet::new();
    for buuid in datum::uuids(root.get("bridges")) {
        let Some(b) = r.row("Bridge", buuid) else { continue };
        let Some(name) = datum::string(b.get("name")) else {
            continue;
        };
        let dpid = match datum::map(b.get("other_config")).get("datapath-id") {
            Some(d) if d.len() == 16 && d.chars().all(|c| c.is_ascii_hexdigit()) => {
                u64::from_str_radix(d, 16).unwrap_or(0)
            }
            Some(d) => {
                notes.insert(format!(
                    "bridge {name}: other_config:datapath-id={d:?} is not 16 hex digits; the default is used"
                ));
                default_dpid(buuid)
            }
            None => default_dpid(buuid),
        };
        let secure = match datum::string(b.get("fail_mode")) {
            Some("secure") => true,
            None | Some("standalone") => false,
            Some(m) => {
                notes.insert(format!(
                    "bridge {name}: fail_mode {m:?} is neither secure nor standalone; standalone used"
                ));
                false
            }
        };
        let protocols = datum::strings(b.get("protocols"));
        let versions: Vec<u8> = if protocols.is_empty() {
            vec![ofwire::OFP10_VERSION, ofwire::OFP13_VERSION]
        } else {
            let mut v = Vec::new();
            for p in &protocols {
                match *p {
                    "OpenFlow10" => v.push(ofwire::OFP10_VERSION),
                    "OpenFlow13" => v.push(ofwire::OFP13_VERSION),
                    other => {
                        notes.insert(format!(
                            "bridge {name}: protocols {other} is not spoken by sdnlab's switch (OpenFlow10 and OpenFlow13 are)"
                        ));
                    }
                }
            }
            if v.is_empty() {
                notes.insert(format!(
                    "bridge {name}: protocols names neither OpenFlow10 nor OpenFlow13; the bridge takes no controllers"
                ));
            }
            v.sort();
            v
        };
        let mut controllers = Vec::new();
        for cuuid in datum::uuids(b.get("controller")) {
            let Some(c) = r.row("Controller", cuuid) else { continue };
            let Some(t) = datum::string(c.get("target")) else {
                continue;
            };
            let target = target(t);
            if let Target::Unsupported(why) = &target {
                notes.insert(format!("bridge {name}: controller {why}"));
            }
            controllers.push(ControllerWant {
                uuid: cuuid.to_string(),
                target,
            });
        }
        if versions.is_empty() {
            controllers.clear();
        }
        let mut interfaces = Vec::new();
        let mut local = None;
        for puuid in datum::uuids(b.get("ports")) {
            let Some(p) = r.row("Port", puuid) else { continue };
            let ifaces = datum::uuids(p.get("interfaces"));
            if ifaces.len() > 1 {
                notes.insert(format!(
                    "port {}: bonds are not implemented by sdnlab's switch; only its first interface is used",
                    label(puuid, p)
                ));
            }
            let Some(iuuid) = ifaces.first() else { continue };
            let Some(i) = r.row("Interface", iuuid) else { continue };
            let Some(iname) = datum::string(i.get("name")) else {
                continue;
            };
            if !seen_ifaces.insert(iname.to_string()) {
                notes.insert(format!("interface {iname} is on two ports; only its first is used"));
                continue;
            }
            let kind = match datum::string(i.get("type")).unwrap_or("") {
                "" | "system" => IfaceKind::System,
                "afxdp" => IfaceKind::AfXdp,
                "internal" => IfaceKind::Internal,
                other => IfaceKind::Unsupported(other.to_string()),
            };
            let want = IfaceWant {
                uuid: iuuid.to_string(),
                name: iname.to_string(),
                kind,
                ofport_request: datum::integer(i.get("ofport_request"))
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..0xff00).contains(n)),
                ofport_last: datum::integer(i.get("ofport"))
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| (1..0xff00).contains(n)),
            };
            if iname == name && want.kind == IfaceKind::Internal {
                local = Some(want);
            } else {
                interfaces.push(want);
            }
        }
        // Numbered in name order when several come at once.
        interfaces.sort_by(|a, b| a.name.cmp(&b.name));
        w.bridges.push(BridgeWant {
            uuid: buuid.to_string(),
            name: name.to_string(),
            dpid,
            secure,
            versions,
            controllers,
            interfaces,
            local,
        });
    }
    (w, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "00000000-0000-0000-0000-000000000001";
    const BR: &str = "00000000-0000-0000-0000-0000000000b1";
    const P_LOCAL: &str = "00000000-0000-0000-0000-0000000000c0";
    const P1: &str = "00000000-0000-0000-0000-0000000000c1";
    const I_LOCAL: &str = "00000000-0000-0000-0000-0000000000d0";
    const I1: &str = "00000000-0000-0000-0000-0000000000d1";
    const C1: &str = "00000000-0000-0000-0000-0000000000e1";

    fn db() -> Replica {
        let mut r = Replica::default();
        r.apply(&json!({
            "Open_vSwitch": {ROOT: {"new": {"bridges": ["set", [["uuid", BR]]], "next_cfg": 3,
                "other_config": ["map", [["stats-update-interval", "1000"]]]}}},
            "Bridge": {BR: {"new": {"name": "br0", "ports": ["set", [["uuid", P_LOCAL], ["uuid", P1]]],
                "controller": ["uuid", C1], "fail_mode": "secure", "protocols": ["set", ["OpenFlow13"]],
                "other_config": ["map", [["datapath-id", "00000000000000aa"]]], "stp_enable": false}}},
            "Port": {P_LOCAL: {"new": {"name": "br0", "interfaces": ["uuid", I_LOCAL]}},
                     P1: {"new": {"name": "v1", "interfaces": ["uuid", I1], "tag": ["set", []]}}},
            "Interface": {I_LOCAL: {"new": {"name": "br0", "type": "internal"}},
                          I1: {"new": {"name": "v1", "type": "", "ofport_request": ["set", [5]]}}},
            "Controller": {C1: {"new": {"target": "tcp:127.0.0.1:6653"}}},
        }))
        .unwrap();
        r
    }

    #[test]
    fn a_bridge_with_a_port_and_a_controller() {
        let (w, notes) = want(&db());
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(w.next_cfg, 3);
        assert_eq!(w.stats_interval, Duration::from_secs(1));
        let b = &w.bridges[0];
        assert_eq!((b.name.as_str(), b.dpid, b.secure), ("br0", 0xaa, true));
        assert_eq!(b.versions, vec![ofwire::OFP13_VERSION]);
        assert_eq!(b.active(), vec!["127.0.0.1:6653".parse().unwrap()]);
        assert_eq!(b.local.as_ref().unwrap().name, "br0");
        assert_eq!(b.interfaces.len(), 1);
        assert_eq!(
            (b.interfaces[0].name.as_str(), b.interfaces[0].ofport_request),
            ("v1", Some(5))
        );
    }

    #[test]
    fn what_is_not_implemented_is_named() {
        let mut r = db();
        r.apply(&json!({
            "Port": {P1: {"new": {"tag": 10}}},
            "Bridge": {BR: {"new": {"other_config": ["map", [["hwaddr", "00:00:00:00:00:01"]]], "protocols": ["set", ["OpenFlow14"]]}}},
            "Interface": {I1: {"new": {"type": "vxlan"}}},
            "Mirror": {"00000000-0000-0000-0000-0000000000f1": {"new": {"name": "m"}}},
            "Controller": {C1: {"new": {"target": "ssl:10.0.0.1:6653"}}},
        }))
        .unwrap();
        let (w, notes) = want(&r);
        let all = notes.iter().cloned().collect::<Vec<_>>().join("\n");
        for expected in [
            "Port.tag (row v1)",
            "Bridge other_config:hwaddr",
            "table Mirror has rows",
            "protocols OpenFlow14 is not spoken",
            "takes no controllers",
            "ssl: targets are not implemented",
        ] {
            assert!(all.contains(expected), "no note {expected:?} in:\n{all}");
        }
        let b = &w.bridges[0];
        assert_eq!(b.interfaces[0].kind, IfaceKind::Unsupported("vxlan".into()));
        assert!(b.controllers.is_empty());
        // A datapath id that is not 16 hex digits falls back to the UUID's.
        r.apply(&json!({"Bridge": {BR: {"new": {"other_config": ["map", [["datapath-id", "xyz"]]]}}}}))
            .unwrap();
        let (w, notes) = want(&r);
        assert_eq!(w.bridges[0].dpid, 0xb1);
        assert!(notes.iter().any(|n| n.contains("datapath-id=\"xyz\"")));
    }

    #[test]
    fn targets() {
        assert_eq!(
            target("tcp:127.0.0.1:6633"),
            Target::Active("127.0.0.1:6633".parse().unwrap())
        );
        assert_eq!(
            target("tcp:127.0.0.1"),
            Target::Active("127.0.0.1:6653".parse().unwrap())
        );
        assert_eq!(target("ptcp:6634"), Target::Passive("127.0.0.1:6634".parse().unwrap()));
        assert_eq!(
            target("ptcp:6634:0.0.0.0"),
            Target::Passive("0.0.0.0:6634".parse().unwrap())
        );
        assert!(matches!(target("tcp:nowhere.invalid:x"), Target::Unsupported(_)));
        assert!(matches!(target("punix:/tmp/x"), Target::Unsupported(_)));
    }
}
