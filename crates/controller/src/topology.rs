//! The `topology` app: the network-wide view of switches, ports and links.
//! Each switch's instance sends an LLDP probe out of every port when the
//! switch comes up and then every `probe_interval`; a probe that comes back
//! as a PACKET_IN on another switch is a link (one direction; the other
//! direction is the other switch's probe). Links go down when the port says
//! so (PORT_STATUS), when a switch leaves, or when no probe crossed them for
//! `link_timeout`. The view is shared by all workers behind one lock, taken
//! on LLDP, port and switch events and by readers (REST, `paths`), never by
//! `l2-learning`'s PACKET_IN path.

use crate::app::{SwitchApp, Verdict};
use crate::flows::{FlowAction, FlowMatch, FlowSpec};
use crate::lldp::{self, Probe};
use ofconn::{Session, SwitchInfo};
use ofwire::hot::{write_packet_out10, write_packet_out13, PacketInView};
use ofwire::{v10, v13, Body, MacAddr, Message, PortReason, OFP10_VERSION};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Priority of the flow sending LLDP to the controller (above everything
/// the built-in apps install).
pub const LLDP_PRIORITY: u16 = 65000;
pub const LLDP_COOKIE: u64 = 0x5d1a_11d9;

/// One end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct End {
    pub dpid: u64,
    pub port: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct PortView {
    pub port_no: u32,
    pub name: String,
    pub hw_addr: String,
    pub up: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct SwitchView {
    pub dpid: u64,
    pub version: u8,
    pub ports: Vec<PortView>,
}

/// A link as discovered: packets sent out of `src` arrive at `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub src: End,
    pub dst: End,
}

/// Counts of what discovery saw since the start.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Events {
    pub switches_up: u64,
    pub switches_down: u64,
    pub links_up: u64,
    pub links_down: u64,
    pub probes_sent: u64,
    pub probes_received: u64,
    pub bad_lldp: u64,
}

/// A consistent copy of the view.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    pub switches: Vec<SwitchView>,
    pub links: Vec<Link>,
    pub events: Events,
}

struct SwitchState {
    version: u8,
    up_since: Instant,
    ports: BTreeMap<u32, (String, MacAddr, bool)>,
}

/// Told of every link this member's own probes find (true) or lose
/// (false): a cluster whose members each hear only their own switches'
/// PACKET_INs shares them (`cluster_state`).
pub type LinkHook = Box<dyn Fn(End, End, bool) + Send + Sync>;

#[derive(Default)]
struct State {
    switches: BTreeMap<u64, SwitchState>,
    /// src -> (dst, last seen): the links this member's probes found.
    links: BTreeMap<End, (End, Instant)>,
    /// src -> dst: links other members found (cluster mode), held until
    /// they say they are gone; a link seen here too counts as seen here.
    shared: BTreeMap<End, End>,
    /// Bumped on every change of switches or links.
    generation: u64,
    /// The spanning tree's ports per switch, and the generation they were
    /// computed at (`Topology::tree_ports`: asked for every flood).
    tree: Option<(u64, BTreeMap<u64, Vec<u32>>)>,
    /// Bumped when a link or switch goes away (installed paths may be broken).
    removals: u64,
    events: Events,
}

impl State {
    fn remove_links_where(&mut self, hook: Option<&LinkHook>, mut gone: impl FnMut(&End, &End) -> bool) -> usize {
        let lost: Vec<(End, End)> = self
            .links
            .iter()
            .filter(|(s, (d, _))| gone(s, d))
            .map(|(s, (d, _))| (*s, *d))
            .collect();
        for (s, d) in &lost {
            self.links.remove(s);
            if let Some(h) = hook {
                h(*s, *d, false);
            }
        }
        let n = lost.len();
        if n > 0 {
            self.generation += 1;
            self.removals += 1;
            self.events.links_down += n as u64;
        }
        n
    }

