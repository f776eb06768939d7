//! `sdnlab bench fidelity`: the same experiment on sdnlab's emulation and
//! on Mininet's, side by side in one run. A linear topology of N Linux
//! bridges with one host each (sdnlab's `bridge` kind; Mininet's
//! `LinearTopo` with `LinuxBridge`, driven through its Python API by
//! `mininet_side.py`, never its `mn` command nor its cleanup), and from the
//! first host to the last: TCP throughput (iperf3), UDP received rate and
//! loss while the offered rate rises, ping round-trip time. Every trial is
//! watched by [`crate::host::HostWatch`] (per-core load, the iperf3 and
//! ping processes' CPU time, host-bound or not) and carries the
//! operational bound on its throughput (each element's CPU seconds per
//! bit: 1/D_max).

use crate::check::{at_least_one, range, real};
use crate::host::{Bound, HostLoad, HostWatch, Rule};
use crate::rundir::Place;
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stats::Better;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

crate::check::choice! {
    /// An emulator compared.
    pub enum Emulator {
        /// sdnlab's emulation, through netlab.
        Sdnlab = "sdnlab",
        /// Mininet 2.3, through its Python API (Linux bridges).
        Mininet = "mininet",
    }
}

/// The fidelity comparison: by default linear topologies of 1, 4 and 8
/// switches, 10 s iperf3 runs, UDP at 100 Mbit/s to 4 Gbit/s, 20 pings, 3
/// rounds. Its fields are `sdnlab bench fidelity`'s flags too (the command
/// line flattens them); a size left out is the default's, or `--quick`'s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct FidelityConfig {
    /// Emulators, comma-separated: sdnlab, mininet (Mininet's Python API, Linux bridges).
    #[arg(long = "emulator", value_name = "EMULATOR", value_delimiter = ',', default_values_t = FidelityConfig::default().emulators)]
    pub emulators: Vec<Emulator>,
    /// Switches of each linear topology, comma-separated (one host per switch)
    /// [default: 1,4,8; with --quick 1,2].
    #[arg(long, value_delimiter = ',')]
    pub switches: Option<Vec<usize>>,
    /// Seconds of each iperf3 run [default: 10; with --quick 2].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// UDP offered rates in Mbit/s, comma-separated, raised in this order
    /// [default: 100,1000,4000; with --quick 100,1000].
    #[arg(long, value_delimiter = ',')]
    pub udp_mbit: Option<Vec<f64>>,
    /// Pings per round-trip measurement, 0.2 s apart [default: 20; with --quick 5].
    #[arg(long)]
    pub pings: Option<usize>,
    /// Rounds, the emulators alternating within each [default: 3; with --quick 1].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// A smoke run: 1 and 2 switches, 2 s runs, UDP at 100 and 1000 Mbit/s, 5 pings, one
    /// round (sizes given beside it still count).
    #[arg(long)]
    pub quick: bool,
}

impl Default for FidelityConfig {
    fn default() -> FidelityConfig {
        FidelityConfig {
            emulators: Emulator::ALL.to_vec(),
            switches: None,
            seconds: None,
            udp_mbit: None,
            pings: None,
            rounds: None,
            quick: false,
        }
    }
}

/// What a run measures: the config with every size resolved.
#[derive(Clone, Debug, PartialEq)]
struct Plan {
    emulators: Vec<Emulator>,
    switches: Vec<usize>,
    seconds: f64,
    udp_mbit: Vec<f64>,
    pings: usize,
    rounds: usize,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            emulators: Emulator::ALL.to_vec(),
            switches: vec![1, 4, 8],
            seconds: 10.0,
            udp_mbit: vec![100.0, 1000.0, 4000.0],
            pings: 20,
            rounds: 3,
        }
    }
}

impl Plan {
    /// The smoke size: 1 and 2 switches, 2 s runs, two UDP rates, 5 pings, one round.
    fn quick() -> Plan {
        Plan {
            switches: vec![1, 2],
            seconds: 2.0,
            udp_mbit: vec![100.0, 1000.0],
            pings: 5,
            rounds: 1,
            ..Plan::default()
        }
    }
}

