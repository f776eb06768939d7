//! A worker's clock against the coordinator's, as NTP estimates it over one
//! exchange: the coordinator sends at t0 (its clock), the worker takes the
//! request at t1 and answers at t1b (its clock), the answer arrives at t2
//! (the coordinator's). The round trip, less the worker's own time, is
//! d = (t2 - t0) - (t1b - t1); if the two legs took as long as each other
//! the worker's clock is ahead by (t1 + t1b) / 2 - (t0 + t2) / 2, and
//! whatever the legs took the truth lies within d / 2 of that. Of several
//! exchanges the one with the shortest d bounds it best. The probes take
//! t1 and t2 from the kernel's receive stamps, so neither side's wake-up
//! counts in d.

use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One exchange, in nanoseconds since the Unix epoch on each clock.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    pub t0: u64,
    /// The worker took the request...
    pub t1: u64,
    /// ...and answered (the same as `t1` when it read its clock once).
    pub t1b: u64,
    pub t2: u64,
}

impl Exchange {
    /// The round trip less the worker's own time, ns (None if the clocks
    /// ran backwards in between).
    fn delay(&self) -> Option<u64> {
        (self.t2.checked_sub(self.t0)?).checked_sub(self.t1b.checked_sub(self.t1)?)
    }
}

/// A worker's clock offset and how sure of it we are.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Offset {
    /// The worker's clock minus the coordinator's, microseconds.
    pub offset_us: f64,
    /// The offset is within this of the truth, microseconds (half the
    /// shortest round trip, the worker's own time left out).
    pub uncertainty_us: f64,
    pub exchanges: usize,
}

/// The estimate from `exchanges` (None if there are none).
pub fn estimate(exchanges: &[Exchange]) -> Option<Offset> {
    let (best, d) = exchanges
        .iter()
        .filter_map(|e| Some((e, e.delay()?)))
        .min_by_key(|(_, d)| *d)?;
    let ours = (best.t0 as f64 + best.t2 as f64) / 2.0;
    let theirs = (best.t1 as f64 + best.t1b as f64) / 2.0;
    Some(Offset {
        offset_us: (theirs - ours) / 1e3,
        uncertainty_us: d as f64 / 2e3,
        exchanges: exchanges.len(),
    })
}

/// Nanoseconds since the Unix epoch.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The secret a clock probe carries: only the coordinator that learnt it
/// over the session's TLS gets an answer.
pub type Token = [u8; 16];

/// A fresh token.
pub fn token() -> Token {
    let mut t = [0u8; 16];
    getrandom::getrandom(&mut t).expect("the kernel's random numbers");
    t
}

/// A probe: the token, a sequence number, room for the answer's two
/// times (so an answer is never larger than its probe).
const PROBE: usize = 40;
/// Where the answer's times go: when the probe came, when it left.
const AT: usize = 24;

/// Receives one datagram on `sock` with the kernel's receive time
/// (CLOCK_REALTIME ns; SO_TIMESTAMPNS must be on): its length, sender and
/// stamp (None if the kernel gave none).
fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr, Option<u64>)> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, SockaddrStorage};
    use std::os::fd::AsRawFd;
    let mut iov = [std::io::IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let m = recvmsg::<SockaddrStorage>(sock.as_raw_fd(), &mut iov, Some(&mut cmsg), MsgFlags::empty())
        .map_err(std::io::Error::from)?;
    let stamp = m.cmsgs().ok().and_then(|mut c| {
        c.find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(t) => Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64),
            _ => None,
        })
    });
    let from = m
        .address
        .and_then(|a: SockaddrStorage| {
            a.as_sockaddr_in()
                .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
                .or_else(|| {
                    a.as_sockaddr_in6()
                        .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
                })
        })
        .ok_or_else(|| std::io::Error::other("a datagram without a sender"))?;
    Ok((m.bytes, from, stamp))
}

/// Asks the kernel to stamp each datagram `sock` receives.
fn stamp_receives(sock: &UdpSocket) -> std::io::Result<()> {
    nix::sys::socket::setsockopt(sock, nix::sys::socket::sockopt::ReceiveTimestampns, &true)
        .map_err(std::io::Error::from)
}

