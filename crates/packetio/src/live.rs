//! A traffic generator inside the kernel: an XDP program run in "live
//! frames" mode (BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, kernel
//! 5.18+) transmits a template frame out of an interface, `repeat` times a
//! call, with no socket, no skb and no copy from user space on the way.
//! Each run the program stamps the frame: a sequence number from a map,
//! the send time (CLOCK_MONOTONIC from `bpf_ktime_get_ns` plus an offset to
//! CLOCK_REALTIME, the clock receivers stamp frames with), and a UDP source
//! port rotating over the streams. It answers XDP_TX, which the kernel
//! turns into a transmit on the interface (`ndo_xdp_xmit`).
//!
//! On a veth the frame lands in the peer's receive queue, which takes it
//! only if the peer has NAPI: an XDP program attached, or GRO on
//! (`enable_gro`). The frame layout is the `traffic` crate's: sequence at
//! byte 46 (48 bits), time at 52 (64 bits), UDP source port at 34.

use crate::objects;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// Where the stamps go in the frame (`bpf/gen.bpf.c` has them too).
pub const SEQ_AT: i16 = 46;
pub const TIME_AT: i16 = 52;
pub const SPORT_AT: i16 = 34;
/// The shortest frame the program stamps (up to the end of the time).
pub const MIN_FRAME: usize = 60;
/// UDP source port of stream 0.
pub const SPORT_BASE: i32 = 10_000;
/// Most runs the kernel does per batch in live mode.
pub const MAX_BATCH: u32 = 256;

/// The generator's state, as `struct gen_state` of `bpf/gen.bpf.c`.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
#[repr(C)]
struct State {
    seq: u64,
    offset: u64,
    next: u64,
    interval: u64,
    end: u64,
    slack: u64,
    /// How long a paced run lasts; its clock starts at its first frame, so
    /// the tens of milliseconds the kernel call takes to set up are not
    /// lost slots.
    duration: u64,
}

impl State {
    fn to_bytes(self) -> [u8; 56] {
        let mut b = [0u8; 56];
        let words = [
            self.seq,
            self.offset,
            self.next,
            self.interval,
            self.end,
            self.slack,
            self.duration,
        ];
        for (chunk, w) in b.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8]) -> State {
        let w = |i: usize| u64::from_ne_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        State {
            seq: w(0),
            offset: w(1),
            next: w(2),
            interval: w(3),
            end: w(4),
            slack: w(5),
            duration: w(6),
        }
    }
}

