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

use crate::bpf::{bpf, bpf_fd, insn, load_xdp, map_lookup, map_update, Attr, Insn, BPF_MAP_CREATE};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
const BPF_FUNC_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_FUNC_KTIME_GET_NS: i32 = 5;
const XDP_DROP: i32 = 1;
const XDP_TX: i32 = 3;
/// Where the stamps go in the frame.
pub const SEQ_AT: i16 = 46;
pub const TIME_AT: i16 = 52;
pub const SPORT_AT: i16 = 34;
/// The shortest frame the program stamps (up to the end of the time).
pub const MIN_FRAME: usize = 60;
/// UDP source port of stream 0.
pub const SPORT_BASE: i32 = 10_000;
/// Most runs the kernel does per batch in live mode.
pub const MAX_BATCH: u32 = 256;

/// The map's one value, as u64 words.
const W_SEQ: i16 = 0;
const W_OFFSET: i16 = 8;
const W_NEXT: i16 = 16;
const W_INTERVAL: i16 = 24;
const W_END: i16 = 32;
const W_SLACK: i16 = 40;
/// How long a paced run lasts; its clock starts at its first frame, so the
/// tens of milliseconds the kernel call takes to set up are not lost slots.
const W_DURATION: i16 = 48;
const VALUE_LEN: u32 = 56;

