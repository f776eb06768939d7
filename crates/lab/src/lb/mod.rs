//! `sdnlab bench lb`: the load-balancing experiment of MISSION.md section
//! B. It builds the paper's testbed with netlab (a client host, one
//! OpenFlow 1.3 switch, four nginx replicas behind rate-limited links, a
//! management network where the replicas' agents answer), runs sdnlab's
//! controller in this process with the `lb` app, and for every policy
//! variant, load, client and concurrency level runs the load, repeated.
//! Every request's record is on disk (`requests.csv`) before the run is
//! summarised; the figures go through the report engine.

mod choices;
pub use choices::*;

use crate::rundir::Place;
use crate::{Event, Experiment, LabError, Observer, Outcome};
use ::lb::app::LbSlot;
use ::lb::load::{self, Videos};
use ::lb::{Config, Lb};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use stats::Better;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The load-balancing experiment. The defaults are the paper's design
/// with 5 repetitions of 10 s: every policy, both loads, both clients,
/// eight concurrency levels, on sdnlab's switch.
///
/// Its fields are `sdnlab bench lb`'s flags too (the command line
/// flattens them): each declared once, with its default and help.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct LbConfig {
    /// A smoke run: concurrency 20 and 60, one repetition of 1.5 s, the
    /// policies round-robin, txbytes, load and load-prev-delta (unless --policy).
    #[arg(long)]
    pub quick: bool,
    /// Policies to compare (default: all eleven): round-robin, random, txbytes, cpuq-load,
    /// load, load-prev-delta, least-connections, power-of-two, weighted, maglev, load-prev-adaptive.
    #[arg(long = "policy", value_delimiter = ',')]
    pub policies: Vec<LbPolicy>,
    /// The OpenFlow switch between clients and replicas.
    #[arg(long, default_value_t = LbConfig::default().switch)]
    pub switch: LbSwitch,
    /// Loads: homogeneous (every request 100 KB), heterogeneous (video chunks).
    #[arg(long = "load", value_delimiter = ',', default_values_t = LbConfig::default().loads)]
    pub loads: Vec<LbLoad>,
    /// Concurrency levels: new connections (requests) per second offered by the client.
    #[arg(long, value_delimiter = ',', default_values_t = LbConfig::default().concurrency)]
    pub concurrency: Vec<u32>,
    /// Repetitions of every point (the paper used 33).
    #[arg(long, default_value_t = LbConfig::default().repetitions)]
    pub repetitions: u32,
    /// Seconds of load per repetition.
    #[arg(long, default_value_t = LbConfig::default().seconds)]
    pub seconds: f64,
    /// Clients: open-loop (ours: latency from each request's intended start) and httperf.
    #[arg(long = "client", value_delimiter = ',', default_values_t = LbConfig::default().clients)]
    pub clients: Vec<LbClient>,
    /// The `load` policy's alpha values (default 0.3,0.5,0.7,1; --quick: 0.7).
    #[arg(long, value_delimiter = ',')]
    pub alpha: Vec<f64>,
    /// Which port counter `load` reads: rx (responses: server work), tx (requests, the
    /// paper's formula), or both (each a variant; default both, --quick rx).
    #[arg(long)]
    pub load_counter: Option<LoadCounter>,
    /// PortStats polling period of the statistics-driven policies (the paper: 10 ms).
    #[arg(long, default_value_t = LbConfig::default().stats_period_ms)]
    pub stats_period_ms: f64,
    /// load-prev-delta's per-flow addition, bytes/s (the paper: 13 KB/s).
    #[arg(long, default_value_t = LbConfig::default().delta)]
    pub delta: f64,
    /// Each replica's link rate, Mbit/s: what makes the replicas the bottleneck here.
    #[arg(long, default_value_t = LbConfig::default().replica_mbit)]
    pub replica_mbit: f64,
    /// Seed of the heterogeneous load and of the random policies.
    #[arg(long, default_value_t = LbConfig::default().seed)]
    pub seed: u64,
    /// Distinct video sessions in the heterogeneous load.
    #[arg(long, default_value_t = LbConfig::default().sessions)]
    pub sessions: usize,
}

/// The concurrency levels by default (the paper's).
pub const LEVELS: [u32; 8] = [20, 60, 80, 100, 120, 160, 180, 200];

impl Default for LbConfig {
    fn default() -> LbConfig {
        LbConfig {
            quick: false,
            policies: Vec::new(),
            switch: LbSwitch::Sdnlab,
            loads: LbLoad::ALL.to_vec(),
            concurrency: LEVELS.to_vec(),
            repetitions: 5,
            seconds: 10.0,
            clients: LbClient::ALL.to_vec(),
            alpha: Vec::new(),
            load_counter: None,
            stats_period_ms: 10.0,
            delta: 13_000.0,
            replica_mbit: 40.0,
            seed: 1,
            sessions: 100,
        }
    }
}

impl LbConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), LabError> {
        // (The choices are enums: the parser and the file's reader refuse
        // a name none of them has.)
        plan(self).map(drop)
    }
}