/// The generator's state, as its map holds it now.
fn read_state(map: &MapHandle) -> io::Result<State> {
    map.lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(objects::error("reading the generator's state"))?
        .map(|v| State::from_bytes(&v))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the generator's state is gone"))
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds to add to CLOCK_MONOTONIC to get CLOCK_REALTIME.
pub fn realtime_offset() -> u64 {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: writes into a valid timespec.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let (m0, r, m1) = (
        read(libc::CLOCK_MONOTONIC),
        read(libc::CLOCK_REALTIME),
        read(libc::CLOCK_MONOTONIC),
    );
    r.wrapping_sub(m0 / 2 + m1 / 2)
}

/// The stamping program (`bpf/gen.bpf.c`) and its state, ready to send a
/// frame out of one interface.
pub struct LiveGenerator {
    state: MapHandle,
    obj: libbpf_rs::Object,
    frame: Vec<u8>,
    ifindex: u32,
}

/// Reads a running generator's next sequence number from elsewhere: every
/// frame numbered below it has been stamped, none above.
#[derive(Debug)]
pub struct SeqReader(MapHandle);

impl SeqReader {
    pub fn next_seq(&self) -> io::Result<u64> {
        Ok(read_state(&self.0)?.seq)
    }
}

impl LiveGenerator {
    /// A generator of `frame` (at least `MIN_FRAME` bytes, the `traffic`
    /// layout) out of interface `ifindex`, rotating over `streams` UDP
    /// source ports, sequence numbers from `first_seq`. The interface is
    /// looked up in the network namespace of the thread that calls `send`.
    pub fn new(ifindex: u32, frame: &[u8], streams: u32, first_seq: u64) -> io::Result<LiveGenerator> {
        if frame.len() < MIN_FRAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("frames shorter than {MIN_FRAME} bytes cannot be stamped"),
            ));
        }
        let mut open = objects::open(objects::GEN, "sdnlab_gen")?;
        objects::set_rodata(&mut open, objects::GEN, &[("streams", &streams.max(1).to_ne_bytes())])?;
        let obj = objects::load(open, "loading the generator (needs root or CAP_BPF)")?;
        let state = obj
            .maps()
            .find(|m| m.name() == "gen_state")
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no map gen_state in the generator"))
            .and_then(|m| MapHandle::try_from(&m).map_err(objects::error("holding the generator's map")))?;
        let g = LiveGenerator {
            state,
            obj,
            frame: frame.to_vec(),
            ifindex,
        };
        g.set(State {
            seq: first_seq,
            offset: realtime_offset(),
            end: u64::MAX,
            ..State::default()
        })?;
        Ok(g)
    }

    fn set(&self, s: State) -> io::Result<()> {
        self.state
            .update(&0u32.to_ne_bytes(), &s.to_bytes(), MapFlags::ANY)
            .map_err(objects::error("setting the generator's sequence"))
    }

    /// The next sequence number (= frames stamped so far, from the first).
    pub fn next_seq(&self) -> io::Result<u64> {
        Ok(read_state(&self.state)?.seq)
    }

    /// A reader of the sequence number for another thread, while this
    /// generator runs (its own handle on the program's map).
    pub fn seq_reader(&self) -> io::Result<SeqReader> {
        MapHandle::try_from(&self.state)
            .map(SeqReader)
            .map_err(objects::error("holding the generator's map"))
    }

    /// Sends `count` frames as fast as it can, `batch` (1..=256) at a
    /// time inside the kernel. Each call costs tens of milliseconds of set-up
    /// and tear-down in the kernel: for a timed or paced run, `run_for`.
    pub fn send(&self, count: u32, batch: u32) -> io::Result<()> {
        self.test_run(count, batch)
    }

    fn test_run(&self, count: u32, batch: u32) -> io::Result<()> {
        // struct xdp_md: data 0, data_end = frame length, ingress ifindex.
        let mut ctx = [0u32; 6];
        ctx[1] = self.frame.len() as u32;
        ctx[3] = self.ifindex;
        let mut opts = libbpf_sys::bpf_test_run_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
            data_in: self.frame.as_ptr().cast(),
            data_size_in: self.frame.len() as u32,
            ctx_in: ctx.as_ptr().cast(),
            ctx_size_in: std::mem::size_of_val(&ctx) as u32,
            repeat: count as i32,
            flags: BPF_F_TEST_XDP_LIVE_FRAMES,
            batch_size: batch.clamp(1, MAX_BATCH),
            ..Default::default()
        };
        let prog = objects::prog(&self.obj, "sdnlab_gen")?;
        // SAFETY: the frame and context outlive the call, and their sizes
        // are given; libbpf writes only into `opts`.
        let r = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_fd().as_raw_fd(), &mut opts) };
        if r < 0 {
            let e = io::Error::from_raw_os_error(-r);
            return Err(io::Error::new(
                e.kind(),
                format!("running the generator (live XDP frames need kernel 5.18+): {e}"),
            ));
        }
        Ok(())
    }

    /// Sends for `duration`, at `rate_pps` (None: as fast as it can), in
    /// one kernel call: the program itself keeps the schedule (a frame
    /// whose time has not come is dropped unsent and the next run asks
    /// again; slots missed while the thread was preempted are skipped, not
    /// caught up in a burst), and a signal ends the call when the time is up. Frames leave
    /// in kernel batches of `batch`; a frame waits at most for the rest of
    /// its batch, so keep it small where latency is measured.
    pub fn run_for(&self, duration: Duration, rate_pps: Option<f64>, batch: u32) -> io::Result<Duration> {
        install_wakeup_handler();
        let seq = self.next_seq()?;
        let interval = rate_pps
            .map_or(0, |r| (1e9 / r.max(1e-3)) as u64)
            .max(rate_pps.map_or(0, |_| 1));
        // Late by more than this, the missed frames are skipped (the
        // achieved rate says so) rather than sent back to back.
        let slack = (interval * 8).max(20_000);
        let duration_ns = duration.as_nanos() as u64;
        // End 0: the program starts the run's clock at its first frame.
        self.set(State {
            seq,
            offset: realtime_offset(),
            next: 0,
            interval,
            end: 0,
            slack,
            duration: duration_ns,
        })?;
        // SAFETY: the id of the calling thread, which outlives the timer
        // (joined below).
        // Carried as an integer: pthread_t is a pointer on musl (not Send)
        // and an integer on glibc.
        let me = unsafe { libc::pthread_self() } as usize;
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let map = self.seq_reader()?.0;
        let timer = std::thread::spawn(move || {
            // Wait for the first frame to fix the end, then for the end.
            let give_up = Instant::now() + duration + Duration::from_secs(2);
            while !flag.load(Ordering::Acquire) && Instant::now() < give_up {
                let end = read_state(&map).map(|s| s.end).unwrap_or(0);
                if end != 0 {
                    std::thread::sleep(Duration::from_nanos(end.saturating_sub(monotonic_ns())));
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            // Again until the call has returned: a signal that lands just
            // before the call starts would otherwise be lost.
            while !flag.load(Ordering::Acquire) {
                // SAFETY: the thread is alive until `done` is set and we are joined.
                unsafe { libc::pthread_kill(me as libc::pthread_t, wakeup_signal()) };
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let r = self.test_run(u32::MAX, batch);
        let returned = monotonic_ns();
        done.store(true, Ordering::Release);
        let _ = timer.join();
        let end = read_state(&self.state)?.end;
        // What was really spent sending: from the first frame to the end,
        // or to the call's return if it came first.
        let sending = if end == 0 {
            Duration::ZERO
        } else {
            Duration::from_nanos(returned.min(end).saturating_sub(end - duration_ns))
        };
        match r {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.kind() == io::ErrorKind::Interrupted => Ok(sending),
            Err(e) => Err(e),
            Ok(()) => Ok(sending),
        }
    }
}

/// The signal that ends a `run_for` call (a real-time one, nobody else's).
fn wakeup_signal() -> libc::c_int {
    libc::SIGRTMIN() + 7
}

extern "C" fn on_wakeup(_: libc::c_int) {}

/// A handler that does nothing, installed without SA_RESTART: the signal
/// only interrupts the kernel call.
fn install_wakeup_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: installs a handler that does nothing, for a signal only we send.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wakeup as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(wakeup_signal(), &sa, std::ptr::null_mut());
        }
    });
}

