//! The `lb` controller app: a virtual IP served by replicas behind one
//! OpenFlow 1.3 switch. Reactive mode places each new TCP flow on the
//! replica its policy picks, with a rule pair rewriting client->VIP to the
//! replica and back; proactive mode leaves the choice to a select group.
//! It answers ARP for the VIP, checks the replicas' health, polls port
//! statistics for the policies that use them, and passes every other
//! packet on (to `l2-learning`).
//!
//! State shared by the switches (the policy, which replica each flow went
//! to, health, metrics) lives in `Lb`, behind one lock taken once per new
//! flow; the per-switch part only holds its timers and its agent socket.

use crate::agent;
use crate::config::{Config, HealthKind, LoadCounter, Mode};
use crate::packet::{self, Arp, Frame, Tcp};
use crate::policy::{Kind, Policy, ServerReport};
use controller::app::{SwitchApp, Verdict};
use hdrhistogram::Histogram;
use ofconn::{Session, SwitchInfo};
use ofwire::hot::{write_flow_mod13, write_packet_out13, PacketInView};
use ofwire::oxm::Oxm;
use ofwire::{v13, MacAddr, Message};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Cookies of the app's rules: the high bits mark them as ours, bit 0 the
/// direction (0 forward, 1 reverse), bits 1..17 the replica.
const COOKIE: u64 = 0x1b1b_0000_0000_0000;
const COOKIE_MASK: u64 = 0xffff_0000_0000_0000;
const FLOW_PRIORITY: u16 = 200;
const VIP_PRIORITY: u16 = 300;
const GROUP_ID: u32 = 1;

fn cookie(replica: usize, reverse: bool) -> u64 {
    COOKIE | ((replica as u64) << 1) | reverse as u64
}

/// A client's TCP connection to the VIP.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, serde::Serialize)]
pub struct FlowKey {
    pub client: Ipv4Addr,
    pub client_port: u16,
    pub vip_port: u16,
}

#[derive(Clone, Copy, Debug)]
struct Placed {
    replica: usize,
    /// The switch port the client is behind.
    client_port: u32,
    rules_live: bool,
    /// Forgotten after this, once its rules are gone.
    forget_at: Instant,
}

