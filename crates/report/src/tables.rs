//! The summaries as text: CSV, Markdown (tables and verdicts) and the
//! terminal's table, and how numbers are written in them.

use super::*;

/// A CSV field in quotes, its own quotes doubled (RFC 4180).
pub(crate) fn csv_quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Writes summary.json, summary.csv and report.html into `dir`.
pub fn write_outputs(dir: &Path, runs: &[Run]) -> io::Result<Summary> {
    let summary = summarise(runs);
    write_json(&dir.join("summary.json"), &summary)?;
    let mut csv = format!("{}\n", Cell::CSV_HEADER);
    for c in &summary.cells {
        csv.push_str(&c.csv_row());
        csv.push('\n');
    }
    let path = dir.join("summary.csv");
    std::fs::write(&path, csv).map_err(|e| ctx(&path, e))?;
    let path = dir.join("report.html");
    std::fs::write(&path, html::render(runs, &summary)).map_err(|e| ctx(&path, e))?;
    // An experiment with a table of its own wrote it before; the others
    // get the summary's. The verdicts go below either (replacing those of
    // an earlier build of the report).
    let path = dir.join("summary.md");
    let own = std::fs::read_to_string(&path).ok();
    let table = match &own {
        Some(own) => own.split(VERDICTS_HEADING).next().unwrap_or("").to_string(),
        None => markdown_table(&summary, &metrics(runs)),
    };
    let verdicts = markdown_verdicts(&summary, &metrics(runs));
    let text = if verdicts.is_empty() {
        table
    } else {
        format!("{}\n\n{verdicts}", table.trim_end())
    };
    if own.as_ref() != Some(&text) {
        std::fs::write(&path, text).map_err(|e| ctx(&path, e))?;
    }
    Ok(summary)
}

/// The heading of the verdicts in `summary.md`.
pub(super) const VERDICTS_HEADING: &str = "## Verdicts";

/// The verdicts between systems under test in Markdown, one line each
/// (empty when the run names no systems).
pub fn markdown_verdicts(summary: &Summary, metrics: &[Metric]) -> String {
    if summary.verdicts.is_empty() {
        return String::new();
    }
    let n = verdict::tested(&summary.verdicts);
    let mut out = format!(
        "{VERDICTS_HEADING}\n\nEvery pair of systems measured in the same condition; Mann-Whitney U, two-sided, Holm-corrected over the run's {n} comparisons; a difference is shown at p < 0.05.\n\n"
    );
    // Many pairs with too few trials (a sweep run once): one line for them.
    let untested = summary.verdicts.len() - n;
    let fold = untested > 12;
    if fold {
        out.push_str(&format!(
            "- {untested} pairs had too few trials to compare (at least 2 each in a condition; more repetitions or rounds).\n"
        ));
    }
    for v in summary.verdicts.iter().filter(|v| !(fold && v.p.is_nan())) {
        let Some(m) = metrics.iter().find(|m| m.name == v.metric) else {
            continue;
        };
        let at = if v.scenario.is_empty() {
            String::new()
        } else {
            format!(", {}", v.scenario)
        };
        out.push_str(&format!(
            "- {} ({}){at}: {}\n",
            m.display_name(),
            html::unit_text(&m.unit),
            verdict::markdown(v, m, n)
        ));
    }
    out
}

/// The summary as a Markdown table (`summary.md`): per scenario and
/// metric, in plain words with the unit, n, median, mean and the 95 %
/// bootstrap interval; then the best scenario per metric.
pub fn markdown_table(summary: &Summary, metrics: &[Metric]) -> String {
    let named: BTreeMap<&str, &Metric> = metrics.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut out =
        String::from("| scenario | metric | n | median | mean | 95 % CI (bootstrap) |\n|---|---|---:|---:|---:|---|\n");
    for c in &summary.cells {
        let s = &c.summary;
        let metric = named.get(c.metric.as_str()).map_or(c.metric.clone(), |m| {
            format!("{} ({})", m.display_name(), html::unit_text(&m.unit))
        });
        out.push_str(&format!(
            "| {} | {metric} | {} {} | {} | {} | {} |\n",
            c.scenario.replace('|', "\\|"),
            s.n,
            c.over,
            fmt_num(s.median),
            fmt_num(s.mean),
            c.ci_text()
        ));
    }
    if !summary.best.is_empty() {
        out.push('\n');
    }
    for b in &summary.best {
        let metric = named
            .get(b.metric.as_str())
            .map_or(b.metric.clone(), |m| m.display_name());
        out.push_str(&format!(
            "- best {metric}: {} ({})\n",
            b.scenario,
            best_reason(summary, b)
        ));
    }
    for n in &summary.notes {
        out.push_str(&format!("\nNote: {n}\n"));
    }
    out
}

/// A plain-text table of the summary for the terminal (`metrics` give the units).
pub fn terminal_table(summary: &Summary, metrics: &[Metric]) -> String {
    let units: BTreeMap<&str, &str> = metrics.iter().map(|m| (m.name.as_str(), m.unit.as_str())).collect();
    let mut rows = vec![[
        "scenario".to_string(),
        "metric".into(),
        "n".into(),
        "mean".into(),
        "median".into(),
        "stdev".into(),
        "95% CI (bootstrap)".into(),
    ]];
    for c in &summary.cells {
        let s = &c.summary;
        let unit = units
            .get(c.metric.as_str())
            .map(|u| format!(" ({u})"))
            .unwrap_or_default();
        rows.push([
            c.scenario.clone(),
            format!("{}{unit}", c.metric),
            format!("{} {}", s.n, c.over),
            fmt_num(s.mean),
            fmt_num(s.median),
            fmt_num(s.stdev),
            c.ci_text(),
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (k, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < 3 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if k == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 12));
            out.push('\n');
        }
    }
    for b in &summary.best {
        out.push_str(&format!(
            "best {}: {} ({})\n",
            b.metric,
            b.scenario,
            best_reason(summary, b)
        ));
    }
    for n in &summary.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// Why `b` is the best scenario, in words: a test, a median, or a median
/// because no test could show a difference with so few trials.
pub(crate) fn best_reason(summary: &Summary, b: &Best) -> String {
    let fewest = summary
        .cells
        .iter()
        .filter(|c| c.metric == b.metric)
        .map(|c| c.summary.n)
        .min()
        .unwrap_or(0);
    match b.result.chosen_by {
        stats::ChosenBy::Test => "by test: better than every other, p < 0.05".into(),
        stats::ChosenBy::Median if fewest < compare::MIN_A_SIDE => format!(
            "by median: too few trials to test ({fewest} in the smallest scenario; at least {} a side needed)",
            compare::MIN_A_SIDE
        ),
        stats::ChosenBy::Median => "by median: no scenario better than all others".into(),
    }
}

/// Numbers as people read them: thousands separated, sensible decimals.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let decimals = if x.abs() >= 1000.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        3
    };
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if x < 0.0 { "-" } else { "" };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}