const ETHTOOL_SGRO: u32 = 0x2c;

/// Turns GRO on for `ifname` (in this thread's namespace): a veth then
/// receives through NAPI, which is what lets its peer transmit XDP frames
/// into it.
pub fn enable_gro(ifname: &str) -> io::Result<()> {
    set_gro(ifname, true)
}

/// Turns GRO on or off for `ifname` (in this thread's namespace).
pub fn set_gro(ifname: &str, on: bool) -> io::Result<()> {
    ethtool_set(
        ifname,
        ETHTOOL_SGRO,
        on,
        if on { "turning GRO on" } else { "turning GRO off" },
    )
}

const ETHTOOL_STXCSUM: u32 = 0x17;

/// Turns transmit checksum offload on or off for `ifname` (in this
/// thread's namespace). Off, the stack finishes every checksum itself, so a
/// frame handed to an OpenFlow controller and sent back out is valid.
pub fn set_tx_checksum(ifname: &str, on: bool) -> io::Result<()> {
    ethtool_set(ifname, ETHTOOL_STXCSUM, on, "setting transmit checksum offload")
}

/// One ethtool "set value" command, as `ethtool -K` sends it.
fn ethtool_set(ifname: &str, cmd: u32, on: bool, what: &str) -> io::Result<()> {
    let mut value = [cmd, on as u32];
    crate::ethtool_ioctl(ifname, &mut value, what)
}
