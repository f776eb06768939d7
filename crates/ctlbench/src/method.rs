//! The RFC 8456 searches as state machines with no I/O and no clock
//! (quinn-proto style): the benchmark asks what to do next, does it
//! against the controller, and records what it saw. The same decisions
//! run against the real controller (`rate::search`,
//! `topology_tests::table_capacity`) and, in the unit tests below, against
//! in-memory controllers whose answer is known.

use std::ops::Range;
use std::time::Duration;

/// What one round of the loss-free rate search observed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundSeen {
    /// PACKET_INs per second the driver managed to send.
    pub sent_per_s: f64,
    /// Those the controller answered, per second.
    pub answered_per_s: f64,
    /// Sessions the controller dropped during the round.
    pub sessions_lost: u64,
}

/// RFC 8456 section 5.2.1 (Asynchronous Message Processing Rate) as a
/// loss-free search: the first round is unpaced and finds what the
/// controller answers at most; each next round offers exactly what the
/// previous one got answered, until a round's answered rate is within
/// `tolerance` of what it offered (nothing lost) and the driver kept up.
#[derive(Clone, Debug)]
pub struct LossFreeRate {
    max_rounds: usize,
    tolerance: f64,
    offered: Vec<f64>,
    seen: Vec<RoundSeen>,
    converged: bool,
    done: bool,
}

impl LossFreeRate {
    /// At least two rounds are allowed (one unpaced, one to confirm).
    pub fn new(max_rounds: usize, tolerance: f64) -> LossFreeRate {
        LossFreeRate {
            max_rounds: max_rounds.max(2),
            tolerance,
            offered: Vec::new(),
            seen: Vec::new(),
            converged: false,
            done: false,
        }
    }

    /// The rate to offer next (0: unpaced), or None when the search is over.
    pub fn next_offer(&self) -> Option<f64> {
        if self.done || self.seen.len() >= self.max_rounds {
            return None;
        }
        Some(self.seen.last().map_or(0.0, |r| r.answered_per_s))
    }

    /// Records the round just run at `next_offer()`.
    pub fn record(&mut self, seen: RoundSeen) {
        let offered = self.next_offer().unwrap_or(0.0);
        self.offered.push(offered);
        self.seen.push(seen);
        let t = self.tolerance;
        if seen.answered_per_s <= 0.0 || seen.sessions_lost > 0 {
            // Nothing to offer next, or a controller that drops sessions
            // under this load has no loss-free rate here.
            self.done = true;
        } else if offered > 0.0
            && (seen.answered_per_s - offered).abs() <= t * offered
            && seen.sent_per_s >= offered * (1.0 - t)
        {
            self.converged = true;
            self.done = true;
        }
    }

    /// Every round as (offered, seen).
    pub fn rounds(&self) -> impl Iterator<Item = (f64, RoundSeen)> + '_ {
        self.offered.iter().copied().zip(self.seen.iter().copied())
    }

    /// The loss-free rate found: the last round's answered rate (the
    /// caller flags it when `converged()` is false).
    pub fn rate(&self) -> f64 {
        self.seen.last().map_or(0.0, |r| r.answered_per_s)
    }

    pub fn converged(&self) -> bool {
        self.converged
    }

    pub fn sessions_lost(&self) -> u64 {
        self.seen.iter().map(|r| r.sessions_lost).sum()
    }
}

/// Table growth, the rule of RFC 8456 section 5.2.5 (Forwarding Table
/// Capacity): `step` more entries at a time (destinations the controller
/// must install flows for, or rules sent to a switch) until a step adds
/// less than a tenth of `step` flows (the table stopped growing), a step
/// fails (an error, a refused rule), Td passes, or `max` are in. Shared by
/// the controller's table-capacity tests and `bench dp`'s switch table
/// `capacity` scenario.
#[derive(Clone, Debug)]
pub struct TableGrowth {
    step: u64,
    max: u64,
    td: Duration,
    sent: u64,
    flows: u64,
    note: Option<String>,
}

impl TableGrowth {
    /// `flows_before`: what the switch held before the test.
    /// `flows_before`: what the switch held before the test; `td`:
    /// `Duration::MAX` for none.
    pub fn new(step: u64, max: u64, td: Duration, flows_before: u64) -> TableGrowth {
        TableGrowth {
            step: step.max(1),
            max,
            td,
            sent: 0,
            flows: flows_before,
            note: None,
        }
    }

    /// The destinations of the next step, or None when the test is over.
    pub fn next_step(&self) -> Option<Range<u64>> {
        if self.note.is_some() || self.sent >= self.max {
            return None;
        }
        Some(self.sent..self.sent.saturating_add(self.step).min(self.max))
    }

    /// Records the step just run: the switch's settled flow count, the
    /// failure that ended the step (if any), and the time since the test
    /// began.
    pub fn record(&mut self, flows_now: u64, failure: Option<String>, elapsed: Duration) {
        let Some(step) = self.next_step() else { return };
        self.sent = step.end;
        let grew = flows_now.saturating_sub(self.flows);
        let before = self.flows;
        self.flows = self.flows.max(flows_now);
        let (sent, flows, step) = (self.sent, self.flows, self.step);
        self.note = if let Some(e) = failure {
            Some(format!(
                "requests failed after {sent} destinations ({flows} flows): {e}"
            ))
        } else if elapsed >= self.td {
            Some(format!(
                "stopped at Td ({:.1} s) with {sent} destinations",
                self.td.as_secs_f64()
            ))
        } else if grew < (step / 10).max(1) {
            Some(format!(
                "the flow count stopped growing at {flows} (a step of {step} added {grew} to {before})"
            ))
        } else {
            None
        };
    }

