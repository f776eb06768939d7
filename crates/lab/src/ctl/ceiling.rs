//! What the instrument costs: the load driver runs the same load
//! (switches, MACs, mode, version, window) against the reference null
//! responder (crate `ofref`, the least any controller can do), and its
//! figure there is the driver's ceiling on this machine. One run of it is
//! as long as a trial (the same warm-up and loops), and it is taken more
//! than once, interleaved with the target's trials (`due_before`): before
//! the first, before the middle one, after the last. The ceiling is the
//! runs' median and the report states their spread. Each run's sample is
//! on disk first. A target whose figure comes within 20 % of the ceiling
//! is flagged (the driver, not the controller, may be the limit); when the
//! runs spread more than that margin, or the target goes above the
//! ceiling, the warning says the ceiling is unreliable instead of
//! printing a share as if it meant something.

use report::Sample;

/// A target within this share of the ceiling is flagged.
pub const NEAR: f64 = 0.8;

/// Runs that spread more than this (max - min over the median) make the
/// ceiling unreliable: the flag's own margin is 20 %.
pub const SPREAD_MAX: f64 = 0.2;

/// Whether a ceiling run is taken just before trial `trial` of `trials`
/// (0-based): before the first and, from two trials on, before the middle
/// one. One more is taken after the last trial, so there are always at
/// least two, around the trials.
pub fn due_before(trial: u32, trials: u32) -> bool {
    trial == 0 || (trials >= 2 && trial == trials / 2)
}

/// The driver against the reference responder, for one scenario
/// (each run measured by `ctlbench::ceiling`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ceiling {
    /// cbench's figure (every FLOW_MOD or PACKET_OUT), per second: the
    /// runs' median.
    pub responses_per_s: f64,
    /// Answers matched to a request, per second: the runs' median.
    pub matched_per_s: f64,
    /// The runs' median of their round-trip medians.
    pub rtt_us_p50: f64,
    /// Each run, in the order taken.
    pub runs: Vec<ctlbench::ceiling::Ceiling>,
    /// (max - min) / median of the runs' responses per second; None for
    /// a single run.
    pub spread: Option<f64>,
    /// Where the driver ran: "on this machine", or over which workers.
    #[serde(skip)]
    pub place: String,
}

impl Ceiling {
    /// One run measured on this machine.
    pub fn here(c: ctlbench::ceiling::Ceiling) -> Ceiling {
        Ceiling {
            responses_per_s: c.responses_per_s,
            matched_per_s: c.matched_per_s,
            rtt_us_p50: c.rtt_us_p50,
            runs: vec![c],
            spread: None,
            place: "on this machine".into(),
        }
    }

