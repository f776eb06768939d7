//! The report of a suite: several runs organised by methodology (RFC 8456
//! today), written as one self-contained page that reads like a paper's
//! evaluation section. A title, a table of contents, one setup section,
//! then one section per test of the methodology (its number and name, the
//! procedure in one sentence, its parameters), and in each, per metric in
//! plain words, every system under test side by side: box plots, a table
//! (n, median, mean, bootstrap interval) and the verdict written out (which
//! system is better and by how much, the Mann-Whitney U test's p-value
//! corrected by Holm over every comparison of the report, or "no
//! difference shown").
//!
//! The suite's structure is kept in `suite.json` beside its runs, so the
//! page (and `summary.json`/`summary.csv`) can be rebuilt from the
//! directory alone (`rebuild`).

use crate::html::{boxplot, esc, machine_rows, size_plot, trial_rows};
use crate::verdict::{self, Group, Verdict};
use crate::{fmt_num, load, Metric, Run};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::io;
use std::path::Path;

/// The file that holds a suite's structure.
pub const INDEX: &str = "suite.json";

/// A suite: its methodology and its sections, in the methodology's order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Index {
    pub schema: u32,
    /// "RFC 8456 controller benchmark".
    pub title: String,
    /// "RFC 8456".
    pub methodology: String,
    pub command: Vec<String>,
    pub sections: Vec<Section>,
}

/// One test of the methodology, against every system under test.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Section {
    /// The methodology's section number(s): "5.1.1", "5.1.4, 5.1.6".
    pub number: String,
    /// The methodology's name for the test.
    pub name: String,
    /// What this instance adds ("1 % malformed messages in the load"), or "".
    pub variant: String,
    /// sdnlab's name for the procedure (`--test`).
    pub test: String,
    /// The procedure in one sentence.
    pub procedure: String,
    /// One run per system under test (directories relative to the suite's).
    pub runs: Vec<SectionRun>,
    /// Systems the test could not run against, and why.
    pub not_run: Vec<NotRun>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SectionRun {
    pub target: String,
    pub dir: String,
    /// Every trial completed.
    pub complete: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NotRun {
    pub target: String,
    pub why: String,
}

impl Section {
    /// The section's anchor in the page: "t-5-1-1-network-topology-discovery-time".
    pub fn id(&self) -> String {
        let mut id = String::from("t-");
        for c in format!("{} {} {}", self.number, self.name, self.variant).chars() {
            if c.is_ascii_alphanumeric() {
                id.push(c.to_ascii_lowercase());
            } else if !id.ends_with('-') {
                id.push('-');
            }
        }
        id.trim_end_matches('-').to_string()
    }

    pub fn heading(&self) -> String {
        if self.variant.is_empty() {
            format!("{} {}", self.number, self.name)
        } else {
            format!("{} {}: {}", self.number, self.name, self.variant)
        }
    }
}

/// One system's figures on one metric and scenario: its section, the
/// system, and the statistics a single run's summary has for them.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub section: String,
    pub target: String,
    #[serde(flatten)]
    pub cell: crate::Cell,
}

/// What `write` leaves in summary.json.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteSummary {
    pub figures: Vec<Figure>,
    pub verdicts: Vec<Verdict>,
}

/// Each section's runs, read from the suite directory (a run that cannot
/// be read is left out; its section says so).
fn load_runs(dir: &Path, index: &Index) -> Vec<Vec<(String, Run)>> {
    index
        .sections
        .iter()
        .map(|s| {
            s.runs
                .iter()
                .filter_map(|r| load(&dir.join(&r.dir)).ok().map(|run| (r.target.clone(), run)))
                .collect()
        })
        .collect()
}

/// Every metric of these runs, once, in first-seen order.
fn metrics_of(runs: &[(String, Run)]) -> Vec<Metric> {
    crate::metrics(runs.iter().map(|(_, r)| r))
}

