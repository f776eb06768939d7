//! `sdnlab bench gen`: traffic generators flat out into a veth, side by
//! side in one run: sdnlab's in-kernel XDP generator, its AF_PACKET
//! generator, trafgen (netsniff-ng) and tcpreplay. Each sends 64-byte
//! frames from one namespace into a veth whose other end is in another;
//! the rate is what that end's kernel counted received, over a window
//! that leaves out each tool's start and stop. Every generator runs on
//! core 0 and on one core only (trafgen `-P 1`). GRO is on at the
//! receiving end for all of them, as the XDP generator needs it.

use crate::check::{at_least_one, range, real};
use crate::rundir::Place;
use crate::switch::bed::BedError;
use crate::{Event, Experiment, LabError, Observer, Outcome};
use report::{Meta, Metric, Sample, Target};
use serde::{Deserialize, Serialize};
use serde_json::json;
use stats::Better;
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};
use traffic::frame::Template;
use traffic::run::{GenMethod, GenSpec};

/// The generator benchmark: every generator, 5 s runs, 5 rounds (the
/// verdicts need at least 4). Its fields are `sdnlab bench gen`'s flags
/// too (the command line flattens them): each declared once, with its
/// default and help.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct GenConfig {
    /// Generators, comma-separated.
    #[arg(long = "generator", value_name = "GENERATOR", value_delimiter = ',', default_values_t = GenConfig::default().generators)]
    pub generators: Vec<Generator>,
    /// Seconds each generator runs (the rate is counted over all but its
    /// first 0.5 s and last 0.25 s).
    #[arg(long, default_value_t = GenConfig::default().seconds)]
    pub seconds: f64,
    /// Runs of each generator, alternated; the summary gives the median.
    #[arg(long, default_value_t = GenConfig::default().rounds)]
    pub rounds: usize,
}

crate::check::choice! {
    /// A traffic generator `bench gen` measures.
    pub enum Generator {
        /// sdnlab's: an XDP program in live-frame mode.
        SdnlabXdp = "sdnlab-xdp",
        /// sdnlab's: an AF_PACKET socket, sendmmsg.
        SdnlabAfpacket = "sdnlab-afpacket",
        /// netsniff-ng's trafgen.
        Trafgen = "trafgen",
        /// tcpreplay, a capture replayed at top speed.
        Tcpreplay = "tcpreplay",
    }
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            generators: Generator::ALL.to_vec(),
            seconds: 5.0,
            rounds: 5,
        }
    }
}

impl GenConfig {
    /// Checks every parameter; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), LabError> {
        at_least_one("generator", &self.generators, "generator")?;
        real("seconds", self.seconds, 1.0, 3600.0)?;
        range("rounds", self.rounds, 1, 1000)
    }
}

const SRC_MAC: [u8; 6] = [2, 0x67, 0, 0, 0, 1];
const SINK_MAC: [u8; 6] = [2, 0x67, 0, 0, 0, 0x99];

/// A veth pair from namespace `g` (generator) to namespace `s` (sink).
struct Pair {
    tag: String,
}

impl Pair {
    /// The pair, on record (`netlab::beds`) for the run in `dir` until
    /// its namespaces are gone, so that `sdnlab net clean` removes what a
    /// killed run left.
    fn new(dir: &std::path::Path) -> Result<Pair, BedError> {
        let p = Pair {
            tag: format!("{}{:04x}", netlab::beds::TAG_PREFIXES[1], std::process::id() & 0xffff),
        };
        p.remove();
        netlab::beds::register(&p.tag, dir).map_err(BedError::io(netlab::beds::BEDS_ROOT))?;
        for side in ["g", "s"] {
            netlab::kernel::netns_create(&p.ns(side))?;
        }
        let (g, s, g_ns, s_ns) = (p.ifname("g"), p.ifname("s"), p.ns("g"), p.ns("s"));
        netlab::kernel::blocking(None, |nl| async move {
            nl.veth(&g, &s, 0).await?;
            nl.move_to(&g, &g_ns, &g).await?;
            nl.move_to(&s, &s_ns, &s).await
        })?;
        for side in ["g", "s"] {
            let ns = p.ns(side);
            // No IPv6 chatter counted as received frames.
            let _ = nsexec::command(&ns, "sysctl")
                .and_then(|mut c| c.args(["-qw", "net.ipv6.conf.all.disable_ipv6=1"]).status());
            let ifname = p.ifname(side);
            netlab::kernel::blocking(Some(&ns), |nl| async move { nl.set_up(&ifname, true).await })?;
        }
        p.gro_on()?;
        Ok(p)
    }
    fn gro_on(&self) -> Result<(), BedError> {
        let (ns, ifname) = (self.ns("s"), self.ifname("s"));
        nsexec::on_thread(Some(&ns), move || packetio::live::enable_gro(&ifname)).map_err(BedError::io("enabling GRO"))
    }
    fn ns(&self, side: &str) -> String {
        format!("{}{side}", self.tag)
    }
    fn ifname(&self, side: &str) -> String {
        format!("{}{side}", self.tag)
    }
    fn remove(&self) {
        for side in ["g", "s"] {
            if netlab::kernel::netns_path(&self.ns(side)).exists() {
                let _ = netlab::kernel::netns_delete(&self.ns(side));
            }
        }
        if ["g", "s"]
            .iter()
            .all(|side| !netlab::kernel::netns_path(&self.ns(side)).exists())
        {
            netlab::beds::unregister(&self.tag);
        }
    }
    /// Frames the sink's end has received, as its namespace counts them.
    fn sink_rx(&self) -> Result<u64, BedError> {
        let (ns, ifname) = (self.ns("s"), self.ifname("s"));
        let text = nsexec::on_thread(Some(&ns), || std::fs::read_to_string("/proc/thread-self/net/dev"))?;
        text.lines()
            .find_map(|l| {
                let (name, rest) = l.split_once(':')?;
                (name.trim() == ifname).then(|| rest.split_whitespace().nth(1)?.parse().ok())?
            })
            .ok_or_else(|| BedError::Refused(format!("{ifname}: no receive counter")))
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.remove();
    }
}

