//! Free TCP ports for the processes a bed starts (controllers, switches,
//! etcd), which bind them themselves after being told which.
//!
//! A port taken with `bind(0)` and freed again lies in Linux's ephemeral
//! range (32768-60999 by default): before the process binds it, another
//! process's `bind(0)` or outgoing connection can take it, and the process
//! fails or, worse, a client reaches someone else's listener. A port below
//! that range is given by the kernel to no one unasked; chosen at random,
//! two runs side by side rarely try the same one, and one found taken is
//! passed over.

use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};

/// The ports chosen from: below the ephemeral range, above the well-known
/// services most often met (and 16000 clear of the common 8000s and 9000s).
const FIRST: u16 = 20_000;
const COUNT: u16 = 12_000;

/// A TCP port on `ip` free now, below the ephemeral range; a kernel-chosen
/// one if 200 random tries found none.
pub fn free_port(ip: IpAddr) -> std::io::Result<u16> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..200 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::from(d.subsec_nanos()))
            .unwrap_or(0);
        // splitmix64's finaliser over the time, the process and a counter:
        // no two calls of one process, nor two processes, walk alike.
        let mut x = nanos ^ (u64::from(std::process::id()) << 20) ^ NEXT.fetch_add(0x9e37_79b9, Ordering::Relaxed);
        x = (x ^ (x >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^= x >> 29;
        let port = FIRST + (x >> 40) as u16 % COUNT;
        if TcpListener::bind((ip, port)).is_ok() {
            return Ok(port);
        }
    }
    TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
}

/// `free_port` on 127.0.0.1.
pub fn free_loopback_port() -> std::io::Result<u16> {
    free_port(IpAddr::from([127, 0, 0, 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_free_and_spread() {
        let ports: Vec<u16> = (0..50).map(|_| free_loopback_port().unwrap()).collect();
        for &p in &ports {
            assert!((FIRST..FIRST + COUNT).contains(&p), "{p}");
        }
        let distinct: std::collections::BTreeSet<_> = ports.iter().collect();
        assert!(distinct.len() >= 45, "{} distinct of 50: {ports:?}", distinct.len());
        // One held is not given again while held.
        let held = TcpListener::bind(("127.0.0.1", ports[0])).unwrap();
        for _ in 0..200 {
            assert_ne!(free_loopback_port().unwrap(), ports[0]);
        }
        drop(held);
    }
}