const VIP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);
const VIP_MAC: &str = "02:00:00:00:01:00";
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const REPLICAS: usize = 4;
use ::lb::load::REQUEST_TIMEOUT;

fn replica_ip(r: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, 11 + r as u8)
}

/// A policy with its parameters, as one line of the comparison.
#[derive(Clone, Debug)]
struct Variant {
    name: String,
    policy: LbPolicy,
    alpha: f64,
    counter: &'static str,
}

struct Plan {
    variants: Vec<Variant>,
    loads: Vec<LbLoad>,
    clients: Vec<LbClient>,
    levels: Vec<u32>,
    repetitions: u32,
    seconds: f64,
}

/// What the experiment runs: every parameter checked (the first one out
/// of range is the error), the policies' variants, the levels.
fn plan(a: &LbConfig) -> Result<Plan, LabError> {
    use crate::check::{range, real, ParamError};
    let policies: Vec<LbPolicy> = if !a.policies.is_empty() {
        a.policies.clone()
    } else if a.quick {
        vec![
            LbPolicy::RoundRobin,
            LbPolicy::TxBytes,
            LbPolicy::Load,
            LbPolicy::LoadPrevDelta,
        ]
    } else {
        LbPolicy::ALL.to_vec()
    };
    let alphas = if !a.alpha.is_empty() {
        a.alpha.clone()
    } else if a.quick {
        vec![0.7]
    } else {
        vec![0.3, 0.5, 0.7, 1.0]
    };
    if let Some(x) = alphas.iter().find(|x| !(**x > 0.0 && **x <= 1.0)) {
        return Err(ParamError::new("alpha", x, "must be more than 0 and at most 1").into());
    }
    range("repetitions", a.repetitions, 1, 10_000)?;
    real("seconds", a.seconds, 1.0, 3600.0)?;
    real("stats-period-ms", a.stats_period_ms, 1.0, 60_000.0)?;
    real("delta", a.delta, 0.0, 1e12)?;
    real("replica-mbit", a.replica_mbit, 0.1, 10_000.0)?;
    range("sessions", a.sessions, 1, 10_000)?;
    for c in &a.concurrency {
        range("concurrency", *c, 1, 5000)?;
    }
    let counters: Vec<&'static str> = match a.load_counter {
        Some(LoadCounter::Rx) => vec!["rx"],
        Some(LoadCounter::Tx) => vec!["tx"],
        Some(LoadCounter::Both) => vec!["rx", "tx"],
        None if a.quick => vec!["rx"],
        None => vec!["rx", "tx"],
    };
    let mut variants = Vec::new();
    for &p in &policies {
        let sweeps = p == LbPolicy::Load;
        let alphas_here = if sweeps {
            alphas.clone()
        } else {
            vec![if alphas.contains(&0.7) { 0.7 } else { alphas[0] }]
        };
        let counters_here = if sweeps { counters.clone() } else { vec![counters[0]] };
        for &alpha in &alphas_here {
            for &counter in &counters_here {
                let name = if sweeps && (alphas_here.len() > 1 || counters_here.len() > 1) {
                    format!("load(a={alpha},{counter})")
                } else {
                    p.to_string()
                };
                variants.push(Variant {
                    name,
                    policy: p,
                    alpha,
                    counter,
                });
            }
        }
    }
    let levels = if a.quick && a.concurrency == LEVELS {
        vec![20, 60]
    } else {
        a.concurrency.clone()
    };
    let seconds = if a.quick { 1.5 } else { a.seconds };
    Ok(Plan {
        variants,
        loads: a.loads.clone(),
        clients: a.clients.clone(),
        levels,
        repetitions: if a.quick { 1 } else { a.repetitions.max(1) },
        seconds,
    })
}

fn lb_config(v: &Variant, a: &LbConfig, mgmt: &str) -> Result<Config, ::lb::LbError> {
    let mut t = format!(
        "policy = \"{}\"\nalpha = {}\nload_counter = \"{}\"\nstats_period_ms = {}\ndelta = {}\nseed = {}\nidle_timeout = 5\nhealth = {{ kind = \"tcp\", interval_ms = 500 }}\n[vip]\nip = \"{VIP}\"\nmac = \"{VIP_MAC}\"\n",
        v.policy, v.alpha, v.counter, a.stats_period_ms, a.delta, a.seed
    );
    for r in 0..REPLICAS {
        t += &format!(
            "[[replica]]\nip = \"{}\"\nmac = \"02:00:00:00:00:{:02x}\"\nport = {}\nmgmt = \"{mgmt}.{}\"\n",
            replica_ip(r),
            0x11 + r,
            2 + r,
            11 + r
        );
    }
    Config::parse(&t)
}

/// The testbed, up.
struct Lab {
    // Dropped in this order: the servers, then the network.
    _children: nsexec::Children,
    net: netlab::run::Net,
    _rt: tokio::runtime::Runtime,
    slot: Arc<LbSlot>,
    _controller: controller::runtime::Handle,
    mgmt: String,
    agents: lb::agent::Client,
}