    /// Adds the runs of `other` (the same scenario, taken later).
    pub fn add(&mut self, other: Ceiling) {
        self.runs.extend(other.runs);
        let of =
            |f: fn(&ctlbench::ceiling::Ceiling) -> f64| stats::median(&self.runs.iter().map(f).collect::<Vec<_>>());
        self.responses_per_s = of(|r| r.responses_per_s);
        self.matched_per_s = of(|r| r.matched_per_s);
        self.rtt_us_p50 = of(|r| r.rtt_us_p50);
        let rates: Vec<f64> = self.runs.iter().map(|r| r.responses_per_s).collect();
        let (lo, hi) = rates.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(*r), hi.max(*r))
        });
        self.spread = (rates.len() >= 2 && self.responses_per_s > 0.0).then(|| (hi - lo) / self.responses_per_s);
    }

    /// The same runs read by another figure (a cluster compares first
    /// answers: the matched responses stand for the responses).
    pub fn by_matched(&self) -> Ceiling {
        let runs = self
            .runs
            .iter()
            .map(|r| ctlbench::ceiling::Ceiling {
                responses_per_s: r.matched_per_s,
                ..*r
            })
            .collect::<Vec<_>>();
        let mut c = Ceiling {
            runs: Vec::new(),
            ..self.clone()
        };
        c.add(Ceiling { runs, ..self.clone() });
        c
    }

    /// Whether the runs spread more than the flag's margin.
    pub fn unreliable(&self) -> bool {
        self.spread.is_some_and(|s| s > SPREAD_MAX)
    }

    /// The sample that records run `k` (the latest one added).
    pub fn sample(&self, scenario: &str, k: u32) -> Sample {
        let r = self.runs.last().expect("a ceiling has a run");
        Sample::of(
            report::CEILING_KIND,
            scenario.to_string(),
            k,
            [
                ("responses_per_s", r.responses_per_s),
                ("matched_per_s", r.matched_per_s),
                ("rtt_p50_us", r.rtt_us_p50),
            ],
        )
    }

    /// The runs' lowest and highest responses per second.
    fn range(&self) -> (f64, f64) {
        self.runs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r.responses_per_s), hi.max(r.responses_per_s))
            })
    }

    /// How it was taken, in words: "the median of 3 runs ... (min..max,
    /// spread S %)".
    fn runs_text(&self) -> String {
        let (lo, hi) = self.range();
        match self.spread {
            None => "1 run as long as a trial".to_string(),
            Some(s) => format!(
                "the median of {} runs as long as a trial, interleaved with the trials: {}..{}, spread {:.0} %",
                self.runs.len(),
                report::fmt_num(lo),
                report::fmt_num(hi),
                100.0 * s
            ),
        }
    }

    /// The report's line for it.
    pub fn line(&self, scenario: &str) -> String {
        let mut l = format!(
            "{scenario}: the driver's own ceiling {}, against the reference null responder (crates/ofref) with the same load: {} responses/s ({}; {} matched/s, rtt p50 {:.1} us)",
            self.place,
            report::fmt_num(self.responses_per_s),
            self.runs_text(),
            report::fmt_num(self.matched_per_s),
            self.rtt_us_p50
        );
        if self.unreliable() {
            l.push_str(&format!(
                "; UNRELIABLE: its runs spread more than {:.0} %, so no share of it is meaningful (a busy host, or a driver that is not steady at this load)",
                100.0 * SPREAD_MAX
            ));
        }
        l
    }

    /// A warning when `figure` (responses/s) comes within 20 % of the
    /// ceiling. A share is printed only when the ceiling is reliable and
    /// the figure is under it; otherwise the warning says why the ceiling
    /// cannot judge the figure.
    pub fn warning(&self, scenario: &str, figure: f64) -> Option<String> {
        if self.responses_per_s <= 0.0 || figure < NEAR * self.responses_per_s {
            return None;
        }
        let share = figure / self.responses_per_s;
        Some(if self.unreliable() {
            format!(
                "WARNING {scenario}: {} responses/s comes near the driver's own ceiling ({}), but that ceiling is unreliable: its runs spread {:.0} % ({}); the driver may be the limit and this run cannot tell",
                report::fmt_num(figure),
                report::fmt_num(self.responses_per_s),
                100.0 * self.spread.unwrap_or(0.0),
                self.runs_text()
            )
        } else if share > 1.0 {
            format!(
                "WARNING {scenario}: {} responses/s is above the driver's own ceiling ({}, {}): the ceiling is unreliable here (the reference responder, not the driver, set it, or the host was busier while it ran); the driver may be the limit",
                report::fmt_num(figure),
                report::fmt_num(self.responses_per_s),
                self.runs_text()
            )
        } else {
            format!(
                "WARNING {scenario}: {} responses/s is {:.0} % of the driver's own ceiling ({}, {}): the driver, not the controller, may be the limit",
                report::fmt_num(figure),
                100.0 * share,
                report::fmt_num(self.responses_per_s),
                self.runs_text()
            )
        })
    }
}

