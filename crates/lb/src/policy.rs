//! How the `lb` app picks a replica for a new flow. Pure logic: the app
//! feeds in what it learns (switch port statistics, the agents' answers,
//! flows that ended, replicas that died) and asks for a choice, so tests
//! script the statistics and check each definition exactly.
//!
//! Replicas are indexed in address order, so "ties go to the lowest IP" is
//! "ties go to the lowest index" everywhere below.

use crate::config::Config;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// What a replica's agent says about it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerReport {
    /// Bytes its NIC transmitted (a counter).
    pub tx_bytes: u64,
    /// Share of one core its service used recently, 0..=ncores.
    pub cpu: f64,
    /// Established connections on the service port.
    pub connections: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    RoundRobin,
    Random,
    TxBytes,
    CpuqLoad,
    Load,
    LoadPrevDelta,
    LeastConnections,
    PowerOfTwo,
    Weighted,
    Maglev,
    LoadPrevAdaptive,
}

impl Kind {
    pub fn from_name(name: &str) -> Option<Kind> {
        Some(match name {
            "round-robin" => Kind::RoundRobin,
            "random" => Kind::Random,
            "txbytes" => Kind::TxBytes,
            "cpuq-load" => Kind::CpuqLoad,
            "load" => Kind::Load,
            "load-prev-delta" => Kind::LoadPrevDelta,
            "least-connections" => Kind::LeastConnections,
            "power-of-two" => Kind::PowerOfTwo,
            "weighted" => Kind::Weighted,
            "maglev" => Kind::Maglev,
            "load-prev-adaptive" => Kind::LoadPrevAdaptive,
            _ => return None,
        })
    }

    /// Asks every replica's agent before each choice.
    pub fn asks_servers(self) -> bool {
        matches!(self, Kind::TxBytes | Kind::CpuqLoad)
    }

    /// Reads the switch's port statistics periodically.
    pub fn reads_port_stats(self) -> bool {
        matches!(self, Kind::Load | Kind::LoadPrevDelta | Kind::LoadPrevAdaptive)
    }
}

/// One statistics sample of a replica's switch port.
#[derive(Clone, Copy, Debug)]
struct PortSample {
    bytes: u64,
    at_s: f64,
}

pub struct Policy {
    pub kind: Kind,
    alive: Vec<bool>,
    weights: Vec<u32>,
    next_rr: usize,
    rng: SmallRng,
    alpha: f64,
    /// Per-flow addition of the `prev` policies (bytes/s).
    delta: f64,
    adapt_rate: f64,
    last: Vec<Option<PortSample>>,
    /// The last measured rate (bytes/s), before smoothing.
    rate: Vec<f64>,
    /// The EWMA of `rate`.
    load: Vec<f64>,
    /// New flows given to each replica since the last statistics.
    since_stats: Vec<u32>,
    /// Flows the controller placed that have not ended.
    active: Vec<u32>,
    /// Smooth weighted round-robin's running scores.
    current: Vec<i64>,
    maglev: Vec<u16>,
    maglev_size: usize,
    /// Replica names for Maglev's permutations (their addresses).
    names: Vec<String>,
}

impl Policy {
    pub fn new(cfg: &Config) -> Policy {
        let n = cfg.replicas.len();
        let kind = Kind::from_name(&cfg.policy).expect("validated by Config");
        let mut p = Policy {
            kind,
            alive: vec![true; n],
            weights: cfg.replicas.iter().map(|r| r.weight).collect(),
            next_rr: 0,
            rng: SmallRng::seed_from_u64(cfg.seed),
            alpha: cfg.alpha,
            delta: cfg.delta,
            adapt_rate: cfg.adapt_rate,
            last: vec![None; n],
            rate: vec![0.0; n],
            load: vec![0.0; n],
            since_stats: vec![0; n],
            active: vec![0; n],
            current: vec![0; n],
            maglev: Vec::new(),
            maglev_size: cfg.maglev_size,
            names: cfg.replicas.iter().map(|r| r.ip.to_string()).collect(),
        };
        p.rebuild_maglev();
        p
    }

    pub fn replicas(&self) -> usize {
        self.alive.len()
    }

    pub fn is_alive(&self, i: usize) -> bool {
        self.alive[i]
    }

    /// A health check changed its mind about replica `i`.
    pub fn set_alive(&mut self, i: usize, alive: bool) {
        if self.alive[i] != alive {
            self.alive[i] = alive;
            self.current = vec![0; self.alive.len()];
            self.rebuild_maglev();
        }
    }

