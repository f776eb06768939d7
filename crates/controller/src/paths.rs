//! The `paths` app: shortest-path forwarding over the links `topology`
//! discovered, on any topology including ones with loops.
//!
//! - Hosts are learnt where they send from: edge ports only (ports that are
//!   up, not a link end, on a switch that has probed for a while).
//! - A unicast packet to a known host installs a flow on every switch of
//!   the path at once (match the destination MAC; the paths towards one
//!   destination form a tree, so these flows never loop), then the packet
//!   leaves by its first hop.
//! - Broadcasts and unknown destinations are never flooded through the
//!   switches: the controller sends a copy out of every edge port of every
//!   switch (except the one it came in by). Packets arriving on links are
//!   never flooded, and an identical frame seen again within half a second
//!   is dropped, so no broadcast storm is possible even while discovery is
//!   still running.
//! - A path between two hosts can also be provisioned ahead of traffic
//!   (`provision`, the REST API's POST /paths).
//! - When a link or switch goes away, each switch drops its reactive flows,
//!   and new paths are computed on the next packets.
//! - Proactive-only mode (`paths-proactive`, for RFC 8456's proactive
//!   tests): hosts are still learnt and broadcasts still reach every edge,
//!   but unicast traffic gets no path until one is provisioned; it is
//!   dropped, so what arrives after a POST /paths came by that path.

