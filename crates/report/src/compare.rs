//! `sdnlab report compare BASE OTHER...`: runs of the same experiment side
//! by side (two builds of a controller, two machines, before and after a
//! change), the first as the baseline. For every metric and scenario the
//! runs share: the medians, the change against the baseline in percent,
//! and whether it is a difference at all (Mann-Whitney U, two-sided, with
//! Holm's correction over every comparison made), written out as better,
//! worse or no difference shown.

use crate::html::{boxplot, esc};
use crate::{fmt_num, Metric, Run};
use serde::Serialize;
use std::fmt::Write;
use std::io;
use std::path::Path;

/// One metric and scenario of one run against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub metric: String,
    pub scenario: String,
    pub base: String,
    pub other: String,
    pub n_base: usize,
    pub n_other: usize,
    pub median_base: f64,
    pub median_other: f64,
    /// (other - base) / base, percent.
    pub change_pct: f64,
    /// Mann-Whitney U, two-sided (NaN under `MIN_A_SIDE` values a side:
    /// no p-value could then fall under 0.05).
    pub p: f64,
    /// `p` corrected by Holm over every change listed.
    pub p_holm: f64,
    /// "better", "worse", "no difference shown" or "too few trials to
    /// test (...)".
    pub verdict: String,
}

const ALPHA: f64 = 0.05;

/// The fewest values a side with which a two-sided Mann-Whitney U can
/// show a difference at 0.05: with 3 and 3 its smallest exact p-value is
/// 0.1, with 4 and 4 it is 0.029.
pub const MIN_A_SIDE: usize = 4;

/// The runs' names: their run ids, or their directories when ids repeat.
fn names(runs: &[Run]) -> Vec<String> {
    let ids: Vec<String> = runs.iter().map(|r| r.meta.run_id.clone()).collect();
    let unique = ids.iter().collect::<std::collections::BTreeSet<_>>().len() == ids.len();
    if unique {
        ids
    } else {
        runs.iter().map(|r| r.dir.display().to_string()).collect()
    }
}

/// Every change of every run against the first.
pub fn compare(runs: &[Run]) -> Vec<Change> {
    let Some((base, others)) = runs.split_first() else {
        return Vec::new();
    };
    let names = names(runs);
    let mut out = Vec::new();
    for m in crate::metrics(std::slice::from_ref(base)) {
        for sc in crate::scenarios(std::slice::from_ref(base)) {
            let (vb, _) = crate::values(std::slice::from_ref(base), &sc, &m.name);
            if vb.is_empty() {
                continue;
            }
            for (i, o) in others.iter().enumerate() {
                let (vo, _) = crate::values(std::slice::from_ref(o), &sc, &m.name);
                if vo.is_empty() {
                    continue;
                }
                let (mb, mo) = (stats::median(&vb), stats::median(&vo));
                let p = if vb.len() >= MIN_A_SIDE && vo.len() >= MIN_A_SIDE {
                    stats::mann_whitney_u(&vb, &vo, stats::Alternative::TwoSided, stats::Method::Auto).p
                } else {
                    f64::NAN
                };
                out.push(Change {
                    metric: m.name.clone(),
                    scenario: sc.clone(),
                    base: names[0].clone(),
                    other: names[i + 1].clone(),
                    n_base: vb.len(),
                    n_other: vo.len(),
                    median_base: mb,
                    median_other: mo,
                    change_pct: if mb != 0.0 {
                        (mo - mb) / mb.abs() * 100.0
                    } else {
                        f64::NAN
                    },
                    p,
                    p_holm: f64::NAN,
                    verdict: String::new(),
                });
            }
        }
    }
    let tested: Vec<usize> = (0..out.len()).filter(|&i| !out[i].p.is_nan()).collect();
    let adjusted = stats::holm(&tested.iter().map(|&i| out[i].p).collect::<Vec<_>>());
    for (&i, q) in tested.iter().zip(adjusted) {
        out[i].p_holm = q;
    }
    let metrics = crate::metrics(std::slice::from_ref(base));
    for c in &mut out {
        let higher = metrics
            .iter()
            .find(|m| m.name == c.metric)
            .is_none_or(|m| m.better == stats::Better::Higher);
        c.verdict = if c.p.is_nan() {
            format!(
                "too few trials to test ({} and {}; at least {MIN_A_SIDE} a side needed)",
                c.n_base, c.n_other
            )
        } else if c.p_holm >= ALPHA {
            "no difference shown".into()
        } else if (c.median_other > c.median_base) == higher {
            "better".into()
        } else {
            "worse".into()
        };
    }
    out
}