/// Measures one ceiling run for `cfg` on this machine
/// (`ctlbench::ceiling`); None inside when it does not apply, or (outer)
/// when a stop signal came meanwhile.
#[allow(clippy::type_complexity)]
pub fn measure(
    cfg: &ctlbench::Config,
    rt: &tokio::runtime::Runtime,
    stop: &crate::stop::Stop,
) -> Option<Result<Option<Ceiling>, ctlbench::ceiling::CeilingError>> {
    let fan_out = cfg.members.len();
    let r = stop.block_on_unless_stopped(rt, ctlbench::ceiling::measure(cfg))?;
    Some(r.map(|c| {
        c.map(|c| {
            let c = Ceiling::here(c);
            if fan_out == 0 {
                return c;
            }
            Ceiling {
                place: format!(
                    "{}, at a cluster's fan-out ({fan_out} sessions per switch to the responder, each answering every request; compared by first answers; a lower bound where only masters answer, the driver then reading one answer per request instead of {fan_out})",
                    c.place
                ),
                ..c
            }
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::{due_before, Ceiling};

    fn run(r: f64) -> ctlbench::ceiling::Ceiling {
        ctlbench::ceiling::Ceiling {
            responses_per_s: r,
            matched_per_s: r,
            rtt_us_p50: 10.0,
        }
    }

    fn of(runs: &[f64]) -> Ceiling {
        let mut c = Ceiling::here(run(runs[0]));
        for r in &runs[1..] {
            c.add(Ceiling::here(run(*r)));
        }
        c
    }

    #[test]
    fn a_target_is_flagged_only_within_20_percent_of_the_ceiling() {
        let c = of(&[1_000_000.0, 990_000.0, 1_010_000.0]);
        assert_eq!(c.responses_per_s, 1_000_000.0, "the median");
        assert!((c.spread.unwrap() - 0.02).abs() < 1e-9);
        assert!(c.warning("s", 799_000.0).is_none());
        let w = c.warning("s", 800_000.0).unwrap();
        assert!(w.contains("80 %") && w.contains("may be the limit"), "{w}");
        assert!(w.contains("the median of 3 runs"), "{w}");
        let none = Ceiling {
            responses_per_s: 0.0,
            ..c.clone()
        };
        assert!(none.warning("s", 10.0).is_none());
    }

    #[test]
    fn no_share_above_100_percent_and_no_share_of_a_spread_ceiling() {
        // Above a steady ceiling: flagged, with no share printed.
        let c = of(&[1_000_000.0, 1_000_000.0]);
        let w = c.warning("s", 1_200_000.0).unwrap();
        assert!(
            w.contains("above the driver's own ceiling") && w.contains("unreliable"),
            "{w}"
        );
        assert!(!w.contains("120 %"), "{w}");
        // Runs 57 k to 187 k apart (as seen): unreliable, said in the
        // line and in the warning, and no share.
        let c = of(&[57_000.0, 187_000.0, 120_000.0]);
        assert!(c.unreliable());
        assert!(c.line("s").contains("UNRELIABLE"), "{}", c.line("s"));
        let w = c.warning("s", 116_000.0).unwrap();
        assert!(w.contains("unreliable") && w.contains("spread 108 %"), "{w}");
        assert!(!w.contains("97 %"), "{w}");
        assert!(c.warning("s", 50_000.0).is_none());
        // One run: no spread, never unreliable by spread.
        let one = of(&[100.0]);
        assert_eq!(one.spread, None);
        assert!(!one.unreliable());
    }

    #[test]
    fn runs_are_taken_around_and_between_the_trials() {
        let before = |n: u32| (0..n).filter(|t| due_before(*t, n)).collect::<Vec<_>>();
        assert_eq!(before(1), vec![0]);
        assert_eq!(before(2), vec![0, 1]);
        assert_eq!(before(10), vec![0, 5]);
        // With the one after the last trial: two runs at least, three from
        // two trials on.
    }

    #[test]
    fn a_cluster_reads_the_runs_by_first_answers() {
        let mut c = of(&[100.0, 120.0]);
        c.runs[0].matched_per_s = 50.0;
        c.runs[1].matched_per_s = 60.0;
        let m = c.by_matched();
        assert_eq!(m.runs.len(), 2);
        assert_eq!(m.responses_per_s, 55.0);
    }
}