/// The figures and the verdicts (Holm-corrected over all of them).
pub fn analyse(index: &Index, runs: &[Vec<(String, Run)>]) -> SuiteSummary {
    let mut figures = Vec::new();
    let mut groups = Vec::new();
    for (section, runs) in index.sections.iter().zip(runs) {
        for m in metrics_of(runs) {
            for (target, run) in runs {
                let one = std::slice::from_ref(run);
                for sc in crate::scenarios(one) {
                    let (v, over) = crate::values(one, &sc, &m.name);
                    if v.is_empty() {
                        continue;
                    }
                    figures.push(Figure {
                        section: section.id(),
                        target: target.clone(),
                        cell: crate::Cell::of(&sc, &m.name, over, &v),
                    });
                    groups.push(Group {
                        section: section.id(),
                        metric: m.clone(),
                        condition: sc,
                        system: target.clone(),
                        values: v,
                    });
                }
            }
        }
    }
    SuiteSummary {
        figures,
        verdicts: verdict::compare(&groups),
    }
}

/// The first screen: each test of the methodology by system under test,
/// the test's first metric (its median, in its first condition), the
/// better system marked where the corrected test shows one, and why
/// there is no verdict where it does not.
fn matrix(index: &Index, runs: &[Vec<(String, Run)>], analysis: &SuiteSummary, names: &[&str]) -> String {
    let mut h = String::from(
        "<section id=\"matrix\"><h2>The tests at a glance</h2><table class=\"matrix\"><tr><th>test</th><th>metric</th>",
    );
    for n in names {
        let _ = write!(h, "<th>{}</th>", esc(n));
    }
    h.push_str("<th>verdict</th></tr>");
    for (section, runs) in index.sections.iter().zip(runs) {
        let sid = section.id();
        let Some(m) = metrics_of(runs).into_iter().find(|m| {
            analysis
                .figures
                .iter()
                .any(|f| f.section == sid && f.cell.metric == m.name)
        }) else {
            let _ = write!(
                h,
                "<tr><td class=\"l\"><a href=\"#{sid}\">{}</a></td><td class=\"l\" colspan=\"{}\">no figure (see the test)</td></tr>",
                esc(&section.heading()),
                names.len() + 2
            );
            continue;
        };
        let verdicts: Vec<&verdict::Verdict> = analysis
            .verdicts
            .iter()
            .filter(|v| v.section == sid && v.metric == m.name)
            .collect();
        let condition = analysis
            .figures
            .iter()
            .find(|f| f.section == sid && f.cell.metric == m.name)
            .map(|f| f.cell.scenario.clone())
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td class=\"l\"><a href=\"#{sid}\">{}</a></td><td class=\"l\">{} ({}{})</td>",
            esc(&section.heading()),
            esc(&m.display_name()),
            esc(&crate::html::unit_text(&m.unit)),
            if condition.is_empty() {
                String::new()
            } else {
                format!(", {}", esc(&condition))
            }
        );
        for n in names {
            let fig = analysis.figures.iter().find(|f| {
                f.section == sid && f.target == *n && f.cell.metric == m.name && f.cell.scenario == condition
            });
            let better = verdicts
                .iter()
                .any(|v| v.scenario == condition && v.better.as_deref() == Some(*n));
            match fig {
                Some(f) if better => {
                    let _ = write!(
                        h,
                        "<td class=\"better\"><b>{}</b> ✓</td>",
                        fmt_num(f.cell.summary.median)
                    );
                }
                Some(f) => {
                    let _ = write!(h, "<td>{}</td>", fmt_num(f.cell.summary.median));
                }
                None if section.not_run.iter().any(|x| x.target == *n) => {
                    h.push_str("<td class=\"not-run\">not run</td>")
                }
                None => h.push_str("<td>-</td>"),
            }
        }
        let here: Vec<&&verdict::Verdict> = verdicts.iter().filter(|v| v.scenario == condition).collect();
        let why = if here.is_empty() {
            "one system measured".to_string()
        } else if let Some(v) = here.iter().find(|v| v.better.is_some()) {
            format!(
                "{} better (p = {:.3}, Holm)",
                v.better.as_deref().unwrap_or(""),
                v.p_holm
            )
        } else if here
            .iter()
            .any(|v| v.p.is_nan() || verdict::smallest_p(v.n_a, v.n_b) >= verdict::ALPHA)
        {
            "too few trials to test (at least 4 a side)".to_string()
        } else {
            "no difference shown".to_string()
        };
        let _ = write!(h, "<td class=\"l\">{}</td></tr>", esc(&why));
    }
    h.push_str("</table><p>Each row: the test's first metric in its first condition, the median of each system; ✓ marks the better one where the Mann-Whitney U test, Holm-corrected over the suite, shows a difference. Every metric and condition is in the test's own section.</p></section>");
    h
}

