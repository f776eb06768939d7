//! A worker's clock against the coordinator's, as NTP estimates it over one
//! exchange: the coordinator reads its clock (t0), asks the worker's (t1),
//! reads its own again (t2). If the two legs took as long as each other,
//! the worker's clock is ahead by t1 - (t0 + t2) / 2; whatever the legs
//! took, the truth lies within (t2 - t0) / 2 of that. Of several exchanges
//! the one with the shortest round trip bounds it best.

use serde::Serialize;

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
}
