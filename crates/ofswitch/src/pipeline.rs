//! The OpenFlow 1.3 pipeline, without I/O: flow tables, groups, meters and
//! port state; FLOW_MOD, GROUP_MOD, METER_MOD and PORT_MOD applied with the
//! errors the spec names; and forwarding.
//!
//! Forwarding is split in two so datapath threads can cache it: `plan`
//! walks the tables for a key (goto_table, write_metadata, apply, write and
//! clear actions, the action set in the spec's order, groups resolved for
//! that key and the current port liveness) and returns the steps; `execute`
//! runs the steps on a frame (rewrites, meters, counters, outputs). A plan
//! depends only on the key and the pipeline, so it stays valid until the
//! pipeline's `generation` changes.

use crate::actions::{self, Act, FieldWrite, Packet};
use crate::classifier::Classifier;
use crate::flow::{BandState, Counter, Group, Meter, MeterVerdict, Program, Rule, RuleCounters};
use crate::key::Key;
use crate::matching;
use ofwire::error::{
    BadActionCode, BadInstructionCode, BadRequestCode, FlowModFailedCode, GroupModFailedCode, MeterModFailedCode,
    PortModFailedCode,
};
use ofwire::v13::FlowModCommand;
use ofwire::v13::{self, port, FlowMod, GroupMod, GroupModCommand, GroupType, Instruction, MeterMod, MeterModCommand};
use ofwire::{ErrorCode, FlowRemovedReason, MacAddr, PacketInReason};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

mod tables;

/// Port configuration bits (`ofp_port_config`).
pub mod port_config {
    pub const PORT_DOWN: u32 = 1;
    pub const NO_RECV: u32 = 4;
    pub const NO_FWD: u32 = 32;
    pub const NO_PACKET_IN: u32 = 64;
}

/// A port as the pipeline sees it.
#[derive(Debug)]
pub struct PortState {
    pub port_no: u32,
    pub name: String,
    pub hw_addr: MacAddr,
    pub config: u32,
    pub link_up: bool,
    /// kbit/s, for the port description.
    pub speed_kbps: u32,
    pub counters: Arc<PortCounters>,
}

impl PortState {
    /// Port `port_no`, up, with this name and address, no config bits,
    /// `speed_kbps` fast, and counters of its own.
    pub fn up(port_no: u32, name: impl Into<String>, hw_addr: MacAddr, speed_kbps: u32) -> PortState {
        PortState {
            port_no,
            name: name.into(),
            hw_addr,
            config: 0,
            link_up: true,
            speed_kbps,
            counters: Arc::new(PortCounters::default()),
        }
    }

    pub fn live(&self) -> bool {
        self.link_up && self.config & port_config::PORT_DOWN == 0
    }

    pub fn desc(&self) -> v13::Port {
        v13::Port {
            port_no: self.port_no,
            hw_addr: self.hw_addr,
            name: self.name.clone(),
            config: self.config,
            // OFPPS_LINK_DOWN = 1, OFPPS_LIVE = 4.
            state: if self.link_up { 4 } else { 1 },
            curr: 0x1000 | 0x0800, // OFPPF_OTHER | OFPPF_COPPER
            advertised: 0,
            supported: 0,
            peer: 0,
            curr_speed: self.speed_kbps,
            max_speed: self.speed_kbps,
        }
    }
}

/// Per-port counters, updated by datapath threads.
#[derive(Debug, Default)]
pub struct PortCounters {
    pub rx: Counter,
    pub tx: Counter,
    pub rx_dropped: std::sync::atomic::AtomicU64,
    pub tx_dropped: std::sync::atomic::AtomicU64,
    pub tx_errors: std::sync::atomic::AtomicU64,
}