/// The worker's end of the clock probes: a UDP socket answered on a
/// thread of its own, at once, with the clock read as the probe is taken.
/// Exchanges over the session's TLS stream take tens to hundreds of µs
/// (two encryptions, four task wake-ups): half that is how well an offset
/// is known, more than a one-way delay between two machines on one
/// switch. A bare datagram, stamped by the kernel as it arrives on either
/// side, is about 13 times tighter here (docs/BENCHMARKS.md).
/// Probes without the session's token get nothing (the answer is no
/// larger than the probe either). The thread ends soon after the
/// server is dropped.
pub struct ProbeServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl ProbeServer {
    /// Listens on `ip` (the session's own address), any port; `refused`
    /// is told (once) of the first probe without the token.
    pub fn start(
        ip: std::net::IpAddr,
        token: Token,
        refused: impl Fn(SocketAddr) + Send + 'static,
    ) -> std::io::Result<ProbeServer> {
        let sock = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        sock.set_read_timeout(Some(Duration::from_millis(200)))?;
        stamp_receives(&sock)?;
        let port = sock.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new().name("clock-probes".into()).spawn(move || {
            let mut buf = [0u8; 64];
            let mut told = false;
            while !flag.load(Ordering::Relaxed) {
                let Ok((n, from, stamp)) = recv_stamped(&sock, &mut buf) else {
                    continue;
                };
                let came = stamp.unwrap_or_else(unix_ns);
                if n != PROBE || buf[..16] != token {
                    if !told {
                        refused(from);
                        told = true;
                    }
                    continue;
                }
                buf[AT..AT + 8].copy_from_slice(&came.to_be_bytes());
                buf[AT + 8..PROBE].copy_from_slice(&unix_ns().to_be_bytes());
                let _ = sock.send_to(&buf[..PROBE], from);
            }
        })?;
        Ok(ProbeServer { port, stop })
    }
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `n` exchanges with the probe server at `to`, one at a time (blocking;
/// a probe unanswered within 50 ms is left out).
pub fn probe(to: SocketAddr, token: Token, n: usize) -> std::io::Result<Vec<Exchange>> {
    let any: SocketAddr = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .expect("an address");
    let sock = UdpSocket::bind(any)?;
    sock.connect(to)?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    stamp_receives(&sock)?;
    let mut out = Vec::with_capacity(n);
    let mut buf = [0u8; 64];
    for seq in 0..n as u64 {
        let mut p = [0u8; PROBE];
        p[..16].copy_from_slice(&token);
        p[16..24].copy_from_slice(&seq.to_be_bytes());
        let t0 = unix_ns();
        sock.send(&p)?;
        // Answers to probes that timed out may still come: skip them.
        let answer = loop {
            match recv_stamped(&sock, &mut buf) {
                Ok((PROBE, _, stamp)) if buf[..AT] == p[..AT] => {
                    let at = |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
                    break Some((at(AT), at(AT + 8), stamp.unwrap_or_else(unix_ns)));
                }
                Ok(_) => continue,
                Err(_) => break None,
            }
        };
        if let Some((t1, t1b, t2)) = answer {
            out.push(Exchange { t0, t1, t1b, t2 });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_bounds_the_offset() {
        // The worker is 5 ms ahead. One exchange with a slow return leg,
        // one quick and even.
        let ex = [
            Exchange {
                t0: 1_000_000,
                t1: 1_000_000 + 5_000_000 + 100_000,
                t1b: 1_000_000 + 5_000_000 + 100_000,
                t2: 1_000_000 + 900_000,
            },
            Exchange {
                t0: 3_000_000,
                t1: 3_000_000 + 5_000_000 + 20_000,
                t1b: 3_000_000 + 5_000_000 + 20_000,
                t2: 3_000_000 + 40_000,
            },
        ];
        let o = estimate(&ex).unwrap();
        assert_eq!(o.uncertainty_us, 20.0);
        assert!((o.offset_us - 5_000.0).abs() <= o.uncertainty_us, "{o:?}");
        assert_eq!(o.exchanges, 2);
        assert!(estimate(&[]).is_none());
    }

    #[test]
    fn the_workers_own_time_is_not_part_of_the_bound() {
        // 10 us each way, the worker 2 ms ahead, and 300 us between taking
        // the request and answering it (a wake-up, say).
        let e = Exchange {
            t0: 1_000_000,
            t1: 1_000_000 + 10_000 + 2_000_000,
            t1b: 1_000_000 + 10_000 + 2_000_000 + 300_000,
            t2: 1_000_000 + 10_000 + 300_000 + 10_000,
        };
        let o = estimate(&[e]).unwrap();
        assert_eq!(o.uncertainty_us, 10.0);
        assert!((o.offset_us - 2_000.0).abs() < 1e-6, "{o:?}");
    }

    #[test]
    fn the_kernel_stamps_what_a_probe_socket_receives() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        stamp_receives(&b).unwrap();
        let before = unix_ns();
        a.send_to(b"x", b.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 8];
        let (n, from, stamp) = recv_stamped(&b, &mut buf).unwrap();
        let after = unix_ns();
        assert_eq!((n, from), (1, a.local_addr().unwrap()));
        let stamp = stamp.expect("no receive stamp");
        assert!(before <= stamp && stamp <= after, "{before} {stamp} {after}");
    }

    #[test]
    fn probes_with_the_token_are_answered_and_others_are_not() {
        let t = token();
        let (tx, refused) = std::sync::mpsc::channel();
        let server = ProbeServer::start([127, 0, 0, 1].into(), t, move |from| {
            let _ = tx.send(from);
        })
        .unwrap();
        let to = SocketAddr::from(([127, 0, 0, 1], server.port));
        // Each probe waits 50 ms for its answer: on a loaded machine one
        // may come too late and is skipped, as it would be in a run.
        let ex = probe(to, t, 20).unwrap();
        assert!(ex.len() >= 10, "{} of 20 probes answered", ex.len());
        let o = estimate(&ex).unwrap();
        // One clock: the offset is within its bound, and the bound is tight.
        assert!(o.offset_us.abs() <= o.uncertainty_us + 1.0, "{o:?}");
        assert!(o.uncertainty_us < 5_000.0, "{o:?}");
        assert!(refused.try_recv().is_err());
        let mut other = t;
        other[0] ^= 1;
        assert!(probe(to, other, 3).unwrap().is_empty(), "a wrong token got an answer");
        assert!(
            refused.recv_timeout(Duration::from_secs(1)).is_ok(),
            "the stranger was not reported"
        );
    }
}