impl Drop for Lab {
    fn drop(&mut self) {
        self._controller.stop();
    }
}

fn topology(replica_mbit: f64, mgmt: &str) -> netlab::topo::Topology {
    let mut t = String::new();
    t += &format!("[mgmt]\nsubnet = \"{mgmt}.0/24\"\nroot_ip = \"{mgmt}.254\"\n");
    t += &format!("[[host]]\nname = \"c1\"\nip = \"{CLIENT}/24\"\nmgmt_ip = \"{mgmt}.1\"\n");
    for r in 0..REPLICAS {
        t += &format!(
            "[[host]]\nname = \"r{}\"\nip = \"{}/24\"\nmac = \"02:00:00:00:00:{:02x}\"\nmgmt_ip = \"{mgmt}.{}\"\n",
            r + 1,
            replica_ip(r),
            0x11 + r,
            11 + r
        );
    }
    t += "[[switch]]\nname = \"s1\"\nprotocols = [\"OpenFlow13\"]\n";
    t += "[[link]]\na = \"c1\"\nb = \"s1\"\n";
    for r in 0..REPLICAS {
        t += &format!("[[link]]\na = \"r{}\"\nb = \"s1\"\nrate_mbit = {replica_mbit}\n", r + 1);
    }
    netlab::topo::from_toml(&t).expect("the bench's own topology is valid")
}

