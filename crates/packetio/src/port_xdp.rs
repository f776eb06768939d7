//! `XdpPort`: a switch port on AF_XDP sockets, the faster option beside
//! `AfPacketPort`.
//!
//! Frames that fit a UMEM chunk arrive through the AF_XDP sockets (one per
//! receive queue) and leave through the first one. What AF_XDP cannot carry
//! takes the port's AF_PACKET sockets instead, so nothing changes in
//! function: GSO super-frames and jumbo frames (the XDP program leaves
//! them to the stack, where the AF_PACKET ring takes them with their
//! virtio-net header), and frames that still need a checksum or
//! segmentation on the way out.
//!
//! Offloads: a host's stack with checksum offload on sends TCP and UDP
//! with only the pseudo-header sum in the checksum field and leaves the
//! rest to the "hardware"; AF_XDP hands us the bytes without saying so (Open
//! vSwitch's AF_XDP ports forward such frames unfinished, so TCP fails
//! unless the hosts turn offloads off). `offload_of` recognises the
//! pattern and marks the frame checksum-partial, so it leaves through
//! AF_PACKET with a virtio-net header and the kernel finishes it. A frame
//! whose real checksum happens to equal the pseudo-header sum is harmless:
//! finishing it yields the same checksum again.

use crate::port::{AfPacketPort, PortIo};
use crate::vnet::VnetHdr;
use crate::{XdpInterface, XdpMode, XskConfig};
use ofwire::MacAddr;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct XdpPort {
    xdp: XdpInterface,
    stack: AfPacketPort,
    max_frame: usize,
    drops_seen: AtomicU64,
}

/// Receive ring slots of the AF_PACKET side, which sees only what AF_XDP
/// cannot carry.
const STACK_RING_SLOTS: usize = 512;

impl XdpPort {
    /// Opens `ifname` with `frames` UMEM chunks per receive queue (half
    /// for receiving, half for sending); `mode` None: native XDP if the
    /// driver has it, else generic; with `fast`, the switch's in-kernel
    /// fast path in front of the sockets for frames arriving as port
    /// `fast.1`.
    pub fn open(
        ifname: &str,
        mode: Option<XdpMode>,
        frames: u32,
        fast: Option<(&crate::fastpath::FastPath, u32)>,
    ) -> io::Result<XdpPort> {
        let stack = AfPacketPort::open(ifname, STACK_RING_SLOTS)?;
        let config = XskConfig {
            frames: frames.next_power_of_two().max(64),
            frame_size: 2048,
        };
        let xdp = XdpInterface::open_with(ifname, mode, config, 16, fast, false)?;
        Ok(XdpPort {
            max_frame: config.max_frame() as usize,
            xdp,
            stack,
            drops_seen: AtomicU64::new(0),
        })
    }

    pub fn mode(&self) -> XdpMode {
        self.xdp.mode()
    }

    pub fn queues(&self) -> usize {
        self.xdp.sockets.len()
    }

    /// Ok if a frame whose VLAN tag the kernel holds beside it (not in its
    /// bytes) reaches the switch with its tag; else why not.
    pub fn vlan_outside_frame(&self) -> Result<(), &str> {
        self.xdp.vlan_outside_frame()
    }
}

impl PortIo for XdpPort {
    fn ifindex(&self) -> Option<u32> {
        Some(self.xdp.ifindex)
    }

    fn name(&self) -> &str {
        self.stack.name()
    }

    fn hw_addr(&self) -> MacAddr {
        self.stack.hw_addr()
    }

    fn recv(&self, max: usize, f: &mut dyn FnMut(&[u8], VnetHdr)) -> io::Result<usize> {
        let mut n = 0;
        for s in &self.xdp.sockets {
            if n >= max {
                break;
            }
            n += s.recv((max - n) as u32, &mut |frame| f(frame, offload_of(frame))) as usize;
        }
        if n < max {
            n += self.stack.recv(max - n, f)?;
        }
        Ok(n)
    }