impl PortCounters {
    /// The counters as port statistics report them (1.0 and 1.3 alike).
    pub fn snapshot(&self) -> ofwire::PortCounters {
        let ld = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let (rx, tx) = (self.rx.get(), self.tx.get());
        ofwire::PortCounters {
            rx_packets: rx.packet_count,
            tx_packets: tx.packet_count,
            rx_bytes: rx.byte_count,
            tx_bytes: tx.byte_count,
            rx_dropped: ld(&self.rx_dropped),
            tx_dropped: ld(&self.tx_dropped),
            tx_errors: ld(&self.tx_errors),
            ..Default::default()
        }
    }
}

/// One flow table.
#[derive(Default)]
pub struct Table {
    pub rules: Classifier,
    pub lookups: Counter,
    pub matched: Counter,
}

/// A step of a forwarding plan.
#[derive(Clone, Debug)]
pub enum Step {
    /// A table was looked up (counters), and whether a rule matched.
    Lookup {
        table: u8,
        matched: bool,
    },
    /// A rule matched (counters, idle timeout).
    Hit(Arc<Rule>),
    Meter(Arc<Meter>),
    /// A rewrite (set_field, push/pop VLAN, TTL).
    Act(Act),
    Output(u32),
    ToController {
        max_len: u16,
        reason: PacketInReason,
        table_id: u8,
        cookie: u64,
        /// A miss with no table-miss rule, sent only to OpenFlow 1.0
        /// controllers (`Pipeline::miss_to_controller`).
        implicit_miss: bool,
    },
    /// Run the steps on a copy of the packet (a group bucket).
    Fork(Vec<Step>),
    GroupHit(Arc<Group>, usize),
}

/// The frames a packet produced.
#[derive(Default, Debug)]
pub struct Emitted {
    pub outputs: Vec<(u32, Packet)>,
    pub to_controller: Vec<ToController>,
}

/// A PACKET_IN in the making (the agent buffers and truncates it).
#[derive(Clone, Debug)]
pub struct ToController {
    pub in_port: u32,
    pub metadata: u64,
    pub max_len: u16,
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    /// A miss with no table-miss rule: for OpenFlow 1.0 controllers only.
    pub implicit_miss: bool,
    pub data: Vec<u8>,
}

/// What a table modification removed, for FLOW_REMOVED.
pub type Removed = Vec<(Arc<Rule>, FlowRemovedReason)>;

pub struct Pipeline {
    pub tables: Vec<Table>,
    pub groups: FxHashMap<u32, Arc<Group>>,
    pub meters: FxHashMap<u32, Arc<Meter>>,
    pub ports: std::collections::BTreeMap<u32, PortState>,
    /// Bumped by every change that could alter a plan.
    pub generation: u64,
    /// Rules that may expire (idle or hard timeout), counted to skip the
    /// scan when there are none.
    pub timed_rules: usize,
    pub max_rules: usize,
    pub miss_send_len: u16,
    /// Whether a miss with no table-miss rule goes to the controller:
    /// OpenFlow 1.0 says it does, 1.3 that it is dropped (1.3.5 section
    /// 5.4). The agent sets it while a 1.0 controller is connected, and
    /// only 1.0 controllers get those PACKET_INs (Open vSwitch does the
    /// same).
    pub miss_to_controller: bool,
    /// OFPC_FRAG_* handling (only NORMAL is implemented).
    pub config_flags: u16,
    pub started: Instant,
}

fn fm_err(c: FlowModFailedCode) -> ErrorCode {
    ErrorCode::FlowModFailed(c)
}

/// The longest chain of groups a frame may pass through, the first one
/// counted. A GROUP_MOD that would make a longer chain is refused with
/// OFPGMFC_CHAINING_UNSUPPORTED (the specification names no code of its
/// own for a depth limit; this one says "this chaining is not supported"),
/// so the planner's bound below is never what stops a frame.
pub const MAX_GROUP_CHAIN: usize = 8;
const MAX_GROUP_DEPTH: usize = MAX_GROUP_CHAIN;

