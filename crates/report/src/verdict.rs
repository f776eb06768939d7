//! Verdicts: which system under test is better on a metric, in one
//! condition, by how much, and how sure we are. Every pair of systems
//! measured in the same condition is compared by the two-sided
//! Mann-Whitney U test; the p-values of one report are corrected together
//! by Holm's method, and a difference is shown when the corrected p-value
//! is under 0.05. The suite report (systems in separate runs) and a single
//! run's report (systems named on its samples) both write these.

use crate::text::{esc, unit_text};
use crate::{fmt_num, Metric};
use serde::Serialize;

/// The level under which a corrected p-value shows a difference.
pub const ALPHA: f64 = 0.05;

/// One system's values of one metric in one condition.
#[derive(Clone, Debug)]
pub struct Group {
    /// Where the comparison belongs in the report (a suite's section id,
    /// or "" in a single run).
    pub section: String,
    pub metric: Metric,
    /// What is held equal between the systems compared ("64B", "5 extra rules").
    pub condition: String,
    /// The system under test.
    pub system: String,
    pub values: Vec<f64>,
}

/// One comparison of two systems on one metric and condition.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub section: String,
    pub metric: String,
    /// The condition both were measured in (named `scenario` in the
    /// suite's summary.json since its schema 1).
    pub scenario: String,
    pub a: String,
    pub b: String,
    pub median_a: f64,
    pub median_b: f64,
    pub n_a: usize,
    pub n_b: usize,
    /// Mann-Whitney U, two-sided.
    pub p: f64,
    /// `p` corrected by Holm over every comparison of the report.
    pub p_holm: f64,
    /// The better system when the difference is shown (p_holm < 0.05).
    pub better: Option<String>,
}

/// Every pair of systems in the same section, metric and condition,
/// compared; Holm's correction over all of them.
pub fn compare(groups: &[Group]) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    for (i, a) in groups.iter().enumerate() {
        for b in groups.iter().skip(i + 1) {
            if a.section != b.section
                || a.metric.name != b.metric.name
                || a.condition != b.condition
                || a.system == b.system
            {
                continue;
            }
            let (va, vb) = (&a.values, &b.values);
            let p = if va.len() >= 2 && vb.len() >= 2 {
                stats::mann_whitney_u(va, vb, stats::Alternative::TwoSided, stats::Method::Auto).p
            } else {
                f64::NAN
            };
            let (median_a, median_b) = (stats::median(va), stats::median(vb));
            // Who would be better; kept only if the corrected test shows it.
            let better = match a.metric.better {
                stats::Better::Higher if median_a >= median_b => a.system.clone(),
                stats::Better::Lower if median_a <= median_b => a.system.clone(),
                _ => b.system.clone(),
            };
            verdicts.push(Verdict {
                section: a.section.clone(),
                metric: a.metric.name.clone(),
                scenario: a.condition.clone(),
                a: a.system.clone(),
                b: b.system.clone(),
                median_a,
                median_b,
                n_a: va.len(),
                n_b: vb.len(),
                p,
                p_holm: f64::NAN,
                better: Some(better),
            });
        }
    }
    let tested: Vec<usize> = (0..verdicts.len()).filter(|&i| !verdicts[i].p.is_nan()).collect();
    let adjusted = stats::holm(&tested.iter().map(|&i| verdicts[i].p).collect::<Vec<_>>());
    for (&i, q) in tested.iter().zip(adjusted) {
        verdicts[i].p_holm = q;
    }
    for v in &mut verdicts {
        if v.p_holm.is_nan() || v.p_holm >= ALPHA {
            v.better = None;
        }
    }
    verdicts
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// The verdict in words, as HTML; `comparisons` is how many the Holm
/// correction was over.
pub fn html(v: &Verdict, m: &Metric, comparisons: usize) -> String {
    text(v, m, comparisons, |s| format!("<strong>{}</strong>", esc(s)), esc)
}

/// The verdict in words, as Markdown.
pub fn markdown(v: &Verdict, m: &Metric, comparisons: usize) -> String {
    text(v, m, comparisons, |s| format!("**{s}**"), |s| s.to_string())
}