fn p_text(p: f64) -> String {
    if p.is_nan() {
        "-".into()
    } else if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn change_text(pct: f64) -> String {
    if pct.is_nan() {
        "-".into()
    } else {
        format!("{pct:+.1} %")
    }
}

/// The changes as a terminal table.
pub fn terminal(changes: &[Change]) -> String {
    let mut rows = vec![[
        "metric".to_string(),
        "scenario".into(),
        "run".into(),
        "median (base)".into(),
        "median".into(),
        "change".into(),
        "p (Holm)".into(),
        "verdict".into(),
    ]];
    for c in changes {
        rows.push([
            c.metric.clone(),
            c.scenario.clone(),
            c.other.clone(),
            fmt_num(c.median_base),
            fmt_num(c.median_other),
            change_text(c.change_pct),
            p_text(c.p_holm),
            c.verdict.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The page: per metric, the box plots of every run and the changes.
pub fn render(runs: &[Run], changes: &[Change]) -> String {
    let names = names(runs);
    let mut h = String::from(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sdnlab: runs compared</title><style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.better{background:#e6f4e6}.worse{background:#fbe6e6}
</style></head><body>"#,
    );
    let _ = write!(
        h,
        "<h1>Runs compared</h1><p>Baseline: <b>{}</b>; against it: {}. Changes are medians; a change counts when the Mann-Whitney U test's p-value, corrected by Holm over the {} comparisons, is under 0.05. Data: <a href=\"compare.csv\">compare.csv</a>, <a href=\"compare.json\">compare.json</a>.</p>",
        esc(&names[0]),
        esc(&names[1..].join(", ")),
        changes.iter().filter(|c| !c.p.is_nan()).count()
    );
    let labelled: Vec<Run> = runs
        .iter()
        .zip(&names)
        .map(|(r, n)| {
            let mut r = r.clone();
            r.meta.run_id = n.clone();
            r
        })
        .collect();
    let summary = crate::summarise(&labelled);
    let metrics: Vec<Metric> = crate::metrics(&runs[..1]);
    for m in &metrics {
        let _ = write!(
            h,
            "<h2>{} <small>({})</small></h2>",
            esc(&m.display_name()),
            esc(&m.unit)
        );
        h.push_str(&boxplot(&summary, &m.name, &m.unit));
        h.push_str("<table><tr><th>scenario</th><th>run</th><th>median (baseline)</th><th>median</th><th>change</th><th>p (Holm)</th><th>verdict</th></tr>");
        for c in changes.iter().filter(|c| c.metric == m.name) {
            let class = match c.verdict.as_str() {
                "better" => " class=\"better\"",
                "worse" => " class=\"worse\"",
                _ => "",
            };
            let _ = write!(
                h,
                "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.scenario),
                esc(&c.other),
                fmt_num(c.median_base),
                fmt_num(c.median_other),
                change_text(c.change_pct),
                p_text(c.p_holm),
                esc(&c.verdict)
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</body></html>\n");
    h
}

/// Writes compare.json, compare.csv and report.html into `dir`.
pub fn write(dir: &Path, runs: &[Run]) -> io::Result<Vec<Change>> {
    let changes = compare(runs);
    let ctx = |p: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
    let path = dir.join("compare.json");
    std::fs::write(&path, serde_json::to_string_pretty(&changes).map_err(io::Error::other)?)
        .map_err(|e| ctx(&path, e))?;
    let mut csv = String::from(
        "metric,scenario,base,other,n_base,n_other,median_base,median_other,change_pct,p,p_holm,verdict\n",
    );
    for c in &changes {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            c.metric,
            crate::csv_quoted(&c.scenario),
            crate::csv_quoted(&c.base),
            crate::csv_quoted(&c.other),
            c.n_base,
            c.n_other,
            c.median_base,
            c.median_other,
            c.change_pct,
            c.p,
            c.p_holm,
            c.verdict
        );
    }
    let path = dir.join("compare.csv");
    std::fs::write(&path, csv).map_err(|e| ctx(&path, e))?;
    let path = dir.join("report.html");
    std::fs::write(&path, render(runs, &changes)).map_err(|e| ctx(&path, e))?;
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Meta, Sample};
    use std::collections::BTreeMap;

    fn run(id: &str, better: stats::Better, values: &[f64]) -> Run {
        Run {
            dir: Default::default(),
            meta: Meta {
                run_id: id.into(),
                metrics: vec![Metric::new("rate", "responses/s", better)],
                ..Default::default()
            },
            samples: values
                .iter()
                .enumerate()
                .map(|(t, v)| Sample {
                    kind: "trial".into(),
                    scenario: "switches=16".into(),
                    trial: t as u32,
                    index: 0,
                    unix: 0.0,
                    values: BTreeMap::from([("rate".to_string(), *v)]),
                    rtt_cdf: Vec::new(),
                    note: None,
                    system: None,
                    condition: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_faster_build_is_better_and_an_equal_one_shows_no_difference() {
        let base: Vec<f64> = (0..10).map(|i| 100.0 + i as f64).collect();
        let faster: Vec<f64> = (0..10).map(|i| 120.0 + i as f64).collect();
        let runs = [
            run("old", stats::Better::Higher, &base),
            run("new", stats::Better::Higher, &faster),
            run("same", stats::Better::Higher, &base),
        ];
        let c = compare(&runs);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].other.as_str(), c[0].verdict.as_str()), ("new", "better"));
        assert!(
            (c[0].change_pct - 20.0 / 104.5 * 100.0).abs() < 1e-9,
            "{}",
            c[0].change_pct
        );
        assert!(c[0].p_holm < 0.05);
        assert_eq!(c[1].verdict, "no difference shown");
        let t = terminal(&c);
        assert!(t.contains("+19.1 %") && t.contains("better"), "{t}");
        // Where lower is better, the same move is worse.
        let runs = [
            run("old", stats::Better::Lower, &base),
            run("new", stats::Better::Lower, &faster),
        ];
        assert_eq!(compare(&runs)[0].verdict, "worse");
        assert!(render(&runs, &compare(&runs)).contains("class=\"worse\""));
    }

    #[test]
    fn under_four_trials_a_side_is_too_few_to_test() {
        let runs = [
            run("a", stats::Better::Higher, &[1.0]),
            run("b", stats::Better::Higher, &[2.0]),
        ];
        assert_eq!(
            compare(&runs)[0].verdict,
            "too few trials to test (1 and 1; at least 4 a side needed)"
        );
        // A tenfold gap with three trials a side: no test can show it
        // (the smallest exact p is 0.1), so none is claimed either way.
        let runs = [
            run("a", stats::Better::Higher, &[8.5, 8.4, 8.6]),
            run("b", stats::Better::Higher, &[0.85, 0.84, 0.86]),
        ];
        let c = compare(&runs);
        assert!(c[0].verdict.starts_with("too few trials to test (3 and 3"), "{c:?}");
        assert!(c[0].p.is_nan());
        // Four a side can.
        let runs = [
            run("a", stats::Better::Higher, &[8.5, 8.4, 8.6, 8.7]),
            run("b", stats::Better::Higher, &[0.85, 0.84, 0.86, 0.87]),
        ];
        assert_eq!(compare(&runs)[0].verdict, "worse");
    }
}