fn up(a: &LbConfig, first: &Variant, videos: &Videos) -> Result<Lab, LabError> {
    let mgmt = format!("10.78.{}", 100 + std::process::id() % 100);
    let lb = Lb::new(lb_config(first, a, &mgmt)?);
    let slot = LbSlot::new(lb.clone());
    let l2 = controller::catalog::by_name("l2-learning")?;
    let controller = controller::runtime::start(controller::runtime::Config {
        listen: vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0))],
        workers: 1,
        apps: vec![slot.factory(), l2],
        ..Default::default()
    })
    .map_err(|e| LabError::setup(format!("starting the controller: {e}")))?;
    let addr = controller.local_addrs[0];
    let rt = crate::rundir::runtime()?;
    let kind = a.switch.kind();
    let net = rt.block_on(netlab::run::Net::up(
        topology(a.replica_mbit, &mgmt),
        netlab::run::UpOptions {
            controller: Some(addr.to_string()),
            ..netlab::run::UpOptions::of(kind)
        },
    ))?;
    // Hosts finish their own checksums: a first segment the controller
    // sends back out (PACKET_OUT) must be valid, and Open vSwitch's
    // userspace datapath hands the controller the checksum a veth left
    // unfinished (sdnlab's switch finishes it). The same for every switch.
    for h in &net.state.hosts {
        nsexec::on_thread(Some(&h.netns), || packetio::live::set_tx_checksum("eth0", false))
            .map_err(|e| LabError::setup(format!("{}: {e}", h.name)))?;
    }
    let mut children = nsexec::Children::default();
    let chunks = videos.chunk_bytes.clone();
    for r in 0..REPLICAS {
        let name = format!("r{}", r + 1);
        let dir = net.dir.join(&name);
        let argv = ::lb::replica::prepare(&dir, &name, 80, &chunks).map_err(|source| LabError::Io {
            path: dir.clone(),
            source,
        })?;
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let nginx = net
            .command(&name, &argv)?
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LabError::setup(format!("nginx: {e}")))?;
        children.0.push(nginx);
        let me = std::env::current_exe().map_err(LabError::setup)?;
        let pidfile = dir.join("agent.pid");
        let agent = net
            .command(
                &name,
                &[
                    me.to_str().unwrap_or("sdnlab"),
                    "agent",
                    "--pidfile",
                    pidfile.to_str().unwrap_or(""),
                ],
            )?
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| LabError::setup(format!("agent: {e}")))?;
        children.0.push(agent);
    }
    lb.start_tcp_health();
    let lab = Lab {
        _children: children,
        net,
        _rt: rt,
        slot,
        _controller: controller,
        mgmt,
        agents: lb::agent::Client::new().map_err(LabError::setup)?,
    };
    // Every nginx listening (seen over the management network, as the
    // health checks see it), and a request through the VIP answered.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listening = (0..REPLICAS).all(|r| {
            let addr: std::net::SocketAddr = format!("{}.{}:80", lab.mgmt, 11 + r).parse().expect("an address");
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        });
        if listening && (0..REPLICAS).all(|r| lb.is_alive(r)) && lab.probe_vip().is_ok() {
            break;
        }
        if Instant::now() > deadline {
            return Err(LabError::Setup(format!(
                "the replicas did not answer through the VIP within 20 s ({})",
                lab.probe_vip().err().unwrap_or_default()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(lab)
}

impl Lab {
    fn client_ns(&self) -> String {
        self.net.state.hosts[0].netns.clone()
    }

    /// One GET through the VIP from the client.
    // Text on purpose: why the VIP did not answer goes into the wait's message.
    fn probe_vip(&self) -> Result<(), String> {
        let ns = self.client_ns();
        let uris = vec!["/index.html".to_string()];
        let r = nsexec::on_thread(Some(&ns), move || {
            load::Load {
                timeout: Duration::from_secs(2),
                max_open: 1,
                ..load::Load::new(VIP, 80, uris, 1.0, 1.0)
            }
            .run()
        })
        .map_err(|e| e.to_string())?;
        match r.first().and_then(|q| q.error) {
            None if r.first().is_some_and(|q| q.replica.is_some()) => Ok(()),
            None => Err("no answer".into()),
            Some(e) => Err(e.into()),
        }
    }

    fn agents(&mut self) -> Vec<Option<lb::agent::Answer>> {
        let addrs: Vec<Option<std::net::SocketAddr>> = (0..REPLICAS)
            .map(|r| {
                format!("{}.{}:{}", self.mgmt, 11 + r, lb::config::AGENT_PORT)
                    .parse()
                    .ok()
            })
            .collect();
        self.agents.ask(&addrs, Duration::from_millis(200), false)
    }
}

/// One repetition to run.
struct Point<'a> {
    client: LbClient,
    uris: &'a [String],
    /// httperf's URI list for the heterogeneous load.
    wlog: Option<&'a Path>,
    level: u32,
    seconds: f64,
    scenario: &'a str,
    rep: u32,
}

/// What one repetition measured, as the report's values.
struct Measured {
    values: BTreeMap<String, f64>,
    /// Response time distribution (µs, cumulative fraction).
    cdf: Vec<(f64, f64)>,
    note: Option<String>,
}

// Text on purpose: a point that failed is a row of the summary, its reason in the note column.
fn run_point(lab: &mut Lab, pt: &Point, requests_csv: &mut std::fs::File) -> Result<Measured, String> {
    let Point {
        client,
        uris,
        wlog,
        level,
        seconds,
        scenario,
        rep,
    } = *pt;
    let before = lab.agents();
    let lb = lab.slot.get();
    let ns = lab.client_ns();
    let rate = level as f64;
    let uris_owned = uris.to_vec();
    let wlog_owned = wlog.map(Path::to_path_buf);
    let worker = std::thread::spawn(move || -> Result<ClientRun, ::lb::LbError> {
        if client == LbClient::Httperf {
            let count = (rate * seconds).round().max(1.0) as u64;
            let target = match &wlog_owned {
                Some(w) => Err(w.as_path()),
                None => Ok(uris_owned[0].as_str()),
            };
            load::httperf(&ns, VIP, 80, target, rate, count, REQUEST_TIMEOUT.as_secs_f64()).map(ClientRun::Httperf)
        } else {
            load::Load::new(VIP, 80, uris_owned, rate, seconds)
                .run_in(&ns, |_| {})
                .map(ClientRun::Requests)
        }
    });
    // The replicas' CPU while the load runs, from their agents.
    let mut cpu = [0.0f64; REPLICAS];
    let mut cpu_samples = 0u32;
    let t0 = Instant::now();
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(250));
        if t0.elapsed().as_secs_f64() < seconds {
            for (r, a) in lab.agents().into_iter().enumerate() {
                cpu[r] += a.map_or(0.0, |a| a.cpu_milli as f64 / 1000.0);
            }
            cpu_samples += 1;
        }
    }
    let outcome = worker
        .join()
        .map_err(|_| "the client panicked".to_string())?
        .map_err(|e| e.to_string())?;
    let after = lab.agents();
    let m = lb.snapshot();
    let mut v = BTreeMap::new();
    let mut cdf = Vec::new();
    let mut note = None;
    let per_replica_requests: Vec<f64> = match outcome {
        ClientRun::Requests(reqs) => {
            // On disk before anything is summarised.
            for q in &reqs {
                let _ = writeln!(
                    requests_csv,
                    "{scenario},{rep},{},{},{},{},{}",
                    q.intended_us,
                    q.latency_us,
                    q.bytes,
                    q.replica.as_deref().unwrap_or(""),
                    q.error.unwrap_or("")
                );
            }
            let _ = requests_csv.flush();
            let ok: Vec<&load::Request> = reqs.iter().filter(|q| q.error.is_none()).collect();
            let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("bounds");
            for q in &ok {
                let _ = h.record(q.latency_us.max(1));
            }
            if !h.is_empty() {
                v.insert("response_ms_mean".into(), h.mean() / 1000.0);
                v.insert("response_ms_p50".into(), h.value_at_quantile(0.5) as f64 / 1000.0);
                v.insert("response_ms_p99".into(), h.value_at_quantile(0.99) as f64 / 1000.0);
                v.insert("response_ms_p999".into(), h.value_at_quantile(0.999) as f64 / 1000.0);
                cdf = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]
                    .iter()
                    .map(|&q| (h.value_at_quantile(q) as f64, q))
                    .collect();
            }
            let bytes: u64 = ok.iter().map(|q| q.bytes).sum();
            v.insert("throughput_rps".into(), ok.len() as f64 / seconds);
            v.insert("throughput_mbit".into(), bytes as f64 * 8.0 / seconds / 1e6);
            v.insert("errors".into(), (reqs.len() - ok.len()) as f64);
            let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
            for q in reqs.iter().filter_map(|q| q.error) {
                *kinds.entry(q).or_default() += 1;
            }
            for (k, n) in &kinds {
                v.insert(format!("errors_{k}"), *n as f64);
            }
            if !kinds.is_empty() {
                note = Some(format!("errors: {kinds:?}"));
            }
            (0..REPLICAS)
                .map(|r| {
                    let name = format!("r{}", r + 1);
                    ok.iter().filter(|q| q.replica.as_deref() == Some(&name)).count() as f64
                })
                .collect()
        }
        ClientRun::Httperf(h) => {
            v.insert("response_ms_mean".into(), h.connection_ms_avg);
            v.insert("response_ms_p50".into(), h.connection_ms_median);
            v.insert("throughput_rps".into(), h.replies as f64 / h.duration_s.max(1e-9));
            v.insert("throughput_mbit".into(), h.net_kbyte_s * 8.0 / 1000.0);
            let total = h.errors.get("total").copied().unwrap_or(0);
            v.insert("errors".into(), total as f64);
            v.insert(
                "lost_connections".into(),
                h.connections.saturating_sub(h.replies) as f64,
            );
            for (k, n) in h.errors.iter().filter(|(k, n)| *k != "total" && **n > 0) {
                v.insert(format!("errors_{k}"), *n as f64);
            }
            if total > 0 {
                note = Some(format!("httperf errors: {:?}", h.errors));
            }
            m.flows_per_replica.iter().map(|&n| n as f64).collect()
        }
    };
    for (r, n) in per_replica_requests.iter().enumerate() {
        v.insert(format!("r{}_requests", r + 1), *n);
        let sent = match (before.get(r).copied().flatten(), after.get(r).copied().flatten()) {
            (Some(b), Some(a)) => a.tx_bytes.saturating_sub(b.tx_bytes) as f64,
            _ => f64::NAN,
        };
        v.insert(format!("r{}_mbyte", r + 1), sent / 1e6);
        if cpu_samples > 0 {
            v.insert(format!("r{}_cpu", r + 1), cpu[r] / cpu_samples as f64);
        }
    }
    v.insert("fairness".into(), load::jain(&per_replica_requests));
    v.insert("concurrency".into(), level as f64);
    if m.decisions > 0 {
        v.insert("decision_us_p50".into(), m.decision_us_p50);
        v.insert("decision_us_p99".into(), m.decision_us_p99);
    }
    if let Some(age) = m.stats_age_ms_mean {
        v.insert("stats_age_ms_mean".into(), age);
    }
    v.insert("rules_max".into(), 2.0 * m.rules_live_max as f64);
    v.insert("agent_unanswered".into(), m.agent_unanswered as f64);
    Ok(Measured { values: v, cdf, note })
}

