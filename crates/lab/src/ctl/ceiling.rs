//! What the instrument costs: before a scenario is measured, the load
//! driver runs the same load (switches, MACs, mode, version, window)
//! against the reference null responder (crate `ofref`, the least any
//! controller can do), and its figure there is the driver's ceiling on
//! this machine. The report states it, the sample is on disk first, and a
//! target whose figure comes within 20 % of it is flagged: the driver, not
//! the controller, may be the limit.

use report::Sample;

/// A target within this share of the ceiling is flagged.
pub const NEAR: f64 = 0.8;

/// The driver against the reference responder, for one scenario
/// (measured by `ctlbench::ceiling`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ceiling {
    /// cbench's figure (every FLOW_MOD or PACKET_OUT), per second.
    pub responses_per_s: f64,
    /// Answers matched to a request, per second.
    pub matched_per_s: f64,
    pub rtt_us_p50: f64,
    /// Where the driver ran: "on this machine", or over which workers.
    #[serde(skip)]
    pub place: String,
}

impl Ceiling {
    /// The ceiling measured on this machine.
    pub fn here(c: ctlbench::ceiling::Ceiling) -> Ceiling {
        Ceiling {
            responses_per_s: c.responses_per_s,
            matched_per_s: c.matched_per_s,
            rtt_us_p50: c.rtt_us_p50,
            place: "on this machine".into(),
        }
    }
}

impl Ceiling {
    /// The sample that records it.
    pub fn sample(&self, scenario: &str) -> Sample {
        Sample::of(
            report::CEILING_KIND,
            scenario.to_string(),
            0,
            [
                ("responses_per_s", self.responses_per_s),
                ("matched_per_s", self.matched_per_s),
                ("rtt_p50_us", self.rtt_us_p50),
            ],
        )
    }

    /// The report's line for it.
    pub fn line(&self, scenario: &str) -> String {
        format!(
            "{scenario}: the driver's own ceiling {}, against the reference null responder (crates/ofref) with the same load just before: {} responses/s ({} matched/s, rtt p50 {:.1} us)",
            self.place,
            report::fmt_num(self.responses_per_s),
            report::fmt_num(self.matched_per_s),
            self.rtt_us_p50
        )
    }

    /// A warning when `figure` (responses/s) comes within 20 % of the ceiling.
    pub fn warning(&self, scenario: &str, figure: f64) -> Option<String> {
        (self.responses_per_s > 0.0 && figure >= NEAR * self.responses_per_s).then(|| {
            format!(
                "WARNING {scenario}: {} responses/s is {:.0} % of the driver's own ceiling ({}): the driver, not the controller, may be the limit",
                report::fmt_num(figure),
                100.0 * figure / self.responses_per_s,
                report::fmt_num(self.responses_per_s)
            )
        })
    }
}

/// Measures the ceiling for `cfg` on this machine (`ctlbench::ceiling`).
pub fn measure(cfg: &ctlbench::Config, rt: &tokio::runtime::Runtime) -> Result<Option<Ceiling>, String> {
    let fan_out = cfg.members.len();
    Ok(rt.block_on(ctlbench::ceiling::measure(cfg))?.map(|c| {
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
    }))
}

#[cfg(test)]
mod tests {
    use super::Ceiling;

    #[test]
    fn a_target_is_flagged_only_within_20_percent_of_the_ceiling() {
        let c = Ceiling {
            responses_per_s: 1_000_000.0,
            matched_per_s: 1_000_000.0,
            rtt_us_p50: 10.0,
            place: "on this machine".into(),
        };
        assert!(c.warning("s", 799_000.0).is_none());
        let w = c.warning("s", 800_000.0).unwrap();
        assert!(w.contains("80 %") && w.contains("may be the limit"), "{w}");
        assert!(c.warning("s", 1_200_000.0).is_some());
        let none = Ceiling {
            responses_per_s: 0.0,
            ..c.clone()
        };
        assert!(none.warning("s", 10.0).is_none());
    }
}