impl Pipeline {
    pub fn new(n_tables: usize, max_rules: usize) -> Pipeline {
        Pipeline {
            tables: (0..n_tables.clamp(1, 254)).map(|_| Table::default()).collect(),
            groups: FxHashMap::default(),
            meters: FxHashMap::default(),
            ports: Default::default(),
            generation: 0,
            timed_rules: 0,
            max_rules,
            miss_send_len: 128,
            miss_to_controller: false,
            config_flags: 0,
            started: Instant::now(),
        }
    }

    pub fn now_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.started).as_millis() as u64
    }

    pub fn rule_count(&self) -> usize {
        self.tables.iter().map(|t| t.rules.len()).sum()
    }

    pub fn add_port(&mut self, p: PortState) {
        self.ports.insert(p.port_no, p);
        self.generation += 1;
    }

    /// Takes a port away (its rules stay; what they send it goes nowhere).
    pub fn remove_port(&mut self, port_no: u32) -> Option<PortState> {
        let gone = self.ports.remove(&port_no)?;
        self.generation += 1;
        Some(gone)
    }

    /// Records a link change; true if it changed.
    pub fn set_link(&mut self, port_no: u32, up: bool) -> bool {
        match self.ports.get_mut(&port_no) {
            Some(p) if p.link_up != up => {
                p.link_up = up;
                self.generation += 1;
                true
            }
            _ => false,
        }
    }

    fn valid_port(&self, p: u32) -> bool {
        self.ports.contains_key(&p)
    }
}

impl Pipeline {
    /// The forwarding plan for a packet with this key.
    pub fn plan(&self, key: &Key) -> Vec<Step> {
        let mut steps = Vec::with_capacity(8);
        let mut key = *key;
        let in_port = key.in_port();
        if let Some(p) = self.ports.get(&in_port) {
            if p.config & (port_config::NO_RECV | port_config::PORT_DOWN) != 0 {
                return steps;
            }
        }
        let mut set = ActionSet::default();
        let mut table = 0u8;
        loop {
            let t = &self.tables[table as usize];
            let Some(rule) = t.rules.lookup(&key) else {
                // No table-miss rule: drop (1.3.5 section 5.4), or to a
                // 1.0 controller (1.0.0 section 3.4).
                steps.push(Step::Lookup { table, matched: false });
                let no_packet_in = self
                    .ports
                    .get(&in_port)
                    .is_some_and(|q| q.config & port_config::NO_PACKET_IN != 0);
                if self.miss_to_controller && !no_packet_in {
                    steps.push(Step::ToController {
                        max_len: self.miss_send_len,
                        reason: PacketInReason::NoMatch,
                        table_id: table,
                        cookie: u64::MAX,
                        implicit_miss: true,
                    });
                }
                return steps;
            };
            steps.push(Step::Lookup { table, matched: true });
            steps.push(Step::Hit(rule.clone()));
            let p = &rule.program;
            if let Some(m) = p.meter.and_then(|m| self.meters.get(&m)) {
                steps.push(Step::Meter(m.clone()));
            }
            let reason = if rule.is_table_miss() {
                PacketInReason::NoMatch
            } else {
                PacketInReason::Action
            };
            self.apply_list(&p.apply, &mut key, &mut steps, in_port, (reason, table, rule.cookie), 0);
            if p.clear {
                set = ActionSet::default();
            }
            for a in &p.write {
                set.write(a);
            }
            if let Some((v, m)) = p.metadata {
                let old = u64::from_be_bytes(key.0[8..16].try_into().unwrap());
                key.0[8..16].copy_from_slice(&((old & !m) | (v & m)).to_be_bytes());
            }
            match p.goto {
                Some(next) if (next as usize) < self.tables.len() && next > table => table = next,
                _ => {
                    let acts = set.in_order();
                    self.apply_list(&acts, &mut key, &mut steps, in_port, (reason, table, rule.cookie), 0);
                    return steps;
                }
            }
        }
    }