/// What one client run returned.
enum ClientRun {
    Requests(Vec<load::Request>),
    Httperf(load::Httperf),
}

fn metrics() -> Vec<Metric> {
    vec![
        Metric::new("response_ms_mean", "ms", Better::Lower).titled("Response time, mean"),
        Metric::new("response_ms_p50", "ms", Better::Lower).titled("Response time, median"),
        Metric::new("response_ms_p99", "ms", Better::Lower).titled("Response time, 99th percentile"),
        Metric::new("response_ms_p999", "ms", Better::Lower).titled("Response time, 99.9th percentile"),
        Metric::new("throughput_rps", "requests/s", Better::Higher).titled("Requests served per second"),
        Metric::new("throughput_mbit", "Mbit/s", Better::Higher).titled("Data served"),
        Metric::new("errors", "requests", Better::Lower).titled("Failed requests"),
        Metric::new("lost_connections", "connections", Better::Lower).titled("Lost connections"),
        Metric::new("fairness", "Jain index", Better::Higher).titled("Fairness across replicas"),
        Metric::new("decision_us_p99", "µs", Better::Lower).titled("Balancing decision time, 99th percentile"),
        Metric::new("stats_age_ms_mean", "ms", Better::Lower).titled("Age of the port statistics used"),
        Metric::new("rules_max", "rules", Better::Lower).titled("Rules in the switch, most"),
    ]
}

/// nginx for the replicas, and httperf when it is one of the clients:
/// installed now if they are not yet.
fn need_tools(clients: &[LbClient]) -> Result<(), LabError> {
    let mut tools = vec![netlab::install::NGINX];
    if clients.contains(&LbClient::Httperf) {
        tools.push(netlab::install::HTTPERF);
    }
    Ok(netlab::install::need(&tools).map_err(netlab::NetError::from)?)
}

