//! Was the emulating host, not the network, measured? While a trial runs,
//! a [`HostWatch`] samples every core's busy share ten times a second
//! (`/proc/stat`), and at its start and end it reads the CPU time of every
//! thread on the machine (`/proc/*/task/*/stat`: its time and the core it
//! last ran on), so it knows what each process of the measured path (the
//! switch, the controller, generators, servers) spent, on which cores, and
//! which process held a core that was saturated. The trial is host-bound
//! when a core the measured path ran on (a core where its processes spent
//! a quarter of their CPU time or more; every core for a path the kernel
//! alone carries) was above [`Rule::busy`] for more than [`Rule::share`]
//! of the trial: then the figure says as much about the host as about the
//! network.
//!
//! Reading /proc costs the measured path nothing it waits on: one thread,
//! ten small reads a second, and two walks of /proc per trial (their cost
//! is measured in docs/BENCHMARKS.md, with `SDNLAB_HOST_WATCH=off` turning
//! the watch off for the comparison).

use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When a trial is host-bound.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Rule {
    /// A core is saturated in a sample when busier than this (0 to 1).
    pub busy: f64,
    /// ... and the trial is host-bound when that holds for more than this
    /// share of its samples (0 to 1).
    pub share: f64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule { busy: 0.95, share: 0.5 }
    }
}

/// One core over a trial.
#[derive(Clone, Debug, Serialize)]
pub struct CoreLoad {
    pub core: usize,
    /// Busy share over the whole trial (0 to 1).
    pub busy: f64,
    /// Of which in interrupts and softirqs (the kernel's packet path).
    pub irq: f64,
    /// Share of the samples in which the core was saturated.
    pub saturated: f64,
    /// The process that used this core most during the trial (name, pid, CPU seconds).
    pub held_by: Option<(String, u32, f64)>,
}

/// One process of the measured path over a trial.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessLoad {
    pub label: String,
    pub pid: u32,
    /// CPU seconds (user and system) during the trial.
    pub cpu_s: f64,
    /// The cores its threads ran on, with their CPU seconds there.
    pub cores: Vec<(usize, f64)>,
}

/// What the host did during one trial.
#[derive(Clone, Debug, Serialize)]
pub struct HostLoad {
    /// False when the watch was off (`SDNLAB_HOST_WATCH=off`, for measuring
    /// what watching costs): nothing else here is then measured.
    pub watched: bool,
    pub seconds: f64,
    pub rule: Rule,
    pub cores: Vec<CoreLoad>,
    pub processes: Vec<ProcessLoad>,
    /// The cores the measured path ran on (every core when no process of
    /// it ran in user space: a kernel path runs wherever its softirqs do).
    pub path_cores: Vec<usize>,
    pub host_bound: bool,
    /// Why the trial is host-bound, in one line (None when it is not).
    pub reason: Option<String>,
}

/// One core's CPU time so far, in clock ticks (from /proc/stat).
#[derive(Clone, Copy, Default)]
pub struct Ticks {
    pub busy: u64,
    /// Of which in interrupts and softirqs.
    pub irq: u64,
    pub total: u64,
}

/// Every core's CPU time so far (the live view reads it too).
pub fn core_ticks() -> Vec<Ticks> {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(|b| b.is_ascii_digit()))
        .map(|l| {
            // user nice system idle iowait irq softirq steal
            let v: Vec<u64> = l.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            Ticks {
                busy: total.saturating_sub(idle),
                irq: v.get(5).copied().unwrap_or(0) + v.get(6).copied().unwrap_or(0),
                total,
            }
        })
        .collect()
}

/// One thread: its process, the process's name, its CPU ticks, its last core.
#[derive(Clone)]
struct Thread {
    pid: u32,
    comm: String,
    ticks: u64,
    core: usize,
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Every thread on the machine, by thread id.
fn threads() -> HashMap<u32, Thread> {
    let mut out = HashMap::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            // "tid (comm) state ..." where comm may hold spaces and parentheses.
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = stat[open + 1..close].to_string();
            let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
            // Fields after comm, from 0: state=0 ... utime=11 stime=12 ... processor=36.
            let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            out.insert(
                tid,
                Thread {
                    pid,
                    comm,
                    ticks: num(11) + num(12),
                    core: num(36) as usize,
                },
            );
        }
    }
    out
}

/// The process name of `pid` (its main thread's comm).
fn process_name(all: &HashMap<u32, Thread>, pid: u32) -> String {
    all.get(&pid)
        .map(|t| t.comm.clone())
        .unwrap_or_else(|| format!("pid {pid}"))
}

