//! The switch managed through OVSDB, as `ovs-vswitchd` is: it takes the
//! database's lock, monitors Open vSwitch's tables, brings the running
//! bridges, ports and controller connections to what the rows ask for, and
//! writes back what `ovs-vswitchd` writes (`ofport`, `error`, `ifindex`,
//! `mac_in_use`, `link_state`, `admin_state`, `mtu`, `link_speed`,
//! `statistics`, `Controller.is_connected`, `Bridge.datapath_id`, and
//! `cur_cfg` once a configuration is applied, which is what `ovs-vsctl`
//! waits for). Bridges keep running while the database is away; the
//! connection is made again with back-off.

use super::client::{Client, Remote};
use super::config::{self, BridgeWant, IfaceKind, Want};
use super::datum::{self, Replica};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the bridges the database asks for are run.
pub struct Settings {
    pub remote: Remote,
    /// Where each bridge's `BRIDGE.mgmt` socket goes (ovs-ofctl BRIDGE).
    pub rundir: PathBuf,
    pub verbose: bool,
    pub tables: usize,
    pub max_rules: usize,
    pub ring: usize,
    /// Ports send through their queueing disciplines (tc rate limits apply).
    pub through_qdisc: bool,
    pub threads: usize,
    pub session_deadline: Duration,
    pub inactivity_probe: Option<Duration>,
    pub limits: ofconn::admission::Limits,
}

/// Columns the switch writes: not monitored (its own writes would come
/// back as updates). `ofport` is, so that a restart numbers ports as
/// before.
const WRITTEN: &[(&str, &str)] = &[
    ("Open_vSwitch", "cur_cfg"),
    ("Open_vSwitch", "iface_types"),
    ("Open_vSwitch", "datapath_types"),
    ("Bridge", "datapath_id"),
    ("Bridge", "datapath_version"),
    ("Bridge", "status"),
    ("Port", "statistics"),
    ("Port", "status"),
    ("Interface", "ifindex"),
    ("Interface", "mac_in_use"),
    ("Interface", "link_state"),
    ("Interface", "admin_state"),
    ("Interface", "mtu"),
    ("Interface", "link_speed"),
    ("Interface", "duplex"),
    ("Interface", "link_resets"),
    ("Interface", "statistics"),
    ("Interface", "error"),
    ("Interface", "status"),
    ("Controller", "is_connected"),
    ("Controller", "role"),
    ("Controller", "status"),
];

/// Whether `name` can be used as one file name in a directory and stays
/// in it (with a suffix of a few bytes): no '/', no NUL, not `.` or `..`.
fn plain_file_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 250 && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// A bridge running as a row asked.
struct Running {
    want: BridgeWant,
    handle: crate::switch::Handle,
    /// Interface name → its OpenFlow port number.
    ports: BTreeMap<String, u32>,
}

pub struct Manager {
    s: Settings,
    bridges: BTreeMap<String, Running>,
    /// Interface name → why it is not on its bridge (kept until it is).
    errors: HashMap<String, String>,
    /// What has been logged once (notes, bridge start failures).
    said: HashSet<String>,
    /// Each row's columns as last written (written again only on change).
    written: HashMap<(String, String), Map<String, Value>>,
    cur_cfg: Option<i64>,
    last_stats: Option<Instant>,
}

impl Manager {
    pub fn new(s: Settings) -> Manager {
        Manager {
            s,
            bridges: BTreeMap::new(),
            errors: HashMap::new(),
            said: HashSet::new(),
            written: HashMap::new(),
            cur_cfg: None,
            last_stats: None,
        }
    }