impl FidelityConfig {
    /// Every size resolved: what was given, else `--quick`'s or the default's.
    fn plan(&self) -> Plan {
        let base = if self.quick { Plan::quick() } else { Plan::default() };
        Plan {
            emulators: self.emulators.clone(),
            switches: self.switches.clone().unwrap_or(base.switches),
            seconds: self.seconds.unwrap_or(base.seconds),
            udp_mbit: self.udp_mbit.clone().unwrap_or(base.udp_mbit),
            pings: self.pings.unwrap_or(base.pings),
            rounds: self.rounds.unwrap_or(base.rounds),
        }
    }

    pub fn validate(&self) -> Result<(), LabError> {
        let p = self.plan();
        at_least_one("emulator", &p.emulators, "emulator")?;
        at_least_one("switches", &p.switches, "size")?;
        for n in &p.switches {
            range("switches", *n, 1, 64)?;
        }
        real("seconds", p.seconds, 1.0, 600.0)?;
        for r in &p.udp_mbit {
            real("udp-mbit", *r, 1.0, 100_000.0)?;
        }
        range("pings", p.pings, 1, 1000)?;
        range("rounds", p.rounds, 1, 100)
    }
}

/// Why a trial of one emulator failed (the run goes on with the next).
#[derive(Debug, thiserror::Error)]
enum EmuError {
    #[error(transparent)]
    Net(#[from] netlab::NetError),
    /// A file, a pipe or a program of ours, and what it was for.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// iperf3's or the Mininet side's answer, unreadable.
    #[error("{what}: {source}")]
    Unreadable {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// The emulator (or its measurement) said what went wrong.
    #[error("{0}")]
    Said(String),
    /// A stop signal came (`crate::stop`).
    #[error(transparent)]
    Stopped(#[from] crate::stop::Stopped),
}

impl EmuError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmuError {
        let what = what.into();
        move |source| EmuError::Io { what, source }
    }
}

/// What one emulator offers the experiment.
trait Emulation {
    fn up(&mut self, switches: usize) -> Result<(), EmuError>;
    /// iperf3's JSON report, TCP, or UDP at `rate` ("100M").
    fn iperf(&mut self, seconds: f64, rate: Option<&str>) -> Result<Value, EmuError>;
    /// ping's output.
    fn ping(&mut self, count: usize) -> Result<String, EmuError>;
    fn down(&mut self) -> Result<(), EmuError>;
}

/// sdnlab's emulation through netlab.
struct Sdnlab {
    rt: tokio::runtime::Runtime,
    net: Option<netlab::run::Net>,
}

impl Sdnlab {
    fn last(&self) -> Result<(&netlab::run::State, String), EmuError> {
        let net = self
            .net
            .as_ref()
            .ok_or_else(|| EmuError::Said("no network is up".into()))?;
        let last = net
            .state
            .hosts
            .last()
            .ok_or_else(|| EmuError::Said("no hosts".into()))?
            .name
            .clone();
        Ok((&net.state, last))
    }
}

impl Emulation for Sdnlab {
    fn up(&mut self, switches: usize) -> Result<(), EmuError> {
        let topo = netlab::topo::shape(&format!("linear,{switches}")).map_err(|e| EmuError::Said(e.to_string()))?;
        let options = netlab::run::UpOptions::of(netlab::run::SwitchKind::Bridge);
        self.net = Some(self.rt.block_on(netlab::run::Net::up(topo, options))?);
        Ok(())
    }
    fn iperf(&mut self, seconds: f64, rate: Option<&str>) -> Result<Value, EmuError> {
        let (st, last) = self.last()?;
        let server = st.hosts.last().ok_or_else(|| EmuError::Said("no hosts".into()))?;
        let ip = server.ip.to_string();
        netlab::install::need(&[netlab::install::IPERF3]).map_err(netlab::NetError::from)?;
        let mut srv = netlab::run::command_in(st, &last, &["iperf3", "-s", "-1", "-p", "5201"])?
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(EmuError::io("iperf3"))?;
        std::thread::sleep(std::time::Duration::from_millis(300));
        let secs = format!("{seconds}");
        let mut argv = vec!["iperf3", "-c", &ip, "-p", "5201", "-t", &secs, "-J"];
        if let Some(r) = rate {
            argv.extend(["-u", "-b", r]);
        }
        let out = netlab::run::command_in(st, &st.hosts[0].name, &argv)?
            .output()
            .map_err(EmuError::io("iperf3"));
        let _ = srv.kill();
        let _ = srv.wait();
        serde_json::from_slice(&out?.stdout).map_err(|source| EmuError::Unreadable {
            what: "iperf3's report".into(),
            source,
        })
    }
    fn ping(&mut self, count: usize) -> Result<String, EmuError> {
        let (st, last) = self.last()?;
        let ip = st
            .hosts
            .iter()
            .find(|h| h.name == last)
            .ok_or_else(|| EmuError::Said("no hosts".into()))?
            .ip
            .to_string();
        let n = count.to_string();
        let out = netlab::run::command_in(
            st,
            &st.hosts[0].name,
            &["ping", "-n", "-q", "-c", &n, "-i", "0.2", "-W", "1", &ip],
        )?
        .output()
        .map_err(EmuError::io("ping"))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
    fn down(&mut self) -> Result<(), EmuError> {
        match self.net.take() {
            Some(n) => Ok(self.rt.block_on(n.down())?),
            None => Ok(()),
        }
    }
}

/// Mininet through its Python API: `mininet_side.py`, one command per line.
struct Mininet {
    child: Child,
    /// Closed (dropped) to end the side's loop.
    to: Option<ChildStdin>,
    from: BufReader<ChildStdout>,
}

const MININET_SIDE: &str = include_str!("mininet_side.py");

impl Mininet {
    fn start(dir: &std::path::Path) -> Result<Mininet, EmuError> {
        use netlab::install::{need, BRCTL, IPERF3, MININET, PING};
        need(&[MININET, BRCTL, IPERF3, PING]).map_err(netlab::NetError::from)?;
        let script = dir.join("mininet_side.py");
        std::fs::write(&script, MININET_SIDE).map_err(EmuError::io(script.display().to_string()))?;
        // Debian's interpreter: Mininet is installed for it (not for another python3 on PATH).
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("/usr/bin/python3")
            .arg(&script)
            // Its own process group: a terminal's Ctrl-C reaches the run,
            // which then ends the side by closing its input.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(EmuError::io("/usr/bin/python3"))?;
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(EmuError::Said("Mininet's side has no pipes".into()));
        };
        let from = BufReader::new(from);
        Ok(Mininet {
            child,
            to: Some(to),
            from,
        })
    }

    fn ask(&mut self, line: &str) -> Result<Value, EmuError> {
        let to = self
            .to
            .as_mut()
            .ok_or_else(|| EmuError::Said("mininet: its side is closed".into()))?;
        writeln!(to, "{line}").map_err(EmuError::io("mininet"))?;
        let mut answer = String::new();
        self.from.read_line(&mut answer).map_err(EmuError::io("mininet"))?;
        if answer.is_empty() {
            return Err(EmuError::Said("Mininet's side ended (what it said is above)".into()));
        }
        let v: Value = serde_json::from_str(&answer).map_err(|source| EmuError::Unreadable {
            what: format!("mininet said {answer:?}"),
            source,
        })?;
        if v["ok"] != true {
            return Err(EmuError::Said(format!(
                "mininet: {}",
                v["error"].as_str().unwrap_or("failed")
            )));
        }
        Ok(v)
    }
}

impl Emulation for Mininet {
    fn up(&mut self, switches: usize) -> Result<(), EmuError> {
        self.ask(&format!("up {switches}")).map(|_| ())
    }
    fn iperf(&mut self, seconds: f64, rate: Option<&str>) -> Result<Value, EmuError> {
        let v = match rate {
            None => self.ask(&format!("tcp {seconds}"))?,
            Some(r) => self.ask(&format!("udp {r} {seconds}"))?,
        };
        Ok(v["iperf"].clone())
    }
    fn ping(&mut self, count: usize) -> Result<String, EmuError> {
        Ok(self.ask(&format!("ping {count}"))?["text"]
            .as_str()
            .unwrap_or("")
            .to_string())
    }
    fn down(&mut self) -> Result<(), EmuError> {
        self.ask("down").map(|_| ())
    }
}

impl Drop for Mininet {
    fn drop(&mut self) {
        // The end of its input: the side stops any network still up and exits.
        drop(self.to.take());
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_secs(30) {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rtt_of(text: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with("rtt") || l.starts_with("round-trip"))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().split('/').nth(1))
        .and_then(|v| v.parse().ok())
}

/// One watched trial: the host's load, the bound (per bit) and the trial's figure.
fn watched<T>(f: impl FnOnce() -> Result<T, EmuError>) -> Result<(T, HostLoad), EmuError> {
    let w = HostWatch::start_with(Vec::new(), &["iperf3", "ping"], Rule::default());
    let r = f();
    let host = w.finish();
    Ok((r?, host))
}

fn udp_metric(mbit: f64) -> String {
    format!("udp_loss_pct_{mbit}")
}

pub fn run(config: &FidelityConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    config.validate()?;
    let args = &config.plan();
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::Setup(
            "bench fidelity needs root (network namespaces, Mininet)".into(),
        ));
    }
    let run_id = place.name("bench-fidelity");
    let dir = place.dir(&run_id);
    let mut metrics = vec![
        Metric::new("tcp_mbit", "Mbit/s", Better::Higher).titled("TCP throughput, first host to last (iperf3)"),
        Metric::new("rtt_ms", "ms", Better::Lower).titled("Ping round-trip time, first host to last"),
    ];
    for r in &args.udp_mbit {
        metrics.push(Metric::new(&udp_metric(*r), "%", Better::Lower).titled(&format!("UDP loss offered {r} Mbit/s")));
    }
    let meta = Meta {
        benchmark: "bench fidelity".into(),
        targets: args.emulators.iter().map(|e| Target::named(e.name())).collect(),
        parameters: json!({
            "switches": args.switches, "seconds": args.seconds, "udp_mbit": args.udp_mbit,
            "pings": args.pings, "rounds": args.rounds,
            "setup": "linear topology of Linux bridges, one host per switch, no controller; measured from the first host to the last; sdnlab through netlab, Mininet 2.3 through its Python API (LinuxBridge)",
            "host_rule": Rule::default(),
        }),
        metrics,
        ..crate::rundir::started(&run_id)
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Fidelity(config.clone()), &place.stop)?;
    let trials_path = dir.join("trials.jsonl");
    let mut trials = std::fs::File::create(&trials_path).map_err(crate::rundir::io_error(&trials_path))?;
    let rt = crate::rundir::runtime()?;
    let mut sdnlab = Sdnlab { rt, net: None };
    let mut mininet = if args.emulators.contains(&Emulator::Mininet) {
        Some(Mininet::start(&dir).map_err(LabError::setup)?)
    } else {
        None
    };
    let mut emulations = Emulations {
        sdnlab: &mut sdnlab,
        mininet: mininet.as_mut().map(|m| m as &mut dyn Emulation),
    };
    let (rows, incomplete) = rounds(args, &mut emulations, &mut run, &mut trials, obs)?;
    drop(mininet);
    let table = summary_table(args, &rows);
    for (emu, n, figs) in &rows {
        for f in figs {
            for kind in ["tcp", "ping"] {
                if let Some(r) = f[kind]["host"]["reason"].as_str() {
                    run.meta
                        .events
                        .push(format!("{emu} linear,{n} {kind}: host-bound: {r}"));
                }
            }
        }
    }
    std::fs::write(dir.join("summary.md"), &table).map_err(crate::rundir::io_error(&dir))?;
    run.finish()?;
    let report_path = dir.join("report.html").display().to_string();
    Ok(Outcome {
        table: format!("{table}\nreport: {report_path}\n"),
        json: json!({"dir": dir, "report": report_path, "rows": rows.iter().map(|(e, n, f)| json!({"emulator": e, "switches": n, "rounds": f})).collect::<Vec<_>>()}),
        dir,
        incomplete,
    })
}

/// The emulations a run compares: sdnlab's always at hand, Mininet's
/// when the run asked for it.
struct Emulations<'a> {
    sdnlab: &'a mut dyn Emulation,
    mininet: Option<&'a mut dyn Emulation>,
}