/// What the sampler thread hands back: each sample's per-core busy
/// shares, and each watched process's last CPU ticks and core.
type Samples = (Vec<Vec<f64>>, Followed);

/// The watched processes' threads followed sample by sample: each thread's
/// last ticks, and the CPU ticks each process spent on each core.
#[derive(Default)]
struct Followed {
    last: HashMap<u32, u64>,
    per_core: HashMap<(u32, usize), u64>,
}

impl Followed {
    /// One look at process `pid`'s threads: each thread's ticks since the
    /// last look go to the core it runs on now (`start` holds every
    /// thread's ticks when the trial began).
    fn look(&mut self, pid: u32, start: &HashMap<u32, Thread>) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|x| x.parse::<u32>().ok()) else {
                continue;
            };
            let Some((ticks, core)) = std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|st| stat_ticks_core(&st))
            else {
                continue;
            };
            let before = match self.last.get(&tid) {
                Some(b) => *b,
                None => start.get(&tid).filter(|b| b.pid == pid).map(|b| b.ticks).unwrap_or(0),
            };
            let d = ticks.saturating_sub(before);
            if d > 0 {
                *self.per_core.entry((pid, core)).or_default() += d;
            }
            self.last.insert(tid, ticks);
        }
    }
}

/// A task's CPU ticks (user and system) and the core it last ran on, from its stat line.
fn stat_ticks_core(stat: &str) -> Option<(u64, usize)> {
    let close = stat.rfind(')')?;
    let f: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    Some((num(11) + num(12), num(36) as usize))
}

/// Processes whose name is one of `names`.
fn processes_named(names: &[String]) -> Vec<(String, u32)> {
    let Ok(d) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    d.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let comm = comm.trim();
            names.iter().any(|n| n == comm).then(|| (comm.to_string(), pid))
        })
        .collect()
}

/// Samples the host while a trial runs; [`HostWatch::finish`] says what it saw.
pub struct HostWatch {
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<Samples>>,
    first: Vec<Ticks>,
    threads: HashMap<u32, Thread>,
    watched: Arc<std::sync::Mutex<Vec<(String, u32)>>>,
    started: Instant,
    rule: Rule,
}

impl HostWatch {
    /// Starts watching; `watched` names the processes of the measured path
    /// (a label and a pid each).
    pub fn start(watched: Vec<(String, u32)>, rule: Rule) -> HostWatch {
        HostWatch::start_with(watched, &[], rule)
    }

