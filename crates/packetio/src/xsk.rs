//! One AF_XDP socket bound to one receive queue, with its own UMEM: half
//! of the UMEM's chunks wait in the fill ring for received frames, the other
//! half are a free list for frames to send. Copy mode (what veth and most
//! drivers without zero-copy support give).
//!
//! The four rings are the kernel's single-producer single-consumer rings
//! mapped into our memory: the producer index is published with a release
//! store after the descriptors are written, and read with an acquire load
//! before they are read (the same protocol as libxdp's xsk.h).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

const AF_XDP: libc::c_int = 44;
const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;
const XDP_COPY: u16 = 1 << 1;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
const XDP_RING_NEED_WAKEUP: u32 = 1;
const PGOFF_RX: i64 = 0;
const PGOFF_TX: i64 = 0x8000_0000;
const PGOFF_FILL: i64 = 0x1_0000_0000;
const PGOFF_COMPLETION: i64 = 0x1_8000_0000;
/// Room the kernel keeps in front of a received frame in its chunk.
pub const XDP_PACKET_HEADROOM: u32 = 256;

/// Sizes of one socket.
#[derive(Clone, Copy, Debug)]
pub struct XskConfig {
    /// UMEM chunks (a power of two): half receive, half send.
    pub frames: u32,
    /// Bytes per chunk: 2048 or 4096.
    pub frame_size: u32,
}

impl Default for XskConfig {
    fn default() -> XskConfig {
        XskConfig {
            frames: 8192,
            frame_size: 2048,
        }
    }
}

impl XskConfig {
    /// The longest frame a chunk holds after the kernel's headroom.
    pub fn max_frame(&self) -> u32 {
        self.frame_size - XDP_PACKET_HEADROOM
    }
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RingOffsets {
    producer: u64,
    consumer: u64,
    desc: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct MmapOffsets {
    rx: RingOffsets,
    tx: RingOffsets,
    fill: RingOffsets,
    completion: RingOffsets,
}

#[repr(C)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    options: u32,
}

/// The counters the kernel keeps per socket (cumulative).
#[repr(C)]
#[derive(Default, Clone, Copy, Debug)]
pub struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// One mapped ring; `T` is its descriptor (u64 addresses for the fill and
/// completion rings, `Desc` for receive and send).
struct Ring<T> {
    map: *mut u8,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    descs: *mut T,
    size: u32,
    /// Our copy of the index we advance (producer for fill/send, consumer
    /// for completion/receive) and the last seen value of the other one.
    local: u32,
    remote: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, off: &RingOffsets, size: u32, pgoff: i64, what: &str) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: maps the ring the kernel set up for this socket, of its size.
        // The rings' offsets (0x180000000 for the completion ring) pass
        // 32 bits: 32-bit glibc targets need mmap64 (musl's off_t is
        // 64-bit everywhere).
        #[cfg(not(all(target_env = "gnu", target_pointer_width = "32")))]
        use libc::mmap;
        #[cfg(all(target_env = "gnu", target_pointer_width = "32"))]
        use libc::mmap64 as mmap;
        let map = unsafe {
            mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as _,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::other(format!(
                "mapping the AF_XDP {what} ring: {}",
                io::Error::last_os_error()
            )));
        }
        let map = map as *mut u8;
        // SAFETY: the offsets come from the kernel and lie inside the mapping.
        unsafe {
            Ok(Ring {
                map,
                map_len,
                producer: map.add(off.producer as usize) as *const AtomicU32,
                consumer: map.add(off.consumer as usize) as *const AtomicU32,
                flags: map.add(off.flags as usize) as *const AtomicU32,
                descs: map.add(off.desc as usize) as *mut T,
                size,
                local: 0,
                remote: 0,
            })
        }
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into our live mapping.
        unsafe { &*self.producer }
    }
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }
    fn needs_wakeup(&self) -> bool {
        // SAFETY: as above.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    // As producer (fill, send).
    fn free_slots(&mut self) -> u32 {
        let free = self.size - self.local.wrapping_sub(self.remote);
        if free > 0 {
            return free;
        }
        self.remote = self.consumer().load(Ordering::Acquire);
        self.size - self.local.wrapping_sub(self.remote)
    }
    fn refresh(&mut self) {
        self.remote = self.consumer().load(Ordering::Acquire);
    }
    fn push(&mut self, d: T) {
        // SAFETY: the index is masked into the ring; the caller checked
        // free_slots, so the kernel is not reading this slot.
        unsafe { self.descs.add((self.local & (self.size - 1)) as usize).write(d) };
        self.local = self.local.wrapping_add(1);
    }
    fn publish(&self) {
        self.producer().store(self.local, Ordering::Release);
    }

    // As consumer (receive, completion).
    fn ready(&mut self) -> u32 {
        self.remote = self.producer().load(Ordering::Acquire);
        self.remote.wrapping_sub(self.local)
    }
    fn peek(&self, i: u32) -> T {
        // SAFETY: i < ready(), so the kernel has written this slot and
        // will not touch it until we release it.
        unsafe {
            self.descs
                .add((self.local.wrapping_add(i) & (self.size - 1)) as usize)
                .read()
        }
    }
    fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        self.consumer().store(self.local, Ordering::Release);
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        if !self.map.is_null() {
            // SAFETY: unmaps our own mapping once.
            unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
        }
    }
}

