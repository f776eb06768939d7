//! Port I/O: how frames get in and out of the switch.
//!
//! - `AfPacketPort`: any Linux interface (veth or a real NIC) through
//!   AF_PACKET. Receive is a TPACKET_V2 memory-mapped ring (one frame per
//!   slot, no block timeout, so no added latency), transmit is batched
//!   `sendmmsg` with the qdisc bypassed. Both sockets use PACKET_VNET_HDR,
//!   so checksum-partial and GSO (TSO) frames from hosts with offloads on
//!   pass through whole and the kernel finishes them on the way out: TCP
//!   works with nobody running ethtool.
//! - `MemPort`: frames in and out of memory queues, for tests.
//! - `XdpPort` (in `port_xdp`): AF_XDP sockets, with these AF_PACKET
//!   sockets beside them for what AF_XDP cannot carry.

use crate::vnet::VnetHdr;
use ofwire::MacAddr;
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::Mutex;

/// A switch port's frame I/O. `recv` is called by one datapath thread at a
/// time; `send` by any thread.
pub trait PortIo: Send + Sync {
    fn name(&self) -> &str;
    fn hw_addr(&self) -> MacAddr;
    /// Hands up to `max` waiting frames to `f`, without blocking; the count.
    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize>;
    /// Sends frames; how many went out (the rest were dropped).
    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize;
    /// A descriptor that polls readable when frames wait.
    fn fd(&self) -> RawFd;
    /// Every descriptor to poll for frames (ports with several sockets).
    fn poll_fds(&self) -> Vec<RawFd> {
        vec![self.fd()]
    }
    fn link_up(&self) -> bool;
    /// kbit/s, if known.
    fn speed_kbps(&self) -> u32 {
        10_000_000
    }
    /// Frames the receive side lost (ring full) since the last call.
    fn take_rx_drops(&self) -> u64 {
        0
    }
    /// The kernel interface behind the port, if there is one.
    fn ifindex(&self) -> Option<u32> {
        None
    }
}

fn eventfd() -> io::Result<RawFd> {
    // SAFETY: plain syscall, result checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// An in-memory port: tests push frames in with `inject` and take what the
/// switch sent with `take_sent`.
pub struct MemPort {
    name: String,
    hw_addr: MacAddr,
    rx: Mutex<VecDeque<Vec<u8>>>,
    tx: Mutex<Vec<Vec<u8>>>,
    tx_ready: std::sync::Condvar,
    event: RawFd,
    up: std::sync::atomic::AtomicBool,
}

impl MemPort {
    pub fn new(name: &str, hw_addr: MacAddr) -> io::Result<MemPort> {
        Ok(MemPort {
            name: name.to_string(),
            hw_addr,
            rx: Mutex::new(VecDeque::new()),
            tx: Mutex::new(Vec::new()),
            tx_ready: std::sync::Condvar::new(),
            event: eventfd()?,
            up: true.into(),
        })
    }

    pub fn inject(&self, frame: Vec<u8>) {
        self.rx.lock().unwrap().push_back(frame);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        unsafe { libc::write(self.event, &one as *const u64 as *const libc::c_void, 8) };
    }

    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.tx.lock().unwrap())
    }

    /// Waits up to `timeout` until at least `n` frames were sent; takes them.
    pub fn wait_sent(&self, n: usize, timeout: std::time::Duration) -> Vec<Vec<u8>> {
        let deadline = std::time::Instant::now() + timeout;
        let mut tx = self.tx.lock().unwrap();
        while tx.len() < n {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            tx = self.tx_ready.wait_timeout(tx, left).unwrap().0;
        }
        std::mem::take(&mut *tx)
    }

    pub fn set_link(&self, up: bool) {
        self.up.store(up, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for MemPort {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.event) };
    }
}

