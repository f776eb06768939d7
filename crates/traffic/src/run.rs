//! A generator and a receiver of test frames on AF_PACKET sockets that live
//! in a network namespace (the thread joins the namespace, opens the
//! socket, and the socket stays there).

use crate::frame::{signature, Template};
use packetio::port::{AfPacketPort, PortIo, GSO_SLOT, MTU_SLOT};
use packetio::vnet::VnetHdr;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
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

/// Pins the calling thread to `core`.
pub fn pin_thread(core: usize) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(core)
        .map_err(|e| io::Error::other(format!("core {core}: {e}")))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| io::Error::other(format!("pinning to core {core}: {e}")))
}

/// Pins every thread of process `pid` (and those it starts later) to `core`.
pub fn pin_process(pid: u32, core: usize) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(core)
        .map_err(|e| io::Error::other(format!("core {core}: {e}")))?;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let tid: i32 = task?.file_name().to_string_lossy().parse().unwrap_or(0);
        if tid > 0 {
            // A thread that has just exited is no matter.
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid), &set);
        }
    }
    Ok(())
}

/// Opens `ifname`, in namespace `netns` if given, with a ring of `slots`
/// slots that hold frames of `frame_len` bytes.
fn open_in(netns: Option<&str>, ifname: &str, slots: usize, frame_len: usize) -> io::Result<AfPacketPort> {
    // (Ring slots hold a frame with its headers; jumbo frames need the large slots.)
    let slot = if frame_len + 128 <= MTU_SLOT {
        MTU_SLOT
    } else {
        GSO_SLOT
    };
    let ifname = ifname.to_string();
    nsexec::on_thread(netns, move || AfPacketPort::open_with(&ifname, slots, slot))
}

/// What a generator sends. It serialises (the generator may run on a
/// worker's machine), its progress probe left out.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct GenSpec {
    pub netns: Option<String>,
    pub ifname: String,
    pub template: Template,
    /// Frames per second; None: as fast as possible.
    pub rate_pps: Option<f64>,
    pub duration: Duration,
    /// Streams (UDP source ports) the frames rotate over.
    pub streams: u32,
    pub method: GenMethod,
    /// The core the generator runs on (None: wherever the scheduler likes).
    pub core: Option<usize>,
    /// Sends exactly this many frames back to back, as fast as it can
    /// (RFC 2544's back-to-back burst); `rate_pps` and `duration` are
    /// then ignored.
    pub burst: Option<u64>,
    /// A second phase after `duration`: (its length, its rate), the
    /// sequence numbers running on (RFC 2544's system recovery).
    pub then: Option<(Duration, f64)>,
    /// Where the generator tells its progress while it runs (see `SeqProbe`).
    #[serde(skip)]
    pub seq_probe: Option<Arc<SeqProbe>>,
}

/// A running generator's progress, read from another thread: the next
/// sequence number it will send. A frame numbered at or above what a
/// reading returns left after the reading, which is how a test knows which
/// frames were sent after an event (a BARRIER_REPLY, say).
#[derive(Debug, Default)]
pub struct SeqProbe {
    xdp: std::sync::Mutex<Option<packetio::live::SeqReader>>,
    /// The AF_PACKET generator's count of frames handed to the kernel.
    handed: AtomicU64,
}

impl SeqProbe {
    /// The next sequence number the generator sends (0 before it starts).
    pub fn next_seq(&self) -> u64 {
        let xdp = self.xdp.lock().unwrap_or_else(|e| e.into_inner());
        match xdp.as_ref() {
            Some(reader) => reader.next_seq().unwrap_or(0),
            None => self.handed.load(Relaxed),
        }
    }
}

impl GenSpec {
    /// `duration` at `rate_pps` (None: flat out) from `ifname` in `netns`.
    pub fn new(
        netns: Option<String>,
        ifname: String,
        template: Template,
        rate_pps: Option<f64>,
        duration: Duration,
    ) -> GenSpec {
        GenSpec {
            netns,
            ifname,
            template,
            rate_pps,
            duration,
            streams: 1,
            method: GenMethod::Xdp,
            core: None,
            burst: None,
            then: None,
            seq_probe: None,
        }
    }
}

