//! How a running experiment shows itself: `lab`'s events drawn on a
//! terminal as a live view (the progress bar, what runs now and the time
//! left of it, the last trial's offered rate, loss and latency, the
//! switch under test's port rates, and each core's load), or as plain
//! lines on stderr when stderr is not a terminal or `--no-live` is given
//! (a log file, CI). cbench's own lines (`--cbench-output`) go to stdout
//! as cbench prints them.
//!
//! The live lines are refreshed by one sampler thread, twice a second,
//! from files the kernel keeps anyway (`/proc/stat`, and two counters per
//! watched interface under `/sys/class/net`): it never touches the
//! measured path (no packet, no system call on it), and costs what it
//! reports at the end of a run with `SDNLAB_LIVE_COST=1` (measured: 61 to
//! 98 ms of CPU over `bench dp` runs of about 100 s, under 0.1 % of one
//! core; docs/BENCHMARKS.md).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::{Event, Observer, TrialFigures};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the live lines are made of, shared with the sampler.
#[derive(Default)]
struct Now {
    system: String,
    ports: Vec<(String, String)>,
    trial: Option<(String, usize, Option<f64>, f64, Instant)>,
    trials: u64,
    last: Option<TrialFigures>,
    /// The last transient status (shown when no trial runs).
    status: Option<String>,
    /// The `last` and `ports` lines are on screen (added when first needed).
    shown: [bool; 2],
}

struct Dashboard {
    multi: MultiProgress,
    lines: [ProgressBar; 4],
    now: Arc<Mutex<Now>>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<Duration>>,
}

pub struct Progress {
    bar: Mutex<Option<ProgressBar>>,
    terminal: bool,
    dash: Mutex<Option<Dashboard>>,
    /// Print cbench's per-loop and RESULT lines on stdout.
    pub cbench_output: bool,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new(true)
    }
}

/// cbench's line for one loop: each switch's own count of responses in
/// the loop, then the total per millisecond, as cbench prints them
/// (OpenFlow 1.0), or as its OpenFlow 1.3 twin does ("Testing ...
/// Switches").
pub fn cbench_loop_line(clock: &str, switches: usize, per_switch: &[u64], responses_per_s: f64, version: u8) -> String {
    let cols: String = per_switch.iter().map(|n| format!("{n}  ")).collect();
    if version == ofwire::OFP10_VERSION {
        format!(
            "{clock} {switches:<3} switches: flows/sec:  {cols} total = {:.6} per ms ",
            responses_per_s / 1000.0
        )
    } else {
        format!(
            "{clock} Testing {switches:<3} Switches: flows/sec:  {cols}total = {:.6} per ms ",
            responses_per_s / 1000.0
        )
    }
}

/// cbench's last line for a scenario: every measured loop's responses/s,
/// min/max/avg and the population standard deviation, as cbench gives it.
pub fn cbench_result_line(switches: usize, rates: &[f64]) -> String {
    let s = stats::summary(rates);
    let pop = (rates.iter().map(|x| (x - s.mean).powi(2)).sum::<f64>() / rates.len().max(1) as f64).sqrt();
    format!(
        "RESULT: {} switches {} tests min/max/avg/stdev = {:.2}/{:.2}/{:.2}/{:.2} responses/s",
        switches,
        rates.len(),
        s.min,
        s.max,
        s.mean,
        pop
    )
}

/// cbench's clock: 12:34:56.789 (UTC).
pub fn clock() -> String {
    let secs = report::now_unix();
    let day = secs % 86400.0;
    format!(
        "{:02}:{:02}:{:06.3}",
        (day / 3600.0) as u32,
        ((day % 3600.0) / 60.0) as u32,
        day % 60.0
    )
}

fn rate(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{:.2} M", pps / 1e6)
    } else if pps >= 1e3 {
        format!("{:.1} k", pps / 1e3)
    } else {
        format!("{pps:.0} ")
    }
}

fn packets(ifname: &str) -> (u64, u64) {
    let read = |what: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{ifname}/statistics/{what}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    };
    (read("rx_packets"), read("tx_packets"))
}