use crate::app::{Context, SwitchApp, Verdict};
use crate::flows::{self, FlowAction, FlowFilter, FlowMatch, FlowSpec};
use crate::topology::{End, Topology};
use ofconn::{Session, SwitchInfo};
use ofwire::hot::PacketInView;
use ofwire::{v13, Body, MacAddr};
use serde::Serialize;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a path cannot be provisioned (the REST API answers 404 for a host
/// not known yet, 409 otherwise).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PathError {
    #[error("host '{0}' is not known yet (it has sent no packet the controller saw)")]
    UnknownHost(String),
    #[error("source and destination are the same host")]
    SameHost,
    #[error("no path from switch {from:#x} to switch {to:#x}")]
    NoPath { from: u64, to: u64 },
    #[error("switch {0:#x} left")]
    SwitchLeft(u64),
    #[error(transparent)]
    Flow(#[from] crate::flows::FlowError),
}

pub const REACTIVE_COOKIE: u64 = 0x5d1a_0a75;
pub const PROACTIVE_COOKIE: u64 = 0x5d1a_0a76;
pub const REACTIVE_PRIORITY: u16 = 10;
pub const PROACTIVE_PRIORITY: u16 = 200;
pub const IDLE_TIMEOUT: u16 = 60;
/// An identical frame flooded again within this window is a loop's echo.
const FLOOD_ECHO_WINDOW: Duration = Duration::from_millis(500);

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Host {
    pub mac: String,
    pub ipv4: Option<Ipv4Addr>,
    pub dpid: u64,
    pub port: u32,
}

/// One switch of a provisioned path: packets enter by `in_port`, leave by `out_port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub dpid: u64,
    pub in_port: u32,
    pub out_port: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProvisionedPath {
    pub src: Host,
    pub dst: Host,
    pub forward: Vec<Hop>,
    pub reverse: Vec<Hop>,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counters {
    pub floods: u64,
    pub flood_copies: u64,
    pub flood_echoes_dropped: u64,
    pub paths_installed: u64,
    pub flows_sent: u64,
    pub no_path: u64,
    pub unclassified_port_drops: u64,
    /// Unicast frames dropped because this is proactive-only mode.
    pub unprovisioned_drops: u64,
}

#[derive(Default)]
struct State {
    hosts: HashMap<MacAddr, (Ipv4Addr, End)>,
    recent_floods: HashMap<u64, Instant>,
    provisioned: Vec<ProvisionedPath>,
    counters: Counters,
    /// The topology's removal count when reactive flows were last flushed network-wide.
    flushed_removals: u64,
}

/// The shared state; one per controller.
pub struct Paths {
    pub topo: Arc<Topology>,
    state: Mutex<State>,
    /// How long a switch probes before its unlinked ports count as edges.
    pub settle: Duration,
    /// Whether a unicast packet to a known host sets up its path (false: proactive-only).
    pub reactive: bool,
    /// Told of each host learnt here, or moved (cluster mode shares them).
    learnt: std::sync::OnceLock<Box<dyn Fn(Host) + Send + Sync>>,
    /// Floods go hop by hop (`set_hop_by_hop`).
    hop_by_hop: std::sync::atomic::AtomicBool,
}

fn host_ipv4(frame: &[u8]) -> Option<Ipv4Addr> {
    let at = match frame.get(12..14)? {
        [0x08, 0x06] => 28, // ARP sender protocol address
        [0x08, 0x00] => 26, // IPv4 source
        _ => return None,
    };
    let b: [u8; 4] = frame.get(at..at + 4)?.try_into().ok()?;
    let ip = Ipv4Addr::from(b);
    (!ip.is_unspecified()).then_some(ip)
}

fn send_local(sw: &mut Session, body: Body) {
    // (Built for the switch's version: a refusal would be a bug.)
    if let Err(e) = sw.send(body) {
        tracing::warn!("controller: paths: not sent to the switch: {e}");
    }
}

impl Paths {
    pub fn new(topo: Arc<Topology>) -> Arc<Paths> {
        Self::with_mode(topo, true)
    }

    /// `reactive` false: paths only where provisioned (`provision`).
    pub fn with_mode(topo: Arc<Topology>, reactive: bool) -> Arc<Paths> {
        let settle = topo.probe_interval;
        Arc::new(Paths {
            topo,
            state: Mutex::new(State::default()),
            settle,
            reactive,
            learnt: std::sync::OnceLock::new(),
            hop_by_hop: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// A cluster whose members hear only their own switches' PACKET_INs:
    /// a member cannot send copies out of other members' switches, so a
    /// flood leaves the switch it came to by that switch's edge ports and
    /// its ports on the spanning tree of the (shared) links
    /// (`Topology::tree_ports`); the next switch's master, told of it by a
    /// PACKET_IN, floods on. Paths go the same way: each switch's master
    /// installs its own hop when the packet reaches it.
    pub fn set_hop_by_hop(&self) {
        self.hop_by_hop.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn hop_by_hop(&self) -> bool {
        self.hop_by_hop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Calls `f` with each host learnt from a packet here, new or moved
    /// (not those given by `learn_shared`). Set once.
    pub fn on_learnt(&self, f: Box<dyn Fn(Host) + Send + Sync>) {
        let _ = self.learnt.set(f);
    }

    /// A host another cluster member learnt (cluster mode's shared state).
    pub fn learn_shared(&self, h: &Host) {
        let Some(mac) = flows::mac::parse(&h.mac) else { return };
        let at = End {
            dpid: h.dpid,
            port: h.port,
        };
        let mut s = self.lock();
        let entry = s.hosts.entry(mac).or_insert((Ipv4Addr::UNSPECIFIED, at));
        entry.1 = at;
        if let Some(ip) = h.ipv4 {
            entry.0 = ip;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn hosts(&self) -> Vec<Host> {
        let mut v: Vec<Host> = self
            .lock()
            .hosts
            .iter()
            .map(|(mac, (ip, at))| Host {
                mac: mac.to_string(),
                ipv4: (!ip.is_unspecified()).then_some(*ip),
                dpid: at.dpid,
                port: at.port,
            })
            .collect();
        v.sort_by(|a, b| a.mac.cmp(&b.mac));
        v
    }

    pub fn counters(&self) -> Counters {
        self.lock().counters
    }

    pub fn provisioned(&self) -> Vec<ProvisionedPath> {
        self.lock().provisioned.clone()
    }

    /// A host by MAC address or IPv4 address.
    pub fn find_host(&self, key: &str) -> Option<Host> {
        let hosts = self.hosts();
        if let Some(mac) = flows::mac::parse(key) {
            return hosts.into_iter().find(|h| h.mac == mac.to_string());
        }
        let ip: Ipv4Addr = key.parse().ok()?;
        hosts.into_iter().find(|h| h.ipv4 == Some(ip))
    }

    /// Hops from host `a` to host `b` with their input ports.
    fn hops(&self, a: &Host, b: &Host) -> Result<Vec<Hop>, PathError> {
        let path = self.topo.path(a.dpid, b.dpid, b.port).ok_or(PathError::NoPath {
            from: a.dpid,
            to: b.dpid,
        })?;
        let mut in_port = a.port;
        let mut hops = Vec::new();
        for e in path {
            hops.push(Hop {
                dpid: e.dpid,
                in_port,
                out_port: e.port,
            });
            if let Some(next) = self.topo.link_from(e) {
                in_port = next.port;
            }
        }
        Ok(hops)
    }

    /// Works out a path both ways between two known hosts (MAC or IPv4) and
    /// the FLOW_MODs that set it up; the caller sends them (and waits for
    /// the barriers), then calls `record`.
    pub fn provision(&self, a: &str, b: &str) -> Result<(ProvisionedPath, Vec<(u64, Body)>), PathError> {
        let find = |k: &str| self.find_host(k).ok_or_else(|| PathError::UnknownHost(k.to_string()));
        let (src, dst) = (find(a)?, find(b)?);
        if src.mac == dst.mac {
            return Err(PathError::SameHost);
        }
        let forward = self.hops(&src, &dst)?;
        let reverse = self.hops(&dst, &src)?;
        let mut mods = Vec::new();
        for (hops, from, to) in [(&forward, &src, &dst), (&reverse, &dst, &src)] {
            for h in hops {
                let version = self.topo.version_of(h.dpid).ok_or(PathError::SwitchLeft(h.dpid))?;
                let mut spec = FlowSpec::new(
                    PROACTIVE_PRIORITY,
                    FlowMatch {
                        in_port: Some(h.in_port),
                        eth_src: flows::mac::parse(&from.mac),
                        eth_dst: flows::mac::parse(&to.mac),
                        ..Default::default()
                    },
                    vec![FlowAction::Output(h.out_port)],
                );
                spec.cookie = PROACTIVE_COOKIE;
                mods.push((h.dpid, spec.add(version)?));
            }
        }
        Ok((
            ProvisionedPath {
                src,
                dst,
                forward,
                reverse,
            },
            mods,
        ))
    }

    pub fn record(&self, p: ProvisionedPath) {
        let mut s = self.lock();
        s.provisioned
            .retain(|q| !(q.src.mac == p.src.mac && q.dst.mac == p.dst.mac));
        s.provisioned.push(p);
    }

    /// The per-switch app instance.
    pub fn app(self: &Arc<Self>, ctx: &Context) -> Router {
        Router {
            paths: self.clone(),
            ctx: ctx.clone(),
            dpid: 0,
            version: 0,
            next_check: None,
        }
    }
}

/// The `paths` app on one switch.
pub struct Router {
    paths: Arc<Paths>,
    ctx: Context,
    dpid: u64,
    version: u8,
    next_check: Option<Instant>,
}

impl Router {
    /// Sends `body` to switch `dpid`: directly when it is ours.
    fn send(&self, sw: &mut Session, dpid: u64, body: Body) {
        if dpid == self.dpid {
            send_local(sw, body);
        } else {
            self.ctx.send(dpid, body);
        }
    }

    /// A copy out of every edge port but the one it came in by.
    fn flood(&self, sw: &mut Session, here: End, data: &[u8], now: Instant) {
        let hop = self.paths.hop_by_hop();
        let key = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            data.hash(&mut h);
            // Hop by hop a frame passes each switch once: seen again at
            // the same switch, it is a loop's echo.
            if hop {
                here.dpid.hash(&mut h);
            }
            h.finish()
        };
        {
            let mut s = self.paths.lock();
            if s.recent_floods
                .get(&key)
                .is_some_and(|t| now.duration_since(*t) < FLOOD_ECHO_WINDOW)
            {
                s.counters.flood_echoes_dropped += 1;
                return;
            }
            if s.recent_floods.len() > 4096 {
                s.recent_floods
                    .retain(|_, t| now.duration_since(*t) < FLOOD_ECHO_WINDOW);
            }
            s.recent_floods.insert(key, now);
        }
        let mut by_switch: HashMap<u64, Vec<u32>> = HashMap::new();
        for e in self.paths.topo.edge_ports(now, self.paths.settle) {
            if e != here && (!hop || e.dpid == here.dpid) {
                by_switch.entry(e.dpid).or_default().push(e.port);
            }
        }
        if hop {
            let tree = self.paths.topo.tree_ports(here.dpid);
            by_switch
                .entry(here.dpid)
                .or_default()
                .extend(tree.into_iter().filter(|p| *p != here.port));
        }
        let mut copies = 0;
        for (dpid, ports) in by_switch {
            let Some(version) = self.paths.topo.version_of(dpid).filter(|_| !ports.is_empty()) else {
                continue;
            };
            if let Ok(b) = flows::packet_out(version, v13::NO_BUFFER, None, &ports, data) {
                copies += ports.len() as u64;
                self.send(sw, dpid, b);
            }
        }
        let mut s = self.paths.lock();
        s.counters.floods += 1;
        s.counters.flood_copies += copies;
    }

    /// Installs the path to `dst` (at `to`) on every switch from here, then
    /// sends the packet along it.
    fn route(&self, sw: &mut Session, dst: MacAddr, to: End, pi: &PacketInView) -> bool {
        let Some(path) = self.paths.topo.path(self.dpid, to.dpid, to.port) else {
            self.paths.lock().counters.no_path += 1;
            return false;
        };
        let mut flows_sent = 0;
        // Farthest first: by the time the packet gets there, the flow is likely in.
        for hop in path.iter().rev() {
            let Some(version) = self.paths.topo.version_of(hop.dpid) else {
                continue;
            };
            let mut spec = FlowSpec::new(
                REACTIVE_PRIORITY,
                FlowMatch {
                    eth_dst: Some(dst),
                    ..Default::default()
                },
                vec![FlowAction::Output(hop.port)],
            );
            spec.cookie = REACTIVE_COOKIE;
            spec.idle_timeout = IDLE_TIMEOUT;
            if let Ok(b) = spec.add(version) {
                self.send(sw, hop.dpid, b);
                flows_sent += 1;
            }
        }
        let data = if pi.buffer_id == v13::NO_BUFFER { pi.data } else { &[] };
        if let Ok(b) = flows::packet_out(self.version, pi.buffer_id, Some(pi.in_port), &[path[0].port], data) {
            send_local(sw, b);
        }
        let mut s = self.paths.lock();
        s.counters.paths_installed += 1;
        s.counters.flows_sent += flows_sent;
        true
    }

    /// How often to look for removed links (a quarter of a second, or faster with faster probes).
    fn check_interval(&self) -> Duration {
        self.paths.topo.probe_interval.min(Duration::from_millis(250))
    }

    /// After a link or switch went away, once per removal and from whichever
    /// switch notices first: every switch forgets its reactive flows (new
    /// paths are computed on the next packets).
    fn flush_after_removals(&self, sw: &mut Session) {
        let removals = self.paths.topo.removals();
        let macs: Vec<MacAddr> = {
            let mut s = self.paths.lock();
            if s.flushed_removals == removals {
                return;
            }
            s.flushed_removals = removals;
            s.hosts.keys().copied().collect()
        };
        for dpid in self.ctx.registry.datapath_ids() {
            let Some(version) = self.paths.topo.version_of(dpid) else {
                continue;
            };
            for body in reactive_flow_deletes(version, &macs) {
                self.send(sw, dpid, body);
            }
        }
    }
}

/// Deletes every reactive flow of a switch: by cookie in 1.3; 1.0 cannot
/// delete by cookie, so each destination's flow is deleted exactly.
fn reactive_flow_deletes(version: u8, macs: &[MacAddr]) -> Vec<Body> {
    if version == ofwire::OFP13_VERSION {
        return FlowFilter::by_cookie(REACTIVE_COOKIE)
            .delete(version)
            .into_iter()
            .collect();
    }
    macs.iter()
        .filter_map(|mac| {
            FlowFilter {
                match_: FlowMatch {
                    eth_dst: Some(*mac),
                    ..Default::default()
                },
                strict: true,
                priority: REACTIVE_PRIORITY,
                ..Default::default()
            }
            .delete(version)
            .ok()
        })
        .collect()
}

impl SwitchApp for Router {
    fn name(&self) -> &'static str {
        "paths"
    }

    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        self.dpid = info.datapath_id;
        self.version = info.version;
        // 1.3 drops table misses unless told otherwise.
        if info.version == ofwire::OFP13_VERSION {
            let miss = FlowSpec::new(0, FlowMatch::default(), vec![FlowAction::Output(v13::port::CONTROLLER)]);
            if let Ok(b) = miss.add(info.version) {
                send_local(sw, b);
            }
        }
        self.next_check = Some(Instant::now() + self.check_interval());
    }

    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        if !crate::apps::frame_is_sane(pi.data) {
            return Verdict::Done;
        }
        let now = Instant::now();
        let here = End {
            dpid: self.dpid,
            port: pi.in_port,
        };
        let topo = &self.paths.topo;
        let on_link = topo.is_link_port(here);
        let on_edge = !on_link && topo.is_edge_port(here, now, self.paths.settle);
        if !on_link && !on_edge {
            // Not classified yet (discovery still running): hosts retry.
            self.paths.lock().counters.unclassified_port_drops += 1;
            return Verdict::Done;
        }
        let mut dst = MacAddr::ZERO;
        let mut src = MacAddr::ZERO;
        dst.0.copy_from_slice(&pi.data[0..6]);
        src.0.copy_from_slice(&pi.data[6..12]);
        if on_edge && !src.is_multicast() {
            let ip = host_ipv4(pi.data);
            let (moved, changed) = {
                let mut s = self.paths.lock();
                let mut new = false;
                let entry = s.hosts.entry(src).or_insert_with(|| {
                    new = true;
                    (Ipv4Addr::UNSPECIFIED, here)
                });
                let moved = entry.1 != here;
                entry.1 = here;
                let mut changed = new || moved;
                if let Some(ip) = ip {
                    changed |= entry.0 != ip;
                    entry.0 = ip;
                }
                (moved, changed.then_some(entry.0))
            };
            if let (Some(ip), Some(tell)) = (changed, self.paths.learnt.get()) {
                tell(Host {
                    mac: src.to_string(),
                    ipv4: (!ip.is_unspecified()).then_some(ip),
                    dpid: here.dpid,
                    port: here.port,
                });
            }
            if moved {
                // Paths towards the host's old place are wrong now.
                for dpid in self.ctx.registry.datapath_ids() {
                    let Some(version) = topo.version_of(dpid) else { continue };
                    let f = FlowFilter {
                        match_: FlowMatch {
                            eth_dst: Some(src),
                            ..Default::default()
                        },
                        strict: true,
                        priority: REACTIVE_PRIORITY,
                        ..Default::default()
                    };
                    if let Ok(b) = f.delete(version) {
                        self.send(sw, dpid, b);
                    }
                }
            }
        }
        // Hop by hop, a flood goes on from a link on the spanning tree.
        let floods_here =
            on_edge || (on_link && self.paths.hop_by_hop() && topo.tree_ports(here.dpid).contains(&here.port));
        if dst.is_multicast() {
            if floods_here {
                self.flood(sw, here, pi.data, now);
            }
            return Verdict::Done;
        }
        if !self.paths.reactive {
            self.paths.lock().counters.unprovisioned_drops += 1;
            return Verdict::Done;
        }
        let known = self.paths.lock().hosts.get(&dst).map(|(_, at)| *at);
        match known {
            Some(to) => {
                self.route(sw, dst, to, pi);
            }
            None if floods_here => self.flood(sw, here, pi.data, now),
            None => {}
        }
        Verdict::Done
    }

    fn message(&mut self, sw: &mut Session, msg: &ofwire::Message) {
        // `topology` (before us) has just dropped the links of a port that went down.
        if matches!(
            msg.body,
            Body::V10(ofwire::v10::Body::PortStatus(_)) | Body::V13(v13::Body::PortStatus(_))
        ) {
            self.flush_after_removals(sw);
        }
    }

    fn on_timer(&mut self, sw: &mut Session, now: Instant) -> Option<Instant> {
        let next = self.next_check?;
        if now >= next {
            self.flush_after_removals(sw);
            self.next_check = Some(now + self.check_interval());
        }
        self.next_check
    }
}
