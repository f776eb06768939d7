//! The RFC 2544 / RFC 9004 searches, apart from any traffic: each takes a
//! [`Device`] (something that offers frames to a device under test and
//! reports what came back) and decides the next trial from the last, so
//! the same procedure runs against a real switch (`sdnlab bench dp`) and
//! against an in-memory model in the tests below.
//!
//! - Throughput (RFC 2544 26.1): a binary search on the offered rate for the
//!   highest rate without loss, confirmed by a trial at full duration (RFC
//!   9004's loss verification); a loss there steps down.
//! - Frame loss rate (26.3): from the generator's full rate down in steps
//!   of 10 % until two consecutive trials lose nothing.
//! - Back-to-back (26.4, RFC 9004 section 3): the longest burst at full
//!   rate that crosses without loss, by binary search on its length.

/// What a trial tells the searches.
pub trait Observed {
    /// Frames the generator sent.
    fn sent(&self) -> u64;
    /// Frames the receiver got back.
    fn received(&self) -> u64;
    /// The rate the generator really offered, frames/s.
    fn offered_pps(&self) -> f64;
    /// The rate frames came back at, frames/s.
    fn rx_pps(&self) -> f64;
    fn lost(&self) -> bool {
        self.received() < self.sent()
    }
}

/// A device under test with its generator and receiver.
pub trait Device {
    type Trial: Observed;
    /// Why a trial or a burst could not run.
    type Error: std::error::Error + 'static;
    /// One trial of `seconds` at `rate` frames/s (`None`: as fast as the
    /// generator goes); `test` names it in the samples.
    fn trial(&mut self, test: &'static str, rate: Option<f64>, seconds: f64) -> Result<Self::Trial, Self::Error>;
    /// One burst of `frames` back to back at the generator's full rate:
    /// whether all crossed, and the rate they were sent at (frames/s).
    fn burst(&mut self, frames: u64) -> Result<(bool, f64), Self::Error>;
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MethodError<E: std::error::Error + 'static> {
    /// Even the lowest rate tried lost frames at full duration.
    #[error("no rate confirmed without loss (the lowest tried: {lowest_pps:.0} frames/s)")]
    NoLossFreeRate { lowest_pps: f64 },
    /// The generator, the receiver or the device failed.
    #[error(transparent)]
    Device(E),
}

/// Durations and resolution of the throughput search.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    /// The search stops when the bracket is within this fraction of its top.
    pub resolution: f64,
    /// Seconds of each search trial.
    pub search_s: f64,
    /// Seconds of the confirming trial (RFC 2544: at least 60).
    pub trial_s: f64,
}

/// The throughput and the trial that confirmed it.
#[derive(Debug)]
pub struct Throughput<T> {
    /// Frames/s the confirming trial offered without loss.
    pub rate: f64,
    pub trial: T,
    /// The generator at full rate lost nothing: the device is at least as
    /// fast as the generator, and `rate` is the generator's ceiling, not
    /// the device's.
    pub generator_bound: bool,
}

/// What the binary search of RFC 2544 26.1 found, before any confirmation.
#[derive(Debug)]
pub struct LossFree<T> {
    /// The highest rate tried that lost nothing (0: none did).
    pub rate: f64,
    /// The trial at that rate.
    pub trial: Option<T>,
    /// The lowest rate tried.
    pub lowest: f64,
}

/// The binary search of RFC 2544 26.1: between nothing and what `max` (a
/// trial at the generator's full rate) offered, trials of `seconds` until
/// the bracket is within `resolution` of its top. The first probe goes
/// just under what came back at full rate: a device forwards about that
/// much, so the bracket starts narrow.
pub fn loss_free_search<D: Device>(
    d: &mut D,
    max: &D::Trial,
    resolution: f64,
    seconds: f64,
) -> Result<LossFree<D::Trial>, MethodError<D::Error>> {
    let (mut lo, mut hi) = (0.0f64, max.offered_pps());
    let mut best = None;
    let mut lowest = hi;
    for probe in 0..20 {
        if hi - lo <= resolution * hi {
            break;
        }
        let rate = if probe == 0 && max.rx_pps() > 0.0 {
            max.rx_pps().min(hi) * (1.0 - resolution / 2.0)
        } else {
            (lo + hi) / 2.0
        };
        let t = d
            .trial("throughput_search", Some(rate), seconds)
            .map_err(MethodError::Device)?;
        lowest = lowest.min(rate);
        if t.lost() {
            hi = rate;
        } else {
            lo = rate;
            best = Some(t);
        }
    }
    Ok(LossFree {
        rate: lo,
        trial: best,
        lowest,
    })
}