    /// Every link: those this member found, then the shared ones it did not.
    fn each_link(&self) -> impl Iterator<Item = (End, End)> + '_ {
        self.links.iter().map(|(s, (d, _))| (*s, *d)).chain(
            self.shared
                .iter()
                .filter(|(s, _)| !self.links.contains_key(s))
                .map(|(s, d)| (*s, *d)),
        )
    }

    fn link_from(&self, src: End) -> Option<End> {
        self.links
            .get(&src)
            .map(|(d, _)| *d)
            .or_else(|| self.shared.get(&src).copied())
    }

    fn is_link_port(&self, e: End) -> bool {
        self.each_link().any(|(s, d)| s == e || d == e)
    }
}

/// The shared view; one per controller.
pub struct Topology {
    state: Mutex<State>,
    pub probe_interval: Duration,
    pub link_timeout: Duration,
    /// Cluster mode: told of the links found and lost here.
    hook: std::sync::OnceLock<LinkHook>,
}

fn normal_port(p: u32) -> bool {
    p < v13::port::MAX
}

/// Every switch's ports on the spanning tree of `s`'s links
/// (`Topology::tree_ports`).
fn spanning_tree_ports(s: &State) -> BTreeMap<u64, Vec<u32>> {
    let links: BTreeMap<End, End> = s
        .each_link()
        .filter(|(a, b)| s.switches.contains_key(&a.dpid) && s.switches.contains_key(&b.dpid))
        .collect();
    // Both ways: a -> b and b -> a.
    let mut adj: BTreeMap<u64, Vec<(End, End)>> = BTreeMap::new();
    for (a, b) in &links {
        if links.get(b) == Some(a) {
            adj.entry(a.dpid).or_default().push((*a, *b));
        }
    }
    let mut ports: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let Some(&root) = s.switches.keys().next() else {
        return ports;
    };
    let mut seen = std::collections::BTreeSet::from([root]);
    let mut queue = VecDeque::from([root]);
    while let Some(at) = queue.pop_front() {
        for (a, b) in adj.get(&at).map(|v| v.as_slice()).unwrap_or(&[]) {
            if seen.insert(b.dpid) {
                ports.entry(a.dpid).or_default().push(a.port);
                ports.entry(b.dpid).or_default().push(b.port);
                queue.push_back(b.dpid);
            }
        }
    }
    // (A root that is not among the switches reached is alone.)
    for p in ports.values_mut() {
        p.sort_unstable();
    }
    ports
}

impl Topology {
    /// Probes every `probe_interval`; a link not confirmed for `link_timeout` goes down.
    pub fn new(probe_interval: Duration, link_timeout: Duration) -> Arc<Topology> {
        Arc::new(Topology {
            state: Mutex::new(State::default()),
            probe_interval,
            link_timeout,
            hook: std::sync::OnceLock::new(),
        })
    }

    /// Cluster mode: `hook` is told of every link found or lost here
    /// (once; a second hook is ignored).
    pub fn on_link(&self, hook: LinkHook) {
        let _ = self.hook.set(hook);
    }

    /// A link another member found (cluster mode).
    pub fn learn_shared(&self, src: End, dst: End) {
        let mut s = self.lock();
        if s.shared.insert(src, dst) != Some(dst) && !s.links.contains_key(&src) {
            s.generation += 1;
            s.events.links_up += 1;
        }
    }

    /// A link another member found is gone (cluster mode).
    pub fn forget_shared(&self, src: End) {
        let mut s = self.lock();
        if s.shared.remove(&src).is_some() && !s.links.contains_key(&src) {
            s.generation += 1;
            s.removals += 1;
            s.events.links_down += 1;
        }
    }