    /// The same, also counting as the path's every process named one of
    /// `names` (`iperf3`) that runs during the trial: for programs another
    /// tool starts (Mininet's hosts). Names serve to account CPU time only,
    /// never to signal anything.
    pub fn start_with(watched: Vec<(String, u32)>, names: &[&str], rule: Rule) -> HostWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let watched = Arc::new(std::sync::Mutex::new(watched));
        if std::env::var("SDNLAB_HOST_WATCH").is_ok_and(|v| v == "off") {
            return HostWatch {
                stop,
                sampler: None,
                first: Vec::new(),
                threads: HashMap::new(),
                watched,
                started: Instant::now(),
                rule,
            };
        }
        let list = watched.clone();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let start = threads();
        let start_for_sampler = start.clone();
        let sampler = std::thread::Builder::new()
            .name("host-watch".into())
            .spawn(move || {
                let start = start_for_sampler;
                let mut busy: Vec<Vec<f64>> = Vec::new();
                let mut followed = Followed::default();
                let mut last = core_ticks();
                let mut round = 0u64;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    round += 1;
                    let now = core_ticks();
                    let sample: Vec<f64> = now
                        .iter()
                        .zip(&last)
                        .map(|(a, b)| {
                            let total = a.total.saturating_sub(b.total);
                            if total == 0 {
                                0.0
                            } else {
                                a.busy.saturating_sub(b.busy) as f64 / total as f64
                            }
                        })
                        .collect();
                    busy.push(sample);
                    last = now;
                    // Named programs as they appear (twice a second), and
                    // every watched process's threads: their time since the
                    // last sample, on the core each runs on now.
                    if !names.is_empty() && round % 5 == 1 {
                        let found = processes_named(&names);
                        let mut l = list.lock().unwrap_or_else(|p| p.into_inner());
                        for (name, pid) in found {
                            if !l.iter().any(|(_, p)| *p == pid) {
                                l.push((name, pid));
                            }
                        }
                    }
                    let pids: Vec<u32> = list
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .iter()
                        .map(|w| w.1)
                        .collect();
                    for pid in pids {
                        followed.look(pid, &start);
                    }
                }
                (busy, followed)
            })
            .ok();
        HostWatch {
            stop,
            sampler,
            first: core_ticks(),
            threads: start,
            watched,
            started: Instant::now(),
            rule,
        }
    }

    /// Something that adds a process of the measured path once it is
    /// started (a server, a client): a label and its pid.
    pub fn adder(&self) -> impl Fn(&str, u32) + Send + Sync + 'static {
        let w = self.watched.clone();
        move |label: &str, pid: u32| {
            w.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((label.to_string(), pid))
        }
    }

    pub fn finish(mut self) -> HostLoad {
        self.stop.store(true, Ordering::Relaxed);
        if self.sampler.is_none() && self.first.is_empty() {
            return HostLoad {
                watched: false,
                seconds: self.started.elapsed().as_secs_f64(),
                rule: self.rule,
                cores: Vec::new(),
                processes: Vec::new(),
                path_cores: Vec::new(),
                host_bound: false,
                reason: None,
            };
        }
        let (samples, mut followed) = self.sampler.take().and_then(|h| h.join().ok()).unwrap_or_default();
        let seconds = self.started.elapsed().as_secs_f64();
        let last = core_ticks();
        let after = threads();
        let hz = ticks_per_second();
        // CPU seconds per (process, core) during the trial, each thread's
        // time put on the core it last ran on.
        let mut by_proc_core: HashMap<(u32, usize), f64> = HashMap::new();
        for (tid, t) in &after {
            let before = self
                .threads
                .get(tid)
                .filter(|b| b.pid == t.pid)
                .map(|b| b.ticks)
                .unwrap_or(0);
            let d = t.ticks.saturating_sub(before);
            if d > 0 {
                *by_proc_core.entry((t.pid, t.core)).or_default() += d as f64 / hz;
            }
        }
        let watched = self.watched.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // The path's processes as followed sample by sample (a last look
        // now for the time since the last sample), so each core gets the
        // time actually spent on it, also by processes gone before the end.
        for (_, pid) in &watched {
            followed.look(*pid, &self.threads);
        }
        let path_per_core: HashMap<(u32, usize), f64> =
            followed.per_core.iter().map(|(k, t)| (*k, *t as f64 / hz)).collect();
        // Who used each core: the path's processes as followed, every other
        // process by its threads' last core, and the kernel's interrupts
        // and softirqs.
        let mut users = by_proc_core.clone();
        for (k, s) in &path_per_core {
            let e = users.entry(*k).or_default();
            *e = e.max(*s);
        }
        let label_of = |pid: u32| {
            watched
                .iter()
                .find(|(_, p)| *p == pid)
                .map(|(l, _)| l.clone())
                .unwrap_or_else(|| process_name(&after, pid))
        };
        let n = last.len().min(self.first.len());
        let mut cores = Vec::new();
        for (c, (&a, &b)) in last.iter().zip(&self.first).enumerate() {
            let total = a.total.saturating_sub(b.total).max(1) as f64;
            let saturated = if samples.is_empty() {
                0.0
            } else {
                samples
                    .iter()
                    .filter(|s| s.get(c).is_some_and(|&x| x > self.rule.busy))
                    .count() as f64
                    / samples.len() as f64
            };
            let irq = a.irq.saturating_sub(b.irq) as f64 / total;
            let top = users
                .iter()
                .filter(|((_, core), _)| *core == c)
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|((pid, _), s)| (label_of(*pid), *pid, *s));
            // The kernel (pid 0) when its interrupt and softirq time there
            // was larger than any process's.
            let held_by = match top {
                Some(t) if t.2 >= irq * seconds => Some(t),
                _ if irq > 0.0 => Some(("the kernel's interrupts and softirqs".into(), 0, irq * seconds)),
                t => t,
            };
            cores.push(CoreLoad {
                core: c,
                busy: a.busy.saturating_sub(b.busy) as f64 / total,
                irq,
                saturated,
                held_by,
            });
        }
        let processes: Vec<ProcessLoad> = watched
            .iter()
            .map(|(label, pid)| {
                let mut per: Vec<(usize, f64)> = path_per_core
                    .iter()
                    .filter(|((p, _), _)| p == pid)
                    .map(|((_, c), s)| (*c, *s))
                    .collect();
                per.sort_by_key(|x| x.0);
                ProcessLoad {
                    label: label.clone(),
                    pid: *pid,
                    cpu_s: per.iter().map(|x| x.1).sum(),
                    cores: per,
                }
            })
            .collect();
        let path_cores = path_cores(&processes, seconds, n);
        let reason = bound_reason(&cores, &path_cores, &self.rule);
        HostLoad {
            watched: true,
            seconds,
            rule: self.rule,
            cores,
            processes,
            path_cores,
            host_bound: reason.is_some(),
            reason,
        }
    }
}