/// Runs the experiment into `place`.
pub fn run(a: &LbConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let p = plan(a)?;
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::setup("bench lb builds namespaces and veths: run it as root"));
    }
    need_tools(&p.clients)?;
    let run_id = place.name("bench-lb");
    let dir = place.dir(&run_id);
    let dir = std::path::absolute(&dir).map_err(crate::rundir::io_error(&dir))?;
    let videos = Videos::new(a.seed, 60_000, a.sessions);
    let homo_uris = vec![::lb::replica::homogeneous_uri()];
    let meta = Meta {
        benchmark: "bench lb".into(),
        targets: vec![Target {
            name: format!("sdnlab controller, lb app, {} switch, 4 nginx replicas", a.switch),
            version: env!("CARGO_PKG_VERSION").into(),
            command: String::new(),
            address: VIP.to_string(),
        }],
        parameters: serde_json::json!({
            "variants": p.variants.iter().map(|v| &v.name).collect::<Vec<_>>(),
            "loads": p.loads, "clients": p.clients, "concurrency": p.levels,
            "repetitions": p.repetitions, "seconds": p.seconds, "replica_mbit": a.replica_mbit,
            "stats_period_ms": a.stats_period_ms, "delta": a.delta, "seed": a.seed,
            "sessions": a.sessions, "switch": a.switch,
            "heterogeneous_chunk_bytes": [videos.chunk_bytes.iter().min(), videos.chunk_bytes.iter().max()],
        }),
        metrics: metrics(),
        ..crate::rundir::started(&run_id)
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Lb(a.clone()), &place.stop)?;
    // (In the run directory Run::open made, after it refused one that holds a run.)
    let wlog = dir.join("heterogeneous.wlog");
    let hetero_uris: Vec<String> = videos
        .requests
        .iter()
        .map(|&c| format!("/{}", ::lb::replica::chunk_name(c)))
        .collect();
    std::fs::write(&wlog, hetero_uris.join("\0") + "\0").map_err(crate::rundir::io_error(&wlog))?;
    let csv_path = dir.join("requests.csv");
    let mut csv = std::fs::File::create(&csv_path).map_err(crate::rundir::io_error(&csv_path))?;
    writeln!(csv, "scenario,repetition,intended_us,latency_us,bytes,replica,error")
        .map_err(crate::rundir::io_error(&csv_path))?;
    obs.event(Event::Line(&format!(
        "building the testbed ({} switch, 4 nginx replicas)",
        a.switch
    )));
    let mut lab = up(a, &p.variants[0], &videos)?;
    let decisions = decisions_alone(&p, a, &lab.mgmt, &mut run)?;
    obs.event(Event::Line(&format!("decision time alone:\n{decisions}")));
    let mut rows: Vec<(String, BTreeMap<String, Vec<f64>>)> = Vec::new();
    for v in &p.variants {
        let cfg = lb_config(v, a, &lab.mgmt).map_err(LabError::setup)?;
        for load in &p.loads {
            for client in &p.clients {
                for &level in &p.levels {
                    let scenario = format!("{} {load} {client} {level}", v.name);
                    let mut acc: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                    for rep in 0..p.repetitions {
                        if run.stop.stopping() {
                            break;
                        }
                        // A fresh app per repetition: its metrics are this run's.
                        let lb = Lb::new(cfg.clone());
                        lb.start_tcp_health();
                        lab.slot.set(lb);
                        std::thread::sleep(Duration::from_millis(300));
                        let (uris, w) = if *load == LbLoad::Homogeneous {
                            (&homo_uris, None)
                        } else {
                            (&hetero_uris, Some(wlog.as_path()))
                        };
                        let pt = Point {
                            client: *client,
                            uris,
                            wlog: w,
                            level,
                            seconds: p.seconds,
                            scenario: &scenario,
                            rep,
                        };
                        // The host while the point runs: the replicas' nginx,
                        // httperf, and this process (the lb controller, the
                        // open-loop client).
                        let watch = crate::host::HostWatch::start_with(
                            vec![("sdnlab (lb controller, client)".into(), std::process::id())],
                            &["nginx", "httperf"],
                            crate::host::Rule::default(),
                        );
                        let measured = run_point(&mut lab, &pt, &mut csv);
                        let host = watch.finish();
                        let Measured { values, cdf, mut note } = match measured {
                            Ok(x) => x,
                            Err(e) => {
                                run.meta.events.push(format!("{scenario} #{rep}: {e}"));
                                obs.event(Event::Line(&format!("{scenario} #{rep}: {e}")));
                                continue;
                            }
                        };
                        if let Some(reason) = &host.reason {
                            let line = format!("{scenario} #{rep}: host-bound: {reason}");
                            obs.event(Event::Line(&line));
                            run.meta.events.push(line);
                            note = Some(match note {
                                Some(n) => format!("{n}; host-bound: {reason}"),
                                None => format!("host-bound: {reason}"),
                            });
                        }
                        for (k, x) in &values {
                            acc.entry(k.clone()).or_default().push(*x);
                        }
                        run.sample(
                            &Sample::trial(scenario.clone(), rep, values)
                                .with_cdf(cdf)
                                .noted(note)
                                .under_test(v.name.clone(), format!("{load} {client} {level}")),
                        )?;
                    }
                    let mean = |k: &str| acc.get(k).map(|x| stats::mean(x)).unwrap_or(f64::NAN);
                    obs.event(Event::Line(&format!(
                        "{scenario}: response {:.1} ms mean, {:.0} req/s, {} errors, fairness {:.3}",
                        mean("response_ms_mean"),
                        mean("throughput_rps"),
                        mean("errors"),
                        mean("fairness")
                    )));
                    rows.push((scenario, acc));
                }
            }
        }
    }
    drop(lab);
    if run.stop.stopping() {
        run.meta.events.push("stopped by a signal before the end".into());
        obs.event(Event::Line(
            "stopped by a signal; the testbed is removed, the report covers what ran",
        ));
    }
    let summary = format!("{}\n{decisions}", summary_md(&rows));
    std::fs::write(dir.join("summary.md"), &summary).map_err(crate::rundir::io_error(&dir))?;
    let done = run.finish()?;
    let requests = csv_path.display().to_string();
    let report_path = dir.join("report.html").display().to_string();
    Ok(Outcome {
        table: format!("{summary}\nrequests: {requests}\nreport: {report_path}\n"),
        json: serde_json::json!({"dir": dir, "requests": requests, "report": report_path, "events": done.meta.events}),
        dir,
        incomplete: 0,
    })
}