    /// The smoothed load of each replica (bytes/s).
    pub fn loads(&self) -> &[f64] {
        &self.load
    }

    /// The per-flow addition now in use (bytes/s).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    pub fn active(&self) -> &[u32] {
        &self.active
    }

    /// A PortStats reply: `bytes[i]` is replica i's port counter (None when
    /// the reply left it out), read at `at_s` seconds on the app's clock.
    /// `rate = (bytes - last_bytes) / t` with t the time between the two
    /// replies (the polling period, plus however late the reply was), then
    /// `load = alpha * rate + (1 - alpha) * load`. The `prev` additions
    /// start again from zero.
    pub fn on_port_stats(&mut self, bytes: &[Option<u64>], at_s: f64) {
        let mut samples = Vec::new();
        for (i, b) in bytes.iter().enumerate().take(self.alive.len()) {
            let Some(b) = *b else { continue };
            if let Some(prev) = self.last[i] {
                let t = at_s - prev.at_s;
                if t > 0.0 {
                    let rate = b.saturating_sub(prev.bytes) as f64 / t;
                    if self.since_stats[i] > 0 {
                        // What the new flows did to the rate they were charged to.
                        samples.push((rate - self.rate[i]) / self.since_stats[i] as f64);
                    }
                    self.rate[i] = rate;
                    self.load[i] = self.alpha * rate + (1.0 - self.alpha) * self.load[i];
                }
            }
            self.last[i] = Some(PortSample { bytes: b, at_s });
            self.since_stats[i] = 0;
        }
        if self.kind == Kind::LoadPrevAdaptive && !samples.is_empty() {
            let seen = (samples.iter().sum::<f64>() / samples.len() as f64).max(0.0);
            self.delta += self.adapt_rate * (seen - self.delta);
        }
    }

    /// A flow placed on replica `i` ended (its rules expired or were removed).
    pub fn flow_ended(&mut self, i: usize) {
        self.active[i] = self.active[i].saturating_sub(1);
    }

    /// A remembered flow came back after its rules expired: it counts as
    /// open on its replica again.
    pub fn flow_resumed(&mut self, i: usize) {
        self.active[i] += 1;
    }

    /// The replica for a new flow. `flow_hash` identifies the flow (Maglev);
    /// `servers` holds the agents' answers for the policies that ask them
    /// (None where a replica did not answer in time). None when no replica is
    /// alive.
    pub fn choose(&mut self, flow_hash: u64, servers: &[Option<ServerReport>]) -> Option<usize> {
        let alive: Vec<usize> = (0..self.alive.len()).filter(|&i| self.alive[i]).collect();
        if alive.is_empty() {
            return None;
        }
        let least = |key: &dyn Fn(usize) -> f64| -> usize {
            // Strictly smaller wins, so the first (lowest IP) keeps a tie.
            let mut best = alive[0];
            for &i in &alive[1..] {
                if key(i) < key(best) {
                    best = i;
                }
            }
            best
        };
        let pick = match self.kind {
            Kind::RoundRobin => self.round_robin(&alive),
            Kind::Random => alive[self.rng.gen_range(0..alive.len())],
            Kind::TxBytes => {
                let answered: Vec<usize> = alive
                    .iter()
                    .copied()
                    .filter(|&i| servers.get(i).copied().flatten().is_some())
                    .collect();
                if answered.is_empty() {
                    self.round_robin(&alive)
                } else {
                    let tx = |i: usize| servers[i].map(|s| s.tx_bytes).unwrap_or(u64::MAX);
                    let mut best = answered[0];
                    for &i in &answered[1..] {
                        if tx(i) < tx(best) {
                            best = i;
                        }
                    }
                    best
                }
            }
            Kind::CpuqLoad => {
                let answered: Vec<(usize, ServerReport)> = alive
                    .iter()
                    .filter_map(|&i| servers.get(i).copied().flatten().map(|s| (i, s)))
                    .collect();
                if answered.is_empty() {
                    self.round_robin(&alive)
                } else {
                    let mut best = answered[0];
                    for &(i, s) in &answered[1..] {
                        let bs = best.1;
                        if s.cpu < bs.cpu || (s.cpu == bs.cpu && s.connections < bs.connections) {
                            best = (i, s);
                        }
                    }
                    best.0
                }
            }
            Kind::Load => least(&|i| self.load[i]),
            Kind::LoadPrevDelta | Kind::LoadPrevAdaptive => {
                least(&|i| self.load[i] + self.since_stats[i] as f64 * self.delta)
            }
            Kind::LeastConnections => least(&|i| self.active[i] as f64),
            Kind::PowerOfTwo => {
                if alive.len() == 1 {
                    alive[0]
                } else {
                    let a = self.rng.gen_range(0..alive.len());
                    let mut b = self.rng.gen_range(0..alive.len() - 1);
                    if b >= a {
                        b += 1;
                    }
                    let (lo, hi) = (alive[a.min(b)], alive[a.max(b)]);
                    if self.active[hi] < self.active[lo] {
                        hi
                    } else {
                        lo
                    }
                }
            }
            Kind::Weighted => {
                // Smooth weighted round-robin (nginx's): every replica gains
                // its weight, the highest score wins and pays the total.
                let total: i64 = alive.iter().map(|&i| self.weights[i] as i64).sum();
                for &i in &alive {
                    self.current[i] += self.weights[i] as i64;
                }
                let mut best = alive[0];
                for &i in &alive[1..] {
                    if self.current[i] > self.current[best] {
                        best = i;
                    }
                }
                self.current[best] -= total;
                best
            }
            Kind::Maglev => self.maglev[(flow_hash % self.maglev.len() as u64) as usize] as usize,
        };
        self.since_stats[pick] += 1;
        self.active[pick] += 1;
        Some(pick)
    }

    fn round_robin(&mut self, alive: &[usize]) -> usize {
        let n = self.alive.len();
        let pick = (0..n)
            .map(|k| (self.next_rr + k) % n)
            .find(|i| alive.contains(i))
            .expect("one is alive");
        self.next_rr = (pick + 1) % n;
        pick
    }

    /// Maglev's lookup table (Eisenbud et al., NSDI 2016, section 3.4):
    /// each live replica walks its own permutation of the slots, taking
    /// turns, and claims the first free slot it meets. A replica that dies
    /// loses only its own slots' flows.
    fn rebuild_maglev(&mut self) {
        let m = self.maglev_size;
        let live: Vec<usize> = (0..self.alive.len()).filter(|&i| self.alive[i]).collect();
        self.maglev = vec![u16::MAX; m];
        if live.is_empty() {
            return;
        }
        let perms: Vec<(usize, usize)> = live
            .iter()
            .map(|&i| {
                let offset = (fnv1a(self.names[i].as_bytes(), 0xcbf2_9ce4_8422_2325) % m as u64) as usize;
                let skip = (fnv1a(self.names[i].as_bytes(), 0x8422_2325_cbf2_9ce4) % (m as u64 - 1)) as usize + 1;
                (offset, skip)
            })
            .collect();
        let mut next = vec![0usize; live.len()];
        let mut filled = 0;
        'fill: loop {
            for (k, &i) in live.iter().enumerate() {
                let (offset, skip) = perms[k];
                let mut slot = (offset + next[k] * skip) % m;
                while self.maglev[slot] != u16::MAX {
                    next[k] += 1;
                    slot = (offset + next[k] * skip) % m;
                }
                self.maglev[slot] = i as u16;
                next[k] += 1;
                filled += 1;
                if filled == m {
                    break 'fill;
                }
            }
        }
    }
}