/// RFC 2544 26.1 with RFC 9004's confirmation at full duration.
pub fn throughput<D: Device>(d: &mut D, s: Search) -> Result<Throughput<D::Trial>, MethodError<D::Error>> {
    let max = d
        .trial("throughput_max", None, s.search_s)
        .map_err(MethodError::Device)?;
    let generator_bound = !max.lost();
    let found = loss_free_search(d, &max, s.resolution, s.search_s)?;
    let (lo, mut lowest) = (found.rate, found.lowest);
    // A loss at full duration steps down by the resolution, then twice as
    // far each time (a noisy switch may need more than one step).
    let mut rate = lo;
    for step in 0..8 {
        if rate <= 0.0 {
            break;
        }
        lowest = lowest.min(rate);
        let t = d
            .trial("throughput_confirm", Some(rate), s.trial_s)
            .map_err(MethodError::Device)?;
        if !t.lost() {
            return Ok(Throughput {
                rate: t.offered_pps(),
                trial: t,
                generator_bound,
            });
        }
        rate *= 1.0 - (s.resolution * f64::from(1u32 << step)).min(0.5);
    }
    Err(MethodError::NoLossFreeRate { lowest_pps: lowest })
}

/// RFC 2544 26.3: (offered rate, percent lost) from `max` down in steps of
/// 10 % of it, until two trials in a row lose nothing (or ten steps).
pub fn frame_loss_rate<D: Device>(d: &mut D, max: f64, trial_s: f64) -> Result<Vec<(f64, f64)>, MethodError<D::Error>> {
    let mut out = Vec::new();
    let mut clean_in_a_row = 0;
    for step in 0..10 {
        let rate = max * (1.0 - 0.1 * step as f64);
        let t = d.trial("loss", Some(rate), trial_s).map_err(MethodError::Device)?;
        let pct = 100.0 * t.sent().saturating_sub(t.received()) as f64 / t.sent().max(1) as f64;
        out.push((rate, pct));
        clean_in_a_row = if pct == 0.0 { clean_in_a_row + 1 } else { 0 };
        if clean_in_a_row == 2 {
            break;
        }
    }
    Ok(out)
}

/// One back-to-back result (RFC 2544 26.4, RFC 9004 section 3).
#[derive(Debug, PartialEq)]
pub struct BackToBack {
    /// The longest loss-free burst of each search.
    pub bursts: Vec<u64>,
    /// Their mean.
    pub frames: f64,
    /// The rate the loss-free bursts were sent at (median; frames/s), or
    /// `max_rate` when none reported one.
    pub burst_rate: f64,
    /// Even the longest burst tried crossed without loss every time.
    pub unbounded: bool,
}

/// The longest loss-free burst, by binary search between 1 frame and
/// `longest`, `repetitions` times; `max_rate` stands in for the burst rate
/// when no burst reports one.
pub fn back_to_back<D: Device>(
    d: &mut D,
    longest: u64,
    repetitions: usize,
    max_rate: f64,
) -> Result<BackToBack, MethodError<D::Error>> {
    let longest = longest.max(2);
    let (mut bursts, mut rates, mut unbounded) = (Vec::new(), Vec::new(), true);
    for _ in 0..repetitions.max(1) {
        let (ok, rate) = d.burst(longest).map_err(MethodError::Device)?;
        if ok {
            bursts.push(longest);
            rates.push(rate);
            continue;
        }
        unbounded = false;
        let (mut lo, mut hi) = (0u64, longest);
        while hi - lo > (lo / 100).max(1) {
            let mid = (lo + hi) / 2;
            let (ok, rate) = d.burst(mid).map_err(MethodError::Device)?;
            if ok {
                lo = mid;
                rates.push(rate);
            } else {
                hi = mid;
            }
        }
        bursts.push(lo);
    }
    rates.retain(|x| *x > 0.0);
    Ok(BackToBack {
        frames: bursts.iter().sum::<u64>() as f64 / bursts.len() as f64,
        bursts,
        burst_rate: if rates.is_empty() {
            max_rate
        } else {
            stats::median(&rates)
        },
        unbounded,
    })
}