/// The comparison table: a row per policy, load, client and level, means
/// over the repetitions with 95 % bootstrap CIs (never below the smallest
/// value) where there are two or more.
fn summary_md(rows: &[(String, BTreeMap<String, Vec<f64>>)]) -> String {
    let mut s = String::from(
        "| policy | load | client | concurrency | response mean (ms) [95 % CI, bootstrap] | p99 (ms) | throughput (req/s) | errors | lost conns | fairness (Jain) | requests r1/r2/r3/r4 | decision p99 (µs) | stats age (ms) | rules max |\n|---|---|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n",
    );
    for (scenario, acc) in rows {
        let mut words = scenario.split(' ');
        let (v, load, client, level) = (
            words.next().unwrap_or(""),
            words.next().unwrap_or(""),
            words.next().unwrap_or(""),
            words.next().unwrap_or(""),
        );
        let get = |k: &str| acc.get(k).filter(|x| !x.is_empty());
        let mean = |k: &str| get(k).map(|x| stats::mean(x));
        let f = |k: &str, digits: usize| {
            mean(k)
                .filter(|x| x.is_finite())
                .map_or("–".into(), |x| format!("{x:.digits$}"))
        };
        let resp = match get("response_ms_mean") {
            Some(x) if x.len() >= 2 => {
                let (lo, hi) = stats::ci_bootstrap(x, 0.95, 10_000, 8456);
                format!("{:.2} [{lo:.2}, {hi:.2}]", stats::mean(x))
            }
            Some(x) => format!("{:.2}", stats::mean(x)),
            None => "– (no answer)".into(),
        };
        let per: Vec<String> = (1..=REPLICAS).map(|r| f(&format!("r{r}_requests"), 0)).collect();
        s += &format!(
            "| {v} | {load} | {client} | {level} | {resp} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            f("response_ms_p99", 2),
            f("throughput_rps", 1),
            f("errors", 1),
            f("lost_connections", 1),
            f("fairness", 3),
            per.join("/"),
            f("decision_us_p99", 1),
            f("stats_age_ms_mean", 1),
            f("rules_max", 0),
        );
    }
    s
}