fn template() -> Template {
    Template::udp(60, SRC_MAC, SINK_MAC, [10, 67, 0, 1], [10, 67, 0, 99], 0)
}

/// One frame for trafgen's packet language.
fn trafgen_conf(frame: &[u8]) -> String {
    let bytes: Vec<String> = frame.iter().map(|b| format!("0x{b:02x}")).collect();
    format!("{{ {} }}\n", bytes.join(", "))
}

/// A pcap file of `n` copies of the frame (tcpreplay loops over it).
fn write_pcap(path: &std::path::Path, frame: &[u8], n: usize) -> Result<(), BedError> {
    let mut f = std::fs::File::create(path).map_err(BedError::io(path.display().to_string()))?;
    let mut b = Vec::with_capacity(24 + n * (16 + frame.len()));
    b.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for i in 0..n {
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(i as u32).to_le_bytes());
        b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        b.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        b.extend_from_slice(frame);
    }
    f.write_all(&b).map_err(BedError::io(path.display().to_string()))
}

/// Runs an external generator on core 0 inside the generator namespace.
fn spawn_on_core0(pair: &Pair, cmd: &[&str]) -> Result<std::process::Child, BedError> {
    use std::os::unix::process::CommandExt;
    let mut c = nsexec::command(&pair.ns("g"), cmd[0])?;
    c.args(&cmd[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: trafgen sends from a forked child, which
        // must stop with it.
        .process_group(0);
    // SAFETY: only sched_setaffinity (no allocation unless it fails)
    // between fork and exec.
    unsafe {
        c.pre_exec(|| traffic::run::pin_thread(0));
    }
    c.spawn().map_err(BedError::io(cmd[0]))
}

/// Frames per second the sink received while `generator` ran.
fn measure(pair: &Pair, generator: Generator, seconds: f64, dir: &std::path::Path) -> Result<f64, BedError> {
    let frame = template().bytes;
    pair.gro_on()?;
    let run = Duration::from_secs_f64(seconds);
    let (skip_start, skip_end) = (Duration::from_millis(500), Duration::from_millis(250));
    let window = |started: Instant| -> Result<(u64, u64, f64), BedError> {
        std::thread::sleep((started + skip_start).saturating_duration_since(Instant::now()));
        let (a, ta) = (pair.sink_rx()?, Instant::now());
        std::thread::sleep((started + run - skip_end).saturating_duration_since(Instant::now()));
        let (b, tb) = (pair.sink_rx()?, Instant::now());
        Ok((a, b, (tb - ta).as_secs_f64()))
    };
    let (a, b, secs) = match generator {
        Generator::SdnlabXdp | Generator::SdnlabAfpacket => {
            let spec = GenSpec {
                netns: Some(pair.ns("g")),
                ifname: pair.ifname("g"),
                template: template(),
                rate_pps: None,
                duration: run,
                streams: 16,
                method: if generator == Generator::SdnlabXdp {
                    GenMethod::Xdp
                } else {
                    GenMethod::AfPacket
                },
                core: Some(0),
                burst: None,
                then: None,
                seq_probe: None,
            };
            let started = Instant::now();
            let gen = std::thread::spawn(move || traffic::run::generate(&spec));
            let w = window(started);
            gen.join()
                .map_err(|_| BedError::Refused("the generator's thread panicked".into()))?
                .map_err(BedError::io("the generator"))?;
            w?
        }
        Generator::Trafgen => {
            let conf = dir.join("trafgen.cfg");
            std::fs::write(&conf, trafgen_conf(&frame)).map_err(BedError::io(conf.display().to_string()))?;
            let ifname = pair.ifname("g");
            let conf = conf.to_string_lossy().into_owned();
            netlab::install::need(&[netlab::install::TRAFGEN])?;
            let mut child = spawn_on_core0(pair, &["trafgen", "--dev", &ifname, "--conf", &conf, "-P", "1", "-q"])?;
            let w = window(Instant::now());
            stop(&mut child);
            w?
        }
        Generator::Tcpreplay => {
            let pcap = dir.join("frames.pcap");
            write_pcap(&pcap, &frame, 10_000)?;
            let ifname = pair.ifname("g");
            let pcap = pcap.to_string_lossy().into_owned();
            netlab::install::need(&[netlab::install::TCPREPLAY])?;
            let mut child = spawn_on_core0(
                pair,
                &["tcpreplay", "-i", &ifname, "--topspeed", "--loop=0", "-q", &pcap],
            )?;
            let w = window(Instant::now());
            stop(&mut child);
            w?
        }
    };
    Ok(b.saturating_sub(a) as f64 / secs)
}

/// Stops a generator and every process of its group (by the group id we
/// started it with), politely first.
fn stop(child: &mut std::process::Child) {
    use nix::sys::signal::{killpg, Signal};
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = killpg(group, Signal::SIGINT);
    let t = Instant::now();
    let mut exited = false;
    while t.elapsed() < Duration::from_secs(2) {
        exited = exited || matches!(child.try_wait(), Ok(Some(_)));
        // The group is gone when signal 0 finds nobody in it.
        if exited && killpg(group, None).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = killpg(group, Signal::SIGKILL);
    let _ = child.wait();
}

/// Every round: each generator in turn (alternated), its rate a sample on
/// disk as it is measured; a stop ends the rounds, a generator that fails
/// ends the run (named). Each generator's rates, in the order asked.
fn rounds(
    args: &GenConfig,
    run: &mut crate::rundir::Run,
    obs: &dyn Observer,
    measure: &mut dyn FnMut(Generator) -> Result<f64, BedError>,
) -> Result<Vec<(Generator, Vec<f64>)>, LabError> {
    let mut rates: Vec<(Generator, Vec<f64>)> = args.generators.iter().map(|g| (*g, Vec::new())).collect();
    'rounds: for round in 0..args.rounds.max(1) {
        for (g, v) in rates.iter_mut() {
            if run.stop.stopping() {
                break 'rounds;
            }
            match measure(*g) {
                Ok(pps) => {
                    run.sample(&Sample::trial(g.name(), round as u32, [("pps", pps)]).under_test(g.name(), ""))?;
                    obs.event(Event::Line(&format!("{g}: {pps:.0} frames/s (round {round})")));
                    v.push(pps);
                }
                Err(e) => return Err(LabError::setup(format!("{g}: {e}"))),
            }
        }
    }
    Ok(rates)
}

/// Each generator's median rate.
fn medians(rates: &[(Generator, Vec<f64>)]) -> Vec<(Generator, f64)> {
    rates.iter().map(|(g, v)| (*g, stats::median(v))).collect()
}

/// The summary: each generator's median rate, and that as a multiple of
/// the best tool that is not sdnlab's.
fn summary_table(medians: &[(Generator, f64)]) -> String {
    let ours = |g: Generator| matches!(g, Generator::SdnlabXdp | Generator::SdnlabAfpacket);
    let best_other = medians
        .iter()
        .filter(|(g, _)| !ours(*g))
        .map(|(_, r)| *r)
        .fold(0.0, f64::max);
    let mut table =
        String::from("| generator | frames/s into the veth (median) | x the best other tool |\n|---|---:|---:|\n");
    for (g, r) in medians {
        let x = if best_other > 0.0 {
            format!("{:.2}", r / best_other)
        } else {
            "-".into()
        };
        table.push_str(&format!("| {g} | {r:.0} | {x} |\n"));
    }
    table
}

/// Runs the benchmark into `place`.
pub fn run(args: &GenConfig, place: &Place, obs: &dyn Observer) -> Result<Outcome, LabError> {
    args.validate()?;
    if !nix::unistd::Uid::effective().is_root() {
        return Err(LabError::Setup("bench gen needs root (network namespaces)".into()));
    }
    // A stop (Ctrl-C or SIGTERM at the command line) ends the run after the
    // measurement in progress (a few seconds at most), its pair of
    // namespaces removed.
    let run_id = place.name("bench-gen");
    let dir = place.dir(&run_id);
    let meta = Meta {
        benchmark: "bench gen".into(),
        targets: args.generators.iter().map(|g| Target::named(g.name())).collect(),
        parameters: json!({
            "frame": 64, "seconds": args.seconds, "rounds": args.rounds,
            "setup": "one veth pair between two namespaces, GRO on at the receiving end; every generator on core 0, one core",
        }),
        metrics: vec![Metric::new("pps", "frames/s", Better::Higher).titled("Frames into the veth")],
        ..crate::rundir::started(&run_id)
    };
    let mut run = crate::rundir::Run::open(&dir, meta, &Experiment::Gen(args.clone()), &place.stop)?;
    let pair = Pair::new(&dir).map_err(LabError::setup)?;
    let rates = rounds(args, &mut run, obs, &mut |g| measure(&pair, g, args.seconds, &dir))?;
    let medians = medians(&rates);
    let table = summary_table(&medians);
    std::fs::write(dir.join("summary.md"), &table).map_err(crate::rundir::io_error(&dir))?;
    run.finish()?;
    let report_path = dir.join("report.html").display().to_string();
    Ok(Outcome {
        table: format!("{table}\nreport: {report_path}\n"),
        json: json!({"dir": dir, "medians": medians, "report": report_path}),
        dir,
        incomplete: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(args: &GenConfig) -> (netlab::private::TempDir, crate::rundir::Run, crate::stop::Stop) {
        let t = netlab::private::temp_dir("sdnlab-gen-test-").unwrap();
        let meta = Meta {
            benchmark: "bench gen".into(),
            ..crate::rundir::started("gen-test")
        };
        let stop = crate::stop::Stop::new();
        let run = crate::rundir::Run::open(&t.path().join("run"), meta, &Experiment::Gen(args.clone()), &stop).unwrap();
        (t, run, stop)
    }

    fn samples(run: &crate::rundir::Run) -> Vec<serde_json::Value> {
        std::fs::read_to_string(run.dir().join("samples.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The rounds alternate the generators, each rate a sample on disk as
    /// it is measured; the table gives each median and its multiple of the
    /// best tool that is not sdnlab's.
    #[test]
    fn the_rounds_alternate_the_generators_and_the_table_compares_with_the_best_other() {
        let args = GenConfig {
            rounds: 3,
            ..GenConfig::default()
        };
        let (_t, mut run, _stop) = scratch(&args);
        let mut asked = Vec::new();
        let mut n = 0.0;
        let rates = rounds(&args, &mut run, &crate::observe::Quiet, &mut |g| {
            asked.push(g);
            n += 1.0;
            Ok(match g {
                Generator::SdnlabXdp => 3.0e6 + n,
                Generator::SdnlabAfpacket => 1.0e6 + n,
                Generator::Trafgen => 1.5e6 + n,
                Generator::Tcpreplay => 1.0e6 + n,
            })
        })
        .unwrap();
        assert_eq!(asked.len(), 12);
        assert_eq!(&asked[..4], Generator::ALL, "alternated within a round");
        let on_disk = samples(&run);
        assert_eq!(on_disk.len(), 12);
        assert_eq!(on_disk[2]["scenario"], "trafgen");
        assert_eq!(on_disk[2]["values"]["pps"], 1.5e6 + 3.0);
        let table = summary_table(&medians(&rates));
        // trafgen's median (1.5e6 + 7) is the best other tool's.
        assert!(table.contains("| trafgen | 1500007 | 1.00 |"), "{table}");
        assert!(table.contains("| sdnlab-xdp | 3000005 | 2.00 |"), "{table}");
    }

    /// A generator that fails ends the run with its name and what it
    /// said; what was measured before is on disk. A stop ends the rounds.
    #[test]
    fn a_failing_generator_is_named_and_a_stop_ends_the_rounds() {
        let args = GenConfig {
            rounds: 2,
            ..GenConfig::default()
        };
        let (_t, mut run, _stop) = scratch(&args);
        let e = rounds(&args, &mut run, &crate::observe::Quiet, &mut |g| match g {
            Generator::Trafgen => Err(BedError::Refused("trafgen: command not found".into())),
            _ => Ok(1e6),
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("trafgen: "), "{e}");
        assert_eq!(samples(&run).len(), 2);
        let (_t, mut run, stop) = scratch(&args);
        let mut measured = 0;
        let rates = rounds(&args, &mut run, &crate::observe::Quiet, &mut |_| {
            measured += 1;
            if measured == 3 {
                stop.stop();
            }
            Ok(1e6)
        })
        .unwrap();
        assert_eq!(measured, 3);
        assert_eq!(rates.iter().map(|(_, v)| v.len()).sum::<usize>(), 3);
    }
}
