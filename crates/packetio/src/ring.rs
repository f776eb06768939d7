//! The receiver's AF_PACKET socket: a TPACKET_V3 ring. Frames land in
//! blocks that are handed over when full (or after a short timer), so a
//! busy receiver is woken once per block rather than once per frame, which
//! keeps the cost of measuring off the switch under test. Each frame
//! carries the kernel's receive time (CLOCK_REALTIME), so one-way latency
//! does not depend on when the receiver gets to run.

use std::io;
use std::os::fd::RawFd;

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const TPACKET_V3: libc::c_int = 2;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 0x10;

#[repr(C)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

const BLOCK: usize = 1 << 18;

/// What `poll` hands each frame to: (data, kernel receive time in ns,
/// the 802.1Q tag taken off).
pub type OnFrame<'a> = dyn FnMut(&[u8], u64, Option<u16>) + 'a;

pub struct RxRingV3 {
    fd: RawFd,
    map: *mut u8,
    blocks: usize,
    next: usize,
}

// SAFETY: the ring is used by one thread at a time (the receiver's).
unsafe impl Send for RxRingV3 {}

fn setopt<T>(fd: RawFd, opt: libc::c_int, v: &T, what: &str, ifname: &str) -> io::Result<()> {
    crate::port::setopt(fd, libc::SOL_PACKET, opt, v, what, ifname)
}

impl RxRingV3 {
    /// Opens `ifname` (in the calling thread's namespace) with `blocks`
    /// blocks of 256 KiB; `timer_ms` bounds how long a part-filled block
    /// waits.
    pub fn open(ifname: &str, blocks: usize, timer_ms: u32) -> io::Result<RxRingV3> {
        let cname = std::ffi::CString::new(ifname).map_err(|_| io::Error::other("bad interface name"))?;
        // SAFETY: valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{ifname}: no such interface"),
            ));
        }
        // Protocol 0: nothing arrives until the bind to the interface.
        // SAFETY: plain syscall, checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let ring = |fd| -> io::Result<*mut u8> {
            setopt(fd, PACKET_VERSION, &TPACKET_V3, "PACKET_VERSION", ifname)?;
            let _ = setopt(fd, PACKET_IGNORE_OUTGOING, &1i32, "PACKET_IGNORE_OUTGOING", ifname);
            let req = TpacketReq3 {
                block_size: BLOCK as u32,
                block_nr: blocks as u32,
                frame_size: 2048,
                frame_nr: (BLOCK / 2048 * blocks) as u32,
                retire_blk_tov: timer_ms,
                sizeof_priv: 0,
                feature_req_word: 0,
            };
            setopt(fd, PACKET_RX_RING, &req, "PACKET_RX_RING", ifname)?;
            // SAFETY: maps the ring just configured, of its exact size.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    BLOCK * blocks,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd,
                    0,
                )
            };
            if m == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: zeroed packet_mreq is valid.
            let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mreq.mr_ifindex = ifindex;
            mreq.mr_type = 1; // PACKET_MR_PROMISC
            setopt(fd, PACKET_ADD_MEMBERSHIP, &mreq, "promiscuous mode", ifname)?;
            crate::port::bind(fd, ifindex, ifname, true)?;
            Ok(m as *mut u8)
        };
        match ring(fd) {
            Ok(map) => Ok(RxRingV3 {
                fd,
                map,
                blocks,
                next: 0,
            }),
            Err(e) => {
                // SAFETY: our descriptor, closed once.
                unsafe { libc::close(fd) };
                Err(e)
            }
        }
    }

    /// Hands every frame of the blocks ready now to `f` (data, kernel
    /// receive time in ns since the epoch, the 802.1Q tag the kernel took
    /// off the frame if it had one); waits up to `timeout_ms` when none is.
    /// The number of frames.
    pub fn poll(&mut self, timeout_ms: i32, f: &mut OnFrame) -> usize {
        let mut n = 0;
        for round in 0..2 {
            loop {
                // SAFETY: the block lies in the mapping; the kernel passes it
                // to us with TP_STATUS_USER in block_status (offset 8).
                let block = unsafe { self.map.add(self.next * BLOCK) };
                let status = unsafe { std::ptr::read_volatile(block.add(8) as *const u32) };
                if status & TP_STATUS_USER == 0 {
                    break;
                }
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                let (num, first) = unsafe {
                    (
                        *(block.add(12) as *const u32) as usize,
                        *(block.add(16) as *const u32) as usize,
                    )
                };
                let mut off = first;
                for _ in 0..num {
                    if off + 28 > BLOCK {
                        break;
                    }
                    // SAFETY: tpacket3_hdr fields at their offsets, inside the block.
                    let (next, sec, nsec, snaplen, status, mac, tci) = unsafe {
                        let p = block.add(off);
                        (
                            *(p as *const u32) as usize,
                            *(p.add(4) as *const u32) as u64,
                            *(p.add(8) as *const u32) as u64,
                            *(p.add(12) as *const u32) as usize,
                            *(p.add(20) as *const u32),
                            *(p.add(24) as *const u16) as usize,
                            *(p.add(32) as *const u32) as u16,
                        )
                    };
                    let vlan = (status & TP_STATUS_VLAN_VALID != 0).then_some(tci);
                    if off + mac + snaplen <= BLOCK {
                        // SAFETY: the frame lies inside the block.
                        let data = unsafe { std::slice::from_raw_parts(block.add(off + mac), snaplen) };
                        f(data, sec * 1_000_000_000 + nsec, vlan);
                        n += 1;
                    }
                    if next == 0 {
                        break;
                    }
                    off += next;
                }
                std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
                // SAFETY: hands the block back to the kernel.
                unsafe { std::ptr::write_volatile(block.add(8) as *mut u32, 0) };
                self.next = (self.next + 1) % self.blocks;
            }
            if n > 0 || round == 1 || timeout_ms == 0 {
                break;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        }
        n
    }

    /// The socket, to wait on together with others.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Frames the ring lost since the last call.
    pub fn take_drops(&self) -> u64 {
        crate::port::ring_drops(self.fd)
    }
}

impl Drop for RxRingV3 {
    fn drop(&mut self) {
        // SAFETY: our own mapping and descriptor, released once.
        unsafe {
            libc::munmap(self.map as *mut libc::c_void, BLOCK * self.blocks);
            libc::close(self.fd);
        }
    }
}
