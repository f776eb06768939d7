//! The HTML report: one self-contained page (inline CSS and SVG, no script,
//! nothing fetched) with the setup, per metric a box plot of every scenario,
//! the statistics table with confidence intervals, the best scenario and the
//! pairwise tests, every trial's value (RFC 8456's result format: a row per
//! trial), the metric against the network size where trials record one
//! (`switches`), and the round-trip CDFs.

use crate::{fmt_num, Run, Sample, Summary};
use std::collections::BTreeMap;
use std::fmt::Write;

pub(crate) use crate::text::esc;
pub use crate::text::unit_text;

mod plots;
mod sections;
pub use plots::*;
pub(crate) use sections::*;

/// The whole page.
pub fn render(runs: &[Run], summary: &Summary) -> String {
    let mut h = String::from(
        r#"<!doctype html><html><head><meta charset="utf-8"><title>sdnlab report</title><style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}td.l{overflow-wrap:anywhere}pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}
ul.warn li{color:#8a4b00}
.better{background:#e6f4e6}h2{border-bottom:1px solid #ccc}
.verdict{background:#f3f6fb;padding:0.4em 0.8em;border-left:3px solid #1f77b4}
</style></head><body>"#,
    );
    let title = runs
        .iter()
        .map(|r| format!("{} ({})", r.meta.run_id, r.meta.benchmark))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = write!(h, "<h1>sdnlab: {}</h1>", esc(&title));
    // Metrics with no figure in this run (a test not run) get no section.
    let metrics: Vec<crate::Metric> = crate::metrics(runs)
        .into_iter()
        .filter(|m| summary.cells.iter().any(|c| c.metric == m.name))
        .collect();
    // A metric whose figures are those of an earlier one in every
    // scenario is shown once, with the earlier (cbench's figure and the
    // matched responses, when every response matched its request).
    let same_as = identical_metrics(summary, &metrics);
    let label = scenario_labels(runs);
    let label = |sc: &str| label.get(sc).cloned().unwrap_or_else(|| sc.to_string());
    // First what the run shows, then how it was run, then the detail.
    h.push_str(&answers(runs, summary, &metrics, &same_as, &label));
    h.push_str("<nav><h2>Contents</h2><ol><li><a href=\"#answers\">What this run shows</a></li><li><a href=\"#setup\">Setup</a></li>");
    for m in metrics.iter().filter(|m| !same_as.contains_key(&m.name)) {
        let _ = write!(
            h,
            "<li><a href=\"#m-{}\">{}</a></li>",
            esc(&m.name),
            esc(&m.display_name())
        );
    }
    h.push_str("</ol><p>Beside this page: <a href=\"summary.csv\">summary.csv</a>, <a href=\"summary.json\">summary.json</a>, <a href=\"samples.jsonl\">samples.jsonl</a>, <a href=\"meta.json\">meta.json</a>, <a href=\"experiment.toml\">experiment.toml</a>.</p></nav>");
    h.push_str(&setup(runs));
    for m in metrics.iter().filter(|m| !same_as.contains_key(&m.name)) {
        h.push_str(&metric_section(runs, summary, m, &metrics, &same_as, &label));
    }
    h.push_str(&observations(runs));
    let streamed = interval_plots(runs);
    if !streamed.is_empty() {
        h.push_str("<h2 id=\"over-time\">Over time, as measured</h2><p>Figures streamed while the run went on (each receiver's or client's intervals), as they were written to samples.jsonl.</p>");
        h.push_str(&streamed);
    }
    let cdf = cdf_plot(runs);
    if !cdf.is_empty() {
        h.push_str("<h2>Round-trip time, cumulative distribution (first trial of each scenario)</h2>");
        h.push_str(&cdf);
    }
    h.push_str("</body></html>\n");
    h
}

/// One metric's section: its figure, its statistics per scenario, each
/// trial, the best scenario with its tests, and the verdicts.
fn metric_section(
    runs: &[Run],
    summary: &Summary,
    m: &crate::Metric,
    metrics: &[crate::Metric],
    same_as: &BTreeMap<String, String>,
    label: &dyn Fn(&str) -> String,
) -> String {
    let mut h = String::new();
    let largest = summary
        .cells
        .iter()
        .filter(|c| c.metric == m.name)
        .map(|c| c.summary.median.abs())
        .fold(0.0, f64::max);
    let scale = Scale::for_values(&m.unit, largest);
    let _ = write!(
        h,
        "<h2 id=\"m-{}\">{} ({}; {} is better)</h2><p><code>{}</code>{}</p>",
        esc(&m.name),
        esc(&m.display_name()),
        esc(&scale.header()),
        match m.better {
            stats::Better::Higher => "higher",
            stats::Better::Lower => "lower",
        },
        esc(&m.name),
        if m.method.is_empty() {
            String::new()
        } else {
            format!(": {}", esc(&m.method))
        }
    );
    for (other, same) in same_as {
        if *same == m.name {
            if let Some(o) = metrics.iter().find(|x| x.name == *other) {
                let _ = write!(
                    h,
                    "<p class=\"verdict\">{} (<code>{}</code>) is the same figure in every trial, so it is shown once, here.</p>",
                    esc(&o.display_name()),
                    esc(&o.name)
                );
            }
        }
    }
    h.push_str(&boxplot_scaled(summary, &m.name, &scale, &label));
    h.push_str(&size_plot(runs, &m.name, &m.unit));
    h.push_str("<table><tr><th>scenario</th><th>n</th><th>mean</th><th>median</th><th>stdev</th><th>min</th><th>max</th><th>95% CI of the mean (bootstrap percentile)</th></tr>");
    for c in summary.cells.iter().filter(|c| c.metric == m.name) {
        let st = &c.summary;
        let ci = if st.n < 3 {
            c.ci_text()
        } else {
            format!(
                "{} .. {}",
                scale.value(c.ci95_bootstrap.0),
                scale.value(c.ci95_bootstrap.1)
            )
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&label(&c.scenario)),
            st.n,
            c.over,
            scale.value(st.mean),
            scale.value(st.median),
            scale.value(st.stdev),
            scale.value(st.min),
            scale.value(st.max),
            ci
        );
    }
    h.push_str("</table>");
    h.push_str(&trial_rows_scaled(runs, &m.name, &scale));
    if let Some(b) = summary.best.iter().find(|b| b.metric == m.name) {
        let _ = write!(
            h,
            "<p><b>Best scenario: {}</b> ({}). Pairwise Wilcoxon rank-sum (Mann-Whitney U) tests, p &lt; 0.05:</p>\
<table><tr><th>scenario</th><th>against</th><th>p (different)</th><th>p (better)</th><th>better?</th></tr>",
            esc(&b.scenario),
            esc(&crate::best_reason(summary, b))
        );
        for c in &b.result.comparisons {
            let _ = write!(
                h,
                "<tr{}><td>{}</td><td>{}</td><td>{:.4}</td><td>{}</td><td>{}</td></tr>",
                if c.a_better { " class=\"better\"" } else { "" },
                esc(&b.scenarios[c.a]),
                esc(&b.scenarios[c.b]),
                c.p_different,
                c.p_better.map(|p| format!("{p:.4}")).unwrap_or_else(|| "-".into()),
                if c.a_better { "yes" } else { "no" }
            );
        }
        h.push_str("</table>");
    }
    let verdicts: Vec<&crate::verdict::Verdict> = summary.verdicts.iter().filter(|v| v.metric == m.name).collect();
    if !verdicts.is_empty() {
        h.push_str("<h3>Verdicts</h3><p>Every pair of systems measured in the same condition, compared by the Mann-Whitney U test (two-sided), corrected by Holm over every comparison of this run; a difference is shown at p &lt; 0.05.</p>");
        let n = crate::verdict::tested(&summary.verdicts);
        // Many (a sweep of policies and loads): folded, with a count.
        let folded = verdicts.len() > 12;
        if folded {
            let _ = write!(
                h,
                "<details><summary>{} comparisons, {} with a difference shown</summary>",
                verdicts.len(),
                verdicts.iter().filter(|v| v.better.is_some()).count()
            );
        }
        for v in verdicts {
            let at = if v.scenario.is_empty() {
                String::new()
            } else {
                format!("{}: ", esc(&v.scenario))
            };
            let _ = write!(h, "<p class=\"verdict\">{at}{}</p>", crate::verdict::html(v, m, n));
        }
        if folded {
            h.push_str("</details>");
        }
    }
    h
}

/// The trials that carry a note (what happened besides the figures).
fn observations(runs: &[Run]) -> String {
    let mut h = String::new();
    let noted: Vec<(&Run, &crate::Sample)> = runs
        .iter()
        .flat_map(|r| r.samples.iter().filter(|s| s.note.is_some()).map(move |s| (r, s)))
        .collect();
    if !noted.is_empty() {
        h.push_str("<h2>Observations</h2><table><tr><th>scenario</th><th>trial</th><th>what happened</th></tr>");
        for (r, s) in noted {
            let name = if runs.len() > 1 {
                format!("{} / {}", r.meta.run_id, s.scenario)
            } else {
                s.scenario.clone()
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(&name),
                s.trial,
                esc(s.note.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>");
    }
    h
}