impl PortIo for MemPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn hw_addr(&self) -> MacAddr {
        self.hw_addr
    }
    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize> {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid buffer; clears the event.
        unsafe { libc::read(self.event, buf.as_mut_ptr() as *mut libc::c_void, 8) };
        let mut n = 0;
        let mut q = self.rx.lock().unwrap();
        while n < max {
            let Some(frame) = q.pop_front() else { break };
            f(&frame, VnetHdr::default());
            n += 1;
        }
        if !q.is_empty() {
            let one: u64 = 1;
            // SAFETY: as in `inject`.
            unsafe { libc::write(self.event, &one as *const u64 as *const libc::c_void, 8) };
        }
        Ok(n)
    }
    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize {
        let mut tx = self.tx.lock().unwrap();
        tx.extend(frames.iter().map(|(f, _)| f.to_vec()));
        self.tx_ready.notify_all();
        frames.len()
    }
    fn fd(&self) -> RawFd {
        self.event
    }
    fn link_up(&self) -> bool {
        self.up.load(std::sync::atomic::Ordering::Relaxed)
    }
}

// ------------------------------------------------------------------- tap

/// A tap interface the switch creates: its OFPP_LOCAL port, through which
/// the host running the switch talks to the network it switches.
pub struct TapPort {
    name: String,
    fd: RawFd,
    hw_addr: MacAddr,
}

impl TapPort {
    pub fn create(name: &str) -> io::Result<TapPort> {
        if name.is_empty() || name.len() > 15 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?}: an interface name has 1 to 15 characters"),
            ));
        }
        let path = c"/dev/net/tun";
        // SAFETY: valid C string; result checked.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("/dev/net/tun: {e}")));
        }
        // struct ifreq: 16 bytes of name, then the flags.
        let mut ifr = [0u8; 40];
        ifr[..name.len()].copy_from_slice(name.as_bytes());
        let flags = (libc::IFF_TAP | libc::IFF_NO_PI) as u16;
        ifr[16..18].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes the ifreq we pass.
        let r = unsafe { libc::ioctl(fd, libc::TUNSETIFF as _, ifr.as_mut_ptr()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: our descriptor, closed once.
            unsafe { libc::close(fd) };
            return Err(io::Error::new(e.kind(), format!("{name}: creating the tap: {e}")));
        }
        let hw_addr = read_mac(name);
        Ok(TapPort {
            name: name.to_string(),
            fd,
            hw_addr,
        })
    }
}

impl Drop for TapPort {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once (the tap goes with it).
        unsafe { libc::close(self.fd) };
    }
}

impl PortIo for TapPort {
    fn name(&self) -> &str {
        &self.name
    }
    fn hw_addr(&self) -> MacAddr {
        self.hw_addr
    }
    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize> {
        let mut buf = [0u8; 65_536];
        let mut n = 0;
        while n < max {
            // SAFETY: reads into a buffer of the length given.
            let r = unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if r <= 0 {
                break;
            }
            f(&buf[..r as usize], VnetHdr::default());
            n += 1;
        }
        Ok(n)
    }
    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize {
        frames
            .iter()
            // SAFETY: writes a frame from a live buffer.
            .filter(|(d, _)| unsafe { libc::write(self.fd, d.as_ptr() as *const libc::c_void, d.len()) } > 0)
            .count()
    }
    fn fd(&self) -> RawFd {
        self.fd
    }
    fn link_up(&self) -> bool {
        read_sys(&self.name, "operstate").as_deref() != Some("down")
    }
}

// ------------------------------------------------------------- AF_PACKET

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_COPY: u32 = 2;
const PACKET_COPY_THRESH: libc::c_int = 7;
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;
const PACKET_OUTGOING: u8 = 4;

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

/// `struct tpacket2_hdr`.
#[repr(C)]
struct Tpacket2Hdr {
    status: u32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    sec: u32,
    nsec: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    padding: [u8; 4],
}

/// Slot size: the largest GSO frame (64 KiB) plus headers, page-rounded.
pub const GSO_SLOT: usize = 69_632;
/// Slot size for frames up to a standard MTU (no GSO).
pub const MTU_SLOT: usize = 2048;

struct Ring {
    map: *mut u8,
    slots: usize,
    slot: usize,
    next: usize,
}

// SAFETY: the ring is only touched under the port's rx mutex.
unsafe impl Send for Ring {}

/// A Linux interface through AF_PACKET.
pub struct AfPacketPort {
    name: String,
    hw_addr: MacAddr,
    rx_fd: RawFd,
    tx_fd: RawFd,
    ifindex: i32,
    ring: Mutex<Ring>,
}

fn check(r: libc::c_int, what: &str, ifname: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{ifname}: {what}: {e}")));
    }
    Ok(r)
}

