//! One emulated network while it is up: the names of everything created,
//! bring-up and teardown for each switch kind, and the state file that lets
//! another process (`sdnlab net down`, `clean`) find and remove it.
//!
//! Naming: run ids are 4 hex digits. Host namespaces are
//! `sdnlab-<id>-<host>`; root-namespace interfaces are `sl<id>` followed by
//! `s<n>` (switch n), `h<n>` (host n's link), `l<n>a`/`l<n>b` (switch link n),
//! `mg`/`m<n>` (management); processes run with `--unixctl`, pid and log
//! files in the run directory `/run/sdnlab/net/<id>`.

use crate::kernel::{self, Nl};
use crate::ovs::Ovs;
use crate::topo::Topology;
use crate::NetError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use crate::procs::{is_sdnlab, stop_processes_under};
pub use crate::state::{
    HostState, LinkState, Port, SslFiles, State, SwitchKind, UnknownSwitchKind, UpOptions, LINK_PREFIX, NETNS_PREFIX,
    STATE_ROOT,
};

mod checks;
pub use checks::*;

pub struct Net {
    pub dir: PathBuf,
    pub state: State,
    pub topo: Topology,
    ovs: Option<Ovs>,
    /// sdnlab switch processes (our children).
    children: Vec<std::process::Child>,
    /// Set once `down` ran; otherwise dropping the `Net` tears it down.
    torn_down: bool,
}

impl Drop for Net {
    /// A `Net` dropped without `down` (a panic, an early return) still
    /// removes everything, on a thread with a runtime of its own so this
    /// works inside or outside an async context.
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
        drop(self.ovs.take());
        crate::sdnsw::stop(&mut self.children);
        let state = self.state.clone();
        let dir = self.dir.clone();
        let _ = std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                let _ = rt.block_on(teardown(&state));
            }
            let _ = std::fs::remove_dir_all(&dir);
        })
        .join();
    }
}

/// A fresh run id (four hex digits). `Net::up_as` takes one chosen
/// beforehand, so a caller can put files of its own (a cluster's etcd)
/// under the run's directory before the switches come up: teardown stops
/// every process that names that directory.
pub fn new_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{:04x}", (t ^ std::process::id().wrapping_mul(2654435761)) & 0xffff)
}

/// The device group of a run's root-namespace interfaces ("5d1a" + run id),
/// so teardown deletes them all in one batch.
pub fn device_group(id: &str) -> u32 {
    0x5d1a_0000 | u32::from_str_radix(id, 16).unwrap_or(0) & 0xffff
}

/// Switch links outside a breadth-first spanning tree of the switch graph.
pub fn loop_links(topo: &Topology) -> HashSet<usize> {
    let mut adj: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
    for (i, l) in topo.links.iter().enumerate() {
        if topo.is_switch(&l.a) && topo.is_switch(&l.b) {
            adj.entry(&l.a).or_default().push((i, &l.b));
            adj.entry(&l.b).or_default().push((i, &l.a));
        }
    }
    let mut seen = HashSet::new();
    let mut tree = HashSet::new();
    for s in &topo.switches {
        if !seen.insert(s.name.as_str()) {
            continue;
        }
        let mut q = VecDeque::from([s.name.as_str()]);
        while let Some(n) = q.pop_front() {
            for &(i, m) in adj.get(n).map(|v| v.as_slice()).unwrap_or(&[]) {
                if seen.insert(m) {
                    tree.insert(i);
                    q.push_back(m);
                }
            }
        }
    }
    (0..topo.links.len())
        .filter(|i| topo.is_switch(&topo.links[*i].a) && topo.is_switch(&topo.links[*i].b) && !tree.contains(i))
        .collect()
}