    /// Plans an action list as it would run on a packet with `key`.
    fn apply_list(
        &self,
        acts: &[Act],
        key: &mut Key,
        steps: &mut Vec<Step>,
        in_port: u32,
        origin: (PacketInReason, u8, u64),
        depth: usize,
    ) {
        for a in acts {
            match a {
                Act::Output { port: p, max_len } => self.plan_output(*p, *max_len, in_port, origin, steps),
                Act::Group(g) => {
                    if depth < MAX_GROUP_DEPTH {
                        if let Some(g) = self.groups.get(g) {
                            self.plan_group(g, key, steps, in_port, origin, depth + 1);
                        }
                    }
                }
                Act::SetField(w) => {
                    key.set(w.field, w.bytes());
                    if w.field == ofwire::oxm::field::VLAN_VID && key.vlan_vid() != 0 {
                        let vid = (u16::from_be_bytes([w.value[0], w.value[1]]) & 0x0fff) | ofwire::oxm::OFPVID_PRESENT;
                        key.set(w.field, &vid.to_be_bytes());
                    }
                    steps.push(Step::Act(a.clone()));
                }
                Act::PushVlan(_) => {
                    if key.vlan_vid() == 0 {
                        key.set(ofwire::oxm::field::VLAN_VID, &ofwire::oxm::OFPVID_PRESENT.to_be_bytes());
                    }
                    steps.push(Step::Act(a.clone()));
                }
                Act::PopVlan => {
                    key.set(ofwire::oxm::field::VLAN_VID, &[0, 0]);
                    key.set(ofwire::oxm::field::VLAN_PCP, &[0]);
                    steps.push(Step::Act(a.clone()));
                }
                Act::SetVlanOrPush(vid) => {
                    if key.vlan_vid() == 0 {
                        key.set(ofwire::oxm::field::VLAN_PCP, &[0]);
                    }
                    key.set(
                        ofwire::oxm::field::VLAN_VID,
                        &(vid | ofwire::oxm::OFPVID_PRESENT).to_be_bytes(),
                    );
                    steps.push(Step::Act(a.clone()));
                }
                Act::DecNwTtl | Act::SetNwTtl(_) => steps.push(Step::Act(a.clone())),
                Act::SetQueue(_) => {}
            }
        }
    }

    fn plan_output(
        &self,
        p: u32,
        max_len: u16,
        in_port: u32,
        origin: (PacketInReason, u8, u64),
        steps: &mut Vec<Step>,
    ) {
        let forwardable = |q: &PortState| q.live() && q.config & port_config::NO_FWD == 0;
        match p {
            port::CONTROLLER => {
                let no_packet_in = self
                    .ports
                    .get(&in_port)
                    .is_some_and(|q| q.config & port_config::NO_PACKET_IN != 0);
                if !no_packet_in {
                    steps.push(Step::ToController {
                        max_len,
                        reason: origin.0,
                        table_id: origin.1,
                        cookie: origin.2,
                        implicit_miss: false,
                    });
                }
            }
            port::FLOOD | port::ALL => {
                for q in self.ports.values() {
                    if q.port_no != in_port && forwardable(q) {
                        steps.push(Step::Output(q.port_no));
                    }
                }
            }
            port::IN_PORT => {
                if self.ports.get(&in_port).is_some_and(forwardable) {
                    steps.push(Step::Output(in_port));
                }
            }
            // TABLE outside PACKET_OUT does nothing.
            port::TABLE => {}
            p => {
                // Output to the input port needs IN_PORT (1.3.5 section 7.2.5).
                if p != in_port && self.ports.get(&p).is_some_and(forwardable) {
                    steps.push(Step::Output(p));
                }
            }
        }
    }

