//! The network experiment (`experiment = "net"`): bring a topology up,
//! every host pings every other, iperf3 runs between the pairs named,
//! test-frame flows run between the pairs named (all at once: loss,
//! reordering, one-way latency, each interval as it is counted), and the
//! network comes down. On one machine through netlab, or spread over
//! workers (`sdnlab run --workers`, crate `fleet`): switches balanced over
//! them, links between them carried as VXLAN, each worker's clock offset
//! in `meta.json`.

use crate::check::{Conflict, ParamError};
use crate::rundir::{io_error, runtime, started, Place, Run};
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, Sample};
use serde::{Deserialize, Serialize};

/// A network to bring up and check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetConfig {
    /// A built-in shape (`single,N`, `linear,N`, `tree,D,F`,
    /// `leaf-spine,S,L,H`) or a topology file (netlab's TOML), as `sdnlab
    /// net up` takes them.
    pub topology: String,
    /// The switches: "bridge", "ovs" or "sdnlab".
    pub switch: netlab::run::SwitchKind,
    /// Their controller (HOST:PORT), for "ovs" and "sdnlab".
    pub controller: Option<String>,
    /// Pings from every host to every other (0: no pings).
    pub ping_count: u32,
    /// iperf3 (TCP) runs, each "CLIENT>SERVER" (host names).
    pub iperf: Vec<String>,
    /// Length of each iperf3 run, seconds.
    pub iperf_s: u32,
    /// Open-loop HTTP loads (nginx on the server, every request a new
    /// connection), each "CLIENT>SERVER"; one after another, after iperf3.
    pub http: Vec<String>,
    /// Each HTTP load's requests per second.
    pub http_rate: f64,
    /// Each HTTP load's length, seconds.
    pub http_s: f64,
    /// Test-frame flows (UDP, sdnlab's generator and receiver), each
    /// "FROM>TO"; they run at once, after the HTTP loads.
    pub flows: Vec<String>,
    /// Each flow's rate, frames per second.
    pub flow_pps: f64,
    /// Each flow's length, seconds.
    pub flow_s: f64,
    /// Each flow's frame size, bytes without the FCS (60 is the 64-byte
    /// frame of RFC 2544).
    pub flow_bytes: usize,
    /// How often a flow's receiver reports what it counted, ms.
    pub interval_ms: u32,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            topology: "leaf-spine,2,3,1".into(),
            switch: netlab::run::SwitchKind::Bridge,
            controller: None,
            ping_count: 2,
            iperf: Vec::new(),
            iperf_s: 3,
            http: Vec::new(),
            http_rate: 20.0,
            http_s: 3.0,
            flows: Vec::new(),
            flow_pps: 1000.0,
            flow_s: 3.0,
            flow_bytes: 60,
            interval_ms: 1000,
        }
    }
}

/// A `NetConfig` read.
struct Read {
    topo: netlab::topo::Topology,
    kind: netlab::run::SwitchKind,
    /// iperf3's (client, server) pairs.
    pairs: Vec<(String, String)>,
    /// The HTTP loads' (client, server) pairs.
    http: Vec<(String, String)>,
    flows: Vec<traffic::flow::Flow>,
}

/// "A>B" items of `key`: pairs of two different hosts of `topo`.
fn host_pairs(key: &str, items: &[String], topo: &netlab::topo::Topology) -> Result<Vec<(String, String)>, LabError> {
    let mut pairs = Vec::new();
    for p in items {
        let (a, b) = p
            .split_once('>')
            .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && a != b)
            .ok_or_else(|| ParamError::new(key, format!("\"{p}\""), "write \"FROM>TO\", two hosts"))?;
        for h in [&a, &b] {
            if topo.host(h).is_none() {
                return Err(ParamError::new(key, format!("\"{p}\""), format!("no host '{h}' in the topology")).into());
            }
        }
        pairs.push((a, b));
    }
    Ok(pairs)
}