fn text(
    v: &Verdict,
    m: &Metric,
    comparisons: usize,
    strong: impl Fn(&str) -> String,
    plain: impl Fn(&str) -> String,
) -> String {
    if v.p.is_nan() {
        return format!(
            "{} vs {}: too few trials to compare (n = {} and {}; at least 2 each).",
            plain(&v.a),
            plain(&v.b),
            v.n_a,
            v.n_b
        );
    }
    let test = format!(
        "Mann-Whitney U, {}, Holm-corrected over the report's {}; {} uncorrected",
        p_text(v.p_holm),
        comparisons_text(comparisons),
        p_text(v.p)
    );
    match &v.better {
        Some(better) => {
            let (good, bad, mg, mb) = if *better == v.a {
                (&v.a, &v.b, v.median_a, v.median_b)
            } else {
                (&v.b, &v.a, v.median_b, v.median_a)
            };
            let how = if mb != 0.0 && mg.is_finite() && mb.is_finite() {
                let d = (mg - mb).abs() / mb.abs() * 100.0;
                format!(" ({:.1} % {})", d, if mg > mb { "higher" } else { "lower" })
            } else {
                String::new()
            };
            format!(
                "{} is better than {}: median {} against {} {}{} ({test}).",
                strong(good),
                plain(bad),
                fmt_num(mg),
                fmt_num(mb),
                plain(&unit_text(&m.unit)),
                how
            )
        }
        None => {
            let floor = smallest_p(v.n_a, v.n_b);
            let why = if floor >= ALPHA {
                format!(
                    " With {} and {} trials the test cannot show a difference: its smallest p-value is {floor:.3}; take at least 4 trials each.",
                    v.n_a, v.n_b
                )
            } else {
                String::new()
            };
            format!(
                "No difference shown between {} and {}: median {} against {} {} ({test}).{why}",
                plain(&v.a),
                plain(&v.b),
                fmt_num(v.median_a),
                fmt_num(v.median_b),
                plain(&unit_text(&m.unit))
            )
        }
    }
}

fn comparisons_text(n: usize) -> String {
    if n == 1 {
        "1 comparison".into()
    } else {
        format!("{n} comparisons")
    }
}

/// The smallest two-sided p-value the exact Mann-Whitney U test can give
/// with `n` and `m` values: every value of one side below every value of
/// the other, 2 / C(n + m, n).
pub fn smallest_p(n: usize, m: usize) -> f64 {
    let (n, m) = (n.min(m), n.max(m));
    let ways = (1..=n).fold(1.0, |acc, i| acc * (m + i) as f64 / i as f64);
    (2.0 / ways).min(1.0)
}

/// How many comparisons had a p-value (what Holm corrected over).
pub fn tested(verdicts: &[Verdict]) -> usize {
    verdicts.iter().filter(|v| !v.p.is_nan()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(system: &str, values: &[f64]) -> Group {
        Group {
            section: String::new(),
            metric: Metric::new("pps", "frames/s", stats::Better::Higher),
            condition: String::new(),
            system: system.into(),
            values: values.to_vec(),
        }
    }

    /// 2 / C(n + m, n): 3 and 3 give 0.1 (scipy.stats.mannwhitneyu of
    /// [1,2,3] against [4,5,6], exact, two-sided: 0.1), 4 and 4 give 2/70.
    #[test]
    fn the_smallest_p_value_of_the_exact_test() {
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((smallest_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert!((smallest_p(2, 5) - 2.0 / 21.0).abs() < 1e-12);
        assert_eq!(smallest_p(1, 1), 1.0);
        let p = stats::mann_whitney_u(
            &[1.0, 2.0, 3.0],
            &[4.0, 5.0, 6.0],
            stats::Alternative::TwoSided,
            stats::Method::Auto,
        )
        .p;
        assert!((p - smallest_p(3, 3)).abs() < 1e-12, "{p}");
    }

    /// Three rounds each, fully apart: the best the test can do is
    /// p = 0.1, and the verdict says why no difference is shown.
    #[test]
    fn too_few_trials_for_the_test_are_explained() {
        let v = compare(&[group("a", &[1.0, 2.0, 3.0]), group("b", &[4.0, 5.0, 6.0])]);
        assert_eq!(v.len(), 1);
        assert!(v[0].better.is_none());
        let m = Metric::new("pps", "frames/s", stats::Better::Higher);
        let text = markdown(&v[0], &m, tested(&v));
        assert!(text.contains("over the report's 1 comparison;"), "{text}");
        assert!(
            text.contains("With 3 and 3 trials the test cannot show a difference: its smallest p-value is 0.100"),
            "{text}"
        );
        let four = compare(&[group("a", &[1.0, 2.0, 3.0, 3.5]), group("b", &[4.0, 5.0, 6.0, 7.0])]);
        assert_eq!(four[0].better.as_deref(), Some("b"), "{:?}", four[0]);
    }
}