    /// Destinations sent to so far.
    pub fn destinations(&self) -> u64 {
        self.sent
    }

    /// The most flows the switch held.
    pub fn flows(&self) -> u64 {
        self.flows
    }

    /// Why the test stopped (empty when it reached `max`).
    pub fn note(&self) -> String {
        self.note.clone().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A controller that answers up to `capacity` PACKET_INs per second,
    /// behind a driver that sends at most `driver` per second.
    struct Controller {
        capacity: f64,
        driver: f64,
        /// Share of what it answers that it loses even below capacity.
        loss: f64,
    }

    impl Controller {
        fn round(&self, offered: f64) -> RoundSeen {
            let sent = if offered > 0.0 {
                offered.min(self.driver)
            } else {
                self.driver
            };
            RoundSeen {
                sent_per_s: sent,
                answered_per_s: sent.min(self.capacity) * (1.0 - self.loss),
                sessions_lost: 0,
            }
        }
    }

    fn search(c: &Controller, tolerance: f64) -> LossFreeRate {
        let mut s = LossFreeRate::new(10, tolerance);
        while let Some(offer) = s.next_offer() {
            s.record(c.round(offer));
        }
        s
    }

    #[test]
    fn the_search_finds_the_capacity_of_a_controller_slower_than_the_driver() {
        let s = search(
            &Controller {
                capacity: 40_000.0,
                driver: 100_000.0,
                loss: 0.0,
            },
            0.01,
        );
        assert!(s.converged());
        assert_eq!(s.rate(), 40_000.0);
        // One unpaced round, one confirming it.
        let offers: Vec<f64> = s.rounds().map(|(o, _)| o).collect();
        assert_eq!(offers, [0.0, 40_000.0]);
    }

    #[test]
    fn a_controller_faster_than_the_driver_is_bounded_by_the_driver() {
        let s = search(
            &Controller {
                capacity: 1e9,
                driver: 100_000.0,
                loss: 0.0,
            },
            0.01,
        );
        assert!(s.converged());
        assert_eq!(s.rate(), 100_000.0);
    }

    #[test]
    fn a_controller_that_answers_nothing_ends_the_search_at_once_unconverged() {
        let s = search(
            &Controller {
                capacity: 0.0,
                driver: 100_000.0,
                loss: 0.0,
            },
            0.01,
        );
        assert!(!s.converged());
        assert_eq!((s.rate(), s.rounds().count()), (0.0, 1));
    }

    #[test]
    fn a_controller_that_always_loses_more_than_the_tolerance_never_converges() {
        let s = search(
            &Controller {
                capacity: 50_000.0,
                driver: 100_000.0,
                loss: 0.05,
            },
            0.01,
        );
        assert!(!s.converged());
        assert_eq!(s.rounds().count(), 10, "it stops at the round limit");
        // Each round offered what the previous one got answered.
        let r: Vec<(f64, RoundSeen)> = s.rounds().collect();
        for w in r.windows(2) {
            assert_eq!(w[1].0, w[0].1.answered_per_s);
        }
        // Within the tolerance the same controller is loss-free.
        assert!(search(
            &Controller {
                capacity: 50_000.0,
                driver: 100_000.0,
                loss: 0.005
            },
            0.01
        )
        .converged());
    }

    #[test]
    fn a_dropped_session_ends_the_search() {
        let mut s = LossFreeRate::new(10, 0.01);
        s.record(RoundSeen {
            sent_per_s: 10.0,
            answered_per_s: 5.0,
            sessions_lost: 1,
        });
        assert_eq!((s.next_offer(), s.converged(), s.sessions_lost()), (None, false, 1));
    }

    /// A switch whose table holds `limit` flows, filled by a controller
    /// that installs one per destination.
    fn grow(limit: u64, step: u64, max: u64) -> TableGrowth {
        let mut g = TableGrowth::new(step, max, Duration::from_secs(30), 0);
        while let Some(batch) = g.next_step() {
            g.record(batch.end.min(limit), None, Duration::from_secs(1));
        }
        g
    }

    #[test]
    fn table_growth_stops_where_the_table_is_full() {
        let g = grow(2500, 1000, 20_000);
        assert_eq!((g.flows(), g.destinations()), (2500, 4000));
        assert!(g.note().contains("stopped growing at 2500"), "{}", g.note());
    }

    #[test]
    fn table_growth_reaches_max_when_the_table_is_never_full() {
        let g = grow(u64::MAX, 1000, 5500);
        assert_eq!((g.flows(), g.destinations(), g.note()), (5500, 5500, String::new()));
    }

    #[test]
    fn a_table_that_never_grows_ends_after_one_step() {
        let g = grow(0, 1000, 20_000);
        assert_eq!((g.flows(), g.destinations()), (0, 1000));
    }

    #[test]
    fn table_growth_stops_at_td_and_at_a_failure() {
        let mut g = TableGrowth::new(100, 1000, Duration::from_secs(5), 0);
        g.record(100, None, Duration::from_secs(6));
        assert!(g.next_step().is_none() && g.note().contains("Td"));
        let mut g = TableGrowth::new(100, 1000, Duration::from_secs(5), 0);
        g.record(100, Some("HTTP 500".into()), Duration::from_secs(1));
        assert!(g.next_step().is_none() && g.note().contains("HTTP 500"));
    }
}