/// Stream `stream` between hosts `from` and `to` of `topo` (both checked
/// to be there by [`host_pairs`]).
fn flow_between(
    topo: &netlab::topo::Topology,
    stream: u32,
    from: &str,
    to: &str,
) -> Result<traffic::flow::Flow, LabError> {
    let end = |name: &str| {
        topo.host(name)
            .map(|h| traffic::flow::End {
                host: h.name.clone(),
                mac: h.mac,
                ip: h.ip,
            })
            .ok_or_else(|| LabError::Config(format!("flows: no host '{name}' in the topology")))
    };
    Ok(traffic::flow::Flow::new(stream, end(from)?, end(to)?))
}

impl NetConfig {
    /// Every parameter checked, and read: the topology, the switch kind
    /// and the iperf3 pairs.
    fn read(&self) -> Result<Read, LabError> {
        let topo = netlab::topo::load(&self.topology)
            .map_err(|e| ParamError::new("topology", format!("\"{}\"", self.topology), e.join("; ")))?;
        let kind = self.switch;
        crate::check::range("ping-count", self.ping_count, 0, 100)?;
        crate::check::range("iperf-s", self.iperf_s, 1, 3600)?;
        let pairs = host_pairs("iperf", &self.iperf, &topo)?;
        let http = host_pairs("http", &self.http, &topo)?;
        crate::check::real("http-rate", self.http_rate, 0.1, 100_000.0)?;
        crate::check::real("http-s", self.http_s, 0.1, 3600.0)?;
        crate::check::real("flow-pps", self.flow_pps, 1.0, 10_000_000.0)?;
        crate::check::real("flow-s", self.flow_s, 0.1, 3600.0)?;
        crate::check::range("flow-bytes", self.flow_bytes, traffic::frame::MIN_LEN, 9000)?;
        crate::check::range("interval-ms", self.interval_ms, 10, 60_000)?;
        let mut flows = Vec::new();
        for (i, (a, b)) in host_pairs("flows", &self.flows, &topo)?.into_iter().enumerate() {
            let mut f = flow_between(&topo, i as u32 + 1, &a, &b)?;
            f.rate_pps = self.flow_pps;
            f.seconds = self.flow_s;
            f.frame_bytes = self.flow_bytes;
            flows.push(f);
        }
        Ok(Read {
            topo,
            kind,
            pairs,
            http,
            flows,
        })
    }

    pub fn validate(&self) -> Result<(), LabError> {
        self.read().map(|_| ())
    }
}

/// What the checks found: the pings, each iperf3 run's figures, why the
/// HTTP loads stopped short (if they did), and the flows' figures (or why
/// they did not run).
// Text on purpose: each check's failure is a line of the run's summary, not an error of the run.
type Checked = (
    Vec<netlab::run::PingResult>,
    Vec<IperfRun>,
    Result<(), String>,
    Result<Vec<traffic::flow::FlowResult>, String>,
);

/// An iperf3 run: which, and its figures or why there are none.
// Text on purpose: as `Checked`'s.
type IperfRun = (String, Result<netlab::run::IperfResult, String>);

/// What the run writes as it goes: each flow's intervals and each HTTP
/// load's requests as they come (from this machine or a worker), the
/// requests' records in `requests.csv`.
struct Recorder<'a> {
    run: Run,
    obs: &'a dyn Observer,
    errors: Vec<LabError>,
    flow_names: Vec<String>,
    interval_s: f64,
    /// Each HTTP load's name, requests so far, and intervals so far.
    http: Vec<(String, Vec<lb::load::Request>, u32)>,
    csv: Option<std::io::BufWriter<std::fs::File>>,
}