fn thread_cpu() -> Duration {
    // CLOCK_THREAD_CPUTIME_ID: this thread's own CPU time.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec for the kernel to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Refreshes the live lines every 500 ms until `stop`; its own CPU time.
fn sample(lines: [ProgressBar; 4], now: Arc<Mutex<Now>>, stop: Arc<AtomicBool>) -> Duration {
    let mut cpu0 = lab::host::core_ticks();
    let mut ports0: Vec<(u64, u64)> = Vec::new();
    let mut t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(500));
        let secs = t0.elapsed().as_secs_f64().max(1e-3);
        t0 = Instant::now();
        let cpu = lab::host::core_ticks();
        let cores: Vec<String> = cpu
            .iter()
            .zip(&cpu0)
            .enumerate()
            .map(|(i, (a, b))| {
                let busy = a.busy.saturating_sub(b.busy) as f64;
                let total = a.total.saturating_sub(b.total).max(1) as f64;
                format!("cpu{i} {:>3.0}%", 100.0 * busy / total)
            })
            .collect();
        cpu0 = cpu;
        let n = now.lock().unwrap_or_else(|p| p.into_inner());
        let counts: Vec<(u64, u64)> = n.ports.iter().map(|(_, i)| packets(i)).collect();
        let port_line: Vec<String> = n
            .ports
            .iter()
            .zip(&counts)
            .zip(ports0.iter().chain(std::iter::repeat(&(0, 0))))
            .map(|(((label, _), c), c0)| {
                format!(
                    "{label} rx {}fps tx {}fps",
                    rate(c.0.saturating_sub(c0.0) as f64 / secs),
                    rate(c.1.saturating_sub(c0.1) as f64 / secs)
                )
            })
            .collect();
        let fresh = ports0.len() != counts.len();
        ports0 = counts;
        let head = match &n.trial {
            Some((test, frame, offered, seconds, started)) => format!(
                "now   {} {test} {frame}B: offering {}, {:.1} s left of {seconds:.1} s (trial {})",
                n.system,
                offered
                    .map(|r| format!("{}fps", rate(r)))
                    .unwrap_or_else(|| "flat out".into()),
                (seconds - started.elapsed().as_secs_f64()).max(0.0),
                n.trials + 1
            ),
            None => format!(
                "now   {}{}",
                n.system,
                n.status.as_deref().map(|s| format!(" {s}")).unwrap_or_default()
            ),
        };
        let last = match &n.last {
            Some(l) => {
                let loss = 100.0 * l.sent.saturating_sub(l.received) as f64 / l.sent.max(1) as f64;
                let lat = l
                    .latency_us
                    .map(|[p50, p99, max]| format!(", latency p50 {p50:.1} p99 {p99:.1} max {max:.1} us"))
                    .unwrap_or_default();
                format!(
                    "last  {} {}B: offered {}fps, loss {loss:.3} %{lat}",
                    l.test,
                    l.frame,
                    rate(l.offered_pps)
                )
            }
            None => String::new(),
        };
        drop(n);
        lines[0].set_message(head);
        lines[1].set_message(last);
        if !fresh && !port_line.is_empty() {
            lines[2].set_message(format!("ports {}", port_line.join(" | ")));
        }
        lines[3].set_message(format!("load  {}", cores.join("  ")));
    }
    thread_cpu()
}

impl Progress {
    /// A live view when `live` and stderr is a terminal; plain lines otherwise.
    pub fn new(live: bool) -> Progress {
        Progress {
            bar: Mutex::new(None),
            terminal: live && std::io::stderr().is_terminal(),
            dash: Mutex::new(None),
            cbench_output: false,
        }
    }