/// The part of `topo` on this machine: its nodes, and the links with at
/// least one end among them (each with its index in `topo`). A link with
/// one end here must be a switch link with a tunnel; hosts stay with their
/// switch.
fn restrict(topo: &Topology, part: &crate::state::Part) -> Result<(Topology, Vec<usize>), NetError> {
    let here: HashSet<&str> = part.nodes.iter().map(String::as_str).collect();
    for n in &here {
        if topo.host(n).is_none() && !topo.is_switch(n) {
            return Err(NetError::Topology(format!(
                "the part names '{n}', which is not in the topology"
            )));
        }
    }
    let mut local = Topology {
        hosts: topo
            .hosts
            .iter()
            .filter(|h| here.contains(h.name.as_str()))
            .cloned()
            .collect(),
        switches: topo
            .switches
            .iter()
            .filter(|s| here.contains(s.name.as_str()))
            .cloned()
            .collect(),
        links: Vec::new(),
        mgmt: topo.mgmt.clone(),
    };
    let mut index = Vec::new();
    for (i, l) in topo.links.iter().enumerate() {
        let (a, b) = (here.contains(l.a.as_str()), here.contains(l.b.as_str()));
        if !a && !b {
            continue;
        }
        if a != b {
            if topo.host(&l.a).is_some() || topo.host(&l.b).is_some() {
                return Err(NetError::Topology(format!(
                    "host and switch of link {}-{} are on different machines: a host stays with its switch",
                    l.a, l.b
                )));
            }
            if !part.tunnels.iter().any(|t| t.link == i) {
                return Err(NetError::Topology(format!(
                    "link {}-{} leaves this machine but has no tunnel",
                    l.a, l.b
                )));
            }
        }
        local.links.push(l.clone());
        index.push(i);
    }
    Ok((local, index))
}

impl Net {
    /// Brings a topology up. On any failure everything created so far is removed.
    pub async fn up(whole: Topology, options: UpOptions) -> Result<Net, NetError> {
        Net::up_as(whole, options, new_id()).await
    }

