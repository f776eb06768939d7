//! The report's sections that are not figures: each trial's values, the
//! machine, the answers a reader came for, and the set-up (commands,
//! parameters, systems under test).

use super::*;

/// Every trial's value of `metric`: RFC 8456 reports a row per trial.
pub(crate) fn trial_rows(runs: &[Run], metric: &str) -> String {
    trial_rows_scaled(runs, metric, &Scale::none(""))
}

pub(crate) fn trial_rows_scaled(runs: &[Run], metric: &str, scale: &Scale) -> String {
    let many = runs.len() > 1;
    let rows: Vec<String> = runs
        .iter()
        .flat_map(|r| r.samples.iter().map(move |s| (r, s)))
        .filter(|(_, s)| s.kind == "trial")
        .filter_map(|(r, s)| {
            let v = s.values.get(metric)?;
            let name = if many {
                format!("{} / {}", r.meta.run_id, s.scenario)
            } else {
                s.scenario.clone()
            };
            Some(format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&name),
                s.trial,
                scale.value(*v)
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<details><summary>every trial ({} rows)</summary><table><tr><th>scenario</th><th>trial</th><th>value</th></tr>{}</table></details>",
        rows.len(),
        rows.concat()
    )
}

/// The machine's rows of a setup table: CPU, memory, OS and kernel, host, sdnlab.
pub(crate) fn machine_rows(m: &crate::Meta) -> String {
    format!(
        "<tr><td>CPU</td><td class=\"l\">{} ({} cores)</td></tr><tr><td>memory</td><td class=\"l\">{:.1} GiB</td></tr>\
<tr><td>OS / kernel</td><td class=\"l\">{} / {}</td></tr><tr><td>host</td><td class=\"l\">{}</td></tr>\
<tr><td>sdnlab</td><td class=\"l\">{}</td></tr>",
        esc(&m.setup.cpu_model),
        m.setup.cores,
        m.setup.memory_bytes as f64 / (1u64 << 30) as f64,
        esc(&m.setup.os),
        esc(&m.setup.kernel),
        esc(&m.setup.hostname),
        esc(&m.sdnlab_version)
    )
}

/// Metrics whose figures equal an earlier metric's in every scenario
/// (same count, median, mean, extremes), each with the earlier one.
pub(super) fn identical_metrics(summary: &Summary, metrics: &[crate::Metric]) -> BTreeMap<String, String> {
    let figures = |name: &str| -> Vec<(String, usize, u64, u64, u64, u64)> {
        summary
            .cells
            .iter()
            .filter(|c| c.metric == name)
            .map(|c| {
                let s = &c.summary;
                (
                    c.scenario.clone(),
                    s.n,
                    s.median.to_bits(),
                    s.mean.to_bits(),
                    s.min.to_bits(),
                    s.max.to_bits(),
                )
            })
            .collect()
    };
    let mut same = BTreeMap::new();
    for (i, m) in metrics.iter().enumerate() {
        let mine = figures(&m.name);
        // Zero everywhere (no error, no loss) is no sign that two counts
        // are one figure: each keeps its section.
        let all_zero = summary
            .cells
            .iter()
            .filter(|c| c.metric == m.name)
            .all(|c| c.summary.min == 0.0 && c.summary.max == 0.0);
        if mine.is_empty() || all_zero {
            continue;
        }
        if let Some(earlier) = metrics[..i]
            .iter()
            .find(|e| !same.contains_key(&e.name) && e.better == m.better && figures(&e.name) == mine)
        {
            same.insert(m.name.clone(), earlier.name.clone());
        }
    }
    same
}

/// Each scenario as the reader should read it: a run whose answers are
/// Faucet's (a FLOW_MOD naming each new source, once) says so, since its
/// figure is new sources learnt, not answers per PACKET_IN.
pub(super) fn scenario_labels(runs: &[Run]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let many = runs.len() > 1;
    for r in runs {
        // (Runs written before meta.json said so: Faucet by name.)
        let faucet = r.meta.targets.first().is_some_and(|t| t.name.starts_with("faucet"));
        if r.meta.parameters["answers"] != "new-source" && !(r.meta.parameters["answers"].is_null() && faucet) {
            continue;
        }
        for s in &r.samples {
            let name = if many {
                format!("{} / {}", r.meta.run_id, s.scenario)
            } else {
                s.scenario.clone()
            };
            out.entry(name.clone())
                .or_insert_with(|| format!("{name} (new sources learnt)"));
        }
    }
    out
}

/// What the run shows, first: per metric, the verdict between the systems
/// (who is better, by how much, the corrected p-value) or why there is
/// none; then the notes, and the warnings about the instrument (its
/// ceiling) and the host (host-bound trials).
pub(super) fn answers(
    runs: &[Run],
    summary: &Summary,
    metrics: &[crate::Metric],
    same_as: &BTreeMap<String, String>,
    label: &dyn Fn(&str) -> String,
) -> String {
    let mut h = String::from("<h2 id=\"answers\">What this run shows</h2><table class=\"answers\"><tr><th>metric</th><th>medians</th><th>better</th><th>by</th><th>how sure</th></tr>");
    let n = crate::verdict::tested(&summary.verdicts);
    for m in metrics.iter().filter(|m| !same_as.contains_key(&m.name)) {
        let cells: Vec<&crate::Cell> = summary.cells.iter().filter(|c| c.metric == m.name).collect();
        let largest = cells.iter().map(|c| c.summary.median.abs()).fold(0.0, f64::max);
        let scale = Scale::for_values(&m.unit, largest);
        let name = format!("{} ({})", m.display_name(), scale.header());
        let verdicts: Vec<&crate::verdict::Verdict> = summary.verdicts.iter().filter(|v| v.metric == m.name).collect();
        if !verdicts.is_empty() {
            for v in verdicts {
                h.push_str(&verdict_row(v, &name, &scale, n));
            }
            continue;
        }
        let medians = cells
            .iter()
            .map(|c| format!("{} {}", label(&c.scenario), scale.value(c.summary.median)))
            .collect::<Vec<_>>()
            .join("; ");
        let (better, by, sure) = match summary.best.iter().find(|b| b.metric == m.name) {
            Some(b) => {
                let mut meds: Vec<f64> = cells.iter().map(|c| c.summary.median).collect();
                let best = cells
                    .iter()
                    .find(|c| c.scenario == b.scenario)
                    .map(|c| c.summary.median)
                    .unwrap_or(f64::NAN);
                meds.retain(|x| x.to_bits() != best.to_bits());
                let runner_up = match m.better {
                    stats::Better::Higher => meds.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    stats::Better::Lower => meds.iter().copied().fold(f64::INFINITY, f64::min),
                };
                let shown = b.result.chosen_by == stats::ChosenBy::Test;
                (
                    if shown {
                        label(&b.scenario)
                    } else {
                        format!("no verdict ({} by median)", label(&b.scenario))
                    },
                    if runner_up.is_finite() {
                        by_how_much(best, runner_up)
                    } else {
                        "-".into()
                    },
                    crate::best_reason(summary, b),
                )
            }
            None if cells.len() <= 1 => (
                "-".into(),
                "-".into(),
                "one system in one condition: nothing to compare".into(),
            ),
            None => (
                "-".into(),
                "-".into(),
                "no test (the scenarios are not systems to compare)".into(),
            ),
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><b>{}</b></td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(&name),
            esc(&medians),
            esc(&better),
            by,
            esc(&sure)
        );
    }
    h.push_str("</table>");
    for n in &summary.notes {
        let _ = write!(h, "<p class=\"verdict\"><b>Note:</b> {}</p>", esc(n));
    }
    let many = runs.len() > 1;
    let warnings: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.meta
                .events
                .iter()
                .filter(|e| {
                    e.contains("WARNING")
                        || e.contains("UNRELIABLE")
                        || e.contains("host-bound")
                        || e.contains("may be the limit")
                })
                .map(move |e| {
                    if many {
                        format!("{}: {e}", r.meta.run_id)
                    } else {
                        e.clone()
                    }
                })
        })
        .collect();
    if !warnings.is_empty() {
        h.push_str("<p><b>Warnings</b> (the instrument's ceiling, the host):</p><ul class=\"warn\">");
        for w in warnings {
            let _ = write!(h, "<li>{}</li>", esc(&w));
        }
        h.push_str("</ul>");
    }
    h
}

