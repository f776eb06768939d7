//! Where a bed's CPU time goes: per-core ticks from /proc/stat and a
//! sampler of the switch process's share over a trial.

use super::*;

/// The time a core spent, by kind, from /proc/stat (in clock ticks).
#[derive(Clone, Copy, Default)]
pub(super) struct CoreTicks(pub(super) [u64; 8]);

impl CoreTicks {
    pub(super) fn read(core: usize) -> Option<CoreTicks> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with(&format!("cpu{core} ")))?;
        let mut t = [0u64; 8];
        for (slot, v) in t.iter_mut().zip(line.split_whitespace().skip(1)) {
            *slot = v.parse().ok()?;
        }
        Some(CoreTicks(t))
    }

    /// Shares (%) of user, nice, system, irq, softirq, idle (+ iowait, steal) since `before`.
    pub(super) fn shares_since(&self, before: &CoreTicks) -> serde_json::Value {
        let d: Vec<f64> = self
            .0
            .iter()
            .zip(before.0.iter())
            .map(|(a, b)| a.saturating_sub(*b) as f64)
            .collect();
        let total = d.iter().sum::<f64>().max(1.0);
        let pct = |i: usize| (1000.0 * d[i] / total).round() / 10.0;
        // /proc/stat order: user nice system idle iowait irq softirq steal.
        serde_json::json!({"user": pct(0), "nice": pct(1), "system": pct(2), "irq": pct(5),
            "softirq": pct(6), "idle": pct(3) + pct(4), "steal": pct(7)})
    }
}

impl Bed {
    /// The processes of the measured path, for a [`crate::host::HostWatch`]:
    /// the switch's (its processes, or Open vSwitch's daemon) and this one
    /// (the generator and the receiver run in it).
    pub(crate) fn path_processes(&self) -> Vec<(String, u32)> {
        if self.remote.is_some() {
            // (On the workers' machines: none of this one's processes.)
            return Vec::new();
        }
        let mut v: Vec<(String, u32)> = self.children.iter().map(|c| ("switch".to_string(), c.id())).collect();
        if let Some(o) = &self.ovs {
            v.push(("ovs-vswitchd".into(), o.state.vswitchd_pid));
        }
        v.push(("sdnlab (generator, receiver)".into(), std::process::id()));
        v
    }
}

/// Samples the switch core's time (user, nice, system, irq, softirq)
/// every second while a trial runs.
pub(crate) struct CpuSampler {
    pub(super) stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub(super) thread: std::thread::JoinHandle<Vec<serde_json::Value>>,
    pub(super) first: Option<CoreTicks>,
    pub(super) core: usize,
}

impl CpuSampler {
    pub(crate) fn start(core: usize) -> CpuSampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let first = CoreTicks::read(core);
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut last = CoreTicks::read(core);
            let mut next = Instant::now() + Duration::from_secs(1);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
                if Instant::now() >= next {
                    let now = CoreTicks::read(core);
                    if let (Some(a), Some(b)) = (now, last) {
                        out.push(a.shares_since(&b));
                    }
                    last = now;
                    next += Duration::from_secs(1);
                }
            }
            out
        });
        CpuSampler {
            stop,
            thread,
            first,
            core,
        }
    }

    /// {"core", "each_second": [...], "trial": shares over the whole trial}.
    pub(crate) fn finish(self) -> serde_json::Value {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let each = self.thread.join().unwrap_or_default();
        let whole = match (CoreTicks::read(self.core), self.first) {
            (Some(a), Some(b)) => a.shares_since(&b),
            _ => serde_json::Value::Null,
        };
        serde_json::json!({"core": self.core, "each_second": each, "trial": whole})
    }
}