/// The page.
pub fn render(index: &Index, runs: &[Vec<(String, Run)>], analysis: &SuiteSummary) -> String {
    let comparisons = verdict::tested(&analysis.verdicts);
    let all: Vec<&Run> = runs.iter().flatten().map(|(_, r)| r).collect();
    let mut targets: Vec<(String, &crate::Target)> = Vec::new();
    for (t, r) in runs.iter().flatten() {
        if let Some(x) = r.meta.targets.first() {
            if !targets.iter().any(|(n, _)| n == t) {
                targets.push((t.clone(), x));
            }
        }
    }
    let mut h = String::from(r#"<!doctype html><html lang="en"><head><meta charset="utf-8">"#);
    let _ = write!(h, "<title>{}</title>", esc(&index.title));
    h.push_str(
        r#"<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:0.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}h2{border-bottom:1px solid #ccc;margin-top:2em}
.procedure{font-style:italic}.verdict{background:#f3f6fb;padding:0.4em 0.8em;border-left:3px solid #1f77b4}
.not-run{color:#8a4b00}nav ol{columns:2}.files a{margin-right:1em}.better{background:#e6f4e6}
</style></head><body>"#,
    );
    let names: Vec<&str> = targets.iter().map(|(n, _)| n.as_str()).collect();
    let _ = write!(h, "<h1>{}</h1>", esc(&index.title));
    let started = all.iter().map(|r| r.meta.started_unix).fold(f64::INFINITY, f64::min);
    let finished = all
        .iter()
        .filter_map(|r| r.meta.finished_unix)
        .fold(f64::NEG_INFINITY, f64::max);
    let _ = write!(
        h,
        "<p class=\"lead\">{} measured by the {} methodology: {} tests, {} comparisons between systems, from {} to {} (UTC).</p>",
        esc(&names.join(", ")),
        esc(&index.methodology),
        index.sections.len(),
        comparisons,
        if started.is_finite() { crate::iso8601(started) } else { "-".into() },
        if finished.is_finite() { crate::iso8601(finished) } else { "-".into() },
    );
    h.push_str(&matrix(index, runs, analysis, &names));
    h.push_str("<nav id=\"toc\"><h2>Contents</h2><ol><li><a href=\"#matrix\">The tests at a glance</a></li><li><a href=\"#setup\">Setup</a></li>");
    for s in &index.sections {
        let _ = write!(h, "<li><a href=\"#{}\">{}</a></li>", s.id(), esc(&s.heading()));
    }
    h.push_str("</ol></nav>");

    // One setup section: the machine once, each system under test once.
    h.push_str("<section id=\"setup\"><h2>Setup</h2>");
    if let Some(r) = all.first() {
        let _ = write!(
            h,
            "<table>{}<tr><td>command</td><td class=\"l\"><code>{}</code></td></tr></table>",
            machine_rows(&r.meta),
            esc(&index.command.join(" "))
        );
    }
    h.push_str("<table class=\"targets\"><tr><th>system under test</th><th>version</th><th>how it ran</th></tr>");
    for (name, t) in &targets {
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(name),
            esc(&t.version),
            esc(&t.command)
        );
    }
    h.push_str("</table><p class=\"files\">Data: <a href=\"summary.csv\">summary.csv</a><a href=\"summary.json\">summary.json</a><a href=\"suite.md\">suite.md</a><a href=\"experiment.toml\">experiment.toml</a></p></section>");

    for (section, runs) in index.sections.iter().zip(runs) {
        h.push_str(&test_section(section, runs, analysis, comparisons));
    }
    h.push_str("</body></html>\n");
    h
}

/// One test's section: its procedure and parameters, what was not run,
/// each metric's figure, figures per system, verdicts and trials.
fn test_section(section: &Section, runs: &[(String, Run)], analysis: &SuiteSummary, comparisons: usize) -> String {
    let mut h = String::new();
    let sid = section.id();
    let _ = write!(
        h,
        "<section class=\"test\" id=\"{sid}\" data-test=\"{}\"><h2>{}</h2><p class=\"procedure\">{}</p>",
        esc(&section.test),
        esc(&section.heading()),
        esc(&section.procedure)
    );
    if let Some((_, r)) = runs.first() {
        let params: Vec<String> = r
            .meta
            .parameters
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect()
            })
            .unwrap_or_default();
        let _ = write!(
            h,
            "<p class=\"parameters\">Parameters: {}.</p>",
            esc(&params.join(", "))
        );
    }
    for n in &section.not_run {
        let _ = write!(
            h,
            "<p class=\"not-run\">Not run against {}: {}.</p>",
            esc(&n.target),
            esc(&n.why)
        );
    }
    for r in section.runs.iter().filter(|r| !r.complete) {
        let _ = write!(
            h,
            "<p class=\"not-run\">{}: some trials did not complete (see its <a href=\"{}/report.html\">run's report</a>).</p>",
            esc(&r.target),
            esc(&r.dir)
        );
    }
    let plain: Vec<Run> = runs
        .iter()
        .map(|(t, r)| {
            let mut r = r.clone();
            r.meta.run_id = t.clone();
            r
        })
        .collect();
    let summary = crate::summarise(&plain);
    let metrics = metrics_of(runs);
    if metrics.is_empty() {
        // Case-by-case tests (exception handling): what each system did.
        h.push_str(&cases_table(runs));
    }
    for m in &metrics {
        let _ = write!(
            h,
            "<h3 data-metric=\"{}\">{} <small>({}; {} is better)</small></h3>",
            esc(&m.name),
            esc(&m.display_name()),
            esc(&crate::html::unit_text(&m.unit)),
            match m.better {
                stats::Better::Higher => "higher",
                stats::Better::Lower => "lower",
            }
        );
        h.push_str(&boxplot(&summary, &m.name, &m.unit));
        h.push_str(&size_plot(&plain, &m.name, &m.unit));
        h.push_str("<table class=\"results\"><tr><th>system</th><th>scenario</th><th>n</th><th>median</th><th>mean</th><th>95 % CI of the mean (bootstrap)</th></tr>");
        for f in analysis
            .figures
            .iter()
            .filter(|f| f.section == sid && f.cell.metric == m.name)
        {
            let (s, c) = (&f.cell.summary, &f.cell);
            let _ = write!(
                h,
                "<tr data-target=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&f.target),
                esc(&f.target),
                esc(&c.scenario),
                s.n,
                c.over,
                fmt_num(s.median),
                fmt_num(s.mean),
                c.ci_text()
            );
        }
        h.push_str("</table>");
        let vs: Vec<&Verdict> = analysis
            .verdicts
            .iter()
            .filter(|v| v.section == sid && v.metric == m.name)
            .collect();
        if vs.is_empty() {
            let _ = write!(
                h,
                "<p class=\"verdict\">Only {} measured: no comparison.</p>",
                esc(&runs.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>().join(", "))
            );
        }
        for v in vs {
            let _ = write!(
                h,
                "<p class=\"verdict\">{}: {}</p>",
                esc(&v.scenario),
                verdict::html(v, m, comparisons)
            );
        }
        h.push_str(&trial_rows(&plain, &m.name));
    }
    h.push_str("<p class=\"files\">Each run: ");
    for r in &section.runs {
        let _ = write!(
            h,
            "<a href=\"{0}/report.html\">{1} report</a><a href=\"{0}/samples.jsonl\">{1} samples</a><a href=\"{0}/summary.csv\">{1} CSV</a>",
            esc(&r.dir),
            esc(&r.target)
        );
    }
    h.push_str("</p></section>");
    h
}