/// By how much `good` beats `bad`: a percentage, or a factor once one is
/// twice the other.
fn by_how_much(good: f64, bad: f64) -> String {
    let (hi, lo) = (good.abs().max(bad.abs()), good.abs().min(bad.abs()));
    let how = if good > bad { "higher" } else { "lower" };
    if !(good.is_finite() && bad.is_finite()) || bad == 0.0 {
        "-".into()
    } else if lo > 0.0 && hi / lo >= 2.0 {
        format!("{}x {how}", fmt_num(hi / lo))
    } else {
        format!("{:.1} % {how}", (good - bad).abs() / bad.abs() * 100.0)
    }
}

/// One verdict between two systems as a row of the answers' table: their
/// medians, the better one, by how much, and how sure (`n` comparisons).
fn verdict_row(v: &crate::verdict::Verdict, name: &str, scale: &Scale, n: usize) -> String {
    let mut h = String::new();
    let at = if v.scenario.is_empty() {
        String::new()
    } else {
        format!(", {}", v.scenario)
    };
    let medians = format!(
        "{} {}; {} {}",
        v.a,
        scale.value(v.median_a),
        v.b,
        scale.value(v.median_b)
    );
    let (better, by, sure) = match &v.better {
        Some(b) => {
            let (g, w) = if *b == v.a {
                (v.median_a, v.median_b)
            } else {
                (v.median_b, v.median_a)
            };
            (
                b.clone(),
                by_how_much(g, w),
                format!("p = {:.3} (Holm, {n} comparisons)", v.p_holm),
            )
        }
        None if v.p.is_nan() => (
            "no verdict".into(),
            "-".into(),
            format!("too few trials (n = {} and {}; at least 4 a side)", v.n_a, v.n_b),
        ),
        None if crate::verdict::smallest_p(v.n_a, v.n_b) >= crate::verdict::ALPHA => (
            "no verdict".into(),
            "-".into(),
            format!(
                "too few trials to test (n = {} and {}; at least 4 a side)",
                v.n_a, v.n_b
            ),
        ),
        None => (
            "no difference shown".into(),
            "-".into(),
            format!("p = {:.3} (Holm, {n} comparisons)", v.p_holm),
        ),
    };
    let _ = write!(
        h,
        "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\"><b>{}</b></td><td>{}</td><td class=\"l\">{}</td></tr>",
        esc(name),
        esc(&at),
        esc(&medians),
        esc(&better),
        by,
        esc(&sure)
    );
    h
}