    /// `up` with the run id `id` (from `new_id`; its directory may exist).
    pub async fn up_as(whole: Topology, options: UpOptions, id: String) -> Result<Net, NetError> {
        let problems = whole.problems();
        if !problems.is_empty() {
            return Err(NetError::Topology(problems.join("; ")));
        }
        // Every network's hosts are pinged (`pingall`, the checks).
        crate::install::need(&[crate::install::PING])?;
        // Loops are found on the whole topology, so every machine of a
        // spread one leaves the same links down.
        let blocked = if options.keep_loops {
            HashSet::new()
        } else {
            loop_links(&whole)
        };
        let (topo, index) = match &options.part {
            None => (whole.clone(), (0..whole.links.len()).collect::<Vec<usize>>()),
            Some(part) => restrict(&whole, part)?,
        };
        let dir = Path::new(STATE_ROOT).join(&id);
        std::fs::create_dir_all(&dir).map_err(NetError::io(format!("cannot create {}", dir.display())))?;
        let p = |s: &str| format!("{LINK_PREFIX}{id}{s}");
        // Names follow the whole topology's order, the same on every machine.
        let switch_names: HashMap<&str, String> = whole
            .switches
            .iter()
            .enumerate()
            .filter(|(_, s)| topo.is_switch(&s.name))
            .map(|(i, s)| (s.name.as_str(), p(&format!("s{}", i + 1))))
            .collect();
        let hosts: Vec<HostState> = whole
            .hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| topo.host(&h.name).is_some())
            .map(|(i, h)| HostState {
                name: h.name.clone(),
                netns: format!("{NETNS_PREFIX}{id}-{}", h.name),
                ip: h.ip,
                root_end: p(&format!("h{}", i + 1)),
            })
            .collect();
        let tunnels = options.part.as_ref().map(|p| p.tunnels.as_slice()).unwrap_or(&[]);
        let links: Vec<LinkState> = topo
            .links
            .iter()
            .zip(&index)
            .map(|(l, &i)| {
                let tunnel = tunnels.iter().find(|t| t.link == i).cloned();
                let root_ends = match (topo.host(&l.a), topo.host(&l.b), &tunnel) {
                    (_, _, Some(_)) => vec![p(&format!("t{}", i + 1))],
                    (Some(h), _, _) | (_, Some(h), _) => vec![hosts
                        .iter()
                        .find(|x| x.name == h.name)
                        .expect("host state")
                        .root_end
                        .clone()],
                    _ => vec![p(&format!("l{}a", i + 1)), p(&format!("l{}b", i + 1))],
                };
                LinkState {
                    a: l.a.clone(),
                    b: l.b.clone(),
                    root_ends,
                    blocked: blocked.contains(&i),
                    tunnel,
                }
            })
            .collect();
        let state = State {
            id: id.clone(),
            options: options.clone(),
            pid: std::process::id(),
            hosts,
            switches: topo
                .switches
                .iter()
                .map(|s| (s.name.clone(), switch_names[s.name.as_str()].clone()))
                .collect(),
            links,
            ovs: None,
            sdnlab: Vec::new(),
            topology: Some(topo.clone()),
        };
        let mut net = Net {
            dir,
            state,
            topo,
            ovs: None,
            children: Vec::new(),
            torn_down: false,
        };
        net.save()?;
        match net.build().await {
            Ok(()) => {
                net.save()?;
                Ok(net)
            }
            Err(e) => {
                drop(net.ovs.take());
                crate::sdnsw::stop(&mut net.children);
                let _ = teardown(&net.state).await;
                let _ = std::fs::remove_dir_all(&net.dir);
                net.torn_down = true;
                Err(e)
            }
        }
    }

    fn save(&self) -> Result<(), NetError> {
        let path = self.dir.join("state.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&self.state)?).map_err(NetError::io(path.display().to_string()))
    }

    async fn build(&mut self) -> Result<(), NetError> {
        // Each phase's time (`RUST_LOG=netlab=debug`).
        let t0 = std::time::Instant::now();
        let phase = |name: &str| tracing::debug!("netlab: {name} at {:.3} s", t0.elapsed().as_secs_f64());
        let root = Nl::here()?;
        for h in &self.state.hosts {
            kernel::netns_create(&h.netns).map_err(NetError::io(format!("namespace {}", h.netns)))?;
        }
        phase("namespaces");
        // Switch-side: bridges (or OVS bridges later), and every veth.
        if self.state.options.kind == SwitchKind::Bridge {
            for (_, br) in &self.state.switches {
                root.bridge(br, device_group(&self.state.id)).await?;
            }
        }
        for l in &self.state.links {
            if let Some(t) = &l.tunnel {
                root.vxlan(&l.root_ends[0], t, device_group(&self.state.id)).await?;
            } else if l.root_ends.len() == 1 {
                let h = self
                    .state
                    .hosts
                    .iter()
                    .find(|h| h.root_end == l.root_ends[0])
                    .expect("host of link");
                root.veth_into(&l.root_ends[0], &h.netns, "eth0", device_group(&self.state.id))
                    .await?;
            } else {
                root.veth(&l.root_ends[0], &l.root_ends[1], device_group(&self.state.id))
                    .await?;
            }
        }
        phase("veths");
        if let Some(mtu) = self.state.options.part.as_ref().map(|p| p.mtu) {
            for end in self.state.links.iter().flat_map(|l| &l.root_ends) {
                root.set_mtu(end, mtu).await?;
            }
        }
        self.configure_hosts().await?;
        phase("hosts configured");
        if self.topo.mgmt.is_some() {
            self.build_mgmt(&root).await?;
            phase("management network");
        }
        match self.state.options.kind {
            SwitchKind::Bridge => {
                let by_name: HashMap<&str, &str> = self
                    .state
                    .switches
                    .iter()
                    .map(|(n, b)| (n.as_str(), b.as_str()))
                    .collect();
                for l in &self.state.links {
                    if l.root_ends.len() == 1 {
                        let sw = if by_name.contains_key(l.a.as_str()) { &l.a } else { &l.b };
                        root.enslave(&l.root_ends[0], by_name[sw.as_str()]).await?;
                        if l.blocked {
                            root.set_up(&l.root_ends[0], false).await?;
                        }
                    } else {
                        root.enslave(&l.root_ends[0], by_name[l.a.as_str()]).await?;
                        root.enslave(&l.root_ends[1], by_name[l.b.as_str()]).await?;
                        if l.blocked {
                            root.set_up(&l.root_ends[0], false).await?;
                            root.set_up(&l.root_ends[1], false).await?;
                        }
                    }
                }
            }
            // sdnlab's switch, one process per switch.
            SwitchKind::Sdnlab if !self.state.options.ovsdb => {
                for l in self.state.links.iter().filter(|l| !l.blocked) {
                    for end in &l.root_ends {
                        root.set_up(end, true).await?;
                    }
                }
                let started = crate::sdnsw::start(
                    &self.dir,
                    &self.topo,
                    &self.state,
                    self.state.options.controller.as_deref(),
                    &mut self.children,
                );
                match started {
                    Ok(procs) => self.state.sdnlab = procs,
                    Err(e) => return Err(e),
                }
                self.save()?;
            }
            // Open vSwitch, or sdnlab's switch managed through OVSDB: the
            // same database, configured the same way.
            kind @ (SwitchKind::Ovs | SwitchKind::Sdnlab) => {
                let daemon = match kind {
                    SwitchKind::Ovs => crate::ovs::Daemon::Vswitchd,
                    _ if self.state.options.ssl.is_some() => {
                        return Err(NetError::Refused(
                            "the sdnlab switch has no TLS yet: use a tcp: controller".into(),
                        ))
                    }
                    _ => crate::ovs::Daemon::Sdnlab {
                        bin: crate::sdnsw::binary()?,
                        through_qdisc: crate::sdnsw::shaped(&self.topo),
                    },
                };
                for l in self.state.links.iter().filter(|l| !l.blocked) {
                    for end in &l.root_ends {
                        root.set_up(end, true).await?;
                    }
                }
                let ovs = Ovs::start_with(&self.dir, &self.state.id, daemon)?;
                self.state.ovs = Some(ovs.state.clone());
                self.save()?;
                ovs.add_switches(
                    &self.topo,
                    &self.state,
                    self.state.options.controller.as_deref(),
                    self.state.options.ssl.as_ref(),
                )?;
                self.ovs = Some(ovs);
            }
        }
        phase("switches");
        self.apply_rate_limits()?;
        Ok(())
    }
    /// Each host's loopback, address, MAC, MTU and default route, the hosts
    /// configured concurrently, each through a netlink socket in its
    /// namespace.
    async fn configure_hosts(&self) -> Result<(), NetError> {
        let jobs = self.topo.hosts.iter().zip(&self.state.hosts).map(|(h, hs)| {
            let (netns, ip, len, mac, gw) = (hs.netns.clone(), h.ip, h.prefix_len, h.mac, h.gateway);
            let mtu = self.state.options.part.as_ref().map(|p| p.mtu);
            async move {
                let nl = Nl::in_netns(&netns)?;
                nl.set_up("lo", true).await?;
                nl.set_mac("eth0", mac).await?;
                if let Some(mtu) = mtu {
                    nl.set_mtu("eth0", mtu).await?;
                }
                nl.add_addr("eth0", ip, len).await?;
                nl.set_up("eth0", true).await?;
                if let Some(gw) = gw {
                    nl.default_route(gw).await?;
                }
                Ok::<(), NetError>(())
            }
        });
        for r in futures::future::join_all(jobs).await {
            r?;
        }
        Ok(())
    }

    /// The management network: a bridge in the root namespace (with the
    /// root's address, if any) and a `mgmt0` in each host that has an
    /// address on it.
    async fn build_mgmt(&self, root: &Nl) -> Result<(), NetError> {
        let Some(m) = &self.topo.mgmt else { return Ok(()) };
        let group = device_group(&self.state.id);
        let br = format!("{LINK_PREFIX}{}mg", self.state.id);
        root.bridge(&br, group).await?;
        if let Some(ip) = m.root_ip {
            root.add_addr(&br, ip, m.prefix_len).await?;
        }
        for (i, (h, hs)) in self.topo.hosts.iter().zip(&self.state.hosts).enumerate() {
            let Some(ip) = h.mgmt_ip else { continue };
            let end = format!("{LINK_PREFIX}{}m{}", self.state.id, i + 1);
            root.veth_into(&end, &hs.netns, "mgmt0", group).await?;
            root.enslave(&end, &br).await?;
            let nl = Nl::in_netns(&hs.netns)?;
            nl.add_addr("mgmt0", ip, m.prefix_len).await?;
            nl.set_up("mgmt0", true).await?;
        }
        Ok(())
    }

    fn apply_rate_limits(&self) -> Result<(), NetError> {
        for (l, ls) in self.topo.links.iter().zip(&self.state.links) {
            let Some(rate) = l.rate_mbit else { continue };
            let limit = l.queue_packets.unwrap_or(1000).max(1) * 1514;
            let tbf = crate::shaper::Tbf {
                rate_kbit: (rate * 1000.0).round() as u64,
                burst_kb: 32,
                queue: crate::shaper::Queue::Bytes(limit.into()),
            };
            for end in &ls.root_ends {
                crate::shaper::shape(None, end, tbf)?;
            }
            if let Some(h) = self.state.hosts.iter().find(|h| ls.root_ends.contains(&h.root_end)) {
                crate::shaper::shape(Some(&h.netns), "eth0", tbf)?;
            }
        }
        Ok(())
    }

    /// A command that runs `argv` inside host `host`'s namespace.
    pub fn command(&self, host: &str, argv: &[&str]) -> Result<Command, NetError> {
        command_in(&self.state, host, argv)
    }

    /// Brings the link between nodes `a` and `b` down or up.
    pub async fn set_link(&self, a: &str, b: &str, up: bool) -> Result<(), NetError> {
        set_link(&self.state, a, b, up).await
    }

    /// Pings every ordered pair of hosts.
    pub async fn ping_all(&self, count: u32) -> Vec<PingResult> {
        ping_all(&self.state, count).await
    }

    /// The management socket of an OVS switch (for `ovs-ofctl`), by switch name.
    /// Runs `ovs-vsctl` against this network's Open vSwitch database.
    pub fn ovs_vsctl(&self, args: &[&str]) -> Result<String, NetError> {
        let ovs = self
            .ovs
            .as_ref()
            .ok_or_else(|| NetError::Refused("this network has no Open vSwitch".into()))?;
        Ok(ovs.vsctl(args)?)
    }

    /// Where `ovs-ofctl` reaches a switch: `unix:SOCKET` for Open vSwitch,
    /// `unix:RUN_DIR/NAME.mgmt` for the sdnlab switch.
    pub fn ofctl_target(&self, switch: &str) -> Option<String> {
        if let Some(p) = self.state.sdnlab.iter().find(|p| p.name == switch) {
            return Some(p.ofp.clone());
        }
        self.ovs_mgmt(switch).map(|p| format!("unix:{}", p.display()))
    }

    pub fn ovs_mgmt(&self, switch: &str) -> Option<PathBuf> {
        let br = &self.state.switches.iter().find(|(n, _)| n == switch)?.1;
        self.ovs.as_ref().map(|o| o.mgmt_socket(br))
    }

    /// Counters of a host's `eth0`.
    pub async fn host_counters(&self, host: &str) -> Result<kernel::Counters, NetError> {
        let h = self
            .state
            .hosts
            .iter()
            .find(|h| h.name == host)
            .ok_or_else(|| NetError::NotFound(format!("no host '{host}'")))?;
        let nl = Nl::in_netns(&h.netns)?;
        Ok(kernel::counters_of(&nl.link("eth0").await?))
    }

    /// Stops switch `name` or starts it again (see [`switch_set`]); a
    /// restarted sdnlab switch becomes this network's child like the others.
    pub async fn switch_set(&mut self, name: &str, start: bool) -> Result<(), NetError> {
        if !start {
            if let Some(p) = self.state.sdnlab.iter().find(|p| p.name == name) {
                // Stopped and reaped by pid below: forget its handle, so
                // nothing signals that pid again.
                self.children.retain(|c| c.id() != p.pid);
            }
        }
        let child = switch_set(&mut self.state, name, start).await?;
        self.children.extend(child);
        Ok(())
    }

    /// Removes everything of this run.
    pub async fn down(mut self) -> Result<(), NetError> {
        drop(self.ovs.take());
        crate::sdnsw::stop(&mut self.children);
        let r = teardown(&self.state).await;
        let _ = std::fs::remove_dir_all(&self.dir);
        self.torn_down = true;
        r
    }
}