/// How the generator puts frames on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenMethod {
    /// An XDP program in live-frame mode stamps and transmits each frame
    /// inside the kernel (`packetio::live`): no socket, no skb on the way out.
    /// On a veth the peer must have GRO on or an XDP program.
    Xdp,
    /// An AF_PACKET socket, batches through sendmmsg.
    AfPacket,
}

/// A generator's or receiver's method not known: what was given, and which.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; give xdp or afpacket")]
pub struct UnknownMethod {
    pub what: &'static str,
    pub given: String,
}

impl std::str::FromStr for GenMethod {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<GenMethod, UnknownMethod> {
        match s {
            "xdp" => Ok(GenMethod::Xdp),
            "afpacket" => Ok(GenMethod::AfPacket),
            _ => Err(UnknownMethod {
                what: "generator",
                given: s.to_string(),
            }),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct GenReport {
    pub sent: u64,
    /// Frames the socket refused (the generator's own limit, not the DUT's).
    pub refused: u64,
    pub elapsed_s: f64,
    pub achieved_pps: f64,
    /// With a second phase: when it began (CLOCK_REALTIME ns) and the
    /// first sequence number it sent.
    pub second_phase: Option<(u64, u64)>,
}

/// The longest frame the XDP generator sends: live XDP frames live in one
/// page with the kernel's headroom and tail; longer ones go by AF_PACKET.
pub const XDP_MAX_FRAME: usize = 3000;

/// Sends test frames as `spec` says; blocks until done.
pub fn generate(spec: &GenSpec) -> io::Result<GenReport> {
    let method = if spec.template.bytes.len() > XDP_MAX_FRAME {
        GenMethod::AfPacket
    } else {
        spec.method
    };
    match (method, spec.core) {
        (GenMethod::Xdp, _) => generate_xdp(spec),
        (GenMethod::AfPacket, None) => generate_afpacket(spec),
        (GenMethod::AfPacket, Some(core)) => {
            let spec = spec.clone();
            std::thread::spawn(move || {
                pin_thread(core)?;
                generate_afpacket(&spec)
            })
            .join()
            .map_err(|_| io::Error::other("generator thread panicked"))?
        }
    }
}

/// Frames interface `ifname` has transmitted, as this thread's network
/// namespace counts them (/proc/thread-self/net/dev: sysfs would show the
/// namespace sysfs was mounted in).
fn tx_packets(ifname: &str) -> io::Result<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev")?;
    text.lines()
        .find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (name.trim() == ifname).then(|| rest.split_whitespace().nth(9)?.parse().ok())?
        })
        .ok_or_else(|| io::Error::other(format!("{ifname}: no transmit counter")))
}