/// A command as the setup shows it: an environment's PATH=... (dozens of
/// directories) elided; meta.json keeps it whole.
pub(super) fn elide_path(command: &str) -> String {
    command
        .split(' ')
        .map(|w| {
            if w.starts_with("PATH=") && w.len() > 40 {
                "PATH=…"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A parameter's value as people write it: integers without ".0".
pub(super) fn param_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// How the run was made, once: one column per run (per system), a row
/// said once when every run says the same; the parameters the test used
/// (none left empty), integers as integers; each run's events.
pub(super) fn setup(runs: &[Run]) -> String {
    let mut h = String::from("<h2 id=\"setup\">Setup</h2><table>");
    let row = |name: &str, values: Vec<String>| -> String {
        let first = values.first().cloned().unwrap_or_default();
        if values.iter().all(|v| *v == first) {
            format!(
                "<tr><td>{}</td><td class=\"l\" colspan=\"{}\">{first}</td></tr>",
                esc(name),
                values.len()
            )
        } else {
            let cells: String = values.iter().map(|v| format!("<td class=\"l\">{v}</td>")).collect();
            format!("<tr><td>{}</td>{cells}</tr>", esc(name))
        }
    };
    if runs.len() > 1 {
        h.push_str("<tr><th></th>");
        for r in runs {
            let _ = write!(h, "<th>{}</th>", esc(&r.meta.run_id));
        }
        h.push_str("</tr>");
    }
    let each = |f: &dyn Fn(&crate::Meta) -> String| runs.iter().map(|r| f(&r.meta)).collect::<Vec<_>>();
    h.push_str(&row(
        "CPU",
        each(&|m| format!("{} ({} cores)", esc(&m.setup.cpu_model), m.setup.cores)),
    ));
    h.push_str(&row(
        "memory",
        each(&|m| format!("{:.1} GiB", m.setup.memory_bytes as f64 / (1u64 << 30) as f64)),
    ));
    h.push_str(&row(
        "OS / kernel",
        each(&|m| format!("{} / {}", esc(&m.setup.os), esc(&m.setup.kernel))),
    ));
    h.push_str(&row("host", each(&|m| esc(&m.setup.hostname))));
    h.push_str(&row("sdnlab", each(&|m| esc(&m.sdnlab_version))));
    h.push_str(&row(
        "command",
        each(&|m| format!("<code>{}</code>", esc(&m.command.join(" ")))),
    ));
    h.push_str(&row(
        "started / finished (UTC)",
        each(&|m| {
            format!(
                "{} / {}",
                crate::iso8601(m.started_unix),
                m.finished_unix
                    .map(crate::iso8601)
                    .unwrap_or_else(|| "not finished".into())
            )
        }),
    ));
    h.push_str(&row(
        "target",
        each(&|m| {
            m.targets
                .iter()
                .map(|t| {
                    format!(
                        "{} {}{}{}",
                        esc(&t.name),
                        esc(&t.version),
                        if t.address.is_empty() {
                            String::new()
                        } else {
                            format!(" at {}", esc(&t.address))
                        },
                        if t.command.is_empty() {
                            String::new()
                        } else {
                            format!(" (started as <code>{}</code>)", esc(&elide_path(&t.command)))
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("<br>")
        }),
    ));
    // The parameters the runs used, a row each.
    let mut keys: Vec<String> = Vec::new();
    for r in runs {
        if let Some(o) = r.meta.parameters.as_object() {
            for (k, v) in o {
                if !v.is_null() && !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    for k in &keys {
        h.push_str(&row(
            k,
            each(&|m| {
                let v = &m.parameters[k.as_str()];
                if v.is_null() {
                    "-".into()
                } else if v.is_object() || v.is_array() {
                    format!("<code>{}</code>", esc(&v.to_string()))
                } else {
                    esc(&param_text(v))
                }
            }),
        ));
    }
    h.push_str("</table>");
    for r in runs {
        if r.meta.events.is_empty() {
            continue;
        }
        if runs.len() > 1 {
            let _ = write!(h, "<p>Events of {}:</p><ul>", esc(&r.meta.run_id));
        } else {
            h.push_str("<p>Events:</p><ul>");
        }
        for e in &r.meta.events {
            let _ = write!(h, "<li>{}</li>", esc(e));
        }
        h.push_str("</ul>");
    }
    h
}