    fn send(&self, frames: &[(&[u8], VnetHdr)]) -> usize {
        let plain = |(data, vnet): &(&[u8], VnetHdr)| *vnet == VnetHdr::default() && data.len() <= self.max_frame;
        let mut sent = self.xdp.sockets[0].send(frames.iter().filter(|f| plain(f)).map(|(d, _)| *d)) as usize;
        if frames.iter().any(|f| !plain(f)) {
            let rest: Vec<(&[u8], VnetHdr)> = frames.iter().filter(|f| !plain(f)).copied().collect();
            sent += self.stack.send(&rest);
        }
        sent
    }

    fn fd(&self) -> RawFd {
        self.xdp.sockets[0].fd()
    }

    /// The sockets are polled directly rather than through an epoll set: a
    /// socket in an epoll set has a waiter on it all the time, and every
    /// frame it sends then wakes that waiter when the kernel frees it.
    /// poll() waits on them only while the datapath sleeps.
    fn poll_fds(&self) -> Vec<RawFd> {
        self.xdp
            .sockets
            .iter()
            .map(|s| s.fd())
            .chain([self.stack.fd()])
            .collect()
    }

    fn link_up(&self) -> bool {
        self.stack.link_up()
    }

    fn speed_kbps(&self) -> u32 {
        self.stack.speed_kbps()
    }

    fn take_rx_drops(&self) -> u64 {
        let total: u64 = self
            .xdp
            .sockets
            .iter()
            .map(|s| {
                let st = s.stats();
                // rx_dropped already counts the fill-ring-empty drops.
                st.rx_dropped + st.rx_ring_full
            })
            .sum();
        let before = self.drops_seen.swap(total, Ordering::Relaxed);
        total.saturating_sub(before) + self.stack.take_rx_drops()
    }
}

fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

fn sum_words(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|w| u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0)))
        .sum()
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The offload a frame from a host's stack still needs: checksum-partial
/// when its TCP or UDP checksum field holds just the pseudo-header sum
/// (what a stack with checksum offload writes), else none.
pub fn offload_of(f: &[u8]) -> VnetHdr {
    let none = VnetHdr::default();
    if f.len() < 14 {
        return none;
    }
    let mut l3 = 14;
    let mut ethertype = be16(f, 12);
    for _ in 0..2 {
        if (ethertype == 0x8100 || ethertype == 0x88a8) && f.len() >= l3 + 4 {
            ethertype = be16(f, l3 + 2);
            l3 += 4;
        }
    }
    // The header fields first; the pseudo-header sum only when the
    // checksum field could hold it.
    let (l4, proto, l4len, addrs) = match ethertype {
        0x0800 if f.len() >= l3 + 20 => {
            let ihl = (f[l3] & 0x0f) as usize * 4;
            let total = be16(f, l3 + 2) as usize;
            // Fragments carry no whole segment to sum.
            if ihl < 20 || be16(f, l3 + 6) & 0x3fff != 0 || total < ihl || f.len() < l3 + total {
                return none;
            }
            (l3 + ihl, f[l3 + 9], (total - ihl) as u32, l3 + 12..l3 + 20)
        }
        0x86dd if f.len() >= l3 + 40 => {
            let l4len = be16(f, l3 + 4) as u32;
            if f.len() < l3 + 40 + l4len as usize {
                return none;
            }
            (l3 + 40, f[l3 + 6], l4len, l3 + 8..l3 + 40)
        }
        _ => return none,
    };
    let csum_offset = match proto {
        6 => 16,
        17 => 6,
        _ => return none,
    };
    if f.len() < l4 + csum_offset + 2 {
        return none;
    }
    let field = be16(f, l4 + csum_offset);
    // UDP over IPv4 may carry no checksum at all (zero).
    if field == 0 || field != fold(sum_words(&f[addrs]) + u32::from(proto) + l4len) {
        return none;
    }
    VnetHdr {
        flags: VnetHdr::NEEDS_CSUM,
        csum_start: l4 as u16,
        csum_offset: csum_offset as u16,
        ..VnetHdr::default()
    }
}