/// FNV-1a, 64 bits, from a chosen basis: stable across builds and
/// machines, unlike std's hasher, so Maglev tables agree between runs.
pub fn fnv1a(data: &[u8], basis: u64) -> u64 {
    data.iter()
        .fold(basis, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(policy: &str, replicas: usize) -> Config {
        let mut text = format!(
            "policy = \"{policy}\"\nalpha = 0.5\ndelta = 1000\nmaglev_size = 251\nhealth = {{ kind = \"off\" }}\n[vip]\nip = \"10.0.0.100\"\nmac = \"02:00:00:00:01:00\"\n"
        );
        for i in 0..replicas {
            // Listed in reverse to check the ordering by address.
            let k = replicas - i;
            text += &format!(
                "[[replica]]\nip = \"10.0.0.{k}\"\nmac = \"02:00:00:00:00:0{k}\"\nport = {k}\nmgmt = \"10.77.0.{k}\"\nweight = {k}\n"
            );
        }
        Config::parse(&text).unwrap()
    }

    fn picks(p: &mut Policy, n: usize) -> Vec<usize> {
        (0..n).map(|f| p.choose(f as u64, &[]).unwrap()).collect()
    }

    #[test]
    fn round_robin_cycles_in_address_order_and_skips_the_dead() {
        let mut p = Policy::new(&cfg("round-robin", 4));
        assert_eq!(picks(&mut p, 6), [0, 1, 2, 3, 0, 1]);
        p.set_alive(2, false);
        assert_eq!(picks(&mut p, 4), [3, 0, 1, 3]);
        p.set_alive(2, true);
        assert_eq!(picks(&mut p, 2), [0, 1]);
    }

    #[test]
    fn random_is_reproducible_from_its_seed_and_reaches_every_live_replica() {
        let a = picks(&mut Policy::new(&cfg("random", 4)), 200);
        assert_eq!(a, picks(&mut Policy::new(&cfg("random", 4)), 200));
        for r in 0..4 {
            assert!(a.contains(&r));
        }
        let mut p = Policy::new(&cfg("random", 4));
        p.set_alive(1, false);
        assert!(!picks(&mut p, 200).contains(&1));
    }

    fn report(tx: u64, cpu: f64, conns: u32) -> Option<ServerReport> {
        Some(ServerReport {
            tx_bytes: tx,
            cpu,
            connections: conns,
        })
    }

    #[test]
    fn txbytes_takes_the_least_transmitted_with_ties_to_the_lowest_address() {
        let mut p = Policy::new(&cfg("txbytes", 4));
        assert_eq!(
            p.choose(
                0,
                &[
                    report(50, 0.0, 0),
                    report(20, 0.0, 0),
                    report(20, 0.0, 0),
                    report(90, 0.0, 0)
                ]
            ),
            Some(1)
        );
        // A replica that did not answer is not chosen.
        assert_eq!(
            p.choose(0, &[report(50, 0.0, 0), None, report(30, 0.0, 0), None]),
            Some(2)
        );
        p.set_alive(2, false);
        assert_eq!(
            p.choose(0, &[report(50, 0.0, 0), None, report(30, 0.0, 0), None]),
            Some(0)
        );
    }

    #[test]
    fn cpuq_load_orders_by_cpu_then_connections_then_address() {
        let mut p = Policy::new(&cfg("cpuq-load", 4));
        let r = [
            report(0, 0.5, 9),
            report(0, 0.2, 7),
            report(0, 0.2, 3),
            report(0, 0.2, 3),
        ];
        assert_eq!(p.choose(0, &r), Some(2));
        let r = [
            report(0, 0.1, 9),
            report(0, 0.2, 1),
            report(0, 0.1, 9),
            report(0, 0.3, 0),
        ];
        assert_eq!(p.choose(0, &r), Some(0));
    }

    #[test]
    fn load_is_the_ewma_of_each_port_rate() {
        let mut p = Policy::new(&cfg("load", 3));
        p.on_port_stats(&[Some(0), Some(0), Some(0)], 0.0);
        // 0.5 s later: rates 100k, 50k, 0 bytes/s; alpha 0.5 halves them.
        p.on_port_stats(&[Some(50_000), Some(25_000), Some(0)], 0.5);
        assert_eq!(p.loads(), [50_000.0, 25_000.0, 0.0]);
        // Next: 0, 50k, 200k.
        p.on_port_stats(&[Some(50_000), Some(50_000), Some(100_000)], 1.0);
        assert_eq!(p.loads(), [25_000.0, 37_500.0, 100_000.0]);
        assert_eq!(p.choose(0, &[]), Some(0));
        // Equal loads: the lowest address.
        let mut q = Policy::new(&cfg("load", 3));
        assert_eq!(picks(&mut q, 3), [0, 0, 0]);
    }

    #[test]
    fn load_prev_delta_charges_each_new_flow_until_the_next_statistics() {
        let mut p = Policy::new(&cfg("load-prev-delta", 3));
        p.on_port_stats(&[Some(0), Some(0), Some(0)], 0.0);
        p.on_port_stats(&[Some(0), Some(1000), Some(1250)], 0.5); // loads 0, 1000, 1250
                                                                  // delta 1000: 0 -> 1000 ties with replica 1 (lowest wins), then
                                                                  // 0 again at 2000 vs 1000 and 1250.
        assert_eq!(picks(&mut p, 4), [0, 0, 1, 2]);
        // The next statistics reset the additions.
        p.on_port_stats(&[Some(0), Some(1000), Some(1250)], 1.0);
        assert_eq!(p.choose(0, &[]), Some(0));
    }

    #[test]
    fn load_prev_adaptive_learns_what_a_new_flow_adds() {
        let mut p = Policy::new(&cfg("load-prev-adaptive", 2));
        p.on_port_stats(&[Some(0), Some(0)], 0.0);
        p.on_port_stats(&[Some(0), Some(0)], 1.0);
        assert_eq!(p.delta(), 1000.0);
        // Two flows to replica 0 raise its rate by 10,000 bytes/s: 5,000 per flow.
        assert_eq!(picks(&mut p, 1), [0]);
        assert_eq!(picks(&mut p, 1), [1]);
        assert_eq!(picks(&mut p, 1), [0]);
        p.on_port_stats(&[Some(10_000), Some(5_000)], 2.0);
        // Samples: 10,000/2 and 5,000/1 -> 5,000; adapt_rate 0.2 moves 1000 to 1800.
        assert!((p.delta() - 1800.0).abs() < 1e-9, "{}", p.delta());
        // The plain policy keeps its delta.
        let mut q = Policy::new(&cfg("load-prev-delta", 2));
        q.on_port_stats(&[Some(0), Some(0)], 0.0);
        picks(&mut q, 3);
        q.on_port_stats(&[Some(10_000), Some(5_000)], 1.0);
        assert_eq!(q.delta(), 1000.0);
    }

    #[test]
    fn least_connections_counts_the_flows_still_open() {
        let mut p = Policy::new(&cfg("least-connections", 3));
        assert_eq!(picks(&mut p, 4), [0, 1, 2, 0]);
        p.flow_ended(1);
        p.flow_ended(2);
        assert_eq!(picks(&mut p, 2), [1, 2]);
        assert_eq!(p.active(), [2, 1, 1]);
    }

    #[test]
    fn power_of_two_takes_the_less_busy_of_two_random_replicas() {
        let mut p = Policy::new(&cfg("power-of-two", 4));
        let chosen = picks(&mut p, 4000);
        // It never picks the busiest replica unless both samples tie: the
        // spread stays within a few flows.
        let a = p.active();
        assert!(a.iter().max().unwrap() - a.iter().min().unwrap() <= 2, "{a:?}");
        assert!((0..4).all(|r| chosen.contains(&r)));
        p.set_alive(0, false);
        p.set_alive(1, false);
        p.set_alive(2, false);
        assert_eq!(picks(&mut p, 3), [3, 3, 3]);
    }

    #[test]
    fn weighted_spreads_by_weight_smoothly() {
        // Weights equal the last address byte: 1, 2, 3.
        let mut p = Policy::new(&cfg("weighted", 3));
        let six = picks(&mut p, 6);
        let count = |r| six.iter().filter(|&&x| x == r).count();
        assert_eq!((count(0), count(1), count(2)), (1, 2, 3));
        assert_eq!(six, [2, 1, 0, 2, 1, 2], "interleaved, not 2,2,2,...");
    }

    #[test]
    fn maglev_is_balanced_and_moves_only_the_dead_replicas_flows() {
        let mut p = Policy::new(&cfg("maglev", 4));
        let before: Vec<usize> = (0..2000u64)
            .map(|f| p.choose(fnv1a(&f.to_le_bytes(), 7), &[]).unwrap())
            .collect();
        for r in 0..4 {
            let share = before.iter().filter(|&&x| x == r).count();
            assert!((350..650).contains(&share), "replica {r}: {share} of 2000");
        }
        p.set_alive(3, false);
        let after: Vec<usize> = (0..2000u64)
            .map(|f| p.choose(fnv1a(&f.to_le_bytes(), 7), &[]).unwrap())
            .collect();
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a && **b != 3).count();
        // Maglev's promise is minimal disruption, not zero: a few percent at most.
        assert!(moved < 100, "{moved} flows of live replicas moved");
        assert!(!after.contains(&3));
    }

    #[test]
    fn no_live_replica_no_choice() {
        for name in crate::config::POLICIES {
            let mut p = Policy::new(&cfg(name, 2));
            p.set_alive(0, false);
            p.set_alive(1, false);
            assert_eq!(p.choose(1, &[report(0, 0.0, 0), report(0, 0.0, 0)]), None, "{name}");
        }
    }
}