impl Recorder<'_> {
    fn append(&mut self, s: Sample) {
        if let Err(e) = self.run.sample(&s) {
            self.errors.push(e);
        }
    }

    fn flow_interval(&mut self, i: usize, iv: &traffic::run::Interval) {
        let name = self.flow_names[i].clone();
        self.append(
            Sample::of(
                "flow-interval",
                name.clone(),
                0,
                [
                    ("frames", iv.frames as f64),
                    ("rate_pps", iv.frames as f64 / self.interval_s),
                    // (Not the flow's own metrics' names: an interval's
                    // figures are a time series, not trials of the flow.)
                    ("p50_us", iv.latency_us_p50),
                    ("p99_us", iv.latency_us_p99),
                    ("max_us", iv.latency_us_max),
                    ("end_unix_ns", iv.end_ns as f64),
                ],
            )
            .at(iv.index),
        );
        say(
            self.obs,
            format!(
                "sdnlab net: flow {name} interval {}: {} frames, latency p50 {} µs",
                iv.index, iv.frames, iv.latency_us_p50
            ),
        );
    }

    fn http_batch(&mut self, i: usize, batch: Vec<lb::load::Request>) {
        use std::io::Write;
        let name = self.http[i].0.clone();
        if let Some(csv) = &mut self.csv {
            for q in &batch {
                if let Err(e) = writeln!(
                    csv,
                    "{name},{},{},{},{}",
                    q.intended_us,
                    q.latency_us,
                    q.bytes,
                    q.error.unwrap_or("")
                )
                .and_then(|()| csv.flush())
                {
                    self.errors.push(io_error(&self.run.dir().join("requests.csv"))(e));
                }
            }
        }
        let f = HttpFigures::of(&batch, self.interval_s);
        let index = self.http[i].2;
        self.append(
            Sample::of(
                "http-interval",
                name.clone(),
                0,
                [
                    ("requests", f.requests),
                    ("errors", f.errors),
                    ("p50_ms", f.p50_ms),
                    ("p99_ms", f.p99_ms),
                    ("goodput_mbit_s", f.goodput_mbit_s),
                ],
            )
            .at(index),
        );
        say(
            self.obs,
            format!(
                "sdnlab net: http {name} interval {index}: {} requests done, {} failed, p50 {:.2} ms",
                f.requests, f.errors, f.p50_ms
            ),
        );
        self.http[i].1.extend(batch);
        self.http[i].2 += 1;
    }
}

/// Requests summed up: how many ended, failed, their latency (of those
/// answered), and the bytes they brought over `seconds`.
struct HttpFigures {
    requests: f64,
    errors: f64,
    p50_ms: f64,
    p99_ms: f64,
    goodput_mbit_s: f64,
}

impl HttpFigures {
    fn of(reqs: &[lb::load::Request], seconds: f64) -> HttpFigures {
        let mut ok: Vec<u64> = reqs
            .iter()
            .filter(|q| q.error.is_none())
            .map(|q| q.latency_us)
            .collect();
        ok.sort_unstable();
        let at = |q: f64| {
            if ok.is_empty() {
                0.0
            } else {
                ok[((ok.len() - 1) as f64 * q).round() as usize] as f64 / 1e3
            }
        };
        HttpFigures {
            requests: reqs.len() as f64,
            errors: (reqs.len() - ok.len()) as f64,
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            goodput_mbit_s: reqs.iter().map(|q| q.bytes).sum::<u64>() as f64 * 8.0 / seconds / 1e6,
        }
    }
}

fn say(obs: &dyn Observer, s: String) {
    obs.event(Event::Line(&s));
}