    /// Runs until the process is stopped (the caller drops this future and
    /// calls `shutdown`). Errs only when the database is not Open vSwitch's.
    // Text on purpose: logged and written into the Interface table's `error` column, as Open vSwitch does.
    pub async fn run(&mut self) -> Result<(), String> {
        let mut backoff = Duration::from_millis(100);
        let mut reported = false;
        loop {
            match Client::connect(&self.s.remote).await {
                Ok((client, notes)) => {
                    backoff = Duration::from_millis(100);
                    reported = false;
                    tracing::info!("sdnlab switch: ovsdb: {}", format!("connected to {}", self.s.remote));
                    self.session(&client, notes).await?;
                    tracing::warn!(
                        "sdnlab switch: ovsdb: {}",
                        format!("lost {}; bridges keep running, reconnecting", self.s.remote)
                    );
                    // Everything is written again to the next server.
                    self.written.clear();
                    self.cur_cfg = None;
                }
                Err(e) => {
                    if !reported {
                        tracing::info!("sdnlab switch: ovsdb: {}", format!("{e}; retrying"));
                        reported = true;
                    }
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(4));
        }
    }

    /// One connection: lock, monitor, follow.
    async fn session(
        &mut self,
        client: &Client,
        mut notes: tokio::sync::mpsc::UnboundedReceiver<super::client::Notification>,
        // Text on purpose: see `run` (the Interface table's `error` column).
    ) -> Result<(), String> {
        let schema = match client.call("get_schema", json!(["Open_vSwitch"])).await {
            Ok(s) => s,
            Err(super::client::ClientError::Server { error, .. }) => {
                return Err(format!(
                    "{} has no Open_vSwitch database ({error}); create it with `ovsdb-tool create DB /usr/share/openvswitch/vswitch.ovsschema`",
                    self.s.remote
                ))
            }
            Err(_) => return Ok(()),
        };
        let tables = schema
            .get("tables")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for t in config::TABLES {
            if !tables.contains_key(t) {
                return Err(format!(
                    "{}: the Open_vSwitch database has no {t} table: not Open vSwitch's schema",
                    self.s.remote
                ));
            }
        }
        // One ovs-vswitchd per database, as Open vSwitch's own daemon
        // ensures with the same lock.
        match client.call("lock", json!(["ovs_vswitchd"])).await {
            Ok(r) if r.get("locked") == Some(&json!(true)) => {}
            Ok(_) => {
                tracing::info!("sdnlab switch: ovsdb: another ovs-vswitchd holds the database's lock; waiting for it");
                loop {
                    match notes.recv().await {
                        Some((m, _)) if m == "locked" => break,
                        Some(_) => {}
                        None => return Ok(()),
                    }
                }
                tracing::info!("sdnlab switch: ovsdb: the lock is ours");
            }
            Err(_) => return Ok(()),
        }
        let mut requests = Map::new();
        for (t, def) in &tables {
            let cols: Vec<&String> = def
                .get("columns")
                .and_then(Value::as_object)
                .map(|c| {
                    c.keys()
                        .filter(|c| !WRITTEN.contains(&(t.as_str(), c.as_str())))
                        .collect()
                })
                .unwrap_or_default();
            requests.insert(t.clone(), json!({"columns": cols}));
        }
        let initial = match client
            .call("monitor", json!(["Open_vSwitch", "sdnlab", Value::Object(requests)]))
            .await
        {
            Ok(v) => v,
            Err(e) => {
                tracing::info!("sdnlab switch: ovsdb: {}", format!("monitor: {e}"));
                return Ok(());
            }
        };
        let mut replica = Replica::default();
        if let Err(e) = replica.apply(&initial) {
            tracing::info!(
                "sdnlab switch: ovsdb: {}",
                format!("the monitor's first reply is malformed ({e}); reconnecting")
            );
            return Ok(());
        }
        self.reconcile(&replica, client).await;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                n = notes.recv() => {
                    let Some((method, params)) = n else { return Ok(()) };
                    let mut changed = self.note(&mut replica, &method, &params);
                    // Everything already here is taken before acting.
                    while let Ok((method, params)) = notes.try_recv() {
                        changed |= self.note(&mut replica, &method, &params);
                    }
                    if changed {
                        self.reconcile(&replica, client).await;
                    }
                }
                _ = tick.tick() => {
                    let (want, _) = config::want(&replica);
                    let stats = self.last_stats.is_none_or(|t| t.elapsed() >= want.stats_interval);
                    self.write_status(&want, client, stats).await;
                }
            }
        }
    }

    /// One notification; true if the replica changed.
    fn note(&mut self, replica: &mut Replica, method: &str, params: &Value) -> bool {
        if method != "update" {
            return false;
        }
        let Some(updates) = params.get(1) else {
            self.say_once("an update without table-updates was ignored".into());
            return false;
        };
        match replica.apply(updates) {
            Ok(()) => true,
            Err(e) => {
                tracing::info!(
                    "sdnlab switch: ovsdb: {}",
                    format!("a malformed update was ignored: {e}")
                );
                false
            }
        }
    }

    fn say_once(&mut self, msg: String) {
        if self.said.insert(msg.clone()) {
            tracing::info!("sdnlab switch: ovsdb: {}", msg);
        }
    }

    /// Brings the bridges to what the database asks, then writes back.
    async fn reconcile(&mut self, replica: &Replica, client: &Client) {
        let (want, notes) = config::want(replica);
        for n in notes {
            self.say_once(n);
        }
        let wanted: BTreeSet<&str> = want.bridges.iter().map(|b| b.name.as_str()).collect();
        let gone: Vec<String> = self
            .bridges
            .keys()
            .filter(|n| !wanted.contains(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            if let Some(r) = self.bridges.remove(&name) {
                r.handle.stop();
                tracing::info!("sdnlab switch: ovsdb: {}", format!("bridge {name}: removed"));
            }
        }
        for b in &want.bridges {
            let restart = self
                .bridges
                .get(&b.name)
                .is_some_and(|r| r.want.restart_key() != b.restart_key());
            if restart {
                if let Some(r) = self.bridges.remove(&b.name) {
                    r.handle.stop();
                    tracing::warn!(
                        "sdnlab switch: ovsdb: {}",
                        format!(
                        "bridge {}: datapath id, fail mode, protocols, listeners or internal port changed; restarted",
                        b.name
                    )
                    );
                }
            }
            if !self.bridges.contains_key(&b.name) {
                match self.start_bridge(b) {
                    Ok(r) => {
                        tracing::info!(
                            "sdnlab switch: ovsdb: {}",
                            format!("bridge {}: added, dpid {:016x}", b.name, b.dpid)
                        );
                        self.bridges.insert(b.name.clone(), r);
                    }
                    Err(e) => {
                        self.say_once(format!("bridge {}: {e}", b.name));
                        continue;
                    }
                }
            }
            self.ports(b);
        }
        self.write_status(&want, client, self.last_stats.is_none()).await;
    }

    // Text on purpose: written into the Interface table's `error` column, as Open vSwitch does.
    fn start_bridge(&self, b: &BridgeWant) -> Result<Running, String> {
        // Its name becomes a file name (BRIDGE.mgmt in the run directory):
        // a name from the database must not lead anywhere else.
        if !plain_file_name(&b.name) {
            return Err(format!(
                "refused: a bridge's name must be a plain file name (1 to 250 bytes, no '/', not '.' or '..'): {:?}",
                b.name
            ));
        }
        let local: Option<Arc<dyn packetio::port::PortIo>> = match &b.local {
            Some(l) => Some(Arc::new(
                packetio::port::TapPort::create(&l.name).map_err(|e| format!("internal port {}: {e}", l.name))?,
            )),
            None => None,
        };
        let cfg = crate::switch::Config {
            datapath_id: b.dpid,
            ports: Vec::new(),
            local,
            controllers: b.active(),
            listen: b.passive(),
            n_tables: self.s.tables.clamp(1, 254),
            max_rules: self.s.max_rules,
            datapath_threads: self.s.threads,
            verbose: self.s.verbose,
            flood_on_miss: !b.secure,
            session_deadline: self.s.session_deadline,
            inactivity_probe: self.s.inactivity_probe,
            limits: Some(self.s.limits),
            versions: b.versions.clone(),
            ports_may_change: true,
            listen_unix: Some(self.s.rundir.join(format!("{}.mgmt", b.name))),
            ..Default::default()
        };
        let handle = crate::switch::start(cfg).map_err(|e| e.to_string())?;
        // A controller row `ptcp:PORT` (every address) opens the switch to
        // anyone who reaches the machine: said, as for the command line.
        let passive: Vec<(&str, std::net::SocketAddr)> = b.passive().into_iter().map(|a| ("OpenFlow", a)).collect();
        ofconn::admission::warn_plain_listeners(
            &format!("sdnlab switch: bridge {}", b.name),
            &passive,
            "a controller target ptcp:PORT:127.0.0.1 keeps it on this machine",
        );
        Ok(Running {
            want: b.clone(),
            handle,
            ports: BTreeMap::new(),
        })
    }

    /// Adds and removes a running bridge's ports and controllers.
    fn ports(&mut self, b: &BridgeWant) {
        let Some(r) = self.bridges.get_mut(&b.name) else { return };
        let names: BTreeSet<&str> = b.interfaces.iter().map(|i| i.name.as_str()).collect();
        let gone: Vec<(String, u32)> = r
            .ports
            .iter()
            .filter(|(n, _)| !names.contains(n.as_str()))
            .map(|(n, p)| (n.clone(), *p))
            .collect();
        for (name, no) in gone {
            r.handle.remove_port(no);
            r.ports.remove(&name);
            tracing::info!(
                "sdnlab switch: ovsdb: {}",
                format!("bridge {}: port {name} (ofport {no}) removed", b.name)
            );
        }
        for i in &b.interfaces {
            if r.ports.contains_key(&i.name) {
                continue;
            }
            // Text on purpose: written into the Interface table's `error` column.
            let opened: Result<Arc<dyn packetio::port::PortIo>, String> = match &i.kind {
                IfaceKind::System => crate::open_afpacket(&i.name, self.s.ring, self.s.through_qdisc, |why| {
                    tracing::warn!("sdnlab switch: ovsdb: {}", format!("{}: warning: {why}", i.name))
                })
                .map_err(|e| format!("could not open network device {} ({e})", i.name)),
                IfaceKind::AfXdp => packetio::port_xdp::XdpPort::open(&i.name, None, self.s.ring.max(64) as u32, None)
                    .map(|p| Arc::new(p) as Arc<dyn packetio::port::PortIo>)
                    .map_err(|e| format!("could not open network device {} with AF_XDP ({e})", i.name)),
                IfaceKind::Internal => packetio::port::TapPort::create(&i.name)
                    .map(|p| Arc::new(p) as Arc<dyn packetio::port::PortIo>)
                    .map_err(|e| format!("could not create internal port {} ({e})", i.name)),
                IfaceKind::Unsupported(t) => Err(format!(
                    "interface type {t:?} is not implemented by sdnlab's switch (\"\", system, internal and afxdp are)"
                )),
            };
            // The number asked for, else the one it had, else the lowest free.
            let added = opened.and_then(|io| {
                match (i.ofport_request, i.ofport_last) {
                    (None, Some(last)) => r
                        .handle
                        .add_port(io.clone(), Some(last))
                        .or_else(|_| r.handle.add_port(io, None)),
                    (want, _) => r.handle.add_port(io, want),
                }
                .map_err(|e| e.to_string())
            });
            match added {
                Ok(no) => {
                    r.ports.insert(i.name.clone(), no);
                    self.errors.remove(&i.name);
                    tracing::info!(
                        "sdnlab switch: ovsdb: {}",
                        format!("bridge {}: port {} added as ofport {no}", b.name, i.name)
                    );
                }
                Err(e) => {
                    if self.errors.get(&i.name) != Some(&e) {
                        tracing::info!("sdnlab switch: ovsdb: {}", format!("bridge {}: {e}", b.name));
                    }
                    self.errors.insert(i.name.clone(), e);
                }
            }
        }
        r.handle.set_controllers(&b.active());
        r.want = b.clone();
    }

    /// Writes what changed of the rows the switch keeps (statistics too
    /// when `stats`), and cur_cfg if a new configuration was applied.
    async fn write_status(&mut self, want: &Want, client: &Client, stats: bool) {
        let mut rows: Vec<(&str, String, Map<String, Value>)> = Vec::new();
        for b in &want.bridges {
            let running = self.bridges.get(&b.name);
            let mut row = Map::new();
            row.insert(
                "datapath_id".into(),
                datum::optional(running.map(|_| format!("{:016x}", b.dpid))),
            );
            rows.push(("Bridge", b.uuid.clone(), row));
            let connected: HashMap<std::net::SocketAddr, bool> = running
                .map(|r| r.handle.controllers().into_iter().collect())
                .unwrap_or_default();
            // The bridge's ports, read once for all its interfaces.
            let ios: HashMap<u32, Arc<dyn packetio::port::PortIo>> = running
                .map(|r| r.handle.ports().into_iter().collect())
                .unwrap_or_default();
            for c in &b.controllers {
                let up = match c.target {
                    config::Target::Active(a) => connected.get(&a).copied().unwrap_or(false),
                    _ => false,
                };
                let mut row = Map::new();
                row.insert("is_connected".into(), json!(up));
                rows.push(("Controller", c.uuid.clone(), row));
            }
            for i in b.interfaces.iter().chain(b.local.iter()) {
                let is_local = b.local.as_ref() == Some(i);
                let ofport = running.and_then(|r| match is_local {
                    true => Some(ofwire::v13::port::LOCAL),
                    false => r.ports.get(&i.name).copied(),
                });
                let mut row = Map::new();
                match (ofport, running) {
                    (Some(no), Some(r)) => {
                        let wire = if is_local { config::LOCAL_OFPORT } else { no as i64 };
                        row.insert("ofport".into(), json!(wire));
                        row.insert("error".into(), datum::empty_set());
                        let io = ios.get(&no);
                        let up = io.as_ref().is_some_and(|io| io.link_up());
                        row.insert("link_state".into(), json!(if up { "up" } else { "down" }));
                        row.insert(
                            "admin_state".into(),
                            json!(if sysfs_up(&i.name) { "up" } else { "down" }),
                        );
                        row.insert("ifindex".into(), datum::optional(sysfs_int(&i.name, "ifindex")));
                        row.insert(
                            "mac_in_use".into(),
                            datum::optional(io.as_ref().map(|io| io.hw_addr().to_string())),
                        );
                        row.insert("mtu".into(), datum::optional(sysfs_int(&i.name, "mtu")));
                        row.insert(
                            "link_speed".into(),
                            datum::optional(sysfs_int(&i.name, "speed").filter(|s| *s > 0).map(|s| s * 1_000_000)),
                        );
                        let never = !self
                            .written
                            .get(&("Interface".to_string(), i.uuid.clone()))
                            .is_some_and(|w| w.contains_key("statistics"));
                        if stats || never {
                            if let Some(c) = r.handle.port_counters(no) {
                                row.insert(
                                    "statistics".into(),
                                    datum::int_map(&[
                                        ("rx_packets", c.rx_packets as i64),
                                        ("rx_bytes", c.rx_bytes as i64),
                                        ("rx_dropped", c.rx_dropped as i64),
                                        ("rx_errors", c.rx_errors as i64),
                                        ("tx_packets", c.tx_packets as i64),
                                        ("tx_bytes", c.tx_bytes as i64),
                                        ("tx_dropped", c.tx_dropped as i64),
                                        ("tx_errors", c.tx_errors as i64),
                                    ]),
                                );
                            }
                        }
                    }
                    _ => {
                        row.insert("ofport".into(), json!(-1));
                        let why = match running {
                            None => format!("bridge {} is not running", b.name),
                            Some(_) => self
                                .errors
                                .get(&i.name)
                                .cloned()
                                .unwrap_or_else(|| "not yet added".into()),
                        };
                        row.insert("error".into(), json!(why));
                        row.insert("link_state".into(), datum::empty_set());
                    }
                }
                rows.push(("Interface", i.uuid.clone(), row));
            }
        }
        let mut ops = Vec::new();
        for (table, uuid, row) in rows {
            let key = (table.to_string(), uuid.clone());
            // Only columns whose value changed.
            let last = self.written.get(&key);
            let changed: Map<String, Value> = row
                .iter()
                .filter(|(k, v)| last.and_then(|l| l.get(*k)) != Some(*v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !changed.is_empty() {
                ops.push(datum::update_op(table, &uuid, changed));
                self.written.entry(key).or_default().extend(row);
            }
        }
        if stats {
            self.last_stats = Some(Instant::now());
        }
        let cfg_done = match (&want.root, self.cur_cfg) {
            (Some(root), last) if last != Some(want.next_cfg) => {
                let mut row = Map::new();
                row.insert("cur_cfg".into(), json!(want.next_cfg));
                ops.push(datum::update_op("Open_vSwitch", root, row));
                Some(want.next_cfg)
            }
            _ => None,
        };
        if ops.is_empty() {
            return;
        }
        match client.transact(ops).await {
            Ok(_) => {
                if cfg_done.is_some() {
                    self.cur_cfg = cfg_done;
                }
            }
            Err(e) => {
                // Written again in full next time.
                self.written.clear();
                self.say_once(format!("writing the switch's state: {e}"));
            }
        }
    }

    /// Stops every bridge.
    pub fn shutdown(&mut self) {
        for (_, r) in std::mem::take(&mut self.bridges) {
            r.handle.stop();
        }
    }
}

fn sysfs_int(name: &str, what: &str) -> Option<i64> {
    packetio::port::read_sys(name, what)?.parse().ok()
}

/// The interface is administratively up (IFF_UP).
fn sysfs_up(name: &str) -> bool {
    packetio::port::read_sys(name, "flags")
        .and_then(|f| i64::from_str_radix(f.trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & 1 != 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bridge_name_that_would_leave_the_run_directory_is_refused() {
        for ok in ["br0", "br-int", "a.b", "..x"] {
            assert!(super::plain_file_name(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../../../../tmp/x",
            "a/b",
            "/etc/passwd",
            "x\0y",
            &"b".repeat(251),
        ] {
            assert!(!super::plain_file_name(bad), "{bad:?}");
        }
    }
}