pub fn command_in(state: &State, host: &str, argv: &[&str]) -> Result<Command, NetError> {
    let ns = state.netns_of(host)?;
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| NetError::Refused("an empty command line".into()))?;
    let mut c = nsexec::command(ns, program).map_err(NetError::io(format!("host {host}")))?;
    c.args(args);
    Ok(c)
}

pub async fn set_link(state: &State, a: &str, b: &str, up: bool) -> Result<(), NetError> {
    let l = state
        .links
        .iter()
        .find(|l| (l.a == a && l.b == b) || (l.a == b && l.b == a))
        .ok_or_else(|| NetError::NotFound(format!("no link between '{a}' and '{b}'")))?;
    let root = Nl::here()?;
    for end in &l.root_ends {
        root.set_up(end, up).await?;
    }
    Ok(())
}

/// Removes everything a state names: OVS processes (by recorded pid),
/// namespaces (their interfaces go with them) and root interfaces.
pub async fn teardown(state: &State) -> Result<(), NetError> {
    let mut problems = Vec::new();
    if let Some(o) = &state.ovs {
        crate::ovs::stop(o);
    }
    // Also processes started but not yet recorded when the `up` process died.
    stop_processes_under(&Path::new(STATE_ROOT).join(&state.id));
    let t0 = std::time::Instant::now();
    // Root-side interfaces in one batch; veth peers inside the hosts go with them.
    let root = Nl::here()?;
    if let Err(e) = root.delete_group(device_group(&state.id)).await {
        problems.push(e.to_string());
    }
    for h in &state.hosts {
        if kernel::netns_path(&h.netns).exists() {
            if let Err(e) = kernel::netns_delete(&h.netns) {
                problems.push(format!("namespace {}: {e}", h.netns));
            }
        }
    }
    tracing::debug!(
        "netlab: teardown: group and namespaces gone at {:.3} s",
        t0.elapsed().as_secs_f64()
    );
    let root = Nl::here()?;
    let prefix = format!("{LINK_PREFIX}{}", state.id);
    for name in root.names_with_prefix(&prefix).await? {
        // A veth end may already be gone with its peer.
        if let Err(e) = root.delete(&name).await {
            if root.index(&name).await.is_ok() {
                problems.push(e.to_string());
            }
        }
    }
    tracing::debug!(
        "netlab: teardown: interfaces gone at {:.3} s",
        t0.elapsed().as_secs_f64()
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(NetError::Leftovers(problems))
    }
}