/// RFC 9004 3.3: the buffer time a burst implies (frames / burst rate), and
/// corrected for what the device forwarded meanwhile at its throughput T:
/// only B(1 - T/R) frames were held, so B/R (1 - T/R). Milliseconds.
pub fn buffer_times_ms(b: &BackToBack, throughput: f64) -> (f64, f64) {
    let implied = b.frames / b.burst_rate;
    let corrected = implied * (1.0 - (throughput / b.burst_rate).min(1.0));
    (implied * 1e3, corrected * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An in-memory switch: it forwards up to `capacity_pps`, holds up to
    /// `buffer` frames of a burst, and its generator sends at most
    /// `generator_pps`. Every trial is recorded.
    struct Model {
        capacity_pps: f64,
        generator_pps: f64,
        buffer: u64,
        /// Frames lost at every rate (a broken switch).
        always_loses: bool,
        trials: Vec<(&'static str, Option<f64>, f64)>,
    }

    #[derive(Debug)]
    struct T {
        sent: u64,
        received: u64,
        offered: f64,
        rx: f64,
    }

    impl Observed for T {
        fn sent(&self) -> u64 {
            self.sent
        }
        fn received(&self) -> u64 {
            self.received
        }
        fn offered_pps(&self) -> f64 {
            self.offered
        }
        fn rx_pps(&self) -> f64 {
            self.rx
        }
    }

    impl Model {
        fn new(capacity_pps: f64, generator_pps: f64) -> Model {
            Model {
                capacity_pps,
                generator_pps,
                buffer: 1000,
                always_loses: false,
                trials: Vec::new(),
            }
        }
    }

    impl Device for Model {
        type Trial = T;
        type Error = std::convert::Infallible;
        fn trial(&mut self, test: &'static str, rate: Option<f64>, seconds: f64) -> Result<T, Self::Error> {
            self.trials.push((test, rate, seconds));
            let offered = rate.unwrap_or(self.generator_pps).min(self.generator_pps);
            let sent = (offered * seconds) as u64;
            let forwarded = (self.capacity_pps.min(offered) * seconds) as u64;
            let received = if self.always_loses {
                sent.saturating_sub(1)
            } else {
                forwarded.min(sent)
            };
            Ok(T {
                sent,
                received,
                offered,
                rx: received as f64 / seconds,
            })
        }
        fn burst(&mut self, frames: u64) -> Result<(bool, f64), Self::Error> {
            // At full rate the switch drains at its capacity while the
            // burst arrives: it holds what comes in faster than that.
            let excess = 1.0 - (self.capacity_pps / self.generator_pps).min(1.0);
            let held = (frames as f64 * excess) as u64;
            Ok((held <= self.buffer, self.generator_pps))
        }
    }

    const S: Search = Search {
        resolution: 0.01,
        search_s: 1.0,
        trial_s: 10.0,
    };

    #[test]
    fn throughput_finds_the_capacity_within_the_resolution() {
        for capacity in [1_000.0, 123_456.0, 900_000.0] {
            let mut m = Model::new(capacity, 1_000_000.0);
            let t = throughput(&mut m, S).unwrap();
            assert!(!t.generator_bound);
            assert!(t.rate <= capacity, "{} > {capacity}", t.rate);
            assert!(
                t.rate >= capacity * (1.0 - 2.0 * S.resolution),
                "{} for {capacity}",
                t.rate
            );
            // Confirmed at full duration, without loss.
            assert!(m.trials.iter().any(|x| x.0 == "throughput_confirm" && x.2 == S.trial_s));
            assert_eq!(t.trial.sent, t.trial.received);
        }
    }

    /// A device faster than the generator: the result is the generator's
    /// rate, and it says so.
    #[test]
    fn a_device_faster_than_the_generator_is_flagged() {
        let mut m = Model::new(5_000_000.0, 1_000_000.0);
        let t = throughput(&mut m, S).unwrap();
        assert!(t.generator_bound);
        assert!(t.rate <= 1_000_000.0 && t.rate > 980_000.0, "{}", t.rate);
    }

    /// Nothing passes even at the lowest rate: an error naming it, not a
    /// zero figure, and the search ends.
    #[test]
    fn nothing_passing_at_the_lowest_rate_is_an_error() {
        let mut m = Model::new(1_000.0, 1_000_000.0);
        m.always_loses = true;
        match throughput(&mut m, S) {
            Err(MethodError::NoLossFreeRate { lowest_pps }) => assert!(lowest_pps > 0.0),
            other => panic!("{other:?}"),
        }
        assert!(m.trials.len() < 40, "{} trials", m.trials.len());
        // A device that forwards nothing at all.
        let mut dead = Model::new(0.0, 1_000_000.0);
        assert!(matches!(
            throughput(&mut dead, S),
            Err(MethodError::NoLossFreeRate { .. })
        ));
        assert!(dead.trials.iter().all(|t| t.1 != Some(0.0)), "a trial at rate 0");
    }

    #[test]
    fn frame_loss_rate_steps_down_until_two_clean_trials() {
        let mut m = Model::new(650_000.0, 1_000_000.0);
        let curve = frame_loss_rate(&mut m, 1_000_000.0, 1.0).unwrap();
        let rates: Vec<f64> = curve.iter().map(|c| c.0).collect();
        assert_eq!(rates.len(), 6, "{curve:?}");
        assert!((curve[0].1 - 35.0).abs() < 0.01, "{curve:?}");
        assert_eq!((curve[4].1, curve[5].1), (0.0, 0.0));
        assert!(curve[3].1 > 0.0);
    }

    #[test]
    fn back_to_back_finds_the_buffer_and_the_buffer_time() {
        // Half the generator's rate drains: a burst of 2 x buffer fills it.
        let mut m = Model::new(500_000.0, 1_000_000.0);
        let b = back_to_back(&mut m, 1_000_000, 3, 1_000_000.0).unwrap();
        assert!(!b.unbounded);
        assert_eq!(b.bursts.len(), 3);
        assert!((b.frames - 2000.0).abs() <= 2000.0 * 0.01 + 1.0, "{b:?}");
        let (implied, corrected) = buffer_times_ms(&b, 500_000.0);
        assert!(
            (implied - 2.0).abs() < 0.05 && (corrected - 1.0).abs() < 0.05,
            "{implied} {corrected}"
        );
        // A device faster than the generator holds any burst.
        let mut fast = Model::new(2_000_000.0, 1_000_000.0);
        let b = back_to_back(&mut fast, 50_000, 2, 1_000_000.0).unwrap();
        assert!(b.unbounded && b.frames == 50_000.0);
    }
}