    /// Starts the live lines (once, on a terminal).
    fn dashboard(&self) -> std::sync::MutexGuard<'_, Option<Dashboard>> {
        let mut d = self.dash.lock().unwrap_or_else(|p| p.into_inner());
        if d.is_none() && self.terminal {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner());
            // Hidden until added: `now` and `load` at once, `last` and
            // `ports` when there is something to show in them.
            let lines = [0, 1, 2, 3].map(|_| {
                let b = ProgressBar::hidden();
                b.set_style(style.clone());
                b
            });
            multi.add(lines[0].clone());
            multi.add(lines[3].clone());
            let now = Arc::new(Mutex::new(Now::default()));
            let stop = Arc::new(AtomicBool::new(false));
            let sampler = {
                let (lines, now, stop) = (lines.clone(), now.clone(), stop.clone());
                std::thread::Builder::new()
                    .name("live-view".into())
                    .spawn(move || sample(lines, now, stop))
                    .ok()
            };
            *d = Some(Dashboard {
                multi,
                lines,
                now,
                stop,
                sampler,
            });
        }
        d
    }

    /// Runs `f` with the live lines out of the way.
    fn above(&self, f: impl FnOnce()) {
        let d = self.dash.lock().unwrap_or_else(|p| p.into_inner());
        match (d.as_ref(), self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref()) {
            (Some(d), _) => d.multi.suspend(f),
            (None, Some(b)) => b.suspend(f),
            (None, None) => f(),
        }
    }

    fn with_now(&self, f: impl FnOnce(&mut Now)) {
        if let Some(d) = self.dashboard().as_ref() {
            let mut n = d.now.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut n);
            if n.last.is_some() && !n.shown[0] {
                n.shown[0] = true;
                d.multi.insert_after(&d.lines[0], d.lines[1].clone());
            }
            if !n.ports.is_empty() && !n.shown[1] {
                n.shown[1] = true;
                d.multi.insert_before(&d.lines[3], d.lines[2].clone());
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Progress {
    /// Takes the live lines off the screen (before the results are printed).
    pub fn finish(&self) {
        if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            b.finish_and_clear();
        }
        let d = self.dash.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut d) = d {
            d.stop.store(true, Ordering::Relaxed);
            let cost = d.sampler.take().and_then(|h| h.join().ok());
            for l in &d.lines {
                l.finish_and_clear();
            }
            let _ = d.multi.clear();
            if let (Some(c), Some(_)) = (cost, std::env::var_os("SDNLAB_LIVE_COST")) {
                tracing::info!("live view: {:.1} ms of CPU in all", c.as_secs_f64() * 1e3);
            }
        }
    }
}

impl Observer for Progress {
    fn event(&self, e: Event<'_>) {
        match e {
            Event::Line(s) => self.above(|| to_terminal(s)),
            Event::Plan { steps } => {
                if self.terminal {
                    let b = ProgressBar::new(steps);
                    b.set_style(
                        ProgressStyle::with_template("{bar:30} {pos}/{len} trials, {elapsed} (about {eta} left) {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar()),
                    );
                    let d = self.dashboard();
                    let b = match d.as_ref() {
                        Some(d) => d.multi.insert(0, b),
                        None => b,
                    };
                    *self.bar.lock().unwrap_or_else(|p| p.into_inner()) = Some(b);
                }
            }
            Event::Step { status } => match self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                Some(b) => {
                    b.set_message(status.to_string());
                    b.inc(1);
                }
                None => to_terminal(&format!("  {status}")),
            },
            Event::Status(s) => {
                if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                    b.set_message(s.to_string());
                } else if self.terminal {
                    self.with_now(|n| n.status = Some(s.to_string()));
                }
            }
            Event::PlanDone => {
                if let Some(b) = self.bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    b.finish_and_clear();
                }
            }
            Event::Watch { system, ports } => self.with_now(|n| {
                n.system = system.to_string();
                n.ports = ports.to_vec();
            }),
            Event::TrialStart {
                test,
                frame,
                offered_pps,
                seconds,
            } => self.with_now(|n| n.trial = Some((test.to_string(), frame, offered_pps, seconds, Instant::now()))),
            Event::TrialEnd(f) => self.with_now(|n| {
                n.trials += 1;
                n.trial = None;
                n.last = Some(f.clone());
            }),
            Event::CbenchLoop {
                switches,
                responses_per_s,
                per_switch,
                version,
            } if self.cbench_output => {
                self.above(|| {
                    println!(
                        "{}",
                        cbench_loop_line(&clock(), switches, per_switch, responses_per_s, version)
                    )
                });
            }
            Event::CbenchScenario { switches, rates } if self.cbench_output => {
                self.above(|| println!("{}", cbench_result_line(switches, rates)));
            }
            Event::CbenchLoop { .. } | Event::CbenchScenario { .. } => {}
        }
    }
}

/// A line of the live view's plain output, on stderr: the view is the
/// terminal's (what a person reads while the run goes), not a log.
fn to_terminal(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::cbench_loop_line;

    #[test]
    fn cbench_lines_give_each_switch_its_own_count() {
        // As cbench prints (OpenFlow 1.0) and its 1.3 twin ("Testing ... Switches").
        assert_eq!(
            cbench_loop_line("12:00:00.000", 3, &[10, 20, 31], 61_000.0, 1),
            "12:00:00.000 3   switches: flows/sec:  10  20  31   total = 61.000000 per ms "
        );
        assert_eq!(
            cbench_loop_line("12:00:00.000", 16, &[7, 9], 16_000.0, 4),
            "12:00:00.000 Testing 16  Switches: flows/sec:  7  9  total = 16.000000 per ms "
        );
    }
}