/// Each policy's decision alone: new flows fed to a fresh app as fast as it
/// takes them, no switch and no other load (the agents do answer); a
/// sample per policy, and the table's rows.
fn decisions_alone(p: &Plan, a: &LbConfig, mgmt: &str, run: &mut crate::rundir::Run) -> Result<String, LabError> {
    let mut decisions = String::from(
        "| policy | new flows | decision p50 (µs) | p99 (µs) | max (µs) | agent questions unanswered |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for v in &p.variants {
        let cfg = match lb_config(v, a, mgmt) {
            Ok(c) => c,
            Err(e) => return Err(LabError::setup(e)),
        };
        let flows = if v.policy.asks_servers() {
            if a.quick {
                200
            } else {
                2_000
            }
        } else if a.quick {
            5_000
        } else {
            100_000
        };
        let m = lb::offline::time_decisions(&Lb::new(cfg), flows);
        decisions += &format!(
            "| {} | {} | {:.2} | {:.2} | {:.1} | {} |\n",
            v.name, m.decisions, m.decision_us_p50, m.decision_us_p99, m.decision_us_max, m.agent_unanswered
        );
        let mut values = BTreeMap::new();
        values.insert("decision_us_p50".to_string(), m.decision_us_p50);
        values.insert("decision_us_p99".to_string(), m.decision_us_p99);
        run.sample(
            &Sample::trial(format!("{} decision-alone", v.name), 0, values)
                .under_test(v.name.clone(), "decision-alone"),
        )?;
    }
    Ok(decisions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policies(p: &[LbPolicy]) -> LbConfig {
        LbConfig {
            policies: p.to_vec(),
            ..LbConfig::default()
        }
    }

    #[test]
    fn load_is_swept_over_alpha_and_counter_and_the_others_run_once() {
        let p = plan(&policies(&[LbPolicy::RoundRobin, LbPolicy::Load])).unwrap();
        let names: Vec<&str> = p.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names.len(), 1 + 4 * 2, "{names:?}");
        assert!(names.contains(&"load(a=0.3,tx)") && names.contains(&"load(a=1,rx)"));
        let q = plan(&LbConfig {
            quick: true,
            ..LbConfig::default()
        })
        .unwrap();
        assert_eq!(
            q.variants.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            ["round-robin", "txbytes", "load", "load-prev-delta"]
        );
        assert_eq!((q.levels.as_slice(), q.repetitions), (&[20, 60][..], 1));
        for v in &p.variants {
            lb_config(v, &LbConfig::default(), "10.78.1").unwrap();
        }
    }

    #[test]
    fn bad_values_are_named() {
        let d = LbConfig::default;
        for (c, want) in [
            (
                LbConfig {
                    alpha: vec![0.0],
                    ..d()
                },
                "--alpha 0",
            ),
            (
                LbConfig {
                    concurrency: vec![0],
                    ..d()
                },
                "--concurrency 0",
            ),
            (LbConfig { seconds: 0.1, ..d() }, "--seconds 0.1"),
        ] {
            let e = c.validate().err().unwrap().to_string();
            assert!(e.contains(want), "{c:?}: {e}");
        }
    }

    /// The summary's row of a point: the scenario's words in their
    /// columns, each figure the mean over the repetitions, the response
    /// time with its bootstrap interval (from two repetitions on), and a
    /// point that never answered said so rather than shown as zero.
    #[test]
    fn the_summary_gives_each_points_means_and_says_a_silent_one() {
        let acc = BTreeMap::from([
            ("response_ms_mean".to_string(), vec![10.0, 12.0, 14.0]),
            ("throughput_rps".to_string(), vec![200.0, 198.0, 202.0]),
            ("fairness".to_string(), vec![0.99, 0.97, 0.98]),
            ("r1_requests".to_string(), vec![50.0, 52.0, 48.0]),
        ]);
        let rows = vec![
            ("load(a=0.7,rx) heterogeneous open-loop 200".to_string(), acc),
            ("maglev homogeneous httperf 20".to_string(), BTreeMap::new()),
        ];
        let md = summary_md(&rows);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines.len(), 4, "{md}");
        assert!(
            lines[2].starts_with("| load(a=0.7,rx) | heterogeneous | open-loop | 200 | 12.00 ["),
            "{md}"
        );
        assert!(lines[2].contains("| 200.0 |") && lines[2].contains("| 0.980 |"), "{md}");
        assert!(lines[2].contains("| 50/–/–/– |"), "{md}");
        assert!(lines[3].contains("| – (no answer) |"), "{md}");
    }

    /// The policies the experiment offers are those the `lb` app knows,
    /// by the same names, every one of them.
    #[test]
    fn the_policies_are_the_apps() {
        let ours: Vec<&str> = LbPolicy::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(ours, ::lb::config::POLICIES);
        assert!(LbPolicy::ALL
            .iter()
            .all(|p| ::lb::policy::Kind::from_name(p.name()).is_some()));
        let asking: Vec<LbPolicy> = LbPolicy::ALL.iter().copied().filter(|p| p.asks_servers()).collect();
        assert_eq!(asking, [LbPolicy::TxBytes, LbPolicy::CpuqLoad]);
    }

    #[test]
    fn a_choice_is_read_by_its_name_and_an_unknown_one_refused() {
        let file = "switch = \"ovs\"\nloads = [\"heterogeneous\"]\nclients = [\"open-loop\"]\nload_counter = \"both\"\npolicies = [\"maglev\", \"load-prev-adaptive\"]";
        let c: LbConfig = toml::from_str(file).unwrap();
        assert_eq!(
            (c.switch, c.loads, c.clients, c.load_counter),
            (
                LbSwitch::Ovs,
                vec![LbLoad::Heterogeneous],
                vec![LbClient::OpenLoop],
                Some(LoadCounter::Both)
            )
        );
        assert_eq!(c.policies, [LbPolicy::Maglev, LbPolicy::LoadPrevAdaptive]);
        let e = toml::from_str::<LbConfig>("policies = [\"fastest\"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `fastest`"), "{e}");
        let e = toml::from_str::<LbConfig>("switch = \"bridge\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown variant `bridge`, expected `sdnlab` or `ovs`"),
            "{e}"
        );
        for l in LbLoad::ALL {
            assert_eq!(
                l.to_string(),
                <LbLoad as clap::ValueEnum>::to_possible_value(l).unwrap().get_name()
            );
        }
    }
}