impl<'a> Emulations<'a> {
    fn get(&mut self, e: Emulator) -> Result<&mut (dyn Emulation + 'a), EmuError> {
        match e {
            Emulator::Sdnlab => Ok(&mut *self.sdnlab),
            Emulator::Mininet => self
                .mininet
                .as_deref_mut()
                .ok_or_else(|| EmuError::Said("Mininet was not started".into())),
        }
    }
}

/// Figures of one emulator at one size, over the rounds.
type Row = (Emulator, usize, Vec<Value>);

/// Every round: each size on each emulator in turn (alternated), each
/// trial a sample on disk and a line of `trials` as it ends; a failed
/// trial is said and counted, and the others go on. The rows, and how
/// many trials failed.
fn rounds(
    args: &Plan,
    emulations: &mut Emulations,
    run: &mut crate::rundir::Run,
    trials: &mut std::fs::File,
    obs: &dyn Observer,
) -> Result<(Vec<Row>, usize), LabError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut incomplete = 0;
    'rounds: for round in 0..args.rounds {
        for &n in &args.switches {
            for &emu in &args.emulators {
                if run.stop.stopping() {
                    run.meta.events.push("stopped by a signal before the end".into());
                    obs.event(Event::Line(
                        "stopped by a signal; both emulations are down, the report covers what ran",
                    ));
                    break 'rounds;
                }
                obs.event(Event::Line(&format!("{emu} linear,{n}, round {}", round + 1)));
                let trial = emulations.get(emu).and_then(|e| {
                    let r = one(e, args, n, &run.stop);
                    if r.is_err() {
                        let _ = e.down();
                    }
                    r
                });
                match trial {
                    Ok(fig) => {
                        let mut values: Vec<(String, f64)> = vec![
                            ("tcp_mbit".into(), fig["tcp"]["mbit"].as_f64().unwrap_or(f64::NAN)),
                            ("rtt_ms".into(), fig["ping"]["rtt_ms"].as_f64().unwrap_or(f64::NAN)),
                        ];
                        for u in fig["udp"].as_array().into_iter().flatten() {
                            if let (Some(r), Some(l)) = (u["offered_mbit"].as_f64(), u["lost_pct"].as_f64()) {
                                values.push((udp_metric(r), l));
                            }
                        }
                        values.retain(|(_, v)| v.is_finite());
                        let s = Sample::trial(format!("{emu} linear,{n}"), round as u32, values)
                            .under_test(emu.name(), format!("linear,{n}"));
                        run.sample(&s)?;
                        let line = json!({"emulator": emu, "switches": n, "round": round, "figures": fig});
                        let path = run.dir().join("trials.jsonl");
                        writeln!(trials, "{line}")
                            .and_then(|_| trials.flush())
                            .map_err(crate::rundir::io_error(&path))?;
                        match rows.iter_mut().find(|r| r.0 == emu && r.1 == n) {
                            Some(r) => r.2.push(fig),
                            None => rows.push((emu, n, vec![fig])),
                        }
                    }
                    Err(err) => {
                        incomplete += 1;
                        let line = format!("{emu} linear,{n}: {err}");
                        obs.event(Event::Line(&line));
                        run.meta.events.push(line);
                    }
                }
            }
        }
    }
    Ok((rows, incomplete))
}