/// What the app measured, for the bench and the controller's exit line.
pub struct Metrics {
    /// PACKET_IN of a new flow to its FLOW_MODs written, nanoseconds.
    pub decision_ns: Histogram<u64>,
    /// Age of the newest PortStats reply at each decision, microseconds.
    pub stats_age_us: Histogram<u64>,
    pub new_flows: u64,
    /// Flows that came back after their rules expired, to the same replica.
    pub returning: u64,
    /// New flows dropped because no replica was alive.
    pub refused: u64,
    /// Agent questions left unanswered in time.
    pub agent_unanswered: u64,
    pub flows_per_replica: Vec<u64>,
    /// Forward rules installed and not yet removed (each has a reverse twin).
    pub rules_live: u64,
    pub rules_live_max: u64,
    /// (seconds since start, replica, alive) for every health change.
    pub health_events: Vec<(f64, usize, bool)>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct MetricsSnapshot {
    pub policy: String,
    pub decisions: u64,
    pub decision_us_p50: f64,
    pub decision_us_p99: f64,
    pub decision_us_max: f64,
    pub stats_age_ms_mean: Option<f64>,
    pub stats_age_ms_p99: Option<f64>,
    pub new_flows: u64,
    pub returning: u64,
    pub refused: u64,
    pub agent_unanswered: u64,
    pub flows_per_replica: Vec<u64>,
    pub rules_live: u64,
    pub rules_live_max: u64,
    pub health_events: Vec<(f64, usize, bool)>,
    pub delta: f64,
}

struct State {
    policy: Policy,
    flows: HashMap<FlowKey, Placed>,
    failures: Vec<u32>,
    /// An ARP health probe is out and unanswered.
    arp_pending: Vec<bool>,
    /// Bumped whenever a replica's health changes (proactive groups follow).
    health_generation: u64,
    last_stats: Option<Instant>,
    /// Clients seen asking for the VIP, with their switch port (proactive
    /// mode's per-client return rules).
    clients: HashMap<Ipv4Addr, u32>,
    metrics: Metrics,
}

/// The app's shared half.
pub struct Lb {
    pub cfg: Config,
    kind: Kind,
    started: Instant,
    state: Mutex<State>,
}

impl Lb {
    pub fn new(cfg: Config) -> Arc<Lb> {
        let n = cfg.replicas.len();
        let hist = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        Arc::new(Lb {
            kind: Kind::from_name(&cfg.policy).expect("validated"),
            started: Instant::now(),
            state: Mutex::new(State {
                policy: Policy::new(&cfg),
                flows: HashMap::new(),
                failures: vec![0; n],
                arp_pending: vec![false; n],
                health_generation: 0,
                last_stats: None,
                clients: HashMap::new(),
                metrics: Metrics {
                    decision_ns: hist(),
                    stats_age_us: hist(),
                    new_flows: 0,
                    returning: 0,
                    refused: 0,
                    agent_unanswered: 0,
                    flows_per_replica: vec![0; n],
                    rules_live: 0,
                    rules_live_max: 0,
                    health_events: Vec::new(),
                },
            }),
            cfg,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The per-switch instance, for `controller::app` factories.
    pub fn app(self: &Arc<Self>) -> LbSwitch {
        LbSwitch {
            lb: self.clone(),
            agents: None,
            next_stats: Instant::now(),
            next_health: Instant::now() + self.cfg.health_interval,
            next_sweep: Instant::now() + Duration::from_secs(1),
            group_generation: None,
            dpid: 0,
        }
    }

    /// The controller app factory.
    pub fn factory(self: &Arc<Self>) -> controller::app::AppFactory {
        let lb = self.clone();
        Arc::new(move |_: &controller::app::Context| Box::new(lb.app()) as Box<dyn SwitchApp>)
    }

    pub fn is_alive(&self, replica: usize) -> bool {
        self.lock().policy.is_alive(replica)
    }

    /// Which replica a flow is placed on, if the app remembers it.
    pub fn placed(&self, key: &FlowKey) -> Option<usize> {
        self.lock().flows.get(key).map(|p| p.replica)
    }

    pub fn snapshot(&self) -> MetricsSnapshot {
        let st = self.lock();
        let m = &st.metrics;
        let us = |ns: u64| ns as f64 / 1000.0;
        let aged = !m.stats_age_us.is_empty();
        MetricsSnapshot {
            policy: self.cfg.policy.clone(),
            decisions: m.decision_ns.len(),
            decision_us_p50: us(m.decision_ns.value_at_quantile(0.5)),
            decision_us_p99: us(m.decision_ns.value_at_quantile(0.99)),
            decision_us_max: us(m.decision_ns.max()),
            stats_age_ms_mean: aged.then(|| m.stats_age_us.mean() / 1000.0),
            stats_age_ms_p99: aged.then(|| m.stats_age_us.value_at_quantile(0.99) as f64 / 1000.0),
            new_flows: m.new_flows,
            returning: m.returning,
            refused: m.refused,
            agent_unanswered: m.agent_unanswered,
            flows_per_replica: m.flows_per_replica.clone(),
            rules_live: m.rules_live,
            rules_live_max: m.rules_live_max,
            health_events: m.health_events.clone(),
            delta: st.policy.delta(),
        }
    }

    /// One health check result for `replica`.
    pub fn health_result(&self, replica: usize, ok: bool) {
        let mut st = self.lock();
        let was = st.policy.is_alive(replica);
        if ok {
            st.failures[replica] = 0;
        } else {
            st.failures[replica] = st.failures[replica].saturating_add(1);
        }
        let alive = ok || (was && st.failures[replica] < self.cfg.health_failures);
        if alive != was {
            st.policy.set_alive(replica, alive);
            st.health_generation += 1;
            let at = self.started.elapsed().as_secs_f64();
            st.metrics.health_events.push((at, replica, alive));
        }
    }

    /// Starts the TCP health checks (connect to each replica's management
    /// address on the first service port), on a thread of their own that
    /// ends with the app.
    pub fn start_tcp_health(self: &Arc<Self>) {
        if self.cfg.health != HealthKind::Tcp {
            return;
        }
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("lb-health".into())
            .spawn(move || loop {
                let Some(lb) = weak.upgrade() else { return };
                let (interval, timeout, port) = (lb.cfg.health_interval, lb.cfg.health_timeout, lb.cfg.ports[0]);
                let targets: Vec<_> = lb.cfg.replicas.iter().map(|r| r.mgmt).collect();
                drop(lb);
                let results: Vec<(usize, bool)> = targets
                    .iter()
                    .enumerate()
                    .filter_map(|(i, m)| m.map(|ip| (i, ip)))
                    .map(|(i, ip)| {
                        let addr = std::net::SocketAddr::from((ip, port));
                        (i, std::net::TcpStream::connect_timeout(&addr, timeout).is_ok())
                    })
                    .collect();
                let Some(lb) = weak.upgrade() else { return };
                for (i, ok) in results {
                    lb.health_result(i, ok);
                }
                drop(lb);
                std::thread::sleep(interval);
            })
            .expect("spawning the health thread");
    }

    fn elapsed_s(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.started).as_secs_f64()
    }
}

/// The per-switch half.
pub struct LbSwitch {
    lb: Arc<Lb>,
    agents: Option<agent::Client>,
    next_stats: Instant,
    next_health: Instant,
    next_sweep: Instant,
    /// The health generation the switch's select group reflects.
    group_generation: Option<u64>,
    dpid: u64,
}

fn apply(actions: &[v13::Action]) -> [v13::Instruction<&[v13::Action]>; 1] {
    [v13::Instruction::ApplyActions(actions)]
}

impl LbSwitch {
    fn send_flow(
        &self,
        sw: &mut Session,
        cookie: u64,
        idle: u16,
        priority: u16,
        fields: &[Oxm],
        actions: &[v13::Action],
    ) {
        let mut fm = v13::FlowMod::add(priority);
        fm.cookie = cookie;
        fm.idle_timeout = idle;
        fm.flags = if cookie & 1 == 0 && idle > 0 {
            v13::flow_mod_flags::SEND_FLOW_REM
        } else {
            0
        };
        let xid = sw.xid();
        // At most a dozen fields and actions: always fits.
        let _ = write_flow_mod13(sw.transmit(), xid, &fm, fields, &apply(actions));
    }

    fn forward_actions(&self, replica: usize) -> [v13::Action; 3] {
        let r = &self.lb.cfg.replicas[replica];
        [
            v13::Action::SetField(Oxm::EthDst(r.mac, None)),
            v13::Action::SetField(Oxm::Ipv4Dst(r.ip, None)),
            v13::Action::Output {
                port: r.port,
                max_len: 0,
            },
        ]
    }

    fn reverse_actions(&self, client_port: u32) -> [v13::Action; 3] {
        [
            v13::Action::SetField(Oxm::EthSrc(self.lb.cfg.vip_mac, None)),
            v13::Action::SetField(Oxm::Ipv4Src(self.lb.cfg.vip, None)),
            v13::Action::Output {
                port: client_port,
                max_len: 0,
            },
        ]
    }

    /// The rule pair of flow `key` placed on `replica`, the client behind
    /// `client_port`: client->VIP rewritten to the replica, and back.
    /// Returns both directions' actions.
    fn install_pair(
        &self,
        sw: &mut Session,
        key: &FlowKey,
        replica: usize,
        client_port: u32,
    ) -> ([v13::Action; 3], [v13::Action; 3]) {
        let cfg = &self.lb.cfg;
        let r = &cfg.replicas[replica];
        let tcp = [Oxm::EthType(packet::ETH_IPV4), Oxm::IpProto(packet::IPPROTO_TCP)];
        let reverse = [
            tcp[0].clone(),
            tcp[1].clone(),
            Oxm::Ipv4Src(r.ip, None),
            Oxm::Ipv4Dst(key.client, None),
            Oxm::TcpSrc(key.vip_port),
            Oxm::TcpDst(key.client_port),
        ];
        let back = self.reverse_actions(client_port);
        self.send_flow(
            sw,
            cookie(replica, true),
            cfg.idle_timeout,
            FLOW_PRIORITY,
            &reverse,
            &back,
        );
        let forward = [
            tcp[0].clone(),
            tcp[1].clone(),
            Oxm::Ipv4Src(key.client, None),
            Oxm::Ipv4Dst(cfg.vip, None),
            Oxm::TcpSrc(key.client_port),
            Oxm::TcpDst(key.vip_port),
        ];
        let to_replica = self.forward_actions(replica);
        self.send_flow(
            sw,
            cookie(replica, false),
            cfg.idle_timeout,
            FLOW_PRIORITY,
            &forward,
            &to_replica,
        );
        (to_replica, back)
    }

    fn packet_out(&self, sw: &mut Session, pi: &PacketInView, actions: &[v13::Action]) {
        let xid = sw.xid();
        let data = if pi.buffer_id == v13::NO_BUFFER { pi.data } else { &[] };
        let _ = write_packet_out13(sw.transmit(), xid, pi.buffer_id, pi.in_port, actions, data);
    }

    fn send_arp(&self, sw: &mut Session, port: u32, eth_dst: MacAddr, arp: &Arp) {
        let xid = sw.xid();
        let frame = packet::arp_frame(eth_dst, arp);
        let _ = write_packet_out13(
            sw.transmit(),
            xid,
            v13::NO_BUFFER,
            v13::port::CONTROLLER,
            &[v13::Action::Output { port, max_len: 0 }],
            &frame,
        );
    }

    fn new_flow(&mut self, sw: &mut Session, pi: &PacketInView, t: &Tcp) {
        let start = Instant::now();
        let lb = self.lb.clone();
        let key = FlowKey {
            client: t.src,
            client_port: t.sport,
            vip_port: t.dport,
        };
        let mut st = lb.lock();
        let remembered = st
            .flows
            .get(&key)
            .filter(|p| st.policy.is_alive(p.replica))
            .map(|p| p.replica);
        let replica = match remembered {
            Some(r) => {
                st.metrics.returning += 1;
                if !st.flows[&key].rules_live {
                    st.policy.flow_resumed(r);
                }
                Some(r)
            }
            None => {
                let reports = if self.lb.kind.asks_servers() {
                    let alive: Vec<_> = (0..lb.cfg.replicas.len())
                        .map(|i| st.policy.is_alive(i).then(|| lb.cfg.agent_addr(i)).flatten())
                        .collect();
                    drop(st);
                    let reports = self.ask_agents(&alive);
                    st = lb.lock();
                    let unanswered = alive
                        .iter()
                        .zip(&reports)
                        .filter(|(a, r)| a.is_some() && r.is_none())
                        .count();
                    st.metrics.agent_unanswered += unanswered as u64;
                    reports
                } else {
                    Vec::new()
                };
                let hash = crate::policy::fnv1a(
                    &[&t.src.octets()[..], &t.sport.to_be_bytes(), &t.dport.to_be_bytes()].concat(),
                    0xcbf2_9ce4_8422_2325,
                );
                let pick = st.policy.choose(hash, &reports);
                if let Some(r) = pick {
                    st.metrics.new_flows += 1;
                    st.metrics.flows_per_replica[r] += 1;
                }
                pick
            }
        };
        let Some(replica) = replica else {
            st.metrics.refused += 1;
            return;
        };
        let was_live = st.flows.get(&key).is_some_and(|p| p.rules_live);
        st.flows.insert(
            key,
            Placed {
                replica,
                client_port: pi.in_port,
                rules_live: true,
                forget_at: start + lb.cfg.memory,
            },
        );
        if !was_live {
            st.metrics.rules_live += 1;
            st.metrics.rules_live_max = st.metrics.rules_live_max.max(st.metrics.rules_live);
        }
        let stats_age = st.last_stats.map(|s| start.saturating_duration_since(s));
        drop(st);
        let (to_replica, _) = self.install_pair(sw, &key, replica, pi.in_port);
        // The first segment itself, rewritten as its rule would.
        self.packet_out(sw, pi, &to_replica);
        let took = start.elapsed().as_nanos() as u64;
        let mut st = lb.lock();
        let _ = st.metrics.decision_ns.record(took.max(1));
        if let Some(age) = stats_age.filter(|_| lb.kind.reads_port_stats()) {
            let _ = st.metrics.stats_age_us.record((age.as_micros() as u64).max(1));
        }
    }

    fn ask_agents(&mut self, agents: &[Option<std::net::SocketAddr>]) -> Vec<Option<ServerReport>> {
        if self.agents.is_none() {
            self.agents = agent::Client::new().ok();
        }
        let Some(c) = self.agents.as_mut() else {
            return vec![None; agents.len()];
        };
        // Only cpuq-load looks at the connections, the costly part to count.
        c.ask(agents, self.lb.cfg.agent_timeout, self.lb.kind == Kind::CpuqLoad)
            .into_iter()
            .map(|a| a.map(|a| a.report()))
            .collect()
    }

    /// A response from a replica whose rules expired while the connection
    /// lived on: put the pair back if the app remembers the flow.
    fn returning_response(&mut self, sw: &mut Session, pi: &PacketInView, t: &Tcp, replica: usize) -> Verdict {
        let key = FlowKey {
            client: t.dst,
            client_port: t.dport,
            vip_port: t.sport,
        };
        let mut st = self.lb.lock();
        let Some(p) = st.flows.get(&key).copied().filter(|p| p.replica == replica) else {
            return Verdict::Continue;
        };
        if !p.rules_live {
            st.policy.flow_resumed(replica);
            st.metrics.rules_live += 1;
        }
        st.metrics.returning += 1;
        st.flows.insert(key, Placed { rules_live: true, ..p });
        drop(st);
        // Rules for both directions, but this packet goes back to the client.
        let (_, back) = self.install_pair(sw, &key, replica, p.client_port);
        self.packet_out(sw, pi, &back);
        Verdict::Done
    }

    /// Proactive mode: the select group (live replicas' buckets) and the
    /// rule sending VIP traffic to it.
    fn sync_group(&mut self, sw: &mut Session) {
        let st = self.lb.lock();
        let generation = st.health_generation;
        if self.group_generation == Some(generation) {
            return;
        }
        let alive: Vec<usize> = (0..self.lb.cfg.replicas.len())
            .filter(|&i| st.policy.is_alive(i))
            .collect();
        drop(st);
        let buckets = alive
            .iter()
            .map(|&i| v13::Bucket {
                weight: self.lb.cfg.replicas[i].weight as u16,
                watch_port: v13::port::ANY,
                watch_group: v13::GROUP_ANY,
                actions: self.forward_actions(i).to_vec(),
            })
            .collect();
        let command = if self.group_generation.is_none() {
            v13::GroupModCommand::Add
        } else {
            v13::GroupModCommand::Modify
        };
        sw.send13(v13::Body::GroupMod(v13::GroupMod {
            command,
            group_type: v13::GroupType::Select,
            group_id: GROUP_ID,
            buckets,
        }));
        if self.group_generation.is_none() {
            for &port in &self.lb.cfg.ports {
                let fields = [
                    Oxm::EthType(packet::ETH_IPV4),
                    Oxm::IpProto(packet::IPPROTO_TCP),
                    Oxm::Ipv4Dst(self.lb.cfg.vip, None),
                    Oxm::TcpDst(port),
                ];
                self.send_flow(
                    sw,
                    COOKIE | 0xfffe,
                    0,
                    VIP_PRIORITY,
                    &fields,
                    &[v13::Action::Group(GROUP_ID)],
                );
            }
        }
        self.group_generation = Some(generation);
    }

    /// Proactive mode: responses from any replica to this client, rewritten.
    fn client_return_rules(&self, sw: &mut Session, client: Ipv4Addr, client_port: u32) {
        for (i, r) in self.lb.cfg.replicas.iter().enumerate() {
            for &port in &self.lb.cfg.ports {
                let fields = [
                    Oxm::EthType(packet::ETH_IPV4),
                    Oxm::IpProto(packet::IPPROTO_TCP),
                    Oxm::Ipv4Src(r.ip, None),
                    Oxm::Ipv4Dst(client, None),
                    Oxm::TcpSrc(port),
                ];
                self.send_flow(
                    sw,
                    cookie(i, true),
                    0,
                    VIP_PRIORITY,
                    &fields,
                    &self.reverse_actions(client_port),
                );
            }
        }
    }

    fn on_arp(&mut self, sw: &mut Session, pi: &PacketInView, a: &Arp) -> Verdict {
        let cfg = &self.lb.cfg;
        if a.tpa != cfg.vip {
            return Verdict::Continue;
        }
        if a.op == 1 {
            let reply = Arp {
                op: 2,
                sha: cfg.vip_mac,
                spa: cfg.vip,
                tha: a.sha,
                tpa: a.spa,
            };
            self.send_arp(sw, pi.in_port, a.sha, &reply);
            if cfg.mode == Mode::Proactive && !cfg.replicas.iter().any(|r| r.ip == a.spa) {
                let first = self.lb.lock().clients.insert(a.spa, pi.in_port) != Some(pi.in_port);
                if first {
                    self.client_return_rules(sw, a.spa, pi.in_port);
                }
            }
        } else if let Some(i) = cfg.replicas.iter().position(|r| r.ip == a.spa) {
            // An answer to an ARP health probe.
            if cfg.health == HealthKind::Arp {
                self.lb.lock().arp_pending[i] = false;
                self.lb.health_result(i, true);
            }
        }
        Verdict::Done
    }

    fn probe_arp(&mut self, sw: &mut Session) {
        let cfg = &self.lb.cfg;
        let pending: Vec<bool> = {
            let mut st = self.lb.lock();
            std::mem::replace(&mut st.arp_pending, vec![true; cfg.replicas.len()])
        };
        for (i, r) in cfg.replicas.iter().enumerate() {
            if pending[i] {
                self.lb.health_result(i, false);
            }
            let probe = Arp {
                op: 1,
                sha: cfg.vip_mac,
                spa: cfg.vip,
                tha: MacAddr::ZERO,
                tpa: r.ip,
            };
            self.send_arp(sw, r.port, MacAddr::BROADCAST, &probe);
        }
    }

    fn on_port_stats(&mut self, stats: &[v13::PortStats]) {
        let cfg = &self.lb.cfg;
        let bytes: Vec<Option<u64>> = cfg
            .replicas
            .iter()
            .map(|r| {
                stats
                    .iter()
                    .find(|s| s.port_no == r.port)
                    .map(|s| match cfg.load_counter {
                        LoadCounter::Rx => s.counters.rx_bytes,
                        LoadCounter::Tx => s.counters.tx_bytes,
                    })
            })
            .collect();
        let now = Instant::now();
        let at = self.lb.elapsed_s(now);
        let mut st = self.lb.lock();
        st.policy.on_port_stats(&bytes, at);
        st.last_stats = Some(now);
    }

    fn on_flow_removed(&mut self, fr: &v13::FlowRemoved) {
        if fr.cookie & COOKIE_MASK != COOKIE || fr.cookie & 1 == 1 {
            return;
        }
        let replica = ((fr.cookie & 0xffff_ffff) >> 1) as usize;
        if replica >= self.lb.cfg.replicas.len() {
            return;
        }
        let mut key = FlowKey {
            client: Ipv4Addr::UNSPECIFIED,
            client_port: 0,
            vip_port: 0,
        };
        for f in &fr.match_.fields {
            match f {
                Oxm::Ipv4Src(ip, None) => key.client = *ip,
                Oxm::TcpSrc(p) => key.client_port = *p,
                Oxm::TcpDst(p) => key.vip_port = *p,
                _ => {}
            }
        }
        let mut st = self.lb.lock();
        st.policy.flow_ended(replica);
        st.metrics.rules_live = st.metrics.rules_live.saturating_sub(1);
        let forget_at = Instant::now() + self.lb.cfg.memory;
        if let Some(p) = st.flows.get_mut(&key) {
            p.rules_live = false;
            p.forget_at = forget_at;
        }
    }
}

impl SwitchApp for LbSwitch {
    fn name(&self) -> &'static str {
        "lb"
    }

    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        self.dpid = info.datapath_id;
        if info.version != ofwire::OFP13_VERSION {
            tracing::info!(
                "sdnlab lb: switch {:016x} speaks OpenFlow 1.0; the lb app needs 1.3 (set-field rewrites, groups) and leaves it to the other apps",
                info.datapath_id
            );
            return;
        }
        if self.lb.cfg.clear_on_start {
            let mut fm = v13::FlowMod::add(0);
            fm.command = v13::FlowModCommand::Delete;
            fm.table_id = v13::TABLE_ALL;
            sw.send13(v13::Body::FlowMod(fm));
            sw.send13(v13::Body::GroupMod(v13::GroupMod {
                command: v13::GroupModCommand::Delete,
                group_type: v13::GroupType::All,
                group_id: v13::GROUP_ALL,
                buckets: Vec::new(),
            }));
        }
        if self.lb.cfg.mode == Mode::Proactive {
            self.sync_group(sw);
        }
    }

    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        if sw.version() != ofwire::OFP13_VERSION {
            return Verdict::Continue;
        }
        let cfg = &self.lb.cfg;
        match packet::parse(pi.data) {
            Frame::Arp(a) => self.on_arp(sw, pi, &a),
            Frame::Tcp(t) if t.dst == cfg.vip => {
                if !cfg.ports.contains(&t.dport) {
                    return Verdict::Done;
                }
                if cfg.mode == Mode::Proactive {
                    self.packet_out(sw, pi, &[v13::Action::Group(GROUP_ID)]);
                } else {
                    self.new_flow(sw, pi, &t);
                }
                Verdict::Done
            }
            Frame::Tcp(t) if cfg.ports.contains(&t.sport) && cfg.mode == Mode::Reactive => {
                match cfg.replicas.iter().position(|r| r.ip == t.src) {
                    Some(i) => self.returning_response(sw, pi, &t, i),
                    None => Verdict::Continue,
                }
            }
            Frame::OtherIpv4 { dst } if dst == cfg.vip => Verdict::Done,
            _ => Verdict::Continue,
        }
    }

