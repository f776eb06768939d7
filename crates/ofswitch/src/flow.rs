//! What the pipeline holds: flow rules with their compiled instructions,
//! groups and meters, and their counters (atomics, so datapath threads
//! count without taking the pipeline's write lock).

use crate::actions::Act;
use crate::key::Key;
use ofwire::oxm::Match;
use ofwire::v13::{Bucket, GroupType, Instruction, MeterBand};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

/// A rule's instructions, compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub meter: Option<u32>,
    pub apply: Vec<Act>,
    pub clear: bool,
    pub write: Vec<Act>,
    pub metadata: Option<(u64, u64)>,
    pub goto: Option<u8>,
}

impl Program {
    /// Whether the rule sends to `port` or `group` (as FLOW_MOD/stats
    /// out_port and out_group filters ask; ANY matches anything).
    pub fn outputs_to(&self, port: u32, group: u32) -> bool {
        use ofwire::v13::{port as p, GROUP_ANY};
        let acts = || self.apply.iter().chain(self.write.iter());
        let port_ok = port == p::ANY || acts().any(|a| matches!(a, Act::Output { port: q, .. } if *q == port));
        let group_ok = group == GROUP_ANY || acts().any(|a| matches!(a, Act::Group(g) if *g == group));
        port_ok && group_ok
    }

    pub fn uses_group(&self, group: u32) -> bool {
        self.apply
            .iter()
            .chain(self.write.iter())
            .any(|a| *a == Act::Group(group))
    }
}

/// Packet and byte counters with the time of the last hit, shared by a rule
/// and the rule a MODIFY puts in its place.
#[derive(Debug, Default)]
pub struct RuleCounters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// Milliseconds since the switch started.
    pub last_hit_ms: AtomicU64,
}

#[derive(Debug)]
pub struct Rule {
    pub table_id: u8,
    pub priority: u16,
    pub cookie: u64,
    pub flags: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub value: Key,
    pub mask: Key,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
    pub program: Program,
    pub created: Instant,
    /// Milliseconds since the switch started, when added.
    pub created_ms: u64,
    pub counters: std::sync::Arc<RuleCounters>,
}

impl Rule {
    #[inline]
    pub fn hit(&self, bytes: usize, now_ms: u64) {
        self.hit_many(1, bytes as u64, now_ms);
    }

    pub fn hit_many(&self, packets: u64, bytes: u64, now_ms: u64) {
        self.counters.packets.fetch_add(packets, Relaxed);
        self.counters.bytes.fetch_add(bytes, Relaxed);
        self.counters.last_hit_ms.store(now_ms, Relaxed);
    }

    pub fn packets(&self) -> u64 {
        self.counters.packets.load(Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.counters.bytes.load(Relaxed)
    }

    /// Whether the rule's match is at least as specific as (value, mask):
    /// what non-strict MODIFY and DELETE select.
    pub fn within(&self, value: &Key, mask: &Key) -> bool {
        self.mask.covers(mask) && self.value.masked(mask) == *value
    }

    /// Whether some packet could match both this rule and (value, mask).
    pub fn overlaps(&self, value: &Key, mask: &Key) -> bool {
        (0..crate::key::KEY_WORDS).all(|i| (self.value.word(i) ^ value.word(i)) & self.mask.word(i) & mask.word(i) == 0)
    }

    pub fn is_table_miss(&self) -> bool {
        self.priority == 0 && self.mask.is_zero()
    }
}

#[derive(Debug, Default)]
pub struct Counter {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
}

impl Counter {
    #[inline]
    pub fn add(&self, bytes: usize) {
        self.packets.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }

    /// Several packets at once (a datapath batch).
    #[inline]
    pub fn add_many(&self, packets: u64, bytes: u64) {
        self.packets.fetch_add(packets, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }

    pub fn get(&self) -> ofwire::v13::Counter {
        ofwire::v13::Counter {
            packet_count: self.packets.load(Relaxed),
            byte_count: self.bytes.load(Relaxed),
        }
    }
}

#[derive(Debug)]
pub struct Group {
    pub id: u32,
    pub kind: GroupType,
    pub buckets: Vec<Bucket>,
    pub compiled: Vec<Vec<Act>>,
    pub counter: Counter,
    pub bucket_counters: Vec<Counter>,
    pub created: Instant,
}

impl Group {
    /// The groups its buckets forward to (each once).
    pub fn children(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for a in self.compiled.iter().flatten() {
            if let Act::Group(g) = a {
                if !out.contains(g) {
                    out.push(*g);
                }
            }
        }
        out
    }
}

/// A token bucket per band.
#[derive(Debug)]
pub struct BandState {
    pub tokens: f64,
    pub last: Instant,
}

#[derive(Debug)]
pub struct Meter {
    pub id: u32,
    pub flags: u16,
    pub bands: Vec<MeterBand>,
    pub state: Mutex<Vec<BandState>>,
    pub counter: Counter,
    pub band_counters: Vec<Counter>,
    pub created: Instant,
}

/// What a meter decides for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterVerdict {
    Pass,
    Drop,
    /// Raise the DSCP drop precedence by this much.
    Remark(u8),
}

impl Meter {
    fn rate_and_burst(&self, band: &MeterBand) -> (f64, f64) {
        use ofwire::v13::meter_flags;
        let (rate, burst) = match band {
            MeterBand::Drop { rate, burst_size } | MeterBand::DscpRemark { rate, burst_size, .. } => {
                (*rate, *burst_size)
            }
            MeterBand::Experimenter { rate, burst_size, .. } => (*rate, *burst_size),
        };
        // Rates are kbit/s unless PKTPS; tokens are bits or packets.
        let per_s = if self.flags & meter_flags::PKTPS != 0 {
            rate as f64
        } else {
            rate as f64 * 1000.0
        };
        let burst = if self.flags & meter_flags::BURST != 0 && burst > 0 {
            if self.flags & meter_flags::PKTPS != 0 {
                burst as f64
            } else {
                burst as f64 * 1000.0
            }
        } else {
            // No burst given: a tenth of a second at the band's rate, and
            // never less than one full-size frame.
            (per_s / 10.0).max(if self.flags & meter_flags::PKTPS != 0 {
                1.0
            } else {
                12_000.0
            })
        };
        (per_s, burst)
    }

    /// Runs a packet of `bytes` through the meter at `now`. The band
    /// applied is the one with the highest rate the packet exceeds.
    pub fn admit(&self, bytes: usize, now: Instant) -> MeterVerdict {
        use ofwire::v13::meter_flags;
        self.counter.add(bytes);
        let cost = if self.flags & meter_flags::PKTPS != 0 {
            1.0
        } else {
            bytes as f64 * 8.0
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut exceeded: Option<(usize, f64)> = None;
        for (i, band) in self.bands.iter().enumerate() {
            let (per_s, burst) = self.rate_and_burst(band);
            let s = &mut state[i];
            let dt = now.saturating_duration_since(s.last).as_secs_f64();
            s.last = now;
            s.tokens = (s.tokens + dt * per_s).min(burst);
            if s.tokens >= cost {
                s.tokens -= cost;
            } else if exceeded.is_none_or(|(_, r)| per_s > r) {
                exceeded = Some((i, per_s));
            }
        }
        match exceeded {
            None => MeterVerdict::Pass,
            Some((i, _)) => {
                self.band_counters[i].add(bytes);
                match self.bands[i] {
                    MeterBand::DscpRemark { prec_level, .. } => MeterVerdict::Remark(prec_level),
                    _ => MeterVerdict::Drop,
                }
            }
        }
    }
}