/// `setsockopt` with an error that names the interface and the option.
pub fn setopt<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T, what: &str, ifname: &str) -> io::Result<()> {
    // SAFETY: passes a pointer to a live value of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    check(r, what, ifname).map(|_| ())
}

/// An AF_PACKET socket that receives nothing until `bind` names an
/// interface: created with protocol 0, since a socket created for ETH_P_ALL
/// takes frames from every interface until it is bound (frames of other
/// networks would reach a switch port in that window).
fn packet_socket(ifname: &str) -> io::Result<RawFd> {
    let proto = 0;
    // SAFETY: plain syscall, result checked.
    let fd = check(
        unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        },
        "AF_PACKET socket (needs root or CAP_NET_RAW)",
        ifname,
    )?;
    let one: libc::c_int = 1;
    setopt(fd, libc::SOL_PACKET, PACKET_VNET_HDR, &one, "PACKET_VNET_HDR", ifname)?;
    Ok(fd)
}

/// Frames an AF_PACKET ring lost since the last call (PACKET_STATISTICS,
/// which resets on reading; `tp_drops` is the second field in V2 and V3).
pub fn ring_drops(fd: RawFd) -> u64 {
    let mut st = [0u32; 3];
    let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `st`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_STATISTICS,
            st.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        st[1] as u64
    } else {
        0
    }
}

/// Binds an AF_PACKET socket to one interface: to receive every protocol,
/// or (`receive` false: a socket only for sending) none, so the kernel does
/// not copy every frame of the interface into a queue nobody reads.
pub fn bind(fd: RawFd, ifindex: i32, ifname: &str, receive: bool) -> io::Result<()> {
    // SAFETY: zeroed sockaddr_ll is valid; fields set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = if receive { (libc::ETH_P_ALL as u16).to_be() } else { 0 };
    sll.sll_ifindex = ifindex;
    // SAFETY: passes a valid sockaddr_ll of the stated size.
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    check(r, "bind", ifname).map(|_| ())
}

/// An interface's MAC address from sysfs (zero if unreadable).
fn read_mac(ifname: &str) -> MacAddr {
    read_sys(ifname, "address")
        .and_then(|a| {
            let b: Vec<u8> = a.split(':').filter_map(|x| u8::from_str_radix(x, 16).ok()).collect();
            <[u8; 6]>::try_from(b).ok()
        })
        .map(MacAddr)
        .unwrap_or(MacAddr([0; 6]))
}

/// An interface's index, or an error naming it.
fn ifindex_of(ifname: &str) -> io::Result<i32> {
    let cname = std::ffi::CString::new(ifname)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL byte"))?;
    // SAFETY: valid C string.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
    if ifindex == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{ifname}: no such network interface"),
        ));
    }
    Ok(ifindex)
}

/// The interface has carrier and is not administratively down.
fn carrier_up(ifname: &str) -> bool {
    read_sys(ifname, "carrier").as_deref() == Some("1") && read_sys(ifname, "operstate").as_deref() != Some("down")
}

/// A line of the interface's sysfs directory (`mtu`, `speed`, `flags`...).
pub fn read_sys(ifname: &str, what: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/net/{ifname}/{what}"))
        .ok()
        .map(|s| s.trim().to_string())
}

impl AfPacketPort {
    /// Opens `ifname` with a receive ring of `slots` slots of 2 KiB; larger
    /// frames (GSO, jumbo) are read whole from the socket when the ring
    /// says so (TP_STATUS_COPY), so small slots cost nothing in function.
    pub fn open(ifname: &str, slots: usize) -> io::Result<AfPacketPort> {
        AfPacketPort::open_with(ifname, slots, MTU_SLOT)
    }

    /// Opens `ifname` with a receive ring of `slots` slots of `slot` bytes
    /// (`MTU_SLOT` for a receiver of small frames, with many slots).
    /// Sends through the interface's queueing discipline from now on (the
    /// port bypasses it by default, for speed), so a tc rate limit or queue
    /// on the interface applies to what the switch sends.
    pub fn through_qdisc(&self) -> io::Result<()> {
        let zero: libc::c_int = 0;
        setopt(
            self.tx_fd,
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &zero,
            "PACKET_QDISC_BYPASS",
            &self.name,
        )
    }

