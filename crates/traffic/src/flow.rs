//! Test-frame flows between two hosts: a paced UDP stream of this crate's
//! stamped frames from one host's `eth0`, and a receiver on the other's
//! that counts loss, reordering and duplicates and measures one-way
//! latency. The two ends may be on different machines (a network spread
//! over workers): each end is started apart, the sender at an agreed time
//! on its own clock, and the receiver takes the clocks' offset off every
//! latency. Each end runs in the network namespace its caller names (the
//! emulation that made the hosts knows where they are; this crate does
//! not depend on it).

use crate::frame::Template;
use crate::run::{GenMethod, GenReport, GenSpec, Interval, Receiver, RecvOptions, RecvReport};
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::time::Duration;

/// An end of a flow that could not start or run, and which end.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct FlowError {
    /// "sender on h1", "receiver on h2".
    pub what: String,
    #[source]
    pub source: std::io::Error,
}

/// One end of a flow: a host's name and addresses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct End {
    pub host: String,
    pub mac: [u8; 6],
    pub ip: Ipv4Addr,
}

/// A flow: `rate_pps` frames of `frame_bytes` a second for `seconds`,
/// from `from` to `to`, as stream `stream` (each flow of a run its own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    pub stream: u32,
    pub from: End,
    pub to: End,
    pub rate_pps: f64,
    pub seconds: f64,
    pub frame_bytes: usize,
}

impl Flow {
    /// Stream `stream` from `from` to `to`: 1,000 frames of 64 bytes a
    /// second for a second, until the caller says otherwise.
    pub fn new(stream: u32, from: End, to: End) -> Flow {
        Flow {
            stream,
            from,
            to,
            rate_pps: 1000.0,
            seconds: 1.0,
            frame_bytes: 64,
        }
    }

    /// "FROM>TO", as a flow is named in results.
    pub fn name(&self) -> String {
        format!("{}>{}", self.from.host, self.to.host)
    }
}

/// Starts the receiving end of `flow` on `eth0` in namespace `netns` (its
/// receiving host's). Frames of
/// other streams are not counted; `clock_ahead_ns` (the receiver's clock
/// minus the sender's) comes off every latency; each `interval`, what it
/// counted goes to `intervals`.
pub fn receive(
    netns: &str,
    flow: &Flow,
    clock_ahead_ns: i64,
    intervals: Option<(Duration, std::sync::mpsc::Sender<Interval>)>,
) -> Result<Receiver, FlowError> {
    let opts = RecvOptions {
        stream: Some(flow.stream),
        clock_ahead_ns,
        intervals,
        ..RecvOptions::default()
    };
    Receiver::start_with(Some(netns), "eth0", opts).map_err(|source| FlowError {
        what: format!("receiver on {}", flow.to.host),
        source,
    })
}

/// The frame counts once the receiver has heard nothing for a moment
/// (what was in flight has come), at most `seconds` after being asked.
pub fn finish(r: Receiver, seconds: f64) -> RecvReport {
    r.finish_when_quiet(Duration::from_millis(300), Duration::from_secs_f64(seconds.max(1.0)))
}

/// Sends `flow` from `eth0` in namespace `netns` (its sending host's), through an AF_PACKET socket (it
/// works on any link, VXLAN included), starting when this machine's clock
/// reads `start_unix_ns`; blocks until done.
pub fn send(netns: &str, flow: &Flow, start_unix_ns: u64) -> Result<GenReport, FlowError> {
    let template = Template::udp(
        flow.frame_bytes,
        flow.from.mac,
        flow.to.mac,
        flow.from.ip.octets(),
        flow.to.ip.octets(),
        flow.stream,
    );
    let mut spec = GenSpec::new(
        Some(netns.to_string()),
        "eth0".into(),
        template,
        Some(flow.rate_pps),
        Duration::from_secs_f64(flow.seconds),
    );
    spec.method = GenMethod::AfPacket;
    let wait = start_unix_ns.saturating_sub(crate::run::now_ns());
    std::thread::sleep(Duration::from_nanos(wait));
    crate::run::generate(&spec).map_err(|source| FlowError {
        what: format!("sender on {}", flow.from.host),
        source,
    })
}

/// What a flow's two ends counted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowResult {
    pub flow: Flow,
    pub sent: GenReport,
    pub received: RecvReport,
    /// How far the one-way latencies may be off because the two ends'
    /// clocks are known only so well, µs (0: one machine, one clock).
    pub clock_uncertainty_us: f64,
}

impl FlowResult {
    /// Frames sent that never arrived.
    pub fn lost(&self) -> u64 {
        self.sent
            .sent
            .saturating_sub(self.received.received - self.received.duplicates)
    }

    /// The share of the frames sent that never arrived.
    pub fn loss_ratio(&self) -> f64 {
        if self.sent.sent == 0 {
            0.0
        } else {
            self.lost() as f64 / self.sent.sent as f64
        }
    }
}

/// The namespaces a flow's two hosts are in, on this machine.
#[derive(Clone, Debug)]
pub struct Netns {
    pub from: String,
    pub to: String,
}

/// Runs `flows` at once, each between the namespaces of `netns` (the same
/// index; all on this machine): every receiver listening first, then every sender from the same moment.
/// `on_interval` sees each flow's intervals (by index in `flows`) as they
/// are counted. Blocks until every flow is done.
pub fn run(
    flows: &[Flow],
    netns: &[Netns],
    interval: Duration,
    mut on_interval: impl FnMut(usize, &Interval),
) -> Result<Vec<FlowResult>, FlowError> {
    assert_eq!(flows.len(), netns.len(), "one pair of namespaces per flow");
    let mut receivers = Vec::new();
    for (f, ns) in flows.iter().zip(netns) {
        let (tx, rx) = std::sync::mpsc::channel();
        receivers.push((receive(&ns.to, f, 0, Some((interval, tx)))?, rx));
    }
    let start = crate::run::now_ns() + 100_000_000;
    let senders: Vec<_> = flows
        .iter()
        .zip(netns)
        .map(|(f, ns)| {
            let (ns, f) = (ns.from.clone(), f.clone());
            std::thread::spawn(move || send(&ns, &f, start))
        })
        .collect();
    let forward = |receivers: &[(Receiver, std::sync::mpsc::Receiver<Interval>)],
                   on: &mut dyn FnMut(usize, &Interval)| {
        for (i, (_, rx)) in receivers.iter().enumerate() {
            while let Ok(iv) = rx.try_recv() {
                on(i, &iv);
            }
        }
    };
    while !senders.iter().all(|s| s.is_finished()) {
        forward(&receivers, &mut on_interval);
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent: Vec<Result<GenReport, FlowError>> = senders
        .into_iter()
        .map(|s| {
            s.join().unwrap_or_else(|_| {
                Err(FlowError {
                    what: "sender".into(),
                    source: std::io::Error::other("its thread panicked"),
                })
            })
        })
        .collect();
    let mut out = Vec::new();
    let mut rest = Vec::new();
    for (r, rx) in receivers {
        let seconds = flows[rest.len()].seconds;
        rest.push((finish(r, seconds + 5.0), rx));
    }
    for (i, ((received, rx), (flow, sent))) in rest.into_iter().zip(flows.iter().zip(sent)).enumerate() {
        while let Ok(iv) = rx.try_recv() {
            on_interval(i, &iv);
        }
        out.push(FlowResult {
            flow: flow.clone(),
            sent: sent?,
            received,
            clock_uncertainty_us: 0.0,
        });
    }
    Ok(out)
}