/// An AF_XDP socket and its UMEM. Receiving and sending have a lock each,
/// so one thread can receive while another sends.
pub struct Xsk {
    fd: OwnedFd,
    umem: *mut u8,
    umem_len: usize,
    config: XskConfig,
    rx: Mutex<RxSide>,
    tx: Mutex<TxSide>,
}

struct RxSide {
    rx: Ring<Desc>,
    fill: Ring<u64>,
}

struct TxSide {
    tx: Ring<Desc>,
    completion: Ring<u64>,
    free: Vec<u64>,
}

// SAFETY: the raw pointers are into mappings owned by this value; the
// rings are only touched under their side's lock, and the UMEM chunks are
// owned by exactly one side (receive chunks by RxSide, send chunks by
// TxSide) or by the kernel.
unsafe impl Send for Xsk {}
unsafe impl Sync for Xsk {}
unsafe impl Send for RxSide {}
unsafe impl Send for TxSide {}

fn check(r: libc::c_int, what: &str) -> io::Result<()> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

fn setopt<T>(fd: RawFd, opt: libc::c_int, v: &T, what: &str) -> io::Result<()> {
    // SAFETY: passes a pointer to a live value of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            SOL_XDP,
            opt,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    check(r, what)
}

fn getopt<T: Default>(fd: RawFd, opt: libc::c_int, what: &str) -> io::Result<T> {
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `v`.
    let r = unsafe { libc::getsockopt(fd, SOL_XDP, opt, &mut v as *mut T as *mut libc::c_void, &mut len) };
    check(r, what)?;
    Ok(v)
}