/// The path's cores: those where its processes spent a quarter or more of
/// their CPU time; a kernel-only path (no process, or processes that
/// hardly ran) runs wherever its softirqs do (any of the `n` cores).
fn path_cores(processes: &[ProcessLoad], seconds: f64, n: usize) -> Vec<usize> {
    let mut path_time: HashMap<usize, f64> = HashMap::new();
    for p in processes {
        for (c, s) in &p.cores {
            *path_time.entry(*c).or_default() += s;
        }
    }
    let path_total: f64 = path_time.values().sum();
    let mut path_cores: Vec<usize> = if path_total >= 0.01 * seconds {
        path_time
            .iter()
            .filter(|(_, s)| **s >= 0.25 * path_total)
            .map(|(c, _)| *c)
            .collect()
    } else {
        (0..n).collect()
    };
    path_cores.sort_unstable();
    path_cores
}

/// Why the trial was host-bound, if it was: the path's core saturated the
/// longest beyond the rule's share, and who held it.
fn bound_reason(cores: &[CoreLoad], path_cores: &[usize], rule: &Rule) -> Option<String> {
    let worst = cores
        .iter()
        .filter(|c| path_cores.contains(&c.core) && c.saturated > rule.share)
        .max_by(|a, b| a.saturated.total_cmp(&b.saturated));
    worst.map(|c| {
        let holder = match &c.held_by {
            Some((name, 0, s)) => format!("held by {name} ({s:.1} s of CPU)"),
            Some((name, pid, s)) => format!("held by {name} (pid {pid}, {s:.1} s of CPU)"),
            None => "held by the kernel".into(),
        };
        format!(
            "core {} was over {:.0} % busy for {:.0} % of the trial, {holder}",
            c.core,
            rule.busy * 100.0,
            c.saturated * 100.0
        )
    })
}

impl HostLoad {
    /// The rule's second half: a configured rate (bits/s, `what` names it)
    /// not reached (under 90 %) while a core was saturated makes the trial
    /// host-bound too, when it is not already.
    pub fn rate_not_reached(&mut self, what: &str, configured: f64, measured: f64) {
        if self.host_bound || measured >= 0.9 * configured {
            return;
        }
        if let Some(c) = self.cores.iter().find(|c| c.saturated > self.rule.share) {
            self.host_bound = true;
            self.reason = Some(format!(
                "{what} was not reached while core {} was saturated for {:.0} % of the trial{}",
                c.core,
                c.saturated * 100.0,
                c.held_by
                    .as_ref()
                    .map(|(n, p, _)| format!(", held by {n} (pid {p})"))
                    .unwrap_or_default()
            ));
        }
    }

    /// One line for a terminal: each core's load, and the verdict.
    pub fn line(&self) -> String {
        if !self.watched {
            return "not watched (SDNLAB_HOST_WATCH=off)".into();
        }
        let cores: Vec<String> = self
            .cores
            .iter()
            .map(|c| format!("cpu{} {:.0} %", c.core, c.busy * 100.0))
            .collect();
        match &self.reason {
            Some(r) => format!("HOST-BOUND: {r} ({})", cores.join(", ")),
            None => format!("not host-bound ({})", cores.join(", ")),
        }
    }
}

impl Drop for HostWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The operational law's bound on throughput: with D_i the service demand
/// of each resource per unit of work (CPU seconds per bit or per packet;
/// for a rate-limited link, 1/rate), X <= min(1/D_max, N / sum D_i), N the
/// units in flight (when known). The resource with the largest demand is
/// the bottleneck.
#[derive(Clone, Debug, Serialize)]
pub struct Bound {
    /// What a unit is ("bit", "frame").
    pub unit: String,
    /// Each resource and its demand (seconds per unit), largest first.
    pub demands: Vec<(String, f64)>,
    /// Units in flight, when known.
    pub in_flight: Option<f64>,
    /// The bound on throughput (units per second).
    pub bound: f64,
    pub bottleneck: String,
}