    /// The ports of `dpid` on a spanning tree of the links, the same at
    /// every member that knows the same links: a breadth-first search from
    /// the lowest datapath id, neighbours and ports taken lowest first, a
    /// link used only when it is known both ways. A flood that goes on
    /// only along these (and out of edge ports) reaches every switch once.
    /// Computed once per generation of the topology, for every switch.
    pub fn tree_ports(&self, dpid: u64) -> Vec<u32> {
        let mut s = self.lock();
        let generation = s.generation;
        if s.tree.as_ref().is_none_or(|(g, _)| *g != generation) {
            let tree = spanning_tree_ports(&s);
            s.tree = Some((generation, tree));
        }
        s.tree
            .as_ref()
            .and_then(|(_, t)| t.get(&dpid).cloned())
            .unwrap_or_default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn snapshot(&self) -> Snapshot {
        let s = self.lock();
        Snapshot {
            switches: s
                .switches
                .iter()
                .map(|(dpid, sw)| SwitchView {
                    dpid: *dpid,
                    version: sw.version,
                    ports: sw
                        .ports
                        .iter()
                        .map(|(n, (name, mac, up))| PortView {
                            port_no: *n,
                            name: name.clone(),
                            hw_addr: mac.to_string(),
                            up: *up,
                        })
                        .collect(),
                })
                .collect(),
            links: s.each_link().map(|(src, dst)| Link { src, dst }).collect(),
            events: s.events,
        }
    }

    /// Changes so far (any change bumps it).
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Removals so far (a link or a switch went away).
    pub fn removals(&self) -> u64 {
        self.lock().removals
    }

    pub fn is_link_port(&self, e: End) -> bool {
        self.lock().is_link_port(e)
    }

    /// Ports where hosts (or foreign networks) attach: up, not a link end, on
    /// a switch that has been probing for at least `settle` (before that, a
    /// port whose neighbour has not answered yet would look like an edge).
    pub fn edge_ports(&self, now: Instant, settle: Duration) -> Vec<End> {
        let s = self.lock();
        let mut out = Vec::new();
        for (dpid, sw) in &s.switches {
            if now.duration_since(sw.up_since) < settle {
                continue;
            }
            for (port, (_, _, up)) in &sw.ports {
                let e = End {
                    dpid: *dpid,
                    port: *port,
                };
                if *up && normal_port(*port) && !s.is_link_port(e) {
                    out.push(e);
                }
            }
        }
        out
    }

    /// Whether `e` is an edge port (as `edge_ports` decides).
    pub fn is_edge_port(&self, e: End, now: Instant, settle: Duration) -> bool {
        let s = self.lock();
        let Some(sw) = s.switches.get(&e.dpid) else {
            return false;
        };
        now.duration_since(sw.up_since) >= settle
            && normal_port(e.port)
            && sw.ports.get(&e.port).is_some_and(|p| p.2)
            && !s.is_link_port(e)
    }

    pub fn version_of(&self, dpid: u64) -> Option<u8> {
        self.lock().switches.get(&dpid).map(|s| s.version)
    }

    /// For every switch that can reach `to`, the port out of which its
    /// shortest path (in hops) to `to` leaves. One breadth-first search from
    /// `to` over the reversed links, ties broken by the lowest datapath id
    /// and port, so paths towards one destination form a tree: flows that
    /// match only the destination never loop.
    pub fn next_hops_to(&self, to: u64) -> HashMap<u64, u32> {
        let s = self.lock();
        // dst switch -> links arriving there, sorted (BTreeMap order).
        let mut into: HashMap<u64, Vec<End>> = HashMap::new();
        for (src, dst) in s.each_link() {
            // Only links between switches we still know of.
            if s.switches.contains_key(&src.dpid) && s.switches.contains_key(&dst.dpid) {
                into.entry(dst.dpid).or_default().push(src);
            }
        }
        // (each_link gives local links first: sorted again, so ties break
        // by the lowest datapath id and port whatever a link's origin.)
        for v in into.values_mut() {
            v.sort_unstable();
        }
        let mut next = HashMap::new();
        let mut queue = VecDeque::from([to]);
        let mut seen = std::collections::HashSet::from([to]);
        while let Some(at) = queue.pop_front() {
            for src in into.get(&at).map(|v| v.as_slice()).unwrap_or(&[]) {
                if seen.insert(src.dpid) {
                    next.insert(src.dpid, src.port);
                    queue.push_back(src.dpid);
                }
            }
        }
        next
    }

    /// The hops (switch, output port) from `from` to `to`, ending with
    /// (`to`, `last_port`); None when `to` cannot be reached.
    pub fn path(&self, from: u64, to: u64, last_port: u32) -> Option<Vec<End>> {
        let next = self.next_hops_to(to);
        let mut hops = Vec::new();
        let mut at = from;
        while at != to {
            let port = *next.get(&at)?;
            hops.push(End { dpid: at, port });
            at = self.link_from(End { dpid: at, port })?.dpid;
            if hops.len() > 1024 {
                return None;
            }
        }
        hops.push(End {
            dpid: to,
            port: last_port,
        });
        Some(hops)
    }

    /// Where packets sent out of `src` arrive.
    pub fn link_from(&self, src: End) -> Option<End> {
        self.lock().link_from(src)
    }

    fn switch_up(&self, info: &SwitchInfo, now: Instant) {
        let mut s = self.lock();
        let ports = info
            .ports
            .iter()
            .map(|p| (p.port_no, (p.name.clone(), p.hw_addr, p.link_up)))
            .collect();
        let d = info.datapath_id;
        s.remove_links_where(self.hook.get(), |a, b| a.dpid == d || b.dpid == d);
        s.switches.insert(
            d,
            SwitchState {
                version: info.version,
                up_since: now,
                ports,
            },
        );
        s.generation += 1;
        s.events.switches_up += 1;
    }

    fn switch_down(&self, dpid: u64) {
        let mut s = self.lock();
        if s.switches.remove(&dpid).is_some() {
            s.remove_links_where(self.hook.get(), |a, b| a.dpid == dpid || b.dpid == dpid);
            s.generation += 1;
            s.removals += 1;
            s.events.switches_down += 1;
        }
    }

    /// A port changed; returns whether it is up now.
    fn port_changed(&self, dpid: u64, port: u32, name: &str, mac: MacAddr, up: bool, deleted: bool) -> bool {
        let mut s = self.lock();
        let e = End { dpid, port };
        if deleted || !up {
            s.remove_links_where(self.hook.get(), |a, b| *a == e || *b == e);
        }
        let Some(sw) = s.switches.get_mut(&dpid) else {
            return false;
        };
        if deleted {
            sw.ports.remove(&port);
        } else {
            sw.ports.insert(port, (name.to_string(), mac, up));
        }
        s.generation += 1;
        up && !deleted
    }

    fn probe_seen(&self, from: End, to: End, now: Instant) {
        let mut s = self.lock();
        s.events.probes_received += 1;
        if !s.switches.contains_key(&from.dpid) || !s.switches.contains_key(&to.dpid) {
            return;
        }
        let hook = self.hook.get();
        match s.links.insert(from, (to, now)) {
            Some((old, _)) if old == to => {}
            Some((old, _)) => {
                // The cable moved: the old link is gone, a new one is up.
                s.events.links_down += 1;
                s.events.links_up += 1;
                s.generation += 1;
                s.removals += 1;
                if let Some(h) = hook {
                    h(from, old, false);
                    h(from, to, true);
                }
            }
            None => {
                if s.shared.get(&from) != Some(&to) {
                    s.events.links_up += 1;
                    s.generation += 1;
                }
                if let Some(h) = hook {
                    h(from, to, true);
                }
            }
        }
    }

    /// Links arriving at `dpid` not confirmed within the timeout go down.
    fn expire_links_into(&self, dpid: u64, now: Instant) {
        let timeout = self.link_timeout;
        let mut s = self.lock();
        let stale: Vec<End> = s
            .links
            .iter()
            .filter(|(_, (d, seen))| d.dpid == dpid && now.duration_since(*seen) > timeout)
            .map(|(src, _)| *src)
            .collect();
        if !stale.is_empty() {
            s.remove_links_where(self.hook.get(), |src, _| stale.contains(src));
        }
    }

    fn count_probes(&self, n: u64) {
        self.lock().events.probes_sent += n;
    }

    fn bad_lldp(&self) {
        self.lock().events.bad_lldp += 1;
    }

    /// The per-switch app instance.
    pub fn app(self: &Arc<Self>) -> Discovery {
        Discovery {
            topo: self.clone(),
            dpid: 0,
            ports: Vec::new(),
            next_probe: None,
            frame: Vec::new(),
        }
    }
}

/// The `topology` app on one switch.
pub struct Discovery {
    topo: Arc<Topology>,
    dpid: u64,
    /// Ports to probe: (number, hardware address).
    ports: Vec<(u32, MacAddr)>,
    next_probe: Option<Instant>,
    frame: Vec<u8>,
}

impl Discovery {
    fn probe(&mut self, sw: &mut Session, port: u32, mac: MacAddr) {
        self.frame.clear();
        lldp::write_probe(
            &mut self.frame,
            mac,
            Probe {
                datapath_id: self.dpid,
                port,
            },
        );
        let xid = sw.xid();
        let version = sw.version();
        // A probe is 60 bytes: it always fits.
        let _ = if version == OFP10_VERSION {
            write_packet_out10(
                sw.transmit(),
                xid,
                v10::NO_BUFFER,
                v10::port::NONE,
                &[v10::Action::Output {
                    port: port as u16,
                    max_len: 0,
                }],
                &self.frame,
            )
        } else {
            write_packet_out13(
                sw.transmit(),
                xid,
                v13::NO_BUFFER,
                v13::port::CONTROLLER,
                &[v13::Action::Output { port, max_len: 0 }],
                &self.frame,
            )
        };
    }

