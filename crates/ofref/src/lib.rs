//! The reference pair (issue 25): the least any tool can do to load an
//! OpenFlow controller over loopback TCP, and the least a controller can do
//! to answer it, written in C for that purpose alone (`csrc/ofref.c`: one
//! epoll loop per thread, in-place parsing, no allocation or clock read per
//! message). sdnlab's load driver is held to the generator, and every
//! controller benchmark measures the driver's own ceiling against the
//! responder. This crate only wraps the C in safe Rust.

use std::net::{SocketAddr, SocketAddrV4, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[repr(C)]
struct CGenCfg {
    addr: u32,
    port: u16,
    version: u8,
    latency: u8,
    switches: u32,
    macs: u32,
    window: u32,
    ports: u32,
    first_dpid: u64,
    warmup: u32,
    loops: u32,
    loop_ms: u32,
    threads: u32,
}

extern "C" {
    fn ofref_generate(cfg: *const CGenCfg, counts: *mut u64, secs: *mut f64, established: *mut u32) -> i32;
    fn ofref_respond(listen_fd: i32, threads: u32, stop: *mut i32) -> i32;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the reference generator: {0}")]
    Generator(std::io::Error),
    #[error("the reference responder: {0}")]
    Responder(std::io::Error),
    #[error("the reference pair speaks OpenFlow 1.0 and 1.3 over IPv4 only; {0}")]
    Unsupported(String),
}

/// The reference generator's settings: cbench's load, sdnlab's shape
/// (the same frames, learning phase, window and handshake as the driver).
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub target: SocketAddr,
    /// 0x01 or 0x04.
    pub version: u8,
    /// One PACKET_IN outstanding per switch (cbench's latency mode).
    pub latency: bool,
    pub switches: u32,
    pub macs: u32,
    /// PACKET_INs outstanding per switch in throughput mode.
    pub window: u32,
    pub ports: u32,
    pub first_dpid: u64,
    pub warmup: u32,
    pub loops: u32,
    pub loop_ms: u32,
    /// Event loops (threads); the switches are dealt among them.
    pub threads: u32,
}

/// One measured loop.
#[derive(Clone, Debug)]
pub struct GenLoop {
    pub seconds: f64,
    /// FLOW_MODs and PACKET_OUTs each switch received in the loop.
    pub per_switch: Vec<u64>,
}

impl GenLoop {
    pub fn responses_per_s(&self) -> f64 {
        self.per_switch.iter().sum::<u64>() as f64 / self.seconds.max(1e-9)
    }
}

#[derive(Clone, Debug)]
pub struct GenReport {
    /// The measured loops (warm-up loops left out).
    pub loops: Vec<GenLoop>,
    /// Switches that finished their handshake.
    pub established: u32,
}

/// Runs the reference generator (blocking: it takes its own threads).
pub fn generate(cfg: &GenConfig) -> Result<GenReport, Error> {
    let SocketAddr::V4(a) = cfg.target else {
        return Err(Error::Unsupported(format!("{} is IPv6", cfg.target)));
    };
    if cfg.version != 0x01 && cfg.version != 0x04 {
        return Err(Error::Unsupported(format!("version {:#04x}", cfg.version)));
    }
    let c = CGenCfg {
        addr: u32::from(*a.ip()),
        port: a.port(),
        version: cfg.version,
        latency: u8::from(cfg.latency),
        switches: cfg.switches,
        macs: cfg.macs,
        window: cfg.window,
        ports: cfg.ports,
        first_dpid: cfg.first_dpid,
        warmup: cfg.warmup,
        loops: cfg.loops,
        loop_ms: cfg.loop_ms,
        threads: cfg.threads.max(1),
    };
    let total = (cfg.warmup + cfg.loops) as usize;
    let n = cfg.switches as usize;
    let mut counts = vec![0u64; total * n];
    let mut secs = vec![0f64; total];
    let mut established = 0u32;
    // SAFETY: the buffers hold (warmup + loops) x switches counts and
    // (warmup + loops) lengths, as ofref_generate writes them; `c` outlives
    // the call, which joins every thread it starts before returning.
    let r = unsafe { ofref_generate(&c, counts.as_mut_ptr(), secs.as_mut_ptr(), &mut established) };
    if r < 0 {
        return Err(Error::Generator(std::io::Error::from_raw_os_error(-r)));
    }
    let loops = (cfg.warmup as usize..total)
        .map(|l| GenLoop {
            seconds: secs[l],
            per_switch: counts[l * n..(l + 1) * n].to_vec(),
        })
        .collect();
    Ok(GenReport { loops, established })
}

/// The reference null responder, running on its own threads until dropped.
pub struct Responder {
    addr: SocketAddr,
    stop: Arc<AtomicI32>,
    thread: Option<JoinHandle<i32>>,
    _listener: TcpListener,
}

impl Responder {
    /// Listens on an ephemeral loopback port and answers with `threads` event loops.
    pub fn start(threads: u32) -> Result<Responder, Error> {
        Responder::start_on(SocketAddrV4::new([127, 0, 0, 1].into(), 0).into(), threads)
    }

    /// Listens on `addr` and answers with `threads` event loops.
    pub fn start_on(addr: SocketAddr, threads: u32) -> Result<Responder, Error> {
        let listener = TcpListener::bind(addr).map_err(Error::Responder)?;
        let addr = listener.local_addr().map_err(Error::Responder)?;
        let fd = listener.as_raw_fd();
        let stop = Arc::new(AtomicI32::new(0));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ofref-responder".into())
            // SAFETY: the listener stays open until this thread is joined
            // (Drop), and `stop` is an i32 the C side only reads.
            .spawn(move || unsafe { ofref_respond(fd, threads.max(1), s.as_ptr()) })
            .map_err(Error::Responder)?;
        Ok(Responder {
            addr,
            stop,
            thread: Some(thread),
            _listener: listener,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(1, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