impl Bound {
    /// The bound from `demands`; None when there is none to bound with.
    pub fn of(unit: &str, mut demands: Vec<(String, f64)>, in_flight: Option<f64>) -> Option<Bound> {
        demands.retain(|(_, d)| d.is_finite() && *d > 0.0);
        demands.sort_by(|a, b| b.1.total_cmp(&a.1));
        let (bottleneck, dmax) = demands.first().cloned()?;
        let mut bound = 1.0 / dmax;
        if let Some(n) = in_flight {
            let sum: f64 = demands.iter().map(|d| d.1).sum();
            bound = bound.min(n / sum);
        }
        Some(Bound {
            unit: unit.into(),
            demands,
            in_flight,
            bound,
            bottleneck,
        })
    }
}

impl HostLoad {
    /// Each core's service demand, in CPU seconds per unit of work when
    /// `units` were carried during the trial: the path's processes' time
    /// on that core and the kernel's interrupt and softirq time there.
    pub fn demands(&self, units: f64) -> Vec<(String, f64)> {
        if units <= 0.0 {
            return Vec::new();
        }
        // The resources are the cores: each core's demand is the path's
        // CPU time on it (its processes' time there, and the kernel's
        // interrupt and softirq time there, where packets are carried)
        // per unit. The name says what used the core most.
        self.cores
            .iter()
            .map(|c| {
                let irq_s = c.irq * self.seconds;
                let mut users: Vec<(String, f64)> = self
                    .processes
                    .iter()
                    .filter_map(|p| {
                        let s: f64 = p.cores.iter().filter(|(k, _)| *k == c.core).map(|(_, s)| s).sum();
                        (s > 0.0).then(|| (format!("{} (pid {})", p.label, p.pid), s))
                    })
                    .collect();
                users.push(("the kernel's interrupts and softirqs".into(), irq_s));
                users.sort_by(|a, b| b.1.total_cmp(&a.1));
                // Never more than the core was busy (a thread's time is put
                // on the core it ran on at each sample, which can overshoot
                // by up to one sample interval).
                let used: f64 = users.iter().map(|u| u.1).sum();
                let total = used.min(c.busy * self.seconds);
                let name = format!(
                    "cpu{}: {}",
                    c.core,
                    users
                        .iter()
                        .filter(|u| u.1 > 0.0)
                        .take(2)
                        .map(|(n, s)| format!("{n} {:.0} %", 100.0 * s / used.max(1e-9)))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                (name, total / units)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_demand_bounds_and_is_named() {
        // A 50 Mbit/s link (2e-8 s/bit) beside processes far cheaper per bit.
        let b = Bound::of(
            "bit",
            vec![
                ("iperf3 client".into(), 2e-10),
                ("link s1-s2".into(), 1.0 / 50e6),
                ("switch s1".into(), 1e-10),
                ("idle".into(), 0.0),
            ],
            None,
        )
        .unwrap();
        assert_eq!(b.bottleneck, "link s1-s2");
        assert!((b.bound - 50e6).abs() < 1.0, "{}", b.bound);
        assert_eq!(b.demands.len(), 3, "a resource with no demand does not count");
        // With few units in flight, N / sum(D) bounds first (Little's law).
        let b = Bound::of("frame", vec![("a".into(), 1e-6), ("b".into(), 1e-6)], Some(1.0)).unwrap();
        assert!((b.bound - 5e5).abs() < 1e-3, "{}", b.bound);
        assert!(Bound::of("bit", vec![], None).is_none());
    }

    #[test]
    fn a_busy_loop_on_this_thread_shows_as_this_process_on_its_core() {
        let me = std::process::id();
        let w = HostWatch::start(vec![("test".into(), me)], Rule::default());
        // Until this thread has had 0.3 s of CPU, however loaded the machine.
        let cpu = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: a valid timespec for the kernel to fill.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        };
        let t0 = cpu();
        let mut x = 0u64;
        while cpu() - t0 < 0.3 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let h = w.finish();
        let p = &h.processes[0];
        assert!(p.cpu_s > 0.25, "the busy loop's CPU time is counted: {p:?}");
        assert!(!h.path_cores.is_empty());
        assert_eq!(
            h.cores.len(),
            std::fs::read_to_string("/proc/stat")
                .unwrap()
                .lines()
                .filter(|l| l.starts_with("cpu") && l.as_bytes()[3].is_ascii_digit())
                .count()
        );
    }
}