    fn message(&mut self, _sw: &mut Session, msg: &Message) {
        let ofwire::Body::V13(body) = &msg.body else { return };
        match body {
            v13::Body::MultipartReply(r) => {
                if let v13::MultipartReplyBody::PortStats(stats) = &r.body {
                    self.on_port_stats(stats);
                }
            }
            v13::Body::FlowRemoved(fr) => self.on_flow_removed(fr),
            _ => {}
        }
    }

    fn on_timer(&mut self, sw: &mut Session, now: Instant) -> Option<Instant> {
        if sw.version() != ofwire::OFP13_VERSION {
            return None;
        }
        let lb = self.lb.clone();
        let cfg = &lb.cfg;
        let mut next = self.next_sweep;
        if now >= self.next_sweep {
            let mut st = self.lb.lock();
            st.flows.retain(|_, p| p.rules_live || p.forget_at > now);
            drop(st);
            self.next_sweep = now + Duration::from_secs(1);
            next = self.next_sweep;
        }
        if self.lb.kind.reads_port_stats() {
            if now >= self.next_stats {
                sw.send13(v13::Body::MultipartRequest(v13::MultipartRequest {
                    flags: 0,
                    body: v13::MultipartRequestBody::PortStats {
                        port_no: v13::port::ANY,
                    },
                }));
                self.next_stats = now + cfg.stats_period;
            }
            next = next.min(self.next_stats);
        }
        if cfg.health == HealthKind::Arp {
            if now >= self.next_health {
                self.probe_arp(sw);
                self.next_health = now + cfg.health_interval;
            }
            next = next.min(self.next_health);
        }
        if cfg.mode == Mode::Proactive {
            self.sync_group(sw);
            next = next.min(now + Duration::from_millis(100));
        }
        Some(next)
    }
}