fn stamp_program(map_fd: RawFd, streams: u32) -> Vec<Insn> {
    const LDX_W: u8 = 0x61;
    const LDX_DW: u8 = 0x79;
    const STX_W: u8 = 0x63;
    const STX_H: u8 = 0x6b;
    const STX_DW: u8 = 0x7b;
    const MOV_X: u8 = 0xbf;
    const MOV_K: u8 = 0xb7;
    const ADD_K: u8 = 0x07;
    const ADD_X: u8 = 0x0f;
    const LSH_K: u8 = 0x67;
    const MOD_K: u8 = 0x97;
    const TO_BE: u8 = 0xdc; // BPF_ALU | BPF_END | BPF_TO_BE
    const JGT_X: u8 = 0x2d;
    const JGE_X: u8 = 0x3d;
    const JLT_X: u8 = 0xad;
    const JLE_X: u8 = 0xbd;
    const JEQ_K: u8 = 0x15;
    const JNE_K: u8 = 0x55;
    const LD_IMM64: u8 = 0x18;
    const CALL: u8 = 0x85;
    const EXIT: u8 = 0x95;
    const DROP: i16 = 52;
    let mut p = vec![
        insn(LDX_W, 2, 1, 0, 0),                       // 0: r2 = data
        insn(LDX_W, 3, 1, 4, 0),                       // 1: r3 = data_end
        insn(MOV_X, 6, 2, 0, 0),                       // 2: r6 = data
        insn(ADD_K, 2, 0, 0, MIN_FRAME as i32),        // 3: r2 += MIN_FRAME
        insn(JGT_X, 2, 3, 0, 0),                       // 4: too short: drop
        insn(MOV_K, 1, 0, 0, 0),                       // 5: key 0 on the stack
        insn(STX_W, 10, 1, -4, 0),                     // 6
        insn(MOV_X, 2, 10, 0, 0),                      // 7: r2 = &key
        insn(ADD_K, 2, 0, 0, -4),                      // 8
        insn(LD_IMM64, 1, 1, 0, map_fd),               // 9: r1 = &map
        insn(0, 0, 0, 0, 0),                           // 10
        insn(CALL, 0, 0, 0, BPF_FUNC_MAP_LOOKUP_ELEM), // 11: r0 = &value
        insn(JEQ_K, 0, 0, 0, 0),                       // 12: null: drop
        insn(MOV_X, 7, 0, 0, 0),                       // 13: r7 = value
        insn(CALL, 0, 0, 0, BPF_FUNC_KTIME_GET_NS),    // 14: r0 = now (monotonic)
        insn(MOV_X, 9, 0, 0, 0),                       // 15: r9 = now
        insn(LDX_DW, 1, 7, W_END, 0),                  // 16: not started (end 0): the run
        insn(JNE_K, 1, 0, 0, 0),                       // 17:   starts now (to 22)
        insn(LDX_DW, 1, 7, W_DURATION, 0),             // 18: end = now + duration
        insn(ADD_X, 1, 9, 0, 0),                       // 19
        insn(STX_DW, 7, 1, W_END, 0),                  // 20
        insn(STX_DW, 7, 9, W_NEXT, 0),                 // 21: next = now
        insn(LDX_DW, 1, 7, W_END, 0),                  // 22: past the end: drop
        insn(JGE_X, 9, 1, 0, 0),                       // 23
        insn(LDX_DW, 1, 7, W_INTERVAL, 0),             // 24: unpaced: send
        insn(JEQ_K, 1, 0, 0, 0),                       // 25 (to 34)
        insn(LDX_DW, 2, 7, W_NEXT, 0),                 // 26: before its time: drop
        insn(JLT_X, 9, 2, 0, 0),                       // 27
        insn(LDX_DW, 3, 7, W_SLACK, 0),                // 28: far behind (the thread was
        insn(ADD_X, 3, 2, 0, 0),                       // 29:   preempted): the missed slots
        insn(JLE_X, 9, 3, 1, 0),                       // 30:   are skipped, not sent in a burst
        insn(MOV_X, 2, 9, 0, 0),                       // 31: next = now
        insn(ADD_X, 2, 1, 0, 0),                       // 32: next += interval
        insn(STX_DW, 7, 2, W_NEXT, 0),                 // 33
        insn(LDX_DW, 8, 7, W_SEQ, 0),                  // 34: r8 = seq
        insn(MOV_X, 1, 8, 0, 0),                       // 35
        insn(ADD_K, 1, 0, 0, 1),                       // 36
        insn(STX_DW, 7, 1, W_SEQ, 0),                  // 37: seq + 1 back to the map
        insn(MOV_X, 1, 8, 0, 0),                       // 38: seq, 48 bits big-endian
        insn(LSH_K, 1, 0, 0, 16),                      // 39
        insn(TO_BE, 1, 0, 0, 64),                      // 40
        insn(STX_DW, 6, 1, SEQ_AT, 0),                 // 41: (its low 2 bytes are overwritten by the time)
        insn(MOD_K, 8, 0, 0, streams.max(1) as i32),   // 42: source port = base + seq % streams
        insn(ADD_K, 8, 0, 0, SPORT_BASE),              // 43
        insn(TO_BE, 8, 0, 0, 16),                      // 44
        insn(STX_H, 6, 8, SPORT_AT, 0),                // 45
        insn(LDX_DW, 1, 7, W_OFFSET, 0),               // 46: send time on CLOCK_REALTIME
        insn(ADD_X, 9, 1, 0, 0),                       // 47
        insn(TO_BE, 9, 0, 0, 64),                      // 48
        insn(STX_DW, 6, 9, TIME_AT, 0),                // 49
        insn(MOV_K, 0, 0, 0, XDP_TX),                  // 50
        insn(EXIT, 0, 0, 0, 0),                        // 51
        insn(MOV_K, 0, 0, 0, XDP_DROP),                // 52: drop
        insn(EXIT, 0, 0, 0, 0),                        // 53
    ];
    for (at, to) in [(4usize, DROP), (12, DROP), (17, 22), (23, DROP), (25, 34), (27, DROP)] {
        p[at].off = to - at as i16 - 1;
    }
    p
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

/// The stamping program and its map, ready to send a frame out of one
/// interface.
pub struct LiveGenerator {
    map: OwnedFd,
    prog: OwnedFd,
    frame: Vec<u8>,
    ifindex: u32,
}

/// Reads a running generator's next sequence number from elsewhere: every
/// frame numbered below it has been stamped, none above.
#[derive(Debug)]
pub struct SeqReader(OwnedFd);

impl SeqReader {
    pub fn next_seq(&self) -> io::Result<u64> {
        Ok(read_state(self.0.as_raw_fd())?[0])
    }
}

/// The generator's map value.
fn read_state(map: RawFd) -> io::Result<[u64; 7]> {
    let mut value = [0u64; 7];
    map_lookup(map, &0u32, &mut value, "reading the generator's state")?;
    Ok(value)
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
        let map = bpf_fd(
            BPF_MAP_CREATE,
            Attr::new()
                .u32(0, BPF_MAP_TYPE_ARRAY)
                .u32(4, 4)
                .u32(8, VALUE_LEN)
                .u32(12, 1),
            "creating the generator's map (needs root or CAP_BPF)",
        )?;
        let prog = load_xdp(&stamp_program(map.as_raw_fd(), streams), b"sdnlab_gen", None)?;
        let g = LiveGenerator {
            map,
            prog,
            frame: frame.to_vec(),
            ifindex,
        };
        g.set([first_seq, realtime_offset(), 0, 0, u64::MAX, 0, 0])?;
        Ok(g)
    }

    fn set(&self, value: [u64; 7]) -> io::Result<()> {
        map_update(self.map.as_raw_fd(), &0u32, &value, "setting the generator's sequence")
    }

    /// The next sequence number (= frames stamped so far, from the first).
    pub fn next_seq(&self) -> io::Result<u64> {
        Ok(self.read()?[0])
    }

    /// A reader of the sequence number for another thread, while this
    /// generator runs (its own handle on the program's map).
    pub fn seq_reader(&self) -> io::Result<SeqReader> {
        Ok(SeqReader(self.map.try_clone()?))
    }

    fn read(&self) -> io::Result<[u64; 7]> {
        read_state(self.map.as_raw_fd())
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
        bpf(
            BPF_PROG_TEST_RUN,
            Attr::new()
                .u32(0, self.prog.as_raw_fd() as u32)
                .u32(8, self.frame.len() as u32)
                .u64(16, self.frame.as_ptr() as u64)
                .u32(32, count)
                .u32(40, std::mem::size_of_val(&ctx) as u32)
                .u64(48, ctx.as_ptr() as u64)
                .u32(64, BPF_F_TEST_XDP_LIVE_FRAMES)
                .u32(72, batch.clamp(1, MAX_BATCH)),
            "running the generator (live XDP frames need kernel 5.18+)",
        )
        .map(drop)
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
        self.set([seq, realtime_offset(), 0, interval, 0, slack, duration_ns])?;
        // SAFETY: the id of the calling thread, which outlives the timer
        // (joined below).
        // Carried as an integer: pthread_t is a pointer on musl (not Send)
        // and an integer on glibc.
        let me = unsafe { libc::pthread_self() } as usize;
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let map = self.map.as_raw_fd();
        let timer = std::thread::spawn(move || {
            // Wait for the first frame to fix the end, then for the end.
            let give_up = Instant::now() + duration + Duration::from_secs(2);
            while !flag.load(Ordering::Acquire) && Instant::now() < give_up {
                let mut v = [0u64; 7];
                let end = map_lookup(map, &0u32, &mut v, "").map(|_| v[4]).unwrap_or(0);
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
        let end = self.read()?[4];
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