    fn plan_group(
        &self,
        g: &Arc<Group>,
        key: &mut Key,
        steps: &mut Vec<Step>,
        in_port: u32,
        origin: (PacketInReason, u8, u64),
        depth: usize,
    ) {
        let bucket_live = |i: usize| {
            let b = &g.buckets[i];
            let port_ok = b.watch_port == port::ANY || self.ports.get(&b.watch_port).is_some_and(|p| p.live());
            let group_ok = b.watch_group == v13::GROUP_ANY || self.groups.contains_key(&b.watch_group);
            port_ok && group_ok
        };
        let chosen: Vec<usize> = match g.kind {
            GroupType::All => (0..g.buckets.len()).collect(),
            GroupType::Indirect => vec![0],
            GroupType::FastFailover => (0..g.buckets.len()).find(|&i| bucket_live(i)).into_iter().collect(),
            GroupType::Select => {
                let live: Vec<usize> = (0..g.buckets.len())
                    .filter(|&i| bucket_live(i) && g.buckets[i].weight > 0)
                    .collect();
                let total: u64 = live.iter().map(|&i| g.buckets[i].weight as u64).sum();
                if total == 0 {
                    Vec::new()
                } else {
                    let mut h = flow_hash(key) % total;
                    let mut pick = live[0];
                    for &i in &live {
                        let w = g.buckets[i].weight as u64;
                        if h < w {
                            pick = i;
                            break;
                        }
                        h -= w;
                    }
                    vec![pick]
                }
            }
            GroupType::Unknown(_) => Vec::new(),
        };
        for i in chosen {
            let mut sub = vec![Step::GroupHit(g.clone(), i)];
            let mut k = *key;
            self.apply_list(&g.compiled[i], &mut k, &mut sub, in_port, origin, depth);
            steps.push(Step::Fork(sub));
        }
    }

    /// Runs a plan on `pkt`; frames to send and PACKET_INs go to `out`.
    /// After it, `pkt.data` may have been moved out (when the last step is
    /// an output, the frame itself is sent rather than a copy).
    pub fn execute(steps: &[Step], pkt: &mut Packet, now_ms: u64, now: Instant, out: &mut Emitted) {
        Pipeline::execute_counting(steps, pkt, now_ms, now, out, true);
    }

    /// Whether a plan's counters may be added for a whole batch at once
    /// (`count_bulk`) after running it with `execute_counting(.., false)`:
    /// nothing in it can stop a packet half way (meters, TTL) or count
    /// a packet by another size (group buckets on copies).
    pub fn counts_in_bulk(steps: &[Step]) -> bool {
        steps.iter().all(|s| match s {
            Step::Lookup { .. } | Step::Hit(_) | Step::Output(_) => true,
            Step::Act(a) => !matches!(a, Act::DecNwTtl),
            _ => false,
        })
    }

    /// The one port a plan sends a packet from `in_port` out of, unchanged,
    /// with nothing else done to it (no rewrite, meter, group, copy to the
    /// controller): what the AF_XDP fast path can do in the kernel.
    pub fn sole_output(steps: &[Step], in_port: u32) -> Option<u32> {
        let mut out = None;
        for s in steps {
            match s {
                Step::Lookup { .. } | Step::Hit(_) => {}
                Step::Output(p) if out.is_none() && *p != in_port && (1..=ofwire::v13::port::MAX).contains(p) => {
                    out = Some(*p)
                }
                _ => return None,
            }
        }
        out
    }

    /// Adds `packets` packets of `bytes` bytes in all to a bulk-countable
    /// plan's table and rule counters.
    pub fn count_bulk(&self, steps: &[Step], packets: u64, bytes: u64, now_ms: u64) {
        for s in steps {
            match s {
                Step::Lookup { table, matched } => {
                    let t = &self.tables[*table as usize];
                    t.lookups.add_many(packets, bytes);
                    if *matched {
                        t.matched.add_many(packets, bytes);
                    }
                }
                Step::Hit(r) => r.hit_many(packets, bytes, now_ms),
                _ => {}
            }
        }
    }