    pub fn open_with(ifname: &str, slots: usize, slot: usize) -> io::Result<AfPacketPort> {
        let ifindex = ifindex_of(ifname)?;
        let hw_addr = read_mac(ifname);

        let rx_fd = packet_socket(ifname)?;
        let one: libc::c_int = 1;
        setopt(
            rx_fd,
            libc::SOL_PACKET,
            PACKET_VERSION,
            &TPACKET_V2,
            "PACKET_VERSION",
            ifname,
        )?;
        // Our own transmissions are not input (kernel 4.20+; also checked
        // per frame below).
        let _ = setopt(
            rx_fd,
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            &one,
            "PACKET_IGNORE_OUTGOING",
            ifname,
        );
        // Frames larger than a slot are queued whole on the socket as well.
        setopt(
            rx_fd,
            libc::SOL_PACKET,
            PACKET_COPY_THRESH,
            &one,
            "PACKET_COPY_THRESH",
            ifname,
        )?;
        let rcvbuf: libc::c_int = 8 << 20;
        let _ = setopt(rx_fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &rcvbuf, "SO_RCVBUF", ifname);
        // Blocks of at least 64 KiB holding whole slots, so slot i starts at
        // i * slot.
        let per_block = (65_536 / slot).max(1);
        let slots = slots.div_ceil(per_block) * per_block;
        let req = TpacketReq {
            block_size: (slot * per_block) as u32,
            block_nr: (slots / per_block) as u32,
            frame_size: slot as u32,
            frame_nr: slots as u32,
        };
        setopt(rx_fd, libc::SOL_PACKET, PACKET_RX_RING, &req, "PACKET_RX_RING", ifname)?;
        // SAFETY: maps the ring the kernel just set up, of exactly its size.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                slot * slots,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED | libc::MAP_POPULATE,
                rx_fd,
                0,
            )
        };
        let map = if map == libc::MAP_FAILED {
            // MAP_LOCKED may exceed RLIMIT_MEMLOCK; try without.
            // SAFETY: as above.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    slot * slots,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    rx_fd,
                    0,
                )
            };
            if m == libc::MAP_FAILED {
                return Err(io::Error::other(format!(
                    "{ifname}: mmap of the receive ring: {}",
                    io::Error::last_os_error()
                )));
            }
            m
        } else {
            map
        };
        // SAFETY: zeroed packet_mreq is valid; fields set below.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex;
        mreq.mr_type = PACKET_MR_PROMISC;
        setopt(
            rx_fd,
            libc::SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mreq,
            "promiscuous mode",
            ifname,
        )?;
        bind(rx_fd, ifindex, ifname, true)?;

        let tx_fd = packet_socket(ifname)?;
        let _ = setopt(
            tx_fd,
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &one,
            "PACKET_QDISC_BYPASS",
            ifname,
        );
        let sndbuf: libc::c_int = 4 << 20;
        let _ = setopt(tx_fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf, "SO_SNDBUF", ifname);
        bind(tx_fd, ifindex, ifname, false)?;
        Ok(AfPacketPort {
            name: ifname.to_string(),
            hw_addr,
            rx_fd,
            tx_fd,
            ifindex,
            ring: Mutex::new(Ring {
                map: map as *mut u8,
                slots,
                slot,
                next: 0,
            }),
        })
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

impl Drop for AfPacketPort {
    fn drop(&mut self) {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: unmaps our own mapping and closes our own descriptors once.
        unsafe {
            libc::munmap(ring.map as *mut libc::c_void, ring.slot * ring.slots);
            libc::close(self.rx_fd);
            libc::close(self.tx_fd);
        }
    }
}