/// Runs `c` into `place`: on this machine, or over `place.workers`.
pub fn run(c: &NetConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    let read = c.read()?;
    let inventory = match &place.workers {
        Some(p) => Some(fleet::inventory::Inventory::load(p).map_err(|e| LabError::Config(e.to_string()))?),
        None => None,
    };
    if let Some(inv) = &inventory {
        // Every interface of a spread network has the underlay's MTU less
        // VXLAN's 50 bytes; a longer frame would not leave its host.
        let most = inv.underlay_mtu as usize - 50 + 14;
        if !read.flows.is_empty() && c.flow_bytes > most {
            return Err(Conflict::new(format!(
                "frames over workers hold at most {most} bytes (the workers' underlay_mtu {} less VXLAN's 50, plus Ethernet's 14)",
                inv.underlay_mtu
            ))
            .with("flow-bytes", c.flow_bytes)
            .flag("workers")
            .into());
        }
    }
    let run_id = place.name("net");
    let dir = place.dir(&run_id);
    let topo = &read.topo;
    let mut meta = Meta {
        benchmark: "net".into(),
        parameters: serde_json::json!({
            "topology": c.topology, "switch": c.switch, "ping_count": c.ping_count, "iperf": c.iperf, "iperf_s": c.iperf_s,
            "http": c.http, "http_rate": c.http_rate, "http_s": c.http_s,
            "flows": c.flows, "flow_pps": c.flow_pps, "flow_s": c.flow_s, "flow_bytes": c.flow_bytes, "interval_ms": c.interval_ms,
            "hosts": topo.hosts.len(), "switches": topo.switches.len(), "links": topo.links.len(),
        }),
        metrics: vec![
            Metric::new("reached_share", "share", stats::Better::Higher).titled("Host pairs that reach each other"),
            Metric::new("iperf_mbit_s", "Mbit/s", stats::Better::Higher).titled("iperf3 TCP throughput"),
            Metric::new("http_latency_ms_p50", "ms", stats::Better::Lower).titled("HTTP request latency, median"),
            Metric::new("http_error_ratio", "share", stats::Better::Lower).titled("HTTP requests failed"),
            Metric::new("flow_loss_ratio", "share", stats::Better::Lower).titled("Test frames lost"),
            Metric::new("latency_us_p50", "µs", stats::Better::Lower).titled("One-way latency, median"),
            Metric::new("latency_us_p99", "µs", stats::Better::Lower).titled("One-way latency, 99th percentile"),
        ],
        ..started(&run_id)
    };
    // (`meta` is the run's until the checks are done: what the workers say
    // goes into it meanwhile, while the run's writer is the recorder's.)
    let run = Run::open(&dir, meta.clone(), &Experiment::Net(c.clone()), &place.stop)?;
    let rt = runtime()?;
    let where_ = match &inventory {
        Some(inv) => format!("over {} worker(s)", inv.workers.len()),
        None => "on this machine".into(),
    };
    say(
        obs,
        format!(
            "sdnlab net: {} ({} hosts, {} switches, {}) {where_}; results in {}",
            c.topology,
            topo.hosts.len(),
            topo.switches.len(),
            c.switch,
            dir.display()
        ),
    );
    let names: Vec<String> = read.flows.iter().map(traffic::flow::Flow::name).collect();
    let csv = if read.http.is_empty() {
        None
    } else {
        let path = dir.join("requests.csv");
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io_error(&path))?);
        std::io::Write::write_all(&mut f, b"load,intended_us,latency_us,bytes,error\n").map_err(io_error(&path))?;
        Some(f)
    };
    let rec = std::cell::RefCell::new(Recorder {
        run,
        obs,
        errors: Vec::new(),
        flow_names: names.clone(),
        interval_s: c.interval_ms as f64 / 1e3,
        http: read
            .http
            .iter()
            .map(|(a, b)| (format!("{a}>{b}"), Vec::new(), 0))
            .collect(),
        csv,
    });
    let mut servers: Vec<&str> = read.http.iter().map(|(_, s)| s.as_str()).collect();
    servers.sort_unstable();
    servers.dedup();
    let checks = Checks {
        c,
        read: &read,
        names: &names,
        servers,
        every: std::time::Duration::from_millis(c.interval_ms.into()),
        rec: &rec,
    };
    let checked = rt.block_on(async {
        match &inventory {
            None => checks.here().await,
            Some(inv) => checks.spread(inv, &mut meta).await,
        }
    });
    let Recorder {
        mut run,
        errors,
        http: loads,
        ..
    } = rec.into_inner();
    run.meta = meta;
    if let Some(e) = errors.into_iter().next() {
        return Err(run.fail(e));
    }
    let (pings, iperfs, loaded, flowed) = run.or_fail(checked)?;
    let reached = pings.iter().filter(|p| p.received > 0).count();
    let mut incomplete = record_pings(&pings, &mut run)?;
    incomplete += record_loads(c, &iperfs, &loads, &mut run)?;
    if let Err(e) = &loaded {
        incomplete += 1;
        run.meta.events.push(format!("http: {e}"));
    }
    match &flowed {
        Ok(results) => {
            for r in results {
                incomplete += flow_sample(r, &mut run)?;
            }
        }
        Err(e) => {
            incomplete += 1;
            run.meta.events.push(format!("flows: {e}"));
        }
    }
    let crate::rundir::Finished { summary, meta, .. } = run.finish()?;
    for e in &meta.events {
        say(obs, format!("sdnlab net: {e}"));
    }
    say(
        obs,
        format!("sdnlab net: report in {}", dir.join("report.html").display()),
    );
    Ok(Outcome {
        dir: dir.clone(),
        table: format!(
            "{} of {} host pairs reach each other\n{}",
            reached,
            pings.len(),
            report::terminal_table(&summary, &meta.metrics)
        ),
        json: serde_json::json!({ "run": dir, "summary": summary, "reached": reached, "pairs": pings.len() }),
        incomplete,
    })
}