/// Sleeps, then spins, until `until` (pacing: the sleep leaves the core to
/// others, the spin keeps the timing).
fn wait_until(until: Instant) {
    let now = Instant::now();
    if now < until {
        let wait = until - now;
        if wait > Duration::from_micros(30) {
            std::thread::sleep(wait - Duration::from_micros(20));
        }
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// Frames per kernel batch of the XDP generator (8: at 1 Mpps a frame
/// waits at most 7 µs for its batch; larger batches add little speed).
const XDP_BATCH: u32 = 8;

fn generate_xdp(spec: &GenSpec) -> io::Result<GenReport> {
    let spec = spec.clone();
    std::thread::spawn(move || {
        if let Some(ns) = &spec.netns {
            nsexec::enter(ns)?;
        }
        if let Some(c) = spec.core {
            pin_thread(c)?;
        }
        // The program keeps its schedule by running continually; at the
        // lowest priority, the kernel's own work on this core (the receiving
        // veth's softirq, which may move to ksoftirqd) and the receiver
        // thread preempt it at once instead of waiting for a time slice.
        // SAFETY: changes this thread's scheduling policy only.
        unsafe {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        }
        let ifindex = packetio::ifindex(&spec.ifname)?;
        let gen = packetio::live::LiveGenerator::new(ifindex, &spec.template.bytes, spec.streams.max(1), 0)?;
        if let Some(probe) = &spec.seq_probe {
            *probe.xdp.lock().unwrap_or_else(|e| e.into_inner()) = Some(gen.seq_reader()?);
        }
        let tx0 = tx_packets(&spec.ifname)?;
        let t0 = Instant::now();
        let mut second_phase = None;
        let elapsed_s = if let Some(n) = spec.burst {
            // One kernel call per chunk: the burst leaves back to back.
            let mut left = n;
            while left > 0 {
                let chunk = left.min(u32::MAX as u64) as u32;
                gen.send(chunk, 64)?;
                left -= chunk as u64;
            }
            t0.elapsed().as_secs_f64()
        } else {
            // Small kernel batches: a frame waits for the rest of its batch
            // before it leaves, and that wait would count as latency. The
            // rate is over the time spent sending, not the kernel call's
            // set-up before the first frame.
            let mut sending = gen.run_for(spec.duration, spec.rate_pps, XDP_BATCH)?;
            if let Some((length, rate)) = spec.then {
                second_phase = Some((now_ns(), gen.next_seq()?));
                sending += gen.run_for(length, Some(rate), XDP_BATCH)?;
            }
            sending.as_secs_f64().max(1e-9)
        };
        let stamped = gen.next_seq()?;
        // The interface's own count says what left: a veth whose peer
        // cannot take XDP frames drops them without an error.
        let sent = tx_packets(&spec.ifname)?.saturating_sub(tx0).min(stamped);
        if sent == 0 && stamped > 0 {
            return Err(io::Error::other(format!(
                "{}: took none of {stamped} XDP frames (on a veth, its peer needs GRO on or an XDP program; or use the afpacket generator)",
                spec.ifname
            )));
        }
        Ok(GenReport {
            sent,
            refused: stamped - sent,
            elapsed_s,
            achieved_pps: sent as f64 / elapsed_s,
            second_phase,
        })
    })
    .join()
    .map_err(|_| io::Error::other("generator thread panicked"))?
}

fn generate_afpacket(spec: &GenSpec) -> io::Result<GenReport> {
    let port = open_in(spec.netns.as_deref(), &spec.ifname, 64, spec.template.bytes.len())?;
    const BATCH: usize = 32;
    let streams = spec.streams.max(1);
    let mut frames: Vec<Template> = (0..BATCH).map(|_| spec.template.clone()).collect();
    let t0 = Instant::now();
    let (mut sent, mut refused, mut seq) = (0u64, 0u64, 0u64);
    // Sleep rather than spin while pacing (the machine's other cores are
    // busy with the switch and the receiver); a 1 ns timer slack keeps the
    // sleeps close to what is asked.
    // SAFETY: prctl with plain integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    let mut phases = vec![(spec.duration, spec.rate_pps)];
    if let Some((length, rate)) = spec.then {
        phases.push((length, Some(rate)));
    }
    let mut second_phase = None;
    for (i, (length, rate)) in phases.into_iter().enumerate() {
        if i == 1 {
            second_phase = Some((now_ns(), seq));
        }
        let start = Instant::now();
        let end = start + length;
        // Paced, a batch holds at most a millisecond's frames (a burst of
        // 32 at a low rate would queue behind itself and read as latency),
        // and the phase sends exactly rate x length frames.
        let batch = rate.map_or(BATCH, |r| ((r / 1000.0) as usize).clamp(1, BATCH));
        let quota = rate.map(|r| (r * length.as_secs_f64()).round() as u64);
        let per_batch = rate.map(|r| Duration::from_secs_f64(batch as f64 / r.max(1.0)));
        let mut next = start;
        let phase_start = seq;
        // A generator that cannot keep the pace stops on time all the same.
        let late = end + per_batch.unwrap_or_default();
        loop {
            let want = match (spec.burst, quota) {
                (Some(n), _) if seq >= n => break,
                (Some(n), _) => (n - seq).min(batch as u64) as usize,
                (None, Some(q)) if seq - phase_start >= q || Instant::now() >= late => break,
                (None, Some(q)) => (q - (seq - phase_start)).min(batch as u64) as usize,
                (None, None) if Instant::now() >= end => break,
                (None, None) => batch,
            };
            if let (Some(step), None) = (per_batch, spec.burst) {
                wait_until(next);
                next += step;
            }
            let ts = now_ns();
            for f in frames.iter_mut().take(want) {
                f.stamp(seq, ts);
                let stream = (seq % streams as u64) as u16;
                f.bytes[34..36].copy_from_slice(&(10000 + stream).to_be_bytes());
                seq += 1;
            }
            let batch: Vec<(&[u8], VnetHdr)> = frames
                .iter()
                .take(want)
                .map(|f| (&f.bytes[..], VnetHdr::default()))
                .collect();
            let n = port.send(&batch) as u64;
            if let Some(probe) = &spec.seq_probe {
                probe.handed.store(seq, Relaxed);
            }
            sent += n;
            refused += want as u64 - n;
        }
        if spec.burst.is_some() {
            break;
        }
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    Ok(GenReport {
        sent,
        refused,
        elapsed_s,
        achieved_pps: sent as f64 / elapsed_s,
        second_phase,
    })
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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
    /// Frames whose latency came out below zero once the clocks' offset
    /// was taken off (`RecvOptions::clock_ahead_ns`): the offset is known
    /// less well than the latency is long. Counted at 1 µs.
    #[serde(default)]
    pub early: u64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_p999: f64,
    pub latency_us_min: f64,
    pub latency_us_mean: f64,
    pub latency_us_max: f64,
    /// Kernel receive times of the first and the last test frame
    /// (CLOCK_REALTIME ns; 0 when none came).
    pub first_rx_ns: u64,
    pub last_rx_ns: u64,
    /// The earliest and the latest send time among the frames received.
    pub first_sent_ns: u64,
    pub last_sent_ns: u64,
    /// The first test frame received, its 802.1Q tag (which the kernel
    /// hands over apart) put back: what the switch really sent.
    pub sample: Option<Vec<u8>>,
    /// The latency distribution as (µs, cumulative fraction) at fixed quantiles.
    pub latency_cdf: Vec<(f64, f64)>,
    /// How frames were taken off the interface ("xdp", "afpacket", or
    /// "afpacket" with why XDP was not used).
    pub via: String,
    /// One bit per sequence number received.
    #[serde(skip)]
    seen: Vec<u64>,
    /// Per block of `SEQ_BLOCK` sequence numbers, the send time of the
    /// first frame of it received (0: none), to date the frames lost.
    #[serde(skip)]
    block_sent_ns: Vec<u64>,
}

/// Sequence numbers per entry of the send-time index (at 1 Mpps, 0.26 ms).
const SEQ_BLOCK: u64 = 256;

impl RecvReport {
    /// Which frames arrived (one bit per sequence number, in 64-bit
    /// words) and, per block of them, the first one's send time: the
    /// report's index, which its serde form leaves out (it grows with the
    /// trial), for a report that travels between machines in its own form.
    pub fn index(&self) -> (&[u64], &[u64]) {
        (&self.seen, &self.block_sent_ns)
    }

    /// Puts back an index taken by [`RecvReport::index`].
    pub fn set_index(&mut self, seen: Vec<u64>, block_sent_ns: Vec<u64>) {
        self.seen = seen;
        self.block_sent_ns = block_sent_ns;
    }

    /// Whether the frame numbered `seq` arrived.
    pub fn got(&self, seq: u64) -> bool {
        self.seen
            .get((seq / 64) as usize)
            .is_some_and(|w| w & (1 << (seq % 64)) != 0)
    }

    /// The highest sequence number below `end` that never arrived.
    pub fn last_missing_before(&self, end: u64) -> Option<u64> {
        if end == 0 {
            return None;
        }
        let mut w = ((end - 1) / 64) as usize;
        loop {
            let word = self.seen.get(w).copied().unwrap_or(0);
            let first = w as u64 * 64;
            let valid = if end - first >= 64 {
                u64::MAX
            } else {
                (1u64 << (end - first)) - 1
            };
            let missing = !word & valid;
            if missing != 0 {
                return Some(first + 63 - missing.leading_zeros() as u64);
            }
            if w == 0 {
                return None;
            }
            w -= 1;
        }
    }

    /// When the frame numbered `seq` was sent, from the nearest block of
    /// frames that arrived (to within `SEQ_BLOCK` frames).
    pub fn sent_ns_near(&self, seq: u64) -> Option<u64> {
        let b = (seq / SEQ_BLOCK) as usize;
        let after = self.block_sent_ns.iter().skip(b).find(|&&t| t != 0);
        let before = || {
            self.block_sent_ns[..b.min(self.block_sent_ns.len())]
                .iter()
                .rev()
                .find(|&&t| t != 0)
        };
        after.or_else(before).copied()
    }
}

/// What a receiver counted over one interval (see `RecvOptions::intervals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// The interval's number, from 0.
    pub index: u32,
    /// When it ended, CLOCK_REALTIME ns on the receiver's clock.
    pub end_ns: u64,
    /// Test frames received in it (duplicates included).
    pub frames: u64,
    /// The highest sequence number seen so far, plus one (0: none yet).
    pub next_seq: u64,
    /// One-way latency of its frames, µs (0 when none came).
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_max: f64,
}

/// How a receiver counts (`Receiver::start_with`).
#[derive(Clone, Debug, Default)]
pub struct RecvOptions {
    /// The core its thread is pinned to.
    pub core: Option<usize>,
    pub method: RecvMethod,
    /// Only frames of this stream count as test frames; others go to
    /// `other` (several receivers can then share an interface).
    pub stream: Option<u32>,
    /// How far the receiver's clock is ahead of the sender's, ns: taken
    /// off every latency (two machines; 0 on one).
    pub clock_ahead_ns: i64,
    /// Every so long, what the interval counted goes to the channel, as
    /// it is counted.
    pub intervals: Option<(Duration, std::sync::mpsc::Sender<Interval>)>,
}

/// A receiver running on its own thread until `stop`.
pub struct Receiver {
    stop: Arc<AtomicBool>,
    /// Test frames counted so far (updated after each batch).
    counted: Arc<AtomicU64>,
    /// (Taken by `finish_when_quiet`.)
    thread: Option<std::thread::JoinHandle<RecvReport>>,
}

impl Drop for Receiver {
    /// A receiver dropped unfinished stops counting (its thread ends at
    /// its next look at the flag).
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// How the receiver takes frames off its interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecvMethod {
    /// An XDP program (native mode) hands each frame to an AF_XDP socket:
    /// no socket buffer, no stack. Frames whose 802.1Q tag the driver
    /// holds beside them, or too long for a UMEM chunk, go on to the
    /// stack, where an AF_PACKET ring on the same interface counts them.
    Xdp,
    /// An AF_PACKET ring (TPACKET_V3) only: every frame is built into a
    /// socket buffer and passes the stack's receive path.
    #[default]
    AfPacket,
}

impl std::str::FromStr for RecvMethod {
    type Err = UnknownMethod;
    fn from_str(s: &str) -> Result<RecvMethod, UnknownMethod> {
        match s {
            "xdp" => Ok(RecvMethod::Xdp),
            "afpacket" => Ok(RecvMethod::AfPacket),
            _ => Err(UnknownMethod {
                what: "receiver",
                given: s.to_string(),
            }),
        }
    }
}

/// The receiver's sockets on one interface.
struct RxSockets {
    ring: packetio::ring::RxRingV3,
    xdp: Option<packetio::XdpInterface>,
    via: String,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, the clock XDP stamps with.
    realtime_offset: u64,
}

impl RxSockets {
    /// Opens them in the calling thread's namespace. XDP that the driver
    /// refuses in native mode, or that would lose 802.1Q tags, is not
    /// used: the ring alone counts, and `via` says why.
    fn open(ifname: &str, method: RecvMethod) -> io::Result<RxSockets> {
        let ring = packetio::ring::RxRingV3::open(ifname, 128, 2)?;
        let (xdp, via) = match method {
            RecvMethod::AfPacket => (None, "afpacket".to_string()),
            RecvMethod::Xdp => {
                let config = packetio::XskConfig {
                    frames: 8192,
                    frame_size: 2048,
                };
                match packetio::XdpInterface::open_stamped(ifname, packetio::XdpMode::Native, config, 64) {
                    Ok(x) => match x.vlan_outside_frame() {
                        Ok(()) => (Some(x), "xdp".to_string()),
                        Err(why) => (None, format!("afpacket (xdp would lose 802.1Q tags: {why})")),
                    },
                    Err(e) => (None, format!("afpacket (native xdp refused: {e})")),
                }
            }
        };
        Ok(RxSockets {
            ring,
            xdp,
            via,
            realtime_offset: packetio::live::realtime_offset(),
        })
    }

    /// Hands what has arrived to `f`, waiting up to `timeout_ms` if
    /// nothing has; the number of frames.
    fn poll(&mut self, timeout_ms: i32, f: &mut packetio::ring::OnFrame) -> usize {
        let Some(xdp) = &self.xdp else {
            return self.ring.poll(timeout_ms, f);
        };
        let offset = self.realtime_offset;
        for wait in [false, true] {
            let mut n = 0;
            for s in &xdp.sockets {
                // The XDP program stamped each frame on arrival, in the
                // kernel, as AF_PACKET does.
                n += s.recv_stamped(1024, &mut |frame, mono_ns| f(frame, mono_ns.wrapping_add(offset), None)) as usize;
            }
            n += self.ring.poll(0, f);
            if n > 0 && n < 1024 {
                // Let a batch gather (the socket's ring holds 4096): waking
                // for every few frames would take the shared core from the
                // generator.
                std::thread::sleep(Duration::from_micros(500));
            }
            if n > 0 || wait || timeout_ms == 0 {
                return n;
            }
            let mut fds: Vec<libc::pollfd> = xdp
                .sockets
                .iter()
                .map(|s| s.fd())
                .chain([self.ring.fd()])
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            // SAFETY: a valid array of pollfds of the given length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        }
        0
    }

    /// Frames lost on the measuring side: the ring's since the last call,
    /// and the AF_XDP sockets' (full receive ring, no free chunk).
    fn take_drops(&self) -> u64 {
        let xdp: u64 = self
            .xdp
            .iter()
            .flat_map(|x| &x.sockets)
            .map(|s| {
                let st = s.stats();
                st.rx_dropped + st.rx_ring_full
            })
            .sum();
        self.ring.take_drops() + xdp
    }
}

impl Receiver {
    /// Starts counting test frames arriving on `ifname` (in `netns`),
    /// through an AF_PACKET ring.
    pub fn start(netns: Option<&str>, ifname: &str) -> io::Result<Receiver> {
        Receiver::start_on(netns, ifname, None, RecvMethod::AfPacket)
    }

    /// As `start`, the receiving thread pinned to `core`, taking frames
    /// as `method` says.
    pub fn start_on(
        netns: Option<&str>,
        ifname: &str,
        core: Option<usize>,
        method: RecvMethod,
    ) -> io::Result<Receiver> {
        let opts = RecvOptions {
            core,
            method,
            ..RecvOptions::default()
        };
        Receiver::start_with(netns, ifname, opts)
    }

    /// Starts counting test frames arriving on `ifname` (in `netns`) as
    /// `opts` says.
    pub fn start_with(netns: Option<&str>, ifname: &str, opts: RecvOptions) -> io::Result<Receiver> {
        let (ns, name, method) = (netns.map(str::to_string), ifname.to_string(), opts.method);
        let mut ring = nsexec::on_thread(ns.as_deref(), move || RxSockets::open(&name, method))?;
        let _ = ring.take_drops();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let counted = Arc::new(AtomicU64::new(0));
        let counter = counted.clone();
        let thread = std::thread::spawn(move || {
            if let Some(c) = opts.core {
                let _ = pin_thread(c);
            }
            let mut r = RecvReport::default();
            let mut seen: Vec<u64> = Vec::new();
            let mut highest: Option<u64> = None;
            let new_hist = || hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
            let mut hist = new_hist();
            // The interval under way: its histogram, frames, number and end.
            let mut part = (
                new_hist(),
                0u64,
                0u32,
                opts.intervals.as_ref().map(|(d, _)| Instant::now() + *d),
            );
            loop {
                let stopping = flag.load(Relaxed);
                let n = ring.poll(10, &mut |f, rx_ns, vlan| match signature(f) {
                    Some((stream, seq, sent)) if opts.stream.is_none_or(|s| s == stream) => {
                        r.received += 1;
                        if r.first_rx_ns == 0 {
                            r.first_rx_ns = rx_ns;
                            r.first_sent_ns = sent;
                            let mut frame = f.to_vec();
                            if let Some(tci) = vlan {
                                frame.splice(12..12, [0x81, 0x00, (tci >> 8) as u8, tci as u8]);
                            }
                            r.sample = Some(frame);
                        }
                        r.last_rx_ns = rx_ns;
                        r.first_sent_ns = r.first_sent_ns.min(sent);
                        r.last_sent_ns = r.last_sent_ns.max(sent);
                        let blk = (seq / SEQ_BLOCK) as usize;
                        if blk >= r.block_sent_ns.len() {
                            r.block_sent_ns.resize(blk + 1, 0);
                        }
                        if r.block_sent_ns[blk] == 0 {
                            r.block_sent_ns[blk] = sent;
                        }
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
                        let lat_ns = rx_ns as i64 - opts.clock_ahead_ns - sent as i64;
                        if lat_ns < 0 {
                            r.early += 1;
                        }
                        let lat_us = (lat_ns.max(0) / 1000).max(1) as u64;
                        let _ = hist.record(lat_us);
                        let _ = part.0.record(lat_us);
                        part.1 += 1;
                    }
                    _ => r.other += 1,
                });
                if n > 0 {
                    counter.store(r.received, Relaxed);
                }
                let last = n == 0 && stopping;
                if let (Some((every, tx)), Some(end)) = (&opts.intervals, part.3) {
                    // The last interval, cut short, goes too if it counted
                    // anything: the intervals add up to the whole.
                    if Instant::now() >= end || (last && part.1 > 0) {
                        let h = &part.0;
                        let i = Interval {
                            index: part.2,
                            end_ns: now_ns(),
                            frames: part.1,
                            next_seq: highest.map_or(0, |h| h + 1),
                            latency_us_p50: h.value_at_quantile(0.5) as f64,
                            latency_us_p99: h.value_at_quantile(0.99) as f64,
                            latency_us_max: h.max() as f64,
                        };
                        // A listener gone is no reason to stop counting.
                        let _ = tx.send(i);
                        part = (new_hist(), 0, part.2 + 1, Some(end + *every));
                    }
                }
                if last {
                    break;
                }
            }
            r.receiver_drops = ring.take_drops();
            r.via = std::mem::take(&mut ring.via);
            r.seen = seen;
            if !hist.is_empty() {
                r.latency_us_p50 = hist.value_at_quantile(0.5) as f64;
                r.latency_us_p99 = hist.value_at_quantile(0.99) as f64;
                r.latency_us_max = hist.max() as f64;
                r.latency_us_p999 = hist.value_at_quantile(0.999) as f64;
                r.latency_us_min = hist.min() as f64;
                r.latency_us_mean = hist.mean();
                r.latency_cdf = [
                    0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0,
                ]
                .iter()
                .map(|&q| (hist.value_at_quantile(q) as f64, q))
                .collect();
            }
            r
        });
        Ok(Receiver {
            stop,
            counted,
            thread: Some(thread),
        })
    }

    /// Stops once no test frame has arrived for `quiet` (what was in
    /// flight has drained), or after `at_most` if frames keep coming.
    pub fn finish_when_quiet(mut self, quiet: Duration, at_most: Duration) -> RecvReport {
        let start = std::time::Instant::now();
        let mut last = (self.counted.load(Relaxed), start);
        while start.elapsed() < at_most {
            std::thread::sleep(Duration::from_millis(5));
            let now = self.counted.load(Relaxed);
            if now != last.0 {
                last = (now, std::time::Instant::now());
            } else if last.1.elapsed() >= quiet {
                break;
            }
        }
        self.stop.store(true, Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }
}