impl PortIo for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn hw_addr(&self) -> MacAddr {
        self.hw_addr
    }

    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize> {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        let mut scratch = Vec::new();
        let mut big = Vec::new();
        while n < max {
            // SAFETY: the slot lies inside the mapping; the kernel hands it
            // over by setting TP_STATUS_USER, and we read the header through
            // a volatile load before touching the data.
            let slot = unsafe { ring.map.add(ring.next * ring.slot) };
            let hdr = slot as *mut Tpacket2Hdr;
            let status = unsafe { std::ptr::read_volatile(&(*hdr).status) };
            if status & TP_STATUS_USER == 0 {
                break;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let (mac, snaplen, tci, tpid) = unsafe {
                (
                    (*hdr).mac as usize,
                    (*hdr).snaplen as usize,
                    (*hdr).vlan_tci,
                    (*hdr).vlan_tpid,
                )
            };
            // sockaddr_ll follows the aligned header; skip our own sends.
            let sll = unsafe { &*(slot.add(32) as *const libc::sockaddr_ll) };
            let whole = if status & TP_STATUS_COPY != 0 {
                // Truncated in the ring: the whole frame waits on the socket.
                big.resize(VnetHdr::LEN + 65_536 + 64, 0);
                // SAFETY: reads into a buffer of the length given.
                let r = unsafe {
                    libc::recv(
                        self.rx_fd,
                        big.as_mut_ptr() as *mut libc::c_void,
                        big.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                (r > VnetHdr::LEN as isize).then_some(r as usize)
            } else {
                None
            };
            if status & TP_STATUS_COPY != 0 && whole.is_none() {
                // The copy was not queued (socket buffer full): a drop.
            } else if sll.sll_pkttype != PACKET_OUTGOING && mac >= VnetHdr::LEN && mac + snaplen <= ring.slot {
                let (vnet, data) = match whole {
                    Some(len) => (
                        // SAFETY: the buffer holds at least a header.
                        unsafe { std::ptr::read_unaligned(big.as_ptr() as *const VnetHdr) },
                        &big[VnetHdr::LEN..len],
                    ),
                    // SAFETY: header and frame lie inside the slot (checked above).
                    None => unsafe {
                        (
                            std::ptr::read_unaligned(slot.add(mac - VnetHdr::LEN) as *const VnetHdr),
                            std::slice::from_raw_parts(slot.add(mac), snaplen),
                        )
                    },
                };
                if status & TP_STATUS_VLAN_VALID != 0 && data.len() >= 12 {
                    // The NIC took the tag off; put it back where it was.
                    let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 {
                        tpid
                    } else {
                        0x8100
                    };
                    scratch.clear();
                    scratch.extend_from_slice(&data[..12]);
                    scratch.extend_from_slice(&tpid.to_be_bytes());
                    scratch.extend_from_slice(&tci.to_be_bytes());
                    scratch.extend_from_slice(&data[12..]);
                    let mut v = vnet;
                    if v.flags & VnetHdr::NEEDS_CSUM != 0 {
                        v.csum_start += 4;
                    }
                    if v.gso_type != 0 {
                        v.hdr_len += 4;
                    }
                    f(&scratch, v);
                } else {
                    f(data, vnet);
                }
                n += 1;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            // SAFETY: hands the slot back to the kernel.
            unsafe { std::ptr::write_volatile(&mut (*hdr).status, 0) };
            ring.next = (ring.next + 1) % ring.slots;
        }
        Ok(n)
    }

    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize {
        let mut sent = 0;
        for chunk in frames.chunks(64) {
            let mut iovs: Vec<[libc::iovec; 2]> = chunk
                .iter()
                .map(|(data, vnet)| {
                    [
                        libc::iovec {
                            iov_base: vnet as *const VnetHdr as *mut libc::c_void,
                            iov_len: VnetHdr::LEN,
                        },
                        libc::iovec {
                            iov_base: data.as_ptr() as *mut libc::c_void,
                            iov_len: data.len(),
                        },
                    ]
                })
                .collect();
            // SAFETY: zeroed mmsghdr is valid; iovecs point at live buffers
            // for the duration of the call.
            let mut msgs: Vec<libc::mmsghdr> = iovs
                .iter_mut()
                .map(|iov| {
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_iov = iov.as_mut_ptr();
                    m.msg_hdr.msg_iovlen = 2;
                    m
                })
                .collect();
            let mut off = 0;
            let mut retries = 0;
            while off < msgs.len() {
                // SAFETY: as above.
                let r = unsafe {
                    libc::sendmmsg(
                        self.tx_fd,
                        msgs[off..].as_mut_ptr(),
                        (msgs.len() - off) as u32,
                        // c_int on glibc, c_uint on musl.
                        libc::MSG_DONTWAIT as _,
                    )
                };
                if r > 0 {
                    off += r as usize;
                    sent += r as usize;
                    continue;
                }
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::ENOBUFS) if retries < 3 => {
                        retries += 1;
                        std::thread::yield_now();
                    }
                    // A frame the device refuses (too big, link down): skip it.
                    _ => off += 1,
                }
            }
        }
        sent
    }

    fn fd(&self) -> RawFd {
        self.rx_fd
    }

    fn link_up(&self) -> bool {
        carrier_up(&self.name)
    }

    fn take_rx_drops(&self) -> u64 {
        ring_drops(self.rx_fd)
    }

    fn speed_kbps(&self) -> u32 {
        read_sys(&self.name, "speed")
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|&s| s > 0)
            .map(|s| (s * 1000) as u32)
            .unwrap_or(10_000_000)
    }
}

