//! A worker's clock against the coordinator's, as NTP estimates it over one
//! exchange: the coordinator reads its clock (t0), asks the worker's (t1),
//! reads its own again (t2). If the two legs took as long as each other,
//! the worker's clock is ahead by t1 - (t0 + t2) / 2; whatever the legs
//! took, the truth lies within (t2 - t0) / 2 of that. Of several exchanges
//! the one with the shortest round trip bounds it best.

use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One exchange, in nanoseconds since the Unix epoch on each clock.
#[derive(Clone, Copy, Debug)]
pub struct Exchange {
    pub t0: u64,
    pub t1: u64,
    pub t2: u64,
}

/// A worker's clock offset and how sure of it we are.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Offset {
    /// The worker's clock minus the coordinator's, microseconds.
    pub offset_us: f64,
    /// The offset is within this of the truth, microseconds (half the
    /// shortest round trip).
    pub uncertainty_us: f64,
    pub exchanges: usize,
}

/// The estimate from `exchanges` (None if there are none).
pub fn estimate(exchanges: &[Exchange]) -> Option<Offset> {
    let best = exchanges.iter().filter(|e| e.t2 >= e.t0).min_by_key(|e| e.t2 - e.t0)?;
    let mid = (best.t0 as f64 + best.t2 as f64) / 2.0;
    Some(Offset {
        offset_us: (best.t1 as f64 - mid) / 1e3,
        uncertainty_us: (best.t2 - best.t0) as f64 / 2e3,
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

/// A probe: the token, a sequence number; the answer adds the worker's clock.
const PROBE: usize = 24;
const ANSWER: usize = 32;

/// The worker's end of the clock probes: a UDP socket answered on a
/// thread of its own, at once, with the clock read as the probe is taken.
/// Exchanges over the session's TLS stream take tens to hundreds of µs
/// (two encryptions, four task wake-ups): half that is how well an offset
/// is known, more than a one-way delay between two machines on one
/// switch. A bare datagram answered by a blocked thread is about three
/// times tighter here (docs/BENCHMARKS.md).
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
        let port = sock.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new().name("clock-probes".into()).spawn(move || {
            let mut buf = [0u8; 64];
            let mut told = false;
            while !flag.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let now = unix_ns();
                if n != PROBE || buf[..16] != token {
                    if !told {
                        refused(from);
                        told = true;
                    }
                    continue;
                }
                buf[PROBE..ANSWER].copy_from_slice(&now.to_be_bytes());
                let _ = sock.send_to(&buf[..ANSWER], from);
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
    let mut out = Vec::with_capacity(n);
    let mut buf = [0u8; 64];
    for seq in 0..n as u64 {
        let mut p = [0u8; PROBE];
        p[..16].copy_from_slice(&token);
        p[16..24].copy_from_slice(&seq.to_be_bytes());
        let t0 = unix_ns();
        sock.send(&p)?;
        // Answers to probes that timed out may still come: skip them.
        let t1 = loop {
            match sock.recv(&mut buf) {
                Ok(ANSWER) if buf[..PROBE] == p => {
                    break Some(u64::from_be_bytes(buf[PROBE..ANSWER].try_into().expect("8 bytes")))
                }
                Ok(_) => continue,
                Err(_) => break None,
            }
        };
        let t2 = unix_ns();
        if let Some(t1) = t1 {
            out.push(Exchange { t0, t1, t2 });
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
                t2: 1_000_000 + 900_000,
            },
            Exchange {
                t0: 3_000_000,
                t1: 3_000_000 + 5_000_000 + 20_000,
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
    fn probes_with_the_token_are_answered_and_others_are_not() {
        let t = token();
        let (tx, refused) = std::sync::mpsc::channel();
        let server = ProbeServer::start([127, 0, 0, 1].into(), t, move |from| {
            let _ = tx.send(from);
        })
        .unwrap();
        let to = SocketAddr::from(([127, 0, 0, 1], server.port));
        let ex = probe(to, t, 20).unwrap();
        assert_eq!(ex.len(), 20);
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