/// An `Lb` that can be replaced while the switch stays connected: a
/// benchmark runs policy after policy on one switch. The next event after
/// `set` starts the new app as if the switch had just connected (its flow
/// table and groups cleared, its own rules re-made) and puts the table-miss
/// rule back for the apps after it.
pub struct LbSlot {
    current: Mutex<Arc<Lb>>,
}

impl LbSlot {
    pub fn new(lb: Arc<Lb>) -> Arc<LbSlot> {
        Arc::new(LbSlot {
            current: Mutex::new(lb),
        })
    }

    pub fn set(&self, lb: Arc<Lb>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = lb;
    }

    pub fn get(&self) -> Arc<Lb> {
        self.current.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn factory(self: &Arc<Self>) -> controller::app::AppFactory {
        let slot = self.clone();
        Arc::new(move |_: &controller::app::Context| {
            Box::new(SlotSwitch {
                slot: slot.clone(),
                running: None,
                info: None,
            }) as Box<dyn SwitchApp>
        })
    }
}

struct SlotSwitch {
    slot: Arc<LbSlot>,
    running: Option<(Arc<Lb>, LbSwitch)>,
    info: Option<SwitchInfo>,
}

impl SlotSwitch {
    /// The app for the slot's current `Lb`, restarted if it changed.
    fn app(&mut self, sw: &mut Session) -> Option<&mut LbSwitch> {
        let lb = self.slot.get();
        let stale = self.running.as_ref().is_none_or(|(l, _)| !Arc::ptr_eq(l, &lb));
        if stale {
            let info = self.info.as_ref()?;
            let mut app = lb.app();
            app.switch_up(sw, info);
            controller::apps::install_table_miss(sw, info);
            self.running = Some((lb, app));
        }
        self.running.as_mut().map(|(_, a)| a)
    }
}

impl SwitchApp for SlotSwitch {
    fn name(&self) -> &'static str {
        "lb"
    }

    fn switch_up(&mut self, sw: &mut Session, info: &SwitchInfo) {
        self.info = Some(info.clone());
        let lb = self.slot.get();
        let mut app = lb.app();
        app.switch_up(sw, info);
        self.running = Some((lb, app));
    }

    fn packet_in(&mut self, sw: &mut Session, pi: &PacketInView) -> Verdict {
        match self.app(sw) {
            Some(a) => a.packet_in(sw, pi),
            None => Verdict::Continue,
        }
    }

    fn message(&mut self, sw: &mut Session, msg: &Message) {
        if let Some(a) = self.app(sw) {
            a.message(sw, msg);
        }
    }

    fn on_timer(&mut self, sw: &mut Session, now: Instant) -> Option<Instant> {
        let next = self.app(sw).and_then(|a| a.on_timer(sw, now));
        // Look at the slot often enough to follow a change soon.
        let soon = now + Duration::from_millis(50);
        Some(next.map_or(soon, |n| n.min(soon)))
    }
}