/// The checks of one run: what they need, read from the config once.
/// Each flow's intervals and each HTTP load's requests go to disk (the
/// recorder) as they come.
struct Checks<'a, 'o> {
    c: &'a NetConfig,
    read: &'a Read,
    names: &'a [String],
    /// The HTTP servers, each once.
    servers: Vec<&'a str>,
    every: std::time::Duration,
    rec: &'a std::cell::RefCell<Recorder<'o>>,
}

impl Checks<'_, '_> {
    /// The network up on this machine (netlab), checked, and down.
    async fn here(&self) -> Result<Checked, LabError> {
        let Checks { c, read, every, .. } = self;
        let Read {
            topo,
            kind,
            pairs,
            http,
            flows,
        } = read;
        let options = netlab::run::UpOptions {
            controller: c.controller.clone(),
            ..netlab::run::UpOptions::of(*kind)
        };
        let net = netlab::run::Net::up(topo.clone(), options).await?;
        let pings = if c.ping_count > 0 {
            net.ping_all(c.ping_count).await
        } else {
            Vec::new()
        };
        let mut iperfs = Vec::new();
        for (a, b) in pairs {
            let r = netlab::run::iperf(&net.state, a, b, c.iperf_s, None, &|_, _| {}).await;
            iperfs.push((format!("{a}>{b}"), r.map_err(|e| e.to_string())));
        }
        let uris = vec![lb::replica::homogeneous_uri()];
        // Text on purpose: joins the other checks' lines (`Checked`).
        let loaded = tokio::task::block_in_place(|| -> Result<(), String> {
            let mut up = Vec::new();
            for s in &self.servers {
                let ns = net.state.netns_of(s).map_err(|e| e.to_string())?;
                up.push(lb::replica::start_in(ns, &net.dir, s, 80).map_err(|e| e.to_string())?);
            }
            for (i, (a, b)) in http.iter().enumerate() {
                let ip = topo.host(b).expect("checked").ip;
                let ns = net.state.netns_of(a).map_err(|e| e.to_string())?;
                lb::load::Load::new(ip, 80, uris.clone(), c.http_rate, c.http_s)
                    .run_batched(ns, *every, |batch| self.rec.borrow_mut().http_batch(i, batch))
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        let flowed = if flows.is_empty() {
            Ok(Vec::new())
        } else {
            let on_interval = |i: usize, iv: &traffic::run::Interval| self.rec.borrow_mut().flow_interval(i, iv);
            let netns = flows
                .iter()
                .map(|f| {
                    Ok(traffic::flow::Netns {
                        from: net.state.netns_of(&f.from.host)?.to_string(),
                        to: net.state.netns_of(&f.to.host)?.to_string(),
                    })
                })
                .collect::<Result<Vec<_>, netlab::NetError>>()
                .map_err(|e| e.to_string());
            netns.and_then(|netns| {
                tokio::task::block_in_place(|| traffic::flow::run(flows, &netns, *every, on_interval))
                    .map_err(|e| e.to_string())
            })
        };
        net.down().await?;
        Ok((pings, iperfs, loaded, flowed))
    }

    /// The network spread over the workers (`fleet`), checked, and down;
    /// where each check ran, and the workers' clocks, go into `meta`.
    async fn spread(&self, inv: &fleet::inventory::Inventory, meta: &mut Meta) -> Result<Checked, LabError> {
        let Checks { c, read, names, .. } = self;
        let fleet = fleet::coordinator::Fleet::connect(inv).await.map_err(LabError::setup)?;
        meta.parameters["workers"] = fleet.clocks();
        meta.events.extend(fleet.clock_warnings());
        let spread = fleet
            .net_up(&read.topo, read.kind, c.controller.clone())
            .await
            .map_err(LabError::setup)?;
        meta.parameters["links_between_workers"] = spread.cut.into();
        let pings = if c.ping_count > 0 {
            spread.ping_all(c.ping_count).await.map_err(LabError::setup)?
        } else {
            Vec::new()
        };
        let mut iperfs = Vec::new();
        for (a, b) in &read.pairs {
            let r = spread.iperf(a, b, c.iperf_s).await;
            if let Err(e @ fleet::FleetError::Lost { .. }) = r {
                return Err(LabError::setup(e));
            }
            let what = format!(
                "{a}>{b} ({} -> {})",
                spread.worker_of(a).unwrap_or("?"),
                spread.worker_of(b).unwrap_or("?")
            );
            iperfs.push((what, r.map_err(|e| e.to_string())));
        }
        let loaded = async {
            for s in &self.servers {
                spread.http_server(s).await?;
            }
            for (i, (a, b)) in read.http.iter().enumerate() {
                let batch = |batch| self.rec.borrow_mut().http_batch(i, batch);
                spread
                    .http_load(a, b, c.http_rate, c.http_s, c.interval_ms, batch)
                    .await?;
            }
            Ok::<(), fleet::FleetError>(())
        };
        let loaded = match loaded.await {
            Err(e @ fleet::FleetError::Lost { .. }) => return Err(LabError::setup(e)),
            r => r.map_err(|e| e.to_string()),
        };
        for (a, b) in &read.http {
            let (wa, wb) = (spread.worker_of(a), spread.worker_of(b));
            meta.parameters["http_workers"][format!("{a}>{b}")] = serde_json::json!([wa, wb]);
        }
        let flowed = if read.flows.is_empty() {
            Ok(Vec::new())
        } else {
            let on_interval = |i: usize, iv: &traffic::run::Interval| self.rec.borrow_mut().flow_interval(i, iv);
            match spread.flows(&read.flows, c.interval_ms, on_interval).await {
                Err(e @ fleet::FleetError::Lost { .. }) => return Err(LabError::setup(e)),
                r => r.map_err(|e| e.to_string()),
            }
        };
        for (f, name) in read.flows.iter().zip(names.iter()) {
            let (a, b) = (spread.worker_of(&f.from.host), spread.worker_of(&f.to.host));
            meta.parameters["flow_workers"][name] = serde_json::json!([a, b]);
        }
        // Clocks that moved during the run make its one-way figures drift.
        let (drift, warnings) = fleet.clock_drift().await.map_err(LabError::setup)?;
        meta.parameters["clock_drift"] = drift;
        meta.events.extend(warnings);
        spread.down().await.map_err(LabError::setup)?;
        Ok((pings, iperfs, loaded, flowed))
    }
}

/// Every ping pair's sample, and the share of pairs that reach each
/// other; 1 if some do not (the first of them named in the events).
fn record_pings(pings: &[netlab::run::PingResult], run: &mut Run) -> Result<usize, LabError> {
    for p in pings {
        let mut values = vec![("sent", p.sent as f64), ("received", p.received as f64)];
        if let Some(rtt) = p.rtt_avg_ms {
            values.push(("rtt_avg_ms", rtt));
        }
        run.sample(&Sample::of("ping", format!("{}>{}", p.from, p.to), 0, values))?;
    }
    if pings.is_empty() {
        return Ok(0);
    }
    let reached = pings.iter().filter(|p| p.received > 0).count();
    let mut incomplete = 0;
    if reached < pings.len() {
        incomplete += 1;
        let missing: Vec<String> = pings
            .iter()
            .filter(|p| p.received == 0)
            .take(8)
            .map(|p| format!("{}>{}", p.from, p.to))
            .collect();
        run.meta.events.push(format!(
            "{} of {} host pairs do not reach each other (first: {})",
            pings.len() - reached,
            pings.len(),
            missing.join(", ")
        ));
    }
    run.sample(&Sample::trial(
        "pingall",
        0,
        [
            ("reached_share", reached as f64 / pings.len() as f64),
            ("pairs", pings.len() as f64),
            ("reached", reached as f64),
        ],
    ))?;
    Ok(incomplete)
}

/// The iperf3 runs' and the HTTP loads' samples; how many of them failed
/// (each said in the events).
fn record_loads(
    c: &NetConfig,
    iperfs: &[IperfRun],
    loads: &[(String, Vec<lb::load::Request>, u32)],
    run: &mut Run,
) -> Result<usize, LabError> {
    let mut incomplete = 0;
    for (what, r) in iperfs {
        match r {
            Ok(r) => run.sample(&Sample::trial(
                format!("iperf {what}"),
                0,
                [
                    ("iperf_mbit_s", r.received_bps / 1e6),
                    ("retransmits", r.retransmits as f64),
                ],
            ))?,
            Err(e) => {
                incomplete += 1;
                run.meta.events.push(format!("iperf3 {what}: {e}"));
            }
        }
    }
    for (name, reqs, _) in loads {
        let f = HttpFigures::of(reqs, c.http_s);
        run.sample(&Sample::trial(
            format!("http {name}"),
            0,
            [
                ("http_latency_ms_p50", f.p50_ms),
                ("http_latency_ms_p99", f.p99_ms),
                ("http_error_ratio", f.errors / f.requests.max(1.0)),
                ("requests", f.requests),
                ("errors", f.errors),
                ("goodput_mbit_s", f.goodput_mbit_s),
            ],
        ))?;
        if f.errors > 0.0 {
            incomplete += 1;
            let mut kinds: Vec<&str> = reqs.iter().filter_map(|q| q.error).collect();
            kinds.sort_unstable();
            kinds.dedup();
            run.meta.events.push(format!(
                "http {name}: {} of {} requests failed ({})",
                f.errors,
                f.requests,
                kinds.join(", ")
            ));
        }
    }
    Ok(incomplete)
}

/// Writes flow `r`'s figures as a sample, and its warnings as events;
/// 1 if its figures cannot be trusted (the receiver lost frames itself).
fn flow_sample(r: &traffic::flow::FlowResult, run: &mut Run) -> Result<usize, LabError> {
    let (name, rx) = (r.flow.name(), &r.received);
    run.sample(&Sample::trial(
        format!("flow {name}"),
        0,
        [
            ("flow_loss_ratio", r.loss_ratio()),
            ("sent", r.sent.sent as f64),
            ("received", rx.received as f64),
            ("lost", r.lost() as f64),
            ("duplicates", rx.duplicates as f64),
            ("reordered", rx.reordered as f64),
            ("latency_us_p50", rx.latency_us_p50),
            ("latency_us_p99", rx.latency_us_p99),
            ("latency_us_max", rx.latency_us_max),
            ("clock_uncertainty_us", r.clock_uncertainty_us),
            ("achieved_pps", r.sent.achieved_pps),
        ],
    ))?;
    let events = &mut run.meta.events;
    if rx.received > 0 && r.clock_uncertainty_us > rx.latency_us_p50 {
        events.push(format!(
            "flow {name}: its ends' clocks are known within {:.0} µs, more than its median one-way latency ({:.0} µs): read its latencies as bounds",
            r.clock_uncertainty_us, rx.latency_us_p50
        ));
    }
    if rx.early > 0 {
        events.push(format!(
            "flow {name}: {} frames arrived before they were sent by the clocks' offset (it is off by more than their latency); counted at 1 µs",
            rx.early
        ));
    }
    if rx.receiver_drops > 0 {
        events.push(format!(
            "flow {name}: the receiver's own ring dropped {} frames: its loss is the instrument's, not the network's",
            rx.receiver_drops
        ));
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut NetConfig)) -> Result<(), LabError> {
        let mut c = NetConfig::default();
        f(&mut c);
        c.validate()
    }

    #[test]
    fn flows_are_checked_and_read_as_numbered_streams() {
        let mut c = NetConfig {
            flows: vec!["h1>h3".into(), " h2 > h1 ".into()],
            flow_pps: 500.0,
            ..NetConfig::default()
        };
        let r = c.read().unwrap();
        assert_eq!(r.flows.len(), 2);
        assert_eq!((r.flows[0].stream, r.flows[1].stream), (1, 2));
        assert_eq!(
            (r.flows[1].from.host.as_str(), r.flows[1].to.host.as_str()),
            ("h2", "h1")
        );
        assert_eq!(r.flows[0].rate_pps, 500.0);
        let h3 = r.topo.host("h3").unwrap();
        assert_eq!((r.flows[0].to.mac, r.flows[0].to.ip), (h3.mac, h3.ip));
        for (bad, says) in [
            (vec!["h1>h9"], "no host 'h9'"),
            (vec!["h1"], "FROM>TO"),
            (vec!["h1>h1"], "FROM>TO"),
        ] {
            c.flows = bad.iter().map(|s| s.to_string()).collect();
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(says) && e.starts_with("--flows \""), "{e}");
            assert_eq!(e.lines().count(), 1);
        }
        let e = with(|c| c.flow_bytes = 59).unwrap_err().to_string();
        assert!(e.contains("--flow-bytes 59"), "{e}");
        let e = with(|c| c.flow_pps = f64::NAN).unwrap_err().to_string();
        assert!(e.contains("--flow-pps"), "{e}");
        let e = with(|c| c.interval_ms = 0).unwrap_err().to_string();
        assert!(e.contains("--interval-ms"), "{e}");
    }

    fn scratch() -> (netlab::private::TempDir, Run) {
        let meta = Meta {
            benchmark: "net".into(),
            ..started("net-test")
        };
        crate::rundir::scratch_run(meta, &Experiment::Net(NetConfig::default()))
    }

    fn ping(from: &str, to: &str, received: u32) -> netlab::run::PingResult {
        netlab::run::PingResult {
            from: from.into(),
            to: to.into(),
            sent: 3,
            received,
            rtt_avg_ms: (received > 0).then_some(0.1),
        }
    }

    #[test]
    fn pairs_that_do_not_reach_each_other_are_named_and_make_the_run_incomplete() {
        let (_t, mut run) = scratch();
        let pings = [ping("h1", "h2", 3), ping("h2", "h1", 0)];
        assert_eq!(record_pings(&pings, &mut run).unwrap(), 1);
        assert_eq!(
            run.meta.events,
            ["1 of 2 host pairs do not reach each other (first: h2>h1)"]
        );
        let dir = run.dir().to_path_buf();
        let samples = report::load(&dir).unwrap().samples;
        // Each pair's pings, then the share: on disk before any summary.
        assert_eq!(samples.len(), 3);
        let all = samples.iter().find(|s| s.scenario == "pingall").expect("the share");
        assert_eq!(all.values["reached_share"], 0.5);
        let (_t, mut run) = scratch();
        assert_eq!(record_pings(&[ping("h1", "h2", 3)], &mut run).unwrap(), 0);
        assert_eq!(
            record_pings(&[], &mut run).unwrap(),
            0,
            "no pings asked: nothing missing"
        );
    }

    #[test]
    fn a_failed_iperf3_run_is_said_and_counted_and_a_good_one_is_a_sample() {
        let (_t, mut run) = scratch();
        let good = netlab::run::IperfResult {
            received_bps: 2e9,
            sent_bps: 2e9,
            retransmits: 4,
            lost: None,
        };
        let iperfs = [
            ("h1>h2".to_string(), Ok(good)),
            ("h2>h1".to_string(), Err("iperf3: connection refused".to_string())),
        ];
        assert_eq!(record_loads(&NetConfig::default(), &iperfs, &[], &mut run).unwrap(), 1);
        assert_eq!(run.meta.events, ["iperf3 h2>h1: iperf3: connection refused"]);
        let dir = run.dir().to_path_buf();
        let samples = report::load(&dir).unwrap().samples;
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].values["iperf_mbit_s"], 2000.0);
    }
}