/// States of runs on this machine.
pub fn list_states() -> Vec<(PathBuf, Result<State, NetError>)> {
    let mut v: Vec<_> = std::fs::read_dir(STATE_ROOT)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_else(|_| Vec::new());
    v.sort();
    v.into_iter()
        .map(|dir| {
            let path = dir.join("state.json");
            let st = std::fs::read(&path)
                .map_err(NetError::io(path.display().to_string()))
                .and_then(|b| {
                    serde_json::from_slice::<State>(&b).map_err(|source| NetError::StateFile {
                        path: path.clone(),
                        source,
                    })
                });
            (dir, st)
        })
        .collect()
}

/// Removes leftovers of every earlier run: state directories, namespaces
/// named `sdnlab-*`, root interfaces named `sl<4 hex>...`, OVS processes
/// recorded in state files. Returns what was removed.
pub async fn clean() -> Result<Vec<String>, NetError> {
    let mut removed = Vec::new();
    for (dir, st) in list_states() {
        if let Ok(st) = st {
            if st.pid != std::process::id() && is_sdnlab(st.pid) {
                // The `up` process still runs: ask it to tear down first.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(st.pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            let _ = teardown(&st).await;
            removed.push(format!("run {}", st.id));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    for pid in stop_processes_under(Path::new(STATE_ROOT)) {
        removed.push(format!("process {pid}"));
    }
    for ns in kernel::netns_list(NETNS_PREFIX) {
        if kernel::netns_delete(&ns).is_ok() {
            removed.push(format!("namespace {ns}"));
        }
    }
    removed.extend(crate::beds::clean_orphans().await?);
    let root = Nl::here()?;
    for name in root.names_with_prefix(LINK_PREFIX).await? {
        let ours = name.len() > 6
            && name[2..6]
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
        if ours && root.delete(&name).await.is_ok() {
            removed.push(format!("interface {name}"));
        }
    }
    Ok(removed)
}

/// Stops switch `name` of a run, or starts it again, whatever its kind:
/// a Linux bridge goes down or up; an Open vSwitch bridge is deleted, then
/// created again with its ports and controller; an sdnlab switch process
/// is stopped, then started again with its ports and controller. `st` is
/// updated (and saved) with a restarted process; a started child is handed
/// back for the caller to own.
pub async fn switch_set(st: &mut State, name: &str, start: bool) -> Result<Option<std::process::Child>, NetError> {
    let br = st
        .switches
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, b)| b.clone())
        .ok_or_else(|| NetError::NotFound(format!("no switch '{name}'")))?;
    match st.options.kind {
        SwitchKind::Bridge => {
            Nl::here()?.set_up(&br, start).await?;
            Ok(None)
        }
        // Open vSwitch, or sdnlab's switch managed through OVSDB.
        SwitchKind::Ovs | SwitchKind::Sdnlab if st.ovs.is_some() => {
            let dir = st
                .ovs
                .as_ref()
                .ok_or_else(|| NetError::Refused("this run has no Open vSwitch".into()))?
                .dir
                .clone();
            if start {
                let topo = st
                    .topology
                    .as_ref()
                    .ok_or_else(|| NetError::Refused("this run's state has no topology".into()))?;
                crate::ovs::add_switches_at(
                    &dir,
                    topo,
                    st,
                    st.options.controller.as_deref(),
                    st.options.ssl.as_ref(),
                    Some(name),
                )?;
            } else {
                crate::ovs::vsctl_at(&dir, &["--if-exists", "del-br", &br])?;
            }
            Ok(None)
        }
        SwitchKind::Ovs => Err(NetError::Refused("this run has no Open vSwitch".into())),
        SwitchKind::Sdnlab => {
            let i = st
                .sdnlab
                .iter()
                .position(|p| p.name == name)
                .ok_or_else(|| NetError::Refused(format!("switch '{name}' has no process (no ports)")))?;
            let running = st.sdnlab[i].pid != 0 && is_sdnlab(st.sdnlab[i].pid);
            let child = if start {
                if running {
                    return Err(NetError::Refused(format!(
                        "switch '{name}' is running (pid {})",
                        st.sdnlab[i].pid
                    )));
                }
                let (p, child) = crate::sdnsw::restart(st, name)?;
                st.sdnlab[i] = p;
                Some(child)
            } else {
                if !running {
                    return Err(NetError::Refused(format!("switch '{name}' is stopped already")));
                }
                crate::procs::stop_pid(st.sdnlab[i].pid);
                st.sdnlab[i].pid = 0;
                None
            };
            let path = st.dir().join("state.json");
            std::fs::write(&path, serde_json::to_vec_pretty(&*st)?)
                .map_err(NetError::io(path.display().to_string()))?;
            Ok(child)
        }
    }
}

/// Takes a run down from any process: asks its `up` process to (it tears
/// down its own network on SIGTERM) and waits for it, else removes
/// everything the state names itself.
pub async fn stop_run(st: &State) -> Result<(), NetError> {
    let dir = st.dir();
    if st.pid != std::process::id() && is_sdnlab(st.pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(st.pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let t = std::time::Instant::now();
        while dir.exists() && t.elapsed().as_secs() < 30 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        if !dir.exists() {
            return Ok(());
        }
    }
    let r = teardown(st).await;
    let _ = std::fs::remove_dir_all(&dir);
    r
}