/// One emulator at one size: up, the measurements, down (also on failure).
fn one(e: &mut dyn Emulation, args: &Plan, n: usize, stop: &crate::stop::Stop) -> Result<Value, EmuError> {
    e.up(n)?;
    let r = measure(e, args, stop);
    let d = e.down();
    let v = r?;
    d?;
    Ok(v)
}

fn measure(e: &mut dyn Emulation, args: &Plan, stop: &crate::stop::Stop) -> Result<Value, EmuError> {
    stop.check()?;
    let (tcp, host) = watched(|| e.iperf(args.seconds, None))?;
    let tcp = netlab::run::iperf_figures(&tcp, false)?;
    let bits = tcp.received_bps * args.seconds;
    let bound = Bound::of("bit", host.demands(bits), None);
    let tcp = json!({"mbit": tcp.received_bps / 1e6, "host": host, "bound": bound});
    let mut udp = Vec::new();
    for mbit in &args.udp_mbit {
        stop.check()?;
        let rate = format!("{mbit}M");
        let (v, host) = watched(|| e.iperf(args.seconds, Some(&rate)))?;
        let r = netlab::run::iperf_figures(&v, true)?;
        let bound = Bound::of("bit", host.demands(r.received_bps * args.seconds), None);
        udp.push(json!({"offered_mbit": mbit, "received_mbit": r.received_bps / 1e6,
            "lost_pct": r.lost.map(|l| l * 100.0), "host": host, "bound": bound}));
    }
    let (text, host) = watched(|| e.ping(args.pings))?;
    let rtt =
        rtt_of(&text).ok_or_else(|| EmuError::Said(format!("no round-trip time in ping's output: {}", text.trim())))?;
    Ok(json!({"tcp": tcp, "udp": udp, "ping": {"rtt_ms": rtt, "host": host}}))
}