    /// `execute`, with rule and group counters left out when `count` is
    /// false (the caller counts the batch with `count_bulk`).
    pub fn execute_counting(
        steps: &[Step],
        pkt: &mut Packet,
        now_ms: u64,
        now: Instant,
        out: &mut Emitted,
        count: bool,
    ) {
        let bytes = pkt.data.len();
        let last = steps.len().wrapping_sub(1);
        for (i, s) in steps.iter().enumerate() {
            match s {
                Step::Lookup { .. } => {}
                Step::Hit(r) => {
                    if count {
                        r.hit(bytes, now_ms)
                    }
                }
                Step::Meter(m) => match m.admit(pkt.data.len(), now) {
                    MeterVerdict::Pass => {}
                    MeterVerdict::Drop => return,
                    MeterVerdict::Remark(level) => remark(pkt, level),
                },
                Step::Act(a) => match a {
                    Act::SetField(w) => pkt.set_field(w),
                    Act::PushVlan(t) => pkt.push_vlan(*t),
                    Act::PopVlan => pkt.pop_vlan(),
                    // TTL ran out: dropped (1.3.5 section 5.12).
                    Act::DecNwTtl if !pkt.dec_ttl() => return,
                    Act::SetNwTtl(t) => pkt.set_ttl(*t),
                    Act::SetVlanOrPush(vid) => {
                        if pkt.layout.vlan.is_none() {
                            pkt.push_vlan(crate::key::ETH_TYPE_VLAN);
                        }
                        let mut value = [0u8; 16];
                        value[..2].copy_from_slice(&(vid | ofwire::oxm::OFPVID_PRESENT).to_be_bytes());
                        pkt.set_field(&FieldWrite {
                            field: ofwire::oxm::field::VLAN_VID,
                            value,
                            len: 2,
                        });
                    }
                    _ => {}
                },
                Step::Output(p) if i == last => {
                    let data = std::mem::take(&mut pkt.data);
                    out.outputs.push((
                        *p,
                        Packet {
                            data,
                            key: pkt.key,
                            layout: pkt.layout,
                            vnet: pkt.vnet,
                        },
                    ))
                }
                Step::Output(p) => out.outputs.push((*p, pkt.clone())),
                Step::ToController {
                    max_len,
                    reason,
                    table_id,
                    cookie,
                    implicit_miss,
                } => out.to_controller.push(ToController {
                    in_port: pkt.key.in_port(),
                    metadata: u64::from_be_bytes(pkt.key.0[8..16].try_into().unwrap()),
                    max_len: *max_len,
                    reason: *reason,
                    table_id: *table_id,
                    cookie: *cookie,
                    implicit_miss: *implicit_miss,
                    data: pkt.data_with_checksum(),
                }),
                Step::Fork(sub) => {
                    let mut copy = pkt.clone();
                    Pipeline::execute(sub, &mut copy, now_ms, now, out);
                }
                Step::GroupHit(g, i) => {
                    g.counter.add(bytes);
                    g.bucket_counters[*i].add(bytes);
                }
            }
        }
    }

    /// Counts a plan's table lookups (kept apart from `execute` so the
    /// datapath can count a batch at once).
    pub fn count_lookups(&self, steps: &[Step], bytes: usize) {
        for s in steps {
            if let Step::Lookup { table, matched } = s {
                let t = &self.tables[*table as usize];
                t.lookups.add(bytes);
                if *matched {
                    t.matched.add(bytes);
                }
            }
        }
    }

    /// Forwards one packet end to end (plan, count, execute): the path for
    /// tests, PACKET_OUT to TABLE and anything not cached.
    pub fn forward(&self, pkt: &mut Packet, now: Instant, out: &mut Emitted) {
        let steps = self.plan(&pkt.key);
        self.count_lookups(&steps, pkt.data.len());
        Pipeline::execute(&steps, pkt, self.now_ms(now), now, out);
    }