    fn probe_all(&mut self, sw: &mut Session) {
        let ports = std::mem::take(&mut self.ports);
        for &(port, mac) in &ports {
            self.probe(sw, port, mac);
        }
        self.topo.count_probes(ports.len() as u64);
        self.ports = ports;
    }
}

fn send_body(sw: &mut Session, body: Body) {
    // (Built for the switch's version: a refusal would be a bug.)
    if let Err(e) = sw.send(body) {
        tracing::warn!("controller: topology: not sent to the switch: {e}");
    }
}

impl SwitchApp for Discovery {
    fn name(&self) -> &'static str {
        "topology"
    }

    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        let now = Instant::now();
        self.dpid = info.datapath_id;
        self.topo.switch_up(info, now);
        self.ports = info
            .ports
            .iter()
            .filter(|p| p.link_up && normal_port(p.port_no))
            .map(|p| (p.port_no, p.hw_addr))
            .collect();
        let mut lldp_to_us = FlowSpec::new(
            LLDP_PRIORITY,
            FlowMatch {
                eth_type: Some(lldp::ETHERTYPE),
                ..Default::default()
            },
            vec![FlowAction::Output(v13::port::CONTROLLER)],
        );
        lldp_to_us.cookie = LLDP_COOKIE;
        if let Ok(b) = lldp_to_us.add(info.version) {
            send_body(sw, b);
        }
        self.probe_all(sw);
        self.next_probe = Some(now + self.topo.probe_interval);
    }

    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        if !lldp::is_lldp(pi.data) {
            return Verdict::Continue;
        }
        match lldp::parse_probe(pi.data) {
            Ok(Some(p)) => {
                let here = End {
                    dpid: self.dpid,
                    port: pi.in_port,
                };
                self.topo.probe_seen(
                    End {
                        dpid: p.datapath_id,
                        port: p.port,
                    },
                    here,
                    Instant::now(),
                );
                // The way back is not known yet: our earlier probes out of this port
                // were likely lost (OpenFlow 1.3 switches drop LLDP until the
                // controller's flow is in, so a neighbour that connected after us
                // dropped them). Probe back now rather than a probe interval later.
                if self.topo.link_from(here).is_none() {
                    if let Some(&(port, mac)) = self.ports.iter().find(|(n, _)| *n == pi.in_port) {
                        self.probe(sw, port, mac);
                        self.topo.count_probes(1);
                    }
                }
            }
            Ok(None) => {}
            Err(_) => self.topo.bad_lldp(),
        }
        // LLDP is link-local: never forwarded.
        Verdict::Done
    }

    fn message(&mut self, sw: &mut Session, msg: &Message) {
        let (reason, port_no, name, mac, state) = match &msg.body {
            Body::V10(v10::Body::PortStatus(p)) => {
                let n = p.desc.port_no as u32;
                let n = if n >= v10::port::MAX as u32 { n | 0xffff_0000 } else { n };
                (p.reason, n, &p.desc.name, p.desc.hw_addr, p.desc.state)
            }
            Body::V13(v13::Body::PortStatus(p)) => {
                (p.reason, p.desc.port_no, &p.desc.name, p.desc.hw_addr, p.desc.state)
            }
            _ => return,
        };
        let deleted = reason == PortReason::Delete;
        let up = self
            .topo
            .port_changed(self.dpid, port_no, name, mac, state & 1 == 0, deleted);
        self.ports.retain(|(p, _)| *p != port_no);
        if up && normal_port(port_no) {
            self.ports.push((port_no, mac));
            self.probe(sw, port_no, mac);
            self.topo.count_probes(1);
        }
    }

    fn on_timer(&mut self, sw: &mut Session, now: Instant) -> Option<Instant> {
        let next = self.next_probe?;
        if now >= next {
            self.probe_all(sw);
            self.topo.expire_links_into(self.dpid, now);
            self.next_probe = Some(now + self.topo.probe_interval);
        }
        self.next_probe
    }

    fn switch_down(&mut self, dpid: u64) {
        self.topo.switch_down(dpid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(t: &Topology, dpid: u64) {
        let info = SwitchInfo {
            datapath_id: dpid,
            version: ofwire::OFP13_VERSION,
            n_tables: 1,
            n_buffers: 0,
            ports: Vec::new(),
        };
        t.switch_up(&info, Instant::now());
    }

    fn link(t: &Topology, a: (u64, u32), b: (u64, u32)) {
        let (a, b) = (End { dpid: a.0, port: a.1 }, End { dpid: b.0, port: b.1 });
        t.probe_seen(a, b, Instant::now());
        t.probe_seen(b, a, Instant::now());
    }

    /// A ring of three: the tree from switch 1 takes 1-2 and 1-3 and leaves
    /// 2-3 out; with 1-3 gone, it takes 1-2 and 2-3. Asked again between
    /// changes, the same answer (kept per generation); asked after one,
    /// the new tree.
    #[test]
    fn the_spanning_tree_follows_every_change_of_the_links() {
        let t = Topology::new(Duration::from_secs(1), Duration::from_secs(3));
        for d in 1..=3 {
            up(&t, d);
        }
        link(&t, (1, 1), (2, 1));
        link(&t, (2, 2), (3, 2));
        link(&t, (1, 2), (3, 1));
        let tree = |t: &Topology| (1..=3).map(|d| t.tree_ports(d)).collect::<Vec<_>>();
        assert_eq!(tree(&t), [vec![1, 2], vec![1], vec![1]]);
        assert_eq!(tree(&t), [vec![1, 2], vec![1], vec![1]]);
        t.port_changed(1, 2, "p2", MacAddr([0; 6]), false, false);
        assert_eq!(tree(&t), [vec![1], vec![1, 2], vec![2]]);
        t.switch_down(2);
        assert_eq!(tree(&t), [Vec::<u32>::new(), vec![], vec![]]);
    }
}
