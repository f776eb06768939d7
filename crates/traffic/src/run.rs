//! A generator and a receiver of test frames on AF_PACKET sockets that live
//! in a network namespace (the thread joins the namespace, opens the
//! socket, and the socket stays there).

use crate::frame::{signature, Template};
use ofswitch::actions::VnetHdr;
use ofswitch::port::{AfPacketPort, PortIo, MTU_SLOT};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Nanoseconds on CLOCK_REALTIME, the clock the kernel stamps received
/// frames with (one machine: sender and receiver read the same clock).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Joins network namespace `name` (this thread only).
pub fn enter_netns(name: &str) -> io::Result<()> {
    let f = std::fs::File::open(format!("/run/netns/{name}"))?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| io::Error::other(format!("setns {name}: {e}")))
}

/// Opens `ifname`, in namespace `netns` if given, with a ring for small frames.
fn open_in(netns: Option<&str>, ifname: &str, slots: usize) -> io::Result<AfPacketPort> {
    let (netns, ifname) = (netns.map(str::to_string), ifname.to_string());
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            enter_netns(ns)?;
        }
        AfPacketPort::open_with(&ifname, slots, MTU_SLOT)
    })
    .join()
    .map_err(|_| io::Error::other("socket thread panicked"))?
}

#[derive(Clone, Debug)]
pub struct GenSpec {
    pub netns: Option<String>,
    pub ifname: String,
    pub template: Template,
    /// Frames per second; None: as fast as possible.
    pub rate_pps: Option<f64>,
    pub duration: Duration,
    /// Streams (UDP source ports) the frames rotate over.
    pub streams: u32,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct GenReport {
    pub sent: u64,
    /// Frames the socket refused (the generator's own limit, not the DUT's).
    pub refused: u64,
    pub elapsed_s: f64,
    pub achieved_pps: f64,
}

/// Sends test frames as `spec` says; blocks until done.
pub fn generate(spec: &GenSpec) -> io::Result<GenReport> {
    let port = open_in(spec.netns.as_deref(), &spec.ifname, 64)?;
    const BATCH: usize = 32;
    let streams = spec.streams.max(1);
    let mut frames: Vec<Template> = (0..BATCH).map(|_| spec.template.clone()).collect();
    let t0 = Instant::now();
    let end = t0 + spec.duration;
    let (mut sent, mut refused, mut seq) = (0u64, 0u64, 0u64);
    let per_batch = spec
        .rate_pps
        .map(|r| Duration::from_secs_f64(BATCH as f64 / r.max(1.0)));
    let mut next = t0;
    // Sleep rather than spin while pacing (the machine's other cores are
    // busy with the switch and the receiver); a 1 ns timer slack keeps the
    // sleeps close to what is asked.
    // SAFETY: prctl with plain integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    while Instant::now() < end {
        if let Some(step) = per_batch {
            let now = Instant::now();
            if now < next {
                let wait = next - now;
                if wait > Duration::from_micros(30) {
                    std::thread::sleep(wait - Duration::from_micros(20));
                }
                while Instant::now() < next {
                    std::hint::spin_loop();
                }
            }
            next += step;
        }
        let ts = now_ns();
        for f in frames.iter_mut() {
            f.stamp(seq, ts);
            let stream = (seq % streams as u64) as u16;
            f.bytes[34..36].copy_from_slice(&(10000 + stream).to_be_bytes());
            seq += 1;
        }
        let batch: Vec<(&[u8], VnetHdr)> = frames.iter().map(|f| (&f.bytes[..], VnetHdr::default())).collect();
        let n = port.send(&batch) as u64;
        sent += n;
        refused += BATCH as u64 - n;
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    Ok(GenReport {
        sent,
        refused,
        elapsed_s,
        achieved_pps: sent as f64 / elapsed_s,
    })
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RecvReport {
    /// Test frames received (duplicates included).
    pub received: u64,
    pub duplicates: u64,
    /// Frames that arrived after one with a higher sequence number.
    pub reordered: u64,
    /// Other frames seen (ARP, IPv6 router solicitations...).
    pub other: u64,
    /// Frames the receiver's own ring lost: a trial with any is invalid
    /// (the loss is the measuring side's, not the switch's).
    pub receiver_drops: u64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_max: f64,
}

/// A receiver running on its own thread until `stop`.
pub struct Receiver {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<RecvReport>,
}

impl Receiver {
    /// Starts counting test frames arriving on `ifname` (in `netns`).
    pub fn start(netns: Option<&str>, ifname: &str) -> io::Result<Receiver> {
        let (ns, name) = (netns.map(str::to_string), ifname.to_string());
        let mut ring = std::thread::spawn(move || {
            if let Some(ns) = &ns {
                enter_netns(ns)?;
            }
            crate::ring::RxRingV3::open(&name, 128, 2)
        })
        .join()
        .map_err(|_| io::Error::other("socket thread panicked"))??;
        let _ = ring.take_drops();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut r = RecvReport::default();
            let mut seen: Vec<u64> = Vec::new();
            let mut highest: Option<u64> = None;
            let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            loop {
                let stopping = flag.load(Relaxed);
                let n = ring.poll(10, &mut |f, rx_ns| match signature(f) {
                    Some((_, seq, sent)) => {
                        r.received += 1;
                        let (w, b) = ((seq / 64) as usize, seq % 64);
                        if w >= seen.len() {
                            seen.resize(w + 1, 0);
                        }
                        if seen[w] & (1 << b) != 0 {
                            r.duplicates += 1;
                        }
                        seen[w] |= 1 << b;
                        if highest.is_some_and(|h| seq < h) {
                            r.reordered += 1;
                        }
                        highest = Some(highest.map_or(seq, |h| h.max(seq)));
                        let lat_us = rx_ns.saturating_sub(sent) / 1000;
                        let _ = hist.record(lat_us.max(1));
                    }
                    None => r.other += 1,
                });
                if n == 0 && stopping {
                    break;
                }
            }
            r.receiver_drops = ring.take_drops();
            if !hist.is_empty() {
                r.latency_us_p50 = hist.value_at_quantile(0.5) as f64;
                r.latency_us_p99 = hist.value_at_quantile(0.99) as f64;
                r.latency_us_max = hist.max() as f64;
            }
            r
        });
        Ok(Receiver { stop, thread })
    }

    /// Stops after what is in flight has drained; the counts.
    pub fn finish(self, drain: Duration) -> RecvReport {
        std::thread::sleep(drain);
        self.stop.store(true, Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
