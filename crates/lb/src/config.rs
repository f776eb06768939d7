//! The `lb` app's configuration (TOML): the virtual IP, the replicas, the
//! policy and its parameters, health checks. Parsing and validation only;
//! every problem is reported in one line that names the field.

use crate::LbError;
use ofwire::MacAddr;
use serde::Deserialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Every policy `policy = "..."` accepts, in the order the report lists them.
pub const POLICIES: [&str; 11] = [
    "round-robin",
    "random",
    "txbytes",
    "cpuq-load",
    "load",
    "load-prev-delta",
    "least-connections",
    "power-of-two",
    "weighted",
    "maglev",
    "load-prev-adaptive",
];

/// Which PortStats counter of a replica's switch port `load` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadCounter {
    /// `rx_bytes`: what the replica sends into the switch, its responses,
    /// i.e. the server's work (the default).
    Rx,
    /// `tx_bytes`: what the switch sends to the replica, its requests (the
    /// paper's formula).
    Tx,
}

/// Where flow rules come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A rule pair per new flow, chosen by the policy on its first packet.
    Reactive,
    /// One OpenFlow 1.3 select group, a bucket per replica (weights); the
    /// switch chooses and the controller is off the data path.
    Proactive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthKind {
    /// A TCP connect to the replica's management address on the service port.
    Tcp,
    /// An ARP request for the replica's address out of its switch port.
    Arp,
    Off,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Replica {
    pub ip: Ipv4Addr,
    pub mac: MacAddr,
    /// The switch port the replica hangs off.
    pub port: u32,
    /// Where its agent (and the TCP health check) is reached.
    pub mgmt: Option<Ipv4Addr>,
    pub weight: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub vip: Ipv4Addr,
    pub vip_mac: MacAddr,
    /// TCP ports served on the VIP.
    pub ports: Vec<u16>,
    /// Sorted by IP: policies break ties towards the lowest address.
    pub replicas: Vec<Replica>,
    pub policy: String,
    pub mode: Mode,
    /// Idle timeout of the per-flow rules.
    pub idle_timeout: u16,
    /// How long the controller remembers which replica a flow went to
    /// after its rules expired (longer than `idle_timeout`).
    pub memory: Duration,
    /// PortStats polling period of the statistics-driven policies.
    pub stats_period: Duration,
    pub alpha: f64,
    /// Bytes/s a new flow adds to its replica's load until the next
    /// statistics (`load-prev-delta`; the starting value of `load-prev-adaptive`).
    pub delta: f64,
    /// How fast `load-prev-adaptive` follows what it observes (0..1].
    pub adapt_rate: f64,
    pub load_counter: LoadCounter,
    pub agent_port: u16,
    pub agent_timeout: Duration,
    pub health: HealthKind,
    pub health_interval: Duration,
    pub health_timeout: Duration,
    /// Consecutive failed checks before a replica is taken out.
    pub health_failures: u32,
    /// Seed of `random` and `power-of-two`.
    pub seed: u64,
    /// Maglev lookup table size (a prime).
    pub maglev_size: usize,
    /// Clear the switch's flow table (and groups) when it connects.
    pub clear_on_start: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VipFile {
    ip: String,
    mac: String,
    #[serde(default = "default_ports")]
    ports: Vec<u16>,
}

fn default_ports() -> Vec<u16> {
    vec![80]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplicaFile {
    ip: String,
    mac: String,
    port: u32,
    mgmt: Option<String>,
    weight: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HealthFile {
    kind: Option<String>,
    interval_ms: Option<u64>,
    timeout_ms: Option<u64>,
    failures: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    vip: VipFile,
    #[serde(rename = "replica", default)]
    replicas: Vec<ReplicaFile>,
    policy: Option<String>,
    mode: Option<String>,
    idle_timeout: Option<u16>,
    memory_s: Option<f64>,
    stats_period_ms: Option<f64>,
    alpha: Option<f64>,
    delta: Option<f64>,
    adapt_rate: Option<f64>,
    load_counter: Option<String>,
    agent_port: Option<u16>,
    agent_timeout_ms: Option<f64>,
    #[serde(default)]
    health: HealthFile,
    seed: Option<u64>,
    maglev_size: Option<usize>,
    clear_on_start: Option<bool>,
}

/// The agent's default UDP port.
pub const AGENT_PORT: u16 = 9109;

fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1000.0)
}

/// A configuration's problem, in one line.
fn bad(why: impl Into<String>) -> LbError {
    LbError::Config(why.into())
}

impl Config {
    /// Reads and validates a TOML file.
    pub fn load(path: &std::path::Path) -> Result<Config, LbError> {
        let text = std::fs::read_to_string(path).map_err(LbError::io(path.display().to_string()))?;
        Config::parse(&text).map_err(|e| LbError::Config(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<Config, LbError> {
        let f: File = toml::from_str(text).map_err(|e| bad(e.message()))?;
        let ip = |what: &str, s: &str| -> Result<Ipv4Addr, LbError> {
            s.parse()
                .map_err(|_| bad(format!("{what} '{s}' is not an IPv4 address")))
        };
        let vip = ip("vip.ip", &f.vip.ip)?;
        let vip_mac: MacAddr = f.vip.mac.parse().map_err(|e| bad(format!("vip.mac: {e}")))?;
        if vip_mac.is_multicast() || vip_mac == MacAddr::ZERO {
            return Err(bad(format!("vip.mac {vip_mac} must be a unicast address")));
        }
        if f.vip.ports.is_empty() || f.vip.ports.contains(&0) {
            return Err(bad("vip.ports needs at least one TCP port, none of them 0"));
        }
        if f.replicas.is_empty() {
            return Err(bad("no [[replica]]: give at least one (ip, mac, port)"));
        }
        let mut replicas = Vec::new();
        for (i, r) in f.replicas.iter().enumerate() {
            let what = format!("replica {}", i + 1);
            let replica = Replica {
                ip: ip(&format!("{what} ip"), &r.ip)?,
                mac: r.mac.parse().map_err(|e| bad(format!("{what} mac: {e}")))?,
                port: r.port,
                mgmt: r.mgmt.as_deref().map(|m| ip(&format!("{what} mgmt"), m)).transpose()?,
                weight: r.weight.unwrap_or(1),
            };
            if replica.port == 0 || replica.port > 0xffff_ff00 {
                return Err(bad(format!("{what} port {} is not a switch port number", r.port)));
            }
            if replica.weight == 0 || replica.weight > 65535 {
                return Err(bad(format!("{what} weight {} is outside 1..=65535", replica.weight)));
            }
            if replica.ip == vip {
                return Err(bad(format!("{what} has the VIP's own address {vip}")));
            }
            if replicas.iter().any(|o: &Replica| o.ip == replica.ip) {
                return Err(bad(format!("{what}: address {} is listed twice", replica.ip)));
            }
            replicas.push(replica);
        }
        replicas.sort_by_key(|r| r.ip);
        let policy = f.policy.unwrap_or_else(|| "round-robin".into());
        if !POLICIES.contains(&policy.as_str()) {
            return Err(bad(format!(
                "unknown policy '{policy}': choose from {}",
                POLICIES.join(", ")
            )));
        }
        let mode = match f.mode.as_deref().unwrap_or("reactive") {
            "reactive" => Mode::Reactive,
            "proactive" => Mode::Proactive,
            m => return Err(bad(format!("mode '{m}': choose reactive or proactive"))),
        };
        let idle_timeout = f.idle_timeout.unwrap_or(10);
        if idle_timeout == 0 {
            return Err(bad(
                "idle_timeout 0 would keep every flow's rules for ever: give 1 or more seconds",
            ));
        }
        let memory = Duration::from_secs_f64(f.memory_s.unwrap_or(6.0 * idle_timeout as f64).max(0.0));
        if memory < Duration::from_secs(idle_timeout as u64) {
            return Err(bad(format!(
                "memory_s {:.1} is shorter than idle_timeout {idle_timeout}: a returning flow could change replica",
                memory.as_secs_f64()
            )));
        }
        let stats_period_ms = f.stats_period_ms.unwrap_or(10.0);
        if !(1.0..=60_000.0).contains(&stats_period_ms) {
            return Err(bad(format!("stats_period_ms {stats_period_ms} is outside 1..=60000")));
        }
        let alpha = f.alpha.unwrap_or(0.7);
        if !(alpha > 0.0 && alpha <= 1.0) {
            return Err(bad(format!("alpha {alpha} is outside (0, 1]")));
        }
        let delta = f.delta.unwrap_or(13_000.0);
        if !(0.0..1e12).contains(&delta) {
            return Err(bad(format!("delta {delta} must be 0 or more bytes/s")));
        }
        let adapt_rate = f.adapt_rate.unwrap_or(0.2);
        if !(adapt_rate > 0.0 && adapt_rate <= 1.0) {
            return Err(bad(format!("adapt_rate {adapt_rate} is outside (0, 1]")));
        }
        let load_counter = match f.load_counter.as_deref().unwrap_or("rx") {
            "rx" => LoadCounter::Rx,
            "tx" => LoadCounter::Tx,
            c => {
                return Err(bad(format!(
                    "load_counter '{c}': choose rx (responses, server work) or tx (requests)"
                )))
            }
        };
        let health = match f.health.kind.as_deref().unwrap_or("tcp") {
            "tcp" => HealthKind::Tcp,
            "arp" => HealthKind::Arp,
            "off" => HealthKind::Off,
            k => return Err(bad(format!("health.kind '{k}': choose tcp, arp or off"))),
        };
        let needs_mgmt = matches!(policy.as_str(), "txbytes" | "cpuq-load") || health == HealthKind::Tcp;
        if needs_mgmt {
            if let Some(r) = replicas.iter().find(|r| r.mgmt.is_none()) {
                return Err(bad(format!(
                    "replica {} has no mgmt address, which policy '{policy}' or the tcp health check needs (or set health.kind = \"arp\" or \"off\")",
                    r.ip
                )));
            }
        }
        let maglev_size = f.maglev_size.unwrap_or(65537);
        if maglev_size < replicas.len() * 10 || !is_prime(maglev_size) {
            return Err(bad(format!(
                "maglev_size {maglev_size} must be a prime of at least 10 x the replicas ({})",
                replicas.len() * 10
            )));
        }
        Ok(Config {
            vip,
            vip_mac,
            ports: f.vip.ports,
            replicas,
            policy,
            mode,
            idle_timeout,
            memory,
            stats_period: ms(stats_period_ms),
            alpha,
            delta,
            adapt_rate,
            load_counter,
            agent_port: f.agent_port.unwrap_or(AGENT_PORT),
            agent_timeout: ms(f.agent_timeout_ms.unwrap_or(50.0).clamp(1.0, 10_000.0)),
            health,
            health_interval: ms(f.health.interval_ms.unwrap_or(500).clamp(10, 600_000) as f64),
            health_timeout: ms(f.health.timeout_ms.unwrap_or(300).clamp(1, 60_000) as f64),
            health_failures: f.health.failures.unwrap_or(2).max(1),
            seed: f.seed.unwrap_or(1),
            maglev_size,
            clear_on_start: f.clear_on_start.unwrap_or(true),
        })
    }

    /// The agent of replica `i`, if it has a management address.
    pub fn agent_addr(&self, i: usize) -> Option<SocketAddr> {
        self.replicas[i].mgmt.map(|ip| SocketAddr::from((ip, self.agent_port)))
    }
}

fn is_prime(n: usize) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
policy = "load"
[vip]
ip = "10.0.0.100"
mac = "02:00:00:00:01:00"
[[replica]]
ip = "10.0.0.12"
mac = "02:00:00:00:00:12"
port = 3
mgmt = "10.77.0.12"
[[replica]]
ip = "10.0.0.11"
mac = "02:00:00:00:00:11"
port = 2
mgmt = "10.77.0.11"
weight = 3
"#;

    #[test]
    fn replicas_are_ordered_by_address_and_defaults_follow_the_paper() {
        let c = Config::parse(BASE).unwrap();
        assert_eq!(c.replicas[0].ip, Ipv4Addr::new(10, 0, 0, 11));
        assert_eq!(c.replicas[0].weight, 3);
        assert_eq!(c.ports, vec![80]);
        assert_eq!(c.stats_period, Duration::from_millis(10));
        assert_eq!(c.alpha, 0.7);
        assert_eq!(c.delta, 13_000.0);
        assert_eq!(c.load_counter, LoadCounter::Rx);
        assert_eq!(c.mode, Mode::Reactive);
        assert!(c.memory > Duration::from_secs(c.idle_timeout as u64));
    }

    #[test]
    fn bad_configs_name_what_is_wrong() {
        let cases = [
            (BASE.replace("\"load\"", "\"fastest\""), "unknown policy 'fastest'"),
            (BASE.replace("10.0.0.100", "10.0.0.300"), "vip.ip '10.0.0.300'"),
            (
                BASE.replace("02:00:00:00:01:00", "03:00:00:00:01:00"),
                "must be a unicast",
            ),
            (BASE.replace("10.0.0.12\"", "10.0.0.11\""), "listed twice"),
            (BASE.replace("weight = 3", "weight = 0"), "weight 0"),
            (format!("alpha = 1.5\n{BASE}"), "alpha 1.5"),
            (format!("load_counter = \"both\"\n{BASE}"), "load_counter 'both'"),
            (format!("maglev_size = 100\n{BASE}"), "maglev_size 100"),
            (
                format!("idle_timeout = 20\nmemory_s = 5\n{BASE}"),
                "shorter than idle_timeout",
            ),
            (BASE.replace("mgmt = \"10.77.0.12\"", ""), "no mgmt address"),
            (format!("polcy = \"x\"\n{BASE}"), "unknown field `polcy`"),
        ];
        for (text, want) in &cases {
            let e = Config::parse(text).unwrap_err();
            assert!(matches!(e, LbError::Config(_)), "{e:?}");
            let e = e.to_string();
            assert!(e.contains(want), "{want}: got {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn health_checks_by_arp_need_no_management_network() {
        let text = format!(
            "health = {{ kind = \"arp\" }}\n{}",
            BASE.replace("policy = \"load\"", "")
        )
        .replace("mgmt = \"10.77.0.12\"", "");
        let c = Config::parse(&text).unwrap();
        assert_eq!(c.health, HealthKind::Arp);
        assert_eq!(c.agent_addr(1), None);
        assert_eq!(c.agent_addr(0), Some("10.77.0.11:9109".parse().unwrap()));
    }
}
