//! The one traffic shaper: a token bucket filter (tc's `tbf`) on a device's
//! root, in the root namespace or a host's. Emulated links with a rate
//! (`rate_mbit` in a topology) and `bench dp --limit-mbit` both use it.

use crate::NetError;

/// How much a shaped device may queue beyond its bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Queue {
    /// At most this many bytes wait (a link's `queue_packets` full frames).
    Bytes(u64),
    /// A frame waits at most this many milliseconds.
    LatencyMs(u32),
}

/// A token bucket: its rate, its burst and its queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tbf {
    pub rate_kbit: u64,
    pub burst_kb: u32,
    pub queue: Queue,
}

impl Tbf {
    /// `tc qdisc replace dev DEV root tbf ...`'s arguments after the device.
    fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = ["root", "tbf", "rate"].map(String::from).to_vec();
        a.push(format!("{}kbit", self.rate_kbit));
        a.push("burst".into());
        a.push(format!("{}kb", self.burst_kb));
        match self.queue {
            Queue::Bytes(b) => a.extend(["limit".into(), b.to_string()]),
            Queue::LatencyMs(ms) => a.extend(["latency".into(), format!("{ms}ms")]),
        }
        a
    }
}

/// Shapes what leaves `dev` (in namespace `netns`; None: the root one) as
/// `tbf` says, replacing the root qdisc it had.
pub fn shape(netns: Option<&str>, dev: &str, tbf: Tbf) -> Result<(), NetError> {
    let mut c = match netns {
        Some(ns) => nsexec::command(ns, "tc").map_err(NetError::io(format!("namespace {ns}")))?,
        None => std::process::Command::new("tc"),
    };
    c.args(["qdisc", "replace", "dev", dev]).args(tbf.args());
    nsexec::run_tool(&mut c, &format!("rate limit on {dev}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_is_written_as_tc_reads_it() {
        let t = Tbf {
            rate_kbit: 10_000,
            burst_kb: 32,
            queue: Queue::Bytes(1_514_000),
        };
        assert_eq!(t.args().join(" "), "root tbf rate 10000kbit burst 32kb limit 1514000");
        let t = Tbf {
            rate_kbit: 500,
            burst_kb: 16,
            queue: Queue::LatencyMs(20),
        };
        assert_eq!(t.args().join(" "), "root tbf rate 500kbit burst 16kb latency 20ms");
    }
}