impl Xsk {
    /// Opens a socket on receive queue `queue` of interface `ifindex` in
    /// copy mode. Frames reach it only once its descriptor is in the
    /// interface's XSKMAP (`XdpRedirect::add_socket`).
    pub fn open(ifindex: u32, queue: u32, config: XskConfig) -> io::Result<Xsk> {
        if !config.frames.is_power_of_two() || config.frames < 64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "AF_XDP frames must be a power of two, at least 64",
            ));
        }
        if config.frame_size != 2048 && config.frame_size != 4096 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "AF_XDP frame size must be 2048 or 4096",
            ));
        }
        // SAFETY: plain syscall, result checked.
        let raw = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        check(
            raw,
            "AF_XDP socket (needs root or CAP_NET_RAW, and a kernel with AF_XDP)",
        )?;
        // SAFETY: a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = config.frames as usize * config.frame_size as usize;
        // SAFETY: anonymous private mapping, result checked.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if umem == libc::MAP_FAILED {
            return Err(io::Error::other(format!(
                "allocating the UMEM ({umem_len} bytes): {}",
                io::Error::last_os_error()
            )));
        }
        let umem = umem as *mut u8;
        // From here the UMEM is unmapped by Drop if anything fails.
        let ring = config.frames / 2;
        let mut rx = RxSide {
            rx: Ring::empty(),
            fill: Ring::empty(),
        };
        let mut tx = TxSide {
            tx: Ring::empty(),
            completion: Ring::empty(),
            free: Vec::with_capacity(ring as usize),
        };
        let unmap = UmemGuard(umem, umem_len);
        let raw = fd.as_raw_fd();
        let reg = UmemReg {
            addr: umem as u64,
            len: umem_len as u64,
            chunk_size: config.frame_size,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setopt(raw, XDP_UMEM_REG, &reg, "registering the UMEM")?;
        setopt(raw, XDP_UMEM_FILL_RING, &ring, "sizing the fill ring")?;
        setopt(raw, XDP_UMEM_COMPLETION_RING, &ring, "sizing the completion ring")?;
        setopt(raw, XDP_RX_RING, &ring, "sizing the receive ring")?;
        setopt(raw, XDP_TX_RING, &ring, "sizing the send ring")?;
        let off: MmapOffsets = getopt(raw, XDP_MMAP_OFFSETS, "reading the ring offsets")?;
        rx.fill = Ring::map(raw, &off.fill, ring, PGOFF_FILL, "fill")?;
        tx.completion = Ring::map(raw, &off.completion, ring, PGOFF_COMPLETION, "completion")?;
        rx.rx = Ring::map(raw, &off.rx, ring, PGOFF_RX, "receive")?;
        tx.tx = Ring::map(raw, &off.tx, ring, PGOFF_TX, "send")?;
        // Chunks 0..ring receive, ring..frames send.
        for i in 0..ring {
            rx.fill.push(i as u64 * config.frame_size as u64);
        }
        rx.fill.publish();
        tx.free
            .extend((ring..config.frames).map(|i| i as u64 * config.frame_size as u64));
        let sa = SockaddrXdp {
            family: AF_XDP as u16,
            flags: XDP_COPY | XDP_USE_NEED_WAKEUP,
            ifindex,
            queue_id: queue,
            shared_umem_fd: 0,
        };
        // SAFETY: passes a valid sockaddr_xdp of the stated size.
        let r = unsafe {
            libc::bind(
                raw,
                &sa as *const SockaddrXdp as *const libc::sockaddr,
                std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
            )
        };
        check(r, &format!("binding the AF_XDP socket to queue {queue}"))?;
        // Kernel 6.17+: let one send call pass the whole ring to the driver
        // instead of 32 frames; older kernels refuse the option, which is fine.
        let _ = setopt(raw, XDP_MAX_TX_SKB_BUDGET, &ring, "tx budget");
        std::mem::forget(unmap);
        Ok(Xsk {
            fd,
            umem,
            umem_len,
            config,
            rx: Mutex::new(rx),
            tx: Mutex::new(tx),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn config(&self) -> XskConfig {
        self.config
    }

    /// Hands up to `max` received frames to `f` (which may rewrite them in
    /// place), then gives their chunks back to the kernel; the count.
    pub fn recv(&self, max: u32, f: &mut dyn FnMut(&mut [u8])) -> u32 {
        self.recv_with(max, &mut |frame, _| f(frame))
    }

    /// As `recv`, with the 8 bytes of metadata before each frame as a
    /// native-endian u64 (what a program with the receive-time prologue
    /// put there: see `XdpInterface::open_stamped`).
    pub fn recv_stamped(&self, max: u32, f: &mut dyn FnMut(&mut [u8], u64)) -> u32 {
        self.recv_with(max, f)
    }

    fn recv_with(&self, max: u32, f: &mut dyn FnMut(&mut [u8], u64)) -> u32 {
        let mut side = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        let RxSide { rx, fill } = &mut *side;
        let n = rx.ready().min(max);
        if n == 0 {
            self.wake_fill(fill);
            return 0;
        }
        let mask = !(self.config.frame_size as u64 - 1);
        // The fill ring has room for every chunk we hold, since together
        // they are the receive half of the UMEM; the kernel's index is
        // read afresh so our cached one does not say otherwise.
        fill.refresh();
        for i in 0..n {
            let d = rx.peek(i);
            let (addr, len) = (d.addr as usize, d.len as usize);
            let chunk = (d.addr & mask) as usize;
            if addr + len <= self.umem_len && addr >= chunk + crate::bpf::RECEIVE_TIME_META {
                // SAFETY: the frame and the metadata before it lie inside
                // the chunk, which is ours until it goes back on the fill
                // ring below.
                let (frame, meta) = unsafe {
                    let at = self.umem.add(addr);
                    (
                        std::slice::from_raw_parts_mut(at, len),
                        std::ptr::read_unaligned(at.sub(crate::bpf::RECEIVE_TIME_META) as *const u64),
                    )
                };
                f(frame, meta);
            }
            fill.push(chunk as u64);
        }
        rx.release(n);
        fill.publish();
        self.wake_fill(fill);
        n
    }

    /// With need-wakeup, the kernel asks to be told when the fill ring
    /// has chunks again (a zero-length receive does it).
    fn wake_fill(&self, fill: &Ring<u64>) {
        if fill.needs_wakeup() {
            // SAFETY: a non-blocking zero-length receive on our socket.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
    }

    /// Chunks whose frames the kernel has sent go back on the free list.
    fn reclaim(side: &mut TxSide) {
        let n = side.completion.ready();
        for i in 0..n {
            let a = side.completion.peek(i);
            side.free.push(a);
        }
        if n > 0 {
            side.completion.release(n);
        }
    }

    /// Copies frames into free chunks, queues them and has the kernel send
    /// them; how many were queued (the rest found no room and are dropped).
    /// Frames longer than a chunk are not queued.
    pub fn send<'a>(&self, frames: impl Iterator<Item = &'a [u8]>) -> u32 {
        let mut guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let side = &mut *guard;
        Xsk::reclaim(side);
        let mut queued = 0;
        for data in frames {
            if data.len() > self.config.frame_size as usize {
                continue;
            }
            if side.free.is_empty() || side.tx.free_slots() == 0 {
                self.kick(side);
                Xsk::reclaim(side);
                if side.free.is_empty() || side.tx.free_slots() == 0 {
                    break;
                }
            }
            let addr = side.free.pop().expect("checked above");
            // SAFETY: the chunk is ours (off the free list) and the frame
            // fits it (checked above).
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), self.umem.add(addr as usize), data.len());
            }
            side.tx.push(Desc {
                addr,
                len: data.len() as u32,
                options: 0,
            });
            queued += 1;
        }
        if queued > 0 {
            self.kick(side);
        }
        queued
    }

    /// In copy mode frames leave only from inside a send call, a budget at
    /// a time: call until the kernel has taken the whole ring.
    fn kick(&self, side: &mut TxSide) {
        side.tx.publish();
        for _ in 0..64 {
            // SAFETY: a non-blocking zero-length send on our socket.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if r >= 0 {
                // Done when the kernel consumed everything we queued.
                if side.tx.consumer().load(Ordering::Acquire) == side.tx.local {
                    return;
                }
                continue;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => continue,
                // Link down and the like: frames stay queued until it is up.
                _ => return,
            }
        }
    }

    /// The kernel's cumulative counters for this socket.
    pub fn stats(&self) -> XskStats {
        let mut v = XskStats::default();
        let mut len = std::mem::size_of::<XskStats>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `v`.
        unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_XDP,
                XDP_STATISTICS,
                &mut v as *mut XskStats as *mut libc::c_void,
                &mut len,
            )
        };
        v
    }
}

impl<T> Ring<T> {
    /// A ring not mapped yet (fields set by `map`).
    fn empty() -> Ring<T> {
        Ring {
            map: std::ptr::null_mut(),
            map_len: 0,
            producer: std::ptr::null(),
            consumer: std::ptr::null(),
            flags: std::ptr::null(),
            descs: std::ptr::null_mut(),
            size: 0,
            local: 0,
            remote: 0,
        }
    }
}

/// Unmaps the UMEM if opening fails half way.
struct UmemGuard(*mut u8, usize);

impl Drop for UmemGuard {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made just before, once.
        unsafe { libc::munmap(self.0 as *mut libc::c_void, self.1) };
    }
}

impl Drop for Xsk {
    fn drop(&mut self) {
        // The rings unmap themselves. Unmapping the UMEM before the socket
        // closes is safe: the kernel pinned its pages at registration and
        // keeps them until the socket is released.
        // SAFETY: unmaps our own mapping once.
        unsafe { libc::munmap(self.umem as *mut libc::c_void, self.umem_len) };
    }
}