fn median(figs: &[Value], get: impl Fn(&Value) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = figs.iter().filter_map(get).filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| stats::median(&v))
}

fn summary_table(args: &Plan, rows: &[Row]) -> String {
    let mut t = String::from("| emulator | switches | TCP (Mbit/s) | bound (Mbit/s, bottleneck) | host-bound trials |");
    for r in &args.udp_mbit {
        t.push_str(&format!(" UDP {r} Mbit/s: received, loss |"));
    }
    t.push_str(" RTT (ms) |\n|---|---:|---:|---|---:|");
    for _ in &args.udp_mbit {
        t.push_str("---|");
    }
    t.push_str("---:|\n");
    for (emu, n, figs) in rows {
        let tcp = median(figs, |f| f["tcp"]["mbit"].as_f64());
        let bound = median(figs, |f| f["tcp"]["bound"]["bound"].as_f64().map(|b| b / 1e6));
        let bottleneck = figs
            .last()
            .and_then(|f| f["tcp"]["bound"]["bottleneck"].as_str())
            .unwrap_or("-");
        let trials = figs.len() * (2 + args.udp_mbit.len());
        let bound_trials = figs
            .iter()
            .map(|f| {
                let mut k = 0;
                if f["tcp"]["host"]["host_bound"] == true {
                    k += 1;
                }
                if f["ping"]["host"]["host_bound"] == true {
                    k += 1;
                }
                k + f["udp"]
                    .as_array()
                    .map(|u| u.iter().filter(|x| x["host"]["host_bound"] == true).count())
                    .unwrap_or(0)
            })
            .sum::<usize>();
        let fmt = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
        t.push_str(&format!(
            "| {emu} | {n} | {} | {} ({bottleneck}) | {bound_trials} of {trials} |",
            fmt(tcp),
            fmt(bound)
        ));
        for (i, _) in args.udp_mbit.iter().enumerate() {
            let rx = median(figs, |f| f["udp"][i]["received_mbit"].as_f64());
            let loss = median(figs, |f| f["udp"][i]["lost_pct"].as_f64());
            t.push_str(&format!(" {}, {} % |", fmt(rx), fmt(loss)));
        }
        t.push_str(&format!(
            " {:.3} |\n",
            median(figs, |f| f["ping"]["rtt_ms"].as_f64()).unwrap_or(f64::NAN)
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An emulation in memory: iperf3's and ping's own output at a given
    /// rate, loss and round-trip time; what it was asked, in order.
    struct Fake {
        tcp_mbit: f64,
        udp_lost_pct: f64,
        rtt_ms: f64,
        /// Sizes whose pings find no reply (ping prints no "rtt" line).
        silent_at: Vec<usize>,
        /// Stopped once this many trials have come up (a Ctrl-C mid-run).
        stop_after: Option<(usize, crate::stop::Stop)>,
        size: usize,
        asked: Vec<String>,
    }

    impl Fake {
        fn new(tcp_mbit: f64, rtt_ms: f64) -> Fake {
            Fake {
                tcp_mbit,
                udp_lost_pct: 0.5,
                rtt_ms,
                silent_at: Vec::new(),
                stop_after: None,
                size: 0,
                asked: Vec::new(),
            }
        }
    }

    impl Emulation for Fake {
        fn up(&mut self, switches: usize) -> Result<(), EmuError> {
            self.size = switches;
            self.asked.push(format!("up {switches}"));
            if let Some((n, stop)) = &self.stop_after {
                if self.asked.iter().filter(|a| a.starts_with("up")).count() >= *n {
                    stop.stop();
                }
            }
            Ok(())
        }
        fn iperf(&mut self, seconds: f64, rate: Option<&str>) -> Result<Value, EmuError> {
            self.asked.push(format!("iperf {seconds} {}", rate.unwrap_or("tcp")));
            // iperf3 --json's own keys (3.12): TCP's receiver under
            // sum_received, UDP's under sum with its loss.
            Ok(match rate {
                None => json!({"end": {"sum_received": {"bits_per_second": self.tcp_mbit * 1e6},
                    "sum_sent": {"bits_per_second": self.tcp_mbit * 1e6, "retransmits": 0}}}),
                Some(r) => {
                    let offered: f64 = r.trim_end_matches('M').parse().unwrap();
                    json!({"end": {"sum": {"bits_per_second": offered * 1e6 * (1.0 - self.udp_lost_pct / 100.0),
                        "lost_percent": self.udp_lost_pct}}})
                }
            })
        }
        fn ping(&mut self, count: usize) -> Result<String, EmuError> {
            self.asked.push(format!("ping {count}"));
            if self.silent_at.contains(&self.size) {
                return Ok(format!(
                    "{count} packets transmitted, 0 received, 100% packet loss, time 1000ms\n"
                ));
            }
            let r = self.rtt_ms;
            Ok(format!(
                "{count} packets transmitted, {count} received, 0% packet loss, time 800ms\nrtt min/avg/max/mdev = {:.3}/{r:.3}/{:.3}/0.010 ms\n",
                r * 0.8,
                r * 1.2
            ))
        }
        fn down(&mut self) -> Result<(), EmuError> {
            self.asked.push("down".into());
            Ok(())
        }
    }

    fn config() -> Plan {
        Plan {
            switches: vec![1, 4],
            seconds: 1.0,
            udp_mbit: vec![100.0, 1000.0],
            pings: 3,
            rounds: 2,
            ..Plan::default()
        }
    }

    /// A run in a private directory, its `trials.jsonl`, and its stop token.
    fn scratch(
        _: &Plan,
    ) -> (
        netlab::private::TempDir,
        crate::rundir::Run,
        std::fs::File,
        crate::stop::Stop,
    ) {
        let t = netlab::private::temp_dir("sdnlab-fidelity-test-").unwrap();
        let meta = Meta {
            benchmark: "bench fidelity".into(),
            ..crate::rundir::started("fidelity-test")
        };
        let stop = crate::stop::Stop::new();
        let dir = t.path().join("run");
        let run =
            crate::rundir::Run::open(&dir, meta, &Experiment::Fidelity(FidelityConfig::default()), &stop).unwrap();
        let trials = std::fs::File::create(dir.join("trials.jsonl")).unwrap();
        (t, run, trials, stop)
    }

    fn lines(path: &std::path::Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The rounds alternate the emulators at each size, bring each network
    /// up and down once a trial, and put every trial on disk as it ends:
    /// a sample with TCP's rate, the round trip and each UDP rate's loss,
    /// and its figures in trials.jsonl; the table gives the medians.
    #[test]
    fn the_rounds_alternate_the_emulators_and_record_each_trial() {
        let args = config();
        let (_t, mut run, mut trials, _stop) = scratch(&args);
        let (mut ours, mut theirs) = (Fake::new(20_000.0, 0.05), Fake::new(15_000.0, 0.09));
        let mut emulations = Emulations {
            sdnlab: &mut ours,
            mininet: Some(&mut theirs),
        };
        let (rows, incomplete) = rounds(&args, &mut emulations, &mut run, &mut trials, &crate::observe::Quiet).unwrap();
        assert_eq!(incomplete, 0);
        let ups = |f: &Fake| {
            f.asked
                .iter()
                .filter(|a| a.starts_with("up"))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(ups(&ours), ["up 1", "up 4", "up 1", "up 4"]);
        assert_eq!(ups(&theirs), ups(&ours));
        assert_eq!(ours.asked.iter().filter(|a| *a == "down").count(), 4);
        // TCP first, then each UDP rate raised in order, then the pings.
        assert_eq!(
            &ours.asked[1..5],
            ["iperf 1 tcp", "iperf 1 100M", "iperf 1 1000M", "ping 3"]
        );
        let samples = lines(&run.dir().join("samples.jsonl"));
        assert_eq!(samples.len(), 8, "2 emulators x 2 sizes x 2 rounds");
        let first = &samples[0];
        assert_eq!(first["scenario"], "sdnlab linear,1");
        assert_eq!(first["values"]["tcp_mbit"], 20_000.0);
        assert_eq!(first["values"]["rtt_ms"], 0.05);
        assert_eq!(first["values"]["udp_loss_pct_100"], 0.5);
        assert_eq!(samples[1]["scenario"], "mininet linear,1");
        let recorded = lines(&run.dir().join("trials.jsonl"));
        assert_eq!(recorded.len(), 8);
        assert_eq!(recorded[1]["emulator"], "mininet");
        assert_eq!(recorded[1]["figures"]["udp"][1]["offered_mbit"], 1000.0);
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.2.len() == 2), "two rounds each");
        let table = summary_table(&args, &rows);
        assert!(table.contains("| sdnlab | 1 | 20000.0 |"), "{table}");
        assert!(table.contains("| mininet | 4 | 15000.0 |"), "{table}");
        assert!(table.contains(" 99.5, 0.5 % |"), "{table}");
    }

    /// A trial that fails (no round trip in ping's output) is said in the
    /// run's events and counted, its network is still brought down, and
    /// the other trials go on.
    #[test]
    fn a_failed_trial_is_said_its_network_taken_down_and_the_rest_goes_on() {
        let args = Plan {
            emulators: vec![Emulator::Sdnlab],
            ..config()
        };
        let (_t, mut run, mut trials, _stop) = scratch(&args);
        let mut ours = Fake::new(20_000.0, 0.05);
        ours.silent_at = vec![4];
        let mut emulations = Emulations {
            sdnlab: &mut ours,
            mininet: None,
        };
        let (rows, incomplete) = rounds(&args, &mut emulations, &mut run, &mut trials, &crate::observe::Quiet).unwrap();
        assert_eq!(incomplete, 2, "size 4 in each round");
        let ups = ours.asked.iter().filter(|a| a.starts_with("up")).count();
        let downs = ours.asked.iter().filter(|a| *a == "down").count();
        assert!(downs >= ups, "{:?}", ours.asked);
        assert_eq!(rows.iter().map(|r| r.1).collect::<Vec<_>>(), [1]);
        assert_eq!(lines(&run.dir().join("samples.jsonl")).len(), 2);
        let said: Vec<&String> = run
            .meta
            .events
            .iter()
            .filter(|e| e.contains("sdnlab linear,4"))
            .collect();
        assert_eq!(said.len(), 2, "{:?}", run.meta.events);
        assert!(said[0].contains("no round-trip time in ping's output"), "{said:?}");
    }

    /// A stop mid-run ends the rounds at the next trial: what ran is on
    /// disk, the rest is not started, and the run's events say so.
    #[test]
    fn a_stop_ends_the_rounds_with_what_ran_on_disk() {
        let args = config();
        let (_t, mut run, mut trials, stop) = scratch(&args);
        let mut ours = Fake::new(20_000.0, 0.05);
        ours.stop_after = Some((1, stop));
        let mut theirs = Fake::new(15_000.0, 0.09);
        let mut emulations = Emulations {
            sdnlab: &mut ours,
            mininet: Some(&mut theirs),
        };
        let (_, incomplete) = rounds(&args, &mut emulations, &mut run, &mut trials, &crate::observe::Quiet).unwrap();
        // The first trial saw the stop before its measurements: said as
        // failed, its network down; nothing after it started.
        assert_eq!(incomplete, 1);
        assert_eq!(ours.asked, ["up 1", "down", "down"]);
        assert!(theirs.asked.is_empty(), "{:?}", theirs.asked);
        assert!(run.meta.events.iter().any(|e| e.contains("stopped by a signal")));
    }

    /// A size left out is the default's, or with `--quick` the smoke's; a
    /// size given beside `--quick` still counts; one out of range is refused.
    #[test]
    fn the_plan_resolves_each_size_from_what_was_given() {
        assert_eq!(FidelityConfig::default().plan(), Plan::default());
        let quick = FidelityConfig {
            quick: true,
            rounds: Some(2),
            ..FidelityConfig::default()
        };
        let p = quick.plan();
        assert_eq!((p.switches.as_slice(), p.seconds, p.rounds), (&[1, 2][..], 2.0, 2));
        let zero = FidelityConfig {
            switches: Some(vec![1, 0]),
            ..FidelityConfig::default()
        };
        let e = zero.validate().unwrap_err().to_string();
        assert!(e.starts_with("--switches 0: must be at least 1"), "{e}");
    }

    /// The round trip is read from iputils' and busybox's summary lines.
    #[test]
    fn the_round_trip_is_read_from_pings_summary() {
        let iputils = "3 packets transmitted, 3 received, 0% packet loss, time 2003ms\nrtt min/avg/max/mdev = 0.041/0.052/0.066/0.010 ms\n";
        assert_eq!(rtt_of(iputils), Some(0.052));
        let busybox = "3 packets transmitted, 3 packets received, 0% packet loss\nround-trip min/avg/max = 0.061/0.083/0.110 ms\n";
        assert_eq!(rtt_of(busybox), Some(0.083));
        assert_eq!(rtt_of("3 packets transmitted, 0 received, 100% packet loss\n"), None);
    }
}
