//! A TCP SYN flood on loopback for RFC 8456's denial-of-service test: SYNs
//! from a fake source address (127.66.0.1, any port) to the controller's
//! OpenFlow port, sent from a raw socket at a given rate. The caller drops
//! the controller's SYN-ACKs to that address (an nftables rule), so the
//! half-open connections stay half-open, as they would with a spoofed
//! source on a real network. Loopback only; needs CAP_NET_RAW.

use nix::sys::socket::{bind, sendto, socket, AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The source the SYNs claim.
pub const FAKE_SOURCE: Ipv4Addr = Ipv4Addr::new(127, 66, 0, 1);

/// A running flood; `stop` ends it and returns how many SYNs were sent.
pub struct SynFlood {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for p in parts {
        let mut chunks = p.chunks_exact(2);
        for c in &mut chunks {
            sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        }
        if let [last] = chunks.remainder() {
            sum += (*last as u32) << 8;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A TCP SYN segment (20-byte header, no options) with its checksum.
pub fn syn_segment(src: SocketAddrV4, dst: SocketAddrV4, seq: u32) -> [u8; 20] {
    let mut t = [0u8; 20];
    t[0..2].copy_from_slice(&src.port().to_be_bytes());
    t[2..4].copy_from_slice(&dst.port().to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[12] = 5 << 4; // data offset: 5 words
    t[13] = 0x02; // SYN
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    let mut pseudo = [0u8; 12];
    pseudo[0..4].copy_from_slice(&src.ip().octets());
    pseudo[4..8].copy_from_slice(&dst.ip().octets());
    pseudo[9] = 6;
    pseudo[10..12].copy_from_slice(&20u16.to_be_bytes());
    let c = checksum(&[&pseudo, &t]);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

/// Why a SYN flood could not start.
#[derive(Debug, thiserror::Error)]
pub enum SynFloodError {
    #[error("the SYN flood only targets loopback, not {0}")]
    NotLoopback(SocketAddrV4),
    #[error("raw socket for the SYN flood (root needed): {0}")]
    Socket(#[source] nix::Error),
    #[error("binding the SYN flood to {addr}: {source}")]
    Bind {
        addr: std::net::Ipv4Addr,
        source: nix::Error,
    },
    #[error("the SYN flood's thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl SynFlood {
    /// Starts sending `pps` SYNs per second to `target` (a loopback address).
    pub fn start(target: SocketAddrV4, pps: u64) -> Result<SynFlood, SynFloodError> {
        if !target.ip().is_loopback() {
            return Err(SynFloodError::NotLoopback(target));
        }
        let fd = socket(AddressFamily::Inet, SockType::Raw, SockFlag::empty(), SockProtocol::Tcp)
            .map_err(SynFloodError::Socket)?;
        bind(fd.as_raw_fd(), &SockaddrIn::from(SocketAddrV4::new(FAKE_SOURCE, 0))).map_err(|source| {
            SynFloodError::Bind {
                addr: FAKE_SOURCE,
                source,
            }
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("syn-flood".into())
            .spawn(move || {
                let dst = SockaddrIn::from(target);
                let start = Instant::now();
                let mut sent = 0u64;
                let mut x = 0x9e37_79b9u32;
                while !flag.load(Ordering::Relaxed) {
                    let due = (start.elapsed().as_secs_f64() * pps as f64) as u64;
                    while sent < due {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let src = SocketAddrV4::new(FAKE_SOURCE, 1024 + (x % 60000) as u16);
                        let seg = syn_segment(src, target, x);
                        if sendto(fd.as_raw_fd(), &seg, &dst, MsgFlags::empty()).is_err() {
                            break;
                        }
                        sent += 1;
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
                sent
            })
            .map_err(SynFloodError::Thread)?;
        Ok(SynFlood { stop, thread })
    }

    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checksum_verifies() {
        let seg = syn_segment(
            SocketAddrV4::new(FAKE_SOURCE, 40000),
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6653),
            12345,
        );
        let mut pseudo = [0u8; 12];
        pseudo[0..4].copy_from_slice(&FAKE_SOURCE.octets());
        pseudo[4..8].copy_from_slice(&[127, 0, 0, 1]);
        pseudo[9] = 6;
        pseudo[10..12].copy_from_slice(&20u16.to_be_bytes());
        // A correct checksum makes the sum over everything come out as zero.
        assert_eq!(checksum(&[&pseudo, &seg]), 0);
        assert_eq!(seg[13], 0x02);
        assert_eq!(u16::from_be_bytes([seg[2], seg[3]]), 6653);
    }
}