/// Case-by-case results (samples of kind "case"): one row per case, one
/// column per system, its outcome.
fn cases_table(runs: &[(String, Run)]) -> String {
    let mut cases: Vec<String> = Vec::new();
    let mut outcome: BTreeMap<(String, String), String> = BTreeMap::new();
    for (t, r) in runs {
        for s in r.samples.iter().filter(|s| s.kind == "case") {
            if !cases.contains(&s.scenario) {
                cases.push(s.scenario.clone());
            }
            outcome.insert((s.scenario.clone(), t.clone()), s.note.clone().unwrap_or_default());
        }
    }
    if cases.is_empty() {
        return String::new();
    }
    let mut h = String::from("<table class=\"results\"><tr><th>case</th>");
    for (t, _) in runs {
        let _ = write!(h, "<th>{}</th>", esc(t));
    }
    h.push_str("</tr>");
    for c in &cases {
        let _ = write!(h, "<tr><td>{}</td>", esc(c));
        for (t, _) in runs {
            let _ = write!(
                h,
                "<td class=\"l\">{}</td>",
                esc(outcome.get(&(c.clone(), t.clone())).map_or("-", |s| s.as_str()))
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    h
}

fn ctx(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Writes `suite.json`, `summary.json`, `summary.csv` and `report.html`
/// into the suite directory `dir` from the runs below it.
pub fn write(dir: &Path, index: &Index) -> io::Result<SuiteSummary> {
    let path = dir.join(INDEX);
    let text = serde_json::to_string_pretty(index).map_err(io::Error::other)?;
    std::fs::write(&path, text).map_err(ctx(&path))?;
    rebuild(dir)
}

/// Rebuilds a suite's summaries and page from its directory alone.
pub fn rebuild(dir: &Path) -> io::Result<SuiteSummary> {
    let path = dir.join(INDEX);
    let text = std::fs::read_to_string(&path).map_err(ctx(&path))?;
    let index: Index = serde_json::from_str(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))?;
    let runs = load_runs(dir, &index);
    let analysis = analyse(&index, &runs);
    let path = dir.join("summary.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&analysis).map_err(io::Error::other)?,
    )
    .map_err(ctx(&path))?;
    // A run's columns (`Cell::CSV_HEADER`), after the section and the target.
    let mut csv = format!("section,target,{}\n", crate::Cell::CSV_HEADER);
    for f in &analysis.figures {
        let _ = writeln!(
            csv,
            "{},{},{}",
            f.section,
            crate::csv_quoted(&f.target),
            f.cell.csv_row()
        );
    }
    let path = dir.join("summary.csv");
    std::fs::write(&path, csv).map_err(ctx(&path))?;
    let path = dir.join("report.html");
    std::fs::write(&path, render(&index, &runs, &analysis)).map_err(ctx(&path))?;
    Ok(analysis)
}

/// Whether `dir` holds a suite (rather than one run).
pub fn is_suite(dir: &Path) -> bool {
    dir.join(INDEX).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Meta, Sample};

    fn run(target: &str, values: &[f64]) -> (String, Run) {
        let meta = Meta {
            run_id: target.into(),
            metrics: vec![Metric::new("discovery_s", "s", stats::Better::Lower).titled("Topology discovery time")],
            ..Default::default()
        };
        let samples = values
            .iter()
            .enumerate()
            .map(|(t, v)| Sample {
                kind: "trial".into(),
                scenario: "leaf-spine,2,4,1".into(),
                trial: t as u32,
                index: 0,
                unix: 0.0,
                values: BTreeMap::from([("discovery_s".to_string(), *v)]),
                rtt_cdf: Vec::new(),
                note: None,
                system: None,
                condition: None,
            })
            .collect();
        (
            target.into(),
            Run {
                dir: Default::default(),
                meta,
                samples,
            },
        )
    }

    fn index(sections: usize) -> Index {
        Index {
            title: "t".into(),
            methodology: "RFC 8456".into(),
            sections: (0..sections)
                .map(|i| Section {
                    number: format!("5.1.{}", i + 1),
                    name: "Network Topology Discovery Time".into(),
                    test: "discovery".into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Ten trials each, one system clearly faster: it is named better, by
    /// how much, with the test and its corrected p-value.
    #[test]
    fn a_clear_difference_names_the_better_system() {
        let fast: Vec<f64> = (0..10).map(|i| 1.0 + i as f64 * 0.01).collect();
        let slow: Vec<f64> = (0..10).map(|i| 2.0 + i as f64 * 0.01).collect();
        let runs = vec![vec![run("sdnlab", &fast), run("os-ken", &slow)]];
        let a = analyse(&index(1), &runs);
        assert_eq!(a.verdicts.len(), 1);
        let v = &a.verdicts[0];
        assert_eq!(v.better.as_deref(), Some("sdnlab"));
        assert!(v.p < 0.001 && v.p_holm == v.p, "{v:?}");
        let page = render(&index(1), &runs, &a);
        assert!(page.contains("<strong>sdnlab</strong> is better than os-ken"), "{page}");
        assert!(page.contains("lower") && page.contains("Mann-Whitney U") && page.contains("Holm"));
        assert!(page.contains("Topology discovery time"));
    }

    /// The same samples on both sides: no difference shown; and a p-value
    /// that passes alone fails once corrected over many comparisons.
    #[test]
    fn no_difference_and_the_correction_for_many_comparisons() {
        let same: Vec<f64> = (0..6).map(|i| 1.0 + i as f64).collect();
        let runs = vec![vec![run("a", &same), run("b", &same)]];
        let a = analyse(&index(1), &runs);
        assert!(a.verdicts[0].better.is_none());
        assert!(render(&index(1), &runs, &a).contains("No difference shown between a and b"));

        // Six against six, fully apart: p = 2/924 = 0.0022 alone (exact,
        // two-sided). Over 40 such comparisons Holm multiplies the
        // smallest by 40 (0.087): not shown.
        let lo: Vec<f64> = (0..6).map(|i| i as f64).collect();
        let hi: Vec<f64> = (0..6).map(|i| 10.0 + i as f64).collect();
        let one = vec![vec![run("a", &lo), run("b", &hi)]];
        let alone = analyse(&index(1), &one);
        assert!(alone.verdicts[0].better.is_some(), "{:?}", alone.verdicts[0]);
        assert!(
            (alone.verdicts[0].p - 2.0 / 924.0).abs() < 1e-9,
            "{:?}",
            alone.verdicts[0]
        );
        let many: Vec<Vec<(String, Run)>> = (0..40).map(|_| one[0].clone()).collect();
        let corrected = analyse(&index(40), &many);
        assert_eq!(corrected.verdicts.len(), 40);
        assert!(corrected.verdicts.iter().all(|v| v.better.is_none() && v.p_holm > 0.05));
    }

    /// One trial each cannot be compared, and the page says so.
    #[test]
    fn too_few_trials_are_said() {
        let runs = vec![vec![run("a", &[1.0]), run("b", &[2.0])]];
        let a = analyse(&index(1), &runs);
        assert!(a.verdicts[0].p.is_nan() && a.verdicts[0].better.is_none());
        assert!(render(&index(1), &runs, &a).contains("too few trials to compare"));
    }
}