    /// Runs a PACKET_OUT's actions on `pkt` (OFPP_TABLE sends it through
    /// the tables).
    pub fn packet_out(&self, acts: &[Act], pkt: &mut Packet, now: Instant, out: &mut Emitted) {
        let mut steps = Vec::new();
        let mut key = pkt.key;
        let in_port = key.in_port();
        for a in acts {
            if let Act::Output { port: port::TABLE, .. } = a {
                Pipeline::execute(&steps, pkt, self.now_ms(now), now, out);
                steps.clear();
                self.forward(pkt, now, out);
                key = pkt.key;
                continue;
            }
            if let Act::Output { port: p, .. } = a {
                // PACKET_OUT may send back to the port it names as input.
                if *p == in_port && self.ports.get(p).is_some_and(|q| q.live()) {
                    steps.push(Step::Output(*p));
                    continue;
                }
            }
            self.apply_list(
                std::slice::from_ref(a),
                &mut key,
                &mut steps,
                in_port,
                (PacketInReason::Action, 0, 0),
                0,
            );
        }
        Pipeline::execute(&steps, pkt, self.now_ms(now), now, out);
    }
}

fn remark(pkt: &mut Packet, level: u8) {
    let dscp = pkt.key.get(ofwire::oxm::field::IP_DSCP).first().copied().unwrap_or(0);
    let dp = ((dscp >> 1) & 3).saturating_add(level).min(3);
    let new = (dscp & !0b110) | (dp << 1);
    let mut value = [0u8; 16];
    value[0] = new;
    pkt.set_field(&FieldWrite {
        field: ofwire::oxm::field::IP_DSCP,
        value,
        len: 1,
    });
}

/// A hash of the fields that name a flow (addresses, protocol, ports), for
/// select groups: the same flow always takes the same bucket.
pub fn flow_hash(key: &Key) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(&key.0[16..28]);
    h.write(&key.0[31..44]);
    h.write(&key.0[72..104]);
    // FxHash's low bits are weak; mix them.
    let x = h.finish();
    (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 16
}

/// The action set written by write_actions, executed at the end of the
/// pipeline in the spec's order (1.3.5 section 5.10).
#[derive(Default)]
struct ActionSet {
    pop_vlan: bool,
    push_vlan: Option<u16>,
    dec_ttl: bool,
    set_ttl: Option<u8>,
    vlan_or_push: Option<u16>,
    fields: Vec<FieldWrite>,
    queue: Option<u32>,
    group: Option<u32>,
    output: Option<(u32, u16)>,
}

impl ActionSet {
    fn write(&mut self, a: &Act) {
        match a {
            Act::Output { port, max_len } => self.output = Some((*port, *max_len)),
            Act::Group(g) => self.group = Some(*g),
            Act::SetField(w) => {
                self.fields.retain(|f| f.field != w.field);
                self.fields.push(w.clone());
            }
            Act::PushVlan(t) => self.push_vlan = Some(*t),
            Act::PopVlan => self.pop_vlan = true,
            Act::DecNwTtl => self.dec_ttl = true,
            Act::SetNwTtl(t) => self.set_ttl = Some(*t),
            Act::SetQueue(q) => self.queue = Some(*q),
            Act::SetVlanOrPush(v) => self.vlan_or_push = Some(*v),
        }
    }

    fn in_order(&self) -> Vec<Act> {
        let mut v = Vec::new();
        if self.pop_vlan {
            v.push(Act::PopVlan);
        }
        if let Some(t) = self.push_vlan {
            v.push(Act::PushVlan(t));
        }
        if self.dec_ttl {
            v.push(Act::DecNwTtl);
        }
        if let Some(t) = self.set_ttl {
            v.push(Act::SetNwTtl(t));
        }
        if let Some(vid) = self.vlan_or_push {
            v.push(Act::SetVlanOrPush(vid));
        }
        v.extend(self.fields.iter().cloned().map(Act::SetField));
        if let Some(q) = self.queue {
            v.push(Act::SetQueue(q));
        }
        // A group in the set wins over an output (1.3.5 section 5.10).
        if let Some(g) = self.group {
            v.push(Act::Group(g));
        } else if let Some((port, max_len)) = self.output {
            v.push(Act::Output { port, max_len });
        }
        v
    }
}