/// A Linux interface through one plain AF_PACKET socket: `recvfrom` and
/// `send`, one frame per call, no ring and no vnet header. For where the
/// ring or PACKET_VNET_HDR are not available (qemu's user-mode emulation,
/// which the router builds are tested under); `open_packet_port` falls
/// back to it. Slower, and without the vnet header frames whose checksum
/// the sending host left to offload reach the far end unfinished: TCP and
/// UDP through it need checksum offload off on the hosts (`ethtool -K IF
/// tx off`); ping and ARP need nothing.
pub struct SocketPort {
    name: String,
    hw_addr: MacAddr,
    fd: RawFd,
    ifindex: i32,
}

impl SocketPort {
    pub fn open(ifname: &str) -> io::Result<SocketPort> {
        let ifindex = ifindex_of(ifname)?;
        // SAFETY: plain syscall, result checked. Protocol 0 until bound, as
        // for the ring's socket.
        let fd = check(
            unsafe {
                libc::socket(
                    libc::AF_PACKET,
                    libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    0,
                )
            },
            "AF_PACKET socket (needs root or CAP_NET_RAW)",
            ifname,
        )?;
        let port = SocketPort {
            name: ifname.to_string(),
            hw_addr: read_mac(ifname),
            fd,
            ifindex,
        };
        bind(fd, ifindex, ifname, true)?;
        Ok(port)
    }
}

impl Drop for SocketPort {
    fn drop(&mut self) {
        // SAFETY: closes our own descriptor once.
        unsafe { libc::close(self.fd) };
    }
}

impl PortIo for SocketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn hw_addr(&self) -> MacAddr {
        self.hw_addr
    }

    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize> {
        let mut buf = [0u8; 65_536];
        let mut n = 0;
        while n < max {
            // SAFETY: zeroed sockaddr_ll is valid; the kernel writes at most
            // `len` bytes of it and at most buf.len() bytes of frame.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            let r = unsafe {
                libc::recvfrom(
                    self.fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                    &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(n),
                    _ => Err(e),
                };
            }
            // The socket sees what this port sends too: not a frame received.
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            f(&buf[..r as usize], VnetHdr::default());
            n += 1;
        }
        Ok(n)
    }

    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize {
        frames
            .iter()
            .filter(|(data, _)| {
                // SAFETY: sends from a live buffer of the length given.
                let r = unsafe {
                    libc::send(
                        self.fd,
                        data.as_ptr() as *const libc::c_void,
                        data.len(),
                        libc::MSG_DONTWAIT,
                    )
                };
                r == data.len() as isize
            })
            .count()
    }

    fn fd(&self) -> RawFd {
        self.fd
    }

    fn link_up(&self) -> bool {
        carrier_up(&self.name)
    }

    fn ifindex(&self) -> Option<u32> {
        Some(self.ifindex as u32)
    }
}

/// Opens `ifname` as an `AfPacketPort` with `slots` ring slots, or, when
/// the ring cannot be set up but a plain socket can (qemu's user-mode
/// emulation refuses the ring's socket options), as a `SocketPort`; the
/// second value then says why, for a warning line. When neither opens, the
/// ring's error.
pub fn open_packet_port(ifname: &str, slots: usize) -> io::Result<(std::sync::Arc<dyn PortIo>, Option<String>)> {
    match AfPacketPort::open(ifname, slots) {
        Ok(p) => Ok((std::sync::Arc::new(p), None)),
        Err(ring) => match SocketPort::open(ifname) {
            Ok(p) => Ok((
                std::sync::Arc::new(p),
                Some(format!(
                    "{ring}; using a plain AF_PACKET socket instead (slower; TCP and UDP need checksum offload off on the hosts)"
                )),
            )),
            Err(_) => Err(ring),
        },
    }
}
