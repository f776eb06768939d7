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

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Axis ticks: about five round numbers covering lo..hi.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

pub(crate) fn boxplot(summary: &Summary, metric: &str, unit: &str) -> String {
    boxplot_scaled(summary, metric, &Scale::none(unit), &|s| s.to_string())
}

/// How a metric's values are shown: a time in µs that runs to tens of
/// thousands in ms, to millions in s (`5,268,046 us` reads 5.27
/// s); every other unit as it is, "us" written µs.
pub(crate) struct Scale {
    pub factor: f64,
    pub unit: String,
    /// A time in µs: each value in tables is written in the unit that
    /// suits it (186 µs, 752 ms, 3.02 s), as values of one metric can
    /// span orders of magnitude between systems.
    pub time: bool,
}

impl Scale {
    pub(crate) fn none(unit: &str) -> Scale {
        Scale {
            factor: 1.0,
            unit: unit_text(unit),
            time: false,
        }
    }

    /// A value for a table: a time in the unit that suits it, else the
    /// number on this scale.
    pub(crate) fn value(&self, v: f64) -> String {
        if self.time {
            time_text(v)
        } else {
            self.num(v)
        }
    }

    /// What a section's heading says the values are in.
    pub(crate) fn header(&self) -> String {
        if self.time {
            "time".into()
        } else {
            self.unit.clone()
        }
    }

    /// The scale for values of `unit` whose largest median is `largest`.
    pub(crate) fn for_values(unit: &str, largest: f64) -> Scale {
        match unit_text(unit).as_str() {
            "µs" if largest >= 1e6 => Scale {
                factor: 1e-6,
                unit: "s".into(),
                time: true,
            },
            "µs" if largest >= 1e4 => Scale {
                factor: 1e-3,
                unit: "ms".into(),
                time: true,
            },
            "µs" => Scale {
                factor: 1.0,
                unit: "µs".into(),
                time: true,
            },
            u => Scale {
                factor: 1.0,
                unit: u.into(),
                time: false,
            },
        }
    }

    pub(crate) fn num(&self, v: f64) -> String {
        fmt_num(v * self.factor)
    }
}

/// A time given in µs, in the unit that suits it: 186 µs, 752.0 ms, 3.022 s.
pub fn time_text(us: f64) -> String {
    let a = us.abs();
    if !us.is_finite() {
        "-".into()
    } else if a >= 1e6 {
        format!("{} s", fmt_num(us / 1e6))
    } else if a >= 1e3 {
        format!("{} ms", fmt_num(us / 1e3))
    } else {
        format!("{} µs", fmt_num(us))
    }
}

/// The box plot of one metric, its values scaled; `label` names each
/// scenario. Values spanning more than two orders of magnitude (all
/// above zero) get a logarithmic axis, so the slow do not sit on zero.
pub(crate) fn boxplot_scaled(summary: &Summary, metric: &str, scale: &Scale, label: &dyn Fn(&str) -> String) -> String {
    let cells: Vec<_> = summary.cells.iter().filter(|c| c.metric == metric).collect();
    if cells.is_empty() {
        return String::new();
    }
    let f = scale.factor;
    let (w, row, left, right) = (760.0, 34.0, 230.0, 30.0);
    let h = 40.0 + row * cells.len() as f64;
    let lo = cells.iter().map(|c| c.summary.min * f).fold(f64::INFINITY, f64::min);
    let hi = cells
        .iter()
        .map(|c| c.summary.max * f)
        .fold(f64::NEG_INFINITY, f64::max);
    let log = lo > 0.0 && hi / lo > 100.0;
    let (lo, hi) = if log {
        (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()))
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-6).max(1e-9);
        ((lo - pad).max(if lo >= 0.0 { 0.0 } else { f64::MIN }), hi + pad)
    };
    let x = |v: f64| {
        let v = v * f;
        let at = if log {
            (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())
        } else {
            (v - lo) / (hi - lo)
        };
        left + at * (w - left - right)
    };
    let mut s = format!(r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="12">"#);
    let marks: Vec<f64> = if log {
        let (a, b) = (lo.log10().round() as i32, hi.log10().round() as i32);
        (a..=b).map(|e| 10f64.powi(e)).collect()
    } else {
        ticks(lo, hi)
    };
    for t in marks {
        let t = t / f;
        let _ = write!(
            s,
            r##"<line x1="{0}" x2="{0}" y1="10" y2="{1}" stroke="#ddd"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"##,
            x(t),
            h - 25.0,
            h - 10.0,
            scale.num(t)
        );
    }
    for (i, c) in cells.iter().enumerate() {
        let y = 20.0 + row * i as f64;
        let m = &c.summary;
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            s,
            r##"<text x="{tx}" y="{ty}" text-anchor="end">{name}</text>
<line x1="{a}" x2="{b}" y1="{mid}" y2="{mid}" stroke="#555"/>
<line x1="{a}" x2="{a}" y1="{t}" y2="{bt}" stroke="#555"/><line x1="{b}" x2="{b}" y1="{t}" y2="{bt}" stroke="#555"/>
<rect x="{q1}" y="{top}" width="{qw}" height="{bh}" fill="{color}" fill-opacity="0.35" stroke="{color}"/>
<line x1="{md}" x2="{md}" y1="{top}" y2="{bot}" stroke="{color}" stroke-width="2"/>
<circle cx="{mn}" cy="{mid}" r="3" fill="#000"><title>mean {mean}</title></circle>"##,
            tx = left - 8.0,
            ty = y + row / 2.0 - 2.0,
            name = esc(&label(&c.scenario)),
            a = x(m.min),
            b = x(m.max),
            mid = y + row / 2.0 - 6.0,
            t = y + 6.0,
            bt = y + row - 18.0,
            q1 = x(m.q25),
            qw = (x(m.q75) - x(m.q25)).max(1.0),
            top = y + 2.0,
            bh = row - 16.0,
            bot = y + row - 14.0,
            md = x(m.median),
            mn = x(m.mean),
            mean = scale.num(m.mean),
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="end">{}{}</text></svg>"#,
        w - right,
        h,
        esc(&scale.unit),
        if log { " (logarithmic axis)" } else { "" }
    );
    s
}

fn cdf_plot(runs: &[Run]) -> String {
    let many = runs.len() > 1;
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in runs {
        for smp in r.samples.iter().filter(|s| s.kind == "trial" && !s.rtt_cdf.is_empty()) {
            let name = if many {
                format!("{} / {}", r.meta.run_id, smp.scenario)
            } else {
                smp.scenario.clone()
            };
            if !lines.iter().any(|(n, _)| *n == name) {
                lines.push((name, smp.rtt_cdf.clone()));
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let (w, h, left, bottom) = (760.0, 320.0, 60.0, 40.0);
    let all = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .filter(|x| *x > 0.0);
    let lo = all.clone().fold(f64::INFINITY, f64::min).max(0.01).log10().floor();
    let hi = all.fold(0.0, f64::max).max(1.0).log10().ceil().max(lo + 1.0);
    let x = |v: f64| left + (v.max(1e-3).log10() - lo) / (hi - lo) * (w - left - 20.0);
    let y = |f: f64| 10.0 + (1.0 - f) * (h - bottom - 10.0);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{}" font-size="12">"#,
        h + 20.0 * lines.len() as f64
    );
    let mut e = lo;
    while e <= hi {
        let v = 10f64.powf(e);
        let _ = write!(
            s,
            r##"<line x1="{0}" x2="{0}" y1="10" y2="{1}" stroke="#ddd"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"##,
            x(v),
            h - bottom,
            h - bottom + 15.0,
            fmt_num(v)
        );
        e += 1.0;
    }
    for f in [0.0, 0.5, 0.9, 0.99, 1.0] {
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#eee"/><text x="{tx}" y="{ty}" text-anchor="end">{f}</text>"##,
            x2 = w - 20.0,
            yy = y(f),
            tx = left - 5.0,
            ty = y(f) + 4.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">latency or round trip (µs, log scale)</text>"#,
        w / 2.0,
        h - 8.0
    );
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = pts.iter().map(|(v, f)| format!("{:.1},{:.1}", x(*v), y(*f))).collect();
        let _ = write!(
            s,
            r##"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/><rect x="{left}" y="{ly}" width="12" height="3" fill="{color}"/><text x="{}" y="{}">{}</text>"##,
            path.join(" "),
            left + 18.0,
            h + 20.0 * i as f64 + 4.0,
            esc(name),
            ly = h + 20.0 * i as f64,
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
/// Each run's trials as (label, switches, value) for `metric`, where the trials record a network size.
pub(crate) fn by_size(runs: &[Run], metric: &str) -> Vec<(String, Vec<(f64, f64)>)> {
    by_x(runs, metric).1
}

/// The x axis of a trial: its network size ("switches": a line per run),
/// its load ("concurrency") or its frame size ("frame_bytes"): a line per
/// run and scenario, the scenario's last word (the x value) left out.
fn x_of(s: &Sample) -> Option<(&'static str, f64)> {
    if let Some(&n) = s.values.get("switches") {
        return Some(("switches", n));
    }
    if let Some(&c) = s.values.get("concurrency") {
        return Some(("concurrency (new connections/s)", c));
    }
    s.values.get("frame_bytes").map(|&b| ("frame size (bytes)", b))
}

/// Means of `metric` per x value, a line per run (or per run and scenario
/// for frame sizes); the x axis' name.
/// A labelled line of (x, y) points.
type Line = (String, Vec<(f64, f64)>);

fn by_x(runs: &[Run], metric: &str) -> (&'static str, Vec<Line>) {
    let many = runs.len() > 1;
    let mut axis = "switches";
    // Per line: (x, sum, count).
    type Sums = Vec<(f64, f64, u32)>;
    let mut sums: Vec<(String, Sums)> = Vec::new();
    for r in runs {
        for smp in r.samples.iter().filter(|s| s.kind == "trial") {
            let (Some((name, x)), Some(&v)) = (x_of(smp), smp.values.get(metric)) else {
                continue;
            };
            axis = name;
            let label = if name == "switches" {
                r.meta.run_id.clone()
            } else {
                let group = smp.scenario.rsplit_once(' ').map_or(smp.scenario.as_str(), |g| g.0);
                if many {
                    format!("{} / {group}", r.meta.run_id)
                } else {
                    group.to_string()
                }
            };
            let line = match sums.iter_mut().position(|(l, _)| *l == label) {
                Some(i) => &mut sums[i].1,
                None => {
                    sums.push((label, Vec::new()));
                    &mut sums.last_mut().expect("just pushed").1
                }
            };
            match line.iter_mut().find(|(size, _, _)| *size == x) {
                Some(e) => {
                    e.1 += v;
                    e.2 += 1;
                }
                None => line.push((x, v, 1)),
            }
        }
    }
    let lines = sums
        .into_iter()
        .filter(|(_, pts)| pts.len() >= 2)
        .map(|(label, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (label, pts.iter().map(|(n, v, k)| (*n, v / *k as f64)).collect())
        })
        .collect();
    (axis, lines)
}

/// The mean of `metric` against the number of switches (a line per run)
/// or the frame size (a line per switch under test).
pub(crate) fn size_plot(runs: &[Run], metric: &str, unit: &str) -> String {
    let (axis, lines) = by_x(runs, metric);
    line_plot(&lines, &format!("{axis} (mean {metric} per size, {unit})"))
}

/// Samples streamed as they were taken (kinds ending in "-interval": a
/// flow's receiver, an HTTP client), one chart per kind and figure: a
/// line per scenario (and run), over the interval's index.
pub(crate) fn interval_plots(runs: &[Run]) -> String {
    let many = runs.len() > 1;
    let mut kinds: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.kind.as_str()))
        .filter(|k| k.ends_with("-interval"))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut h = String::new();
    for kind in kinds {
        let of_kind = || {
            runs.iter()
                .flat_map(move |r| r.samples.iter().filter(move |s| s.kind == kind).map(move |s| (r, s)))
        };
        let mut keys: Vec<&str> = of_kind()
            .flat_map(|(_, s)| s.values.keys().map(String::as_str))
            .filter(|k| !k.ends_with("_ns"))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let mut lines: Vec<Line> = Vec::new();
            for (r, s) in of_kind() {
                let Some(&v) = s.values.get(key) else { continue };
                let label = if many {
                    format!("{} / {}", r.meta.run_id, s.scenario)
                } else {
                    s.scenario.clone()
                };
                match lines.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, pts)) => pts.push((s.index as f64, v)),
                    None => lines.push((label, vec![(s.index as f64, v)])),
                }
            }
            for (_, pts) in &mut lines {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            let _ = write!(h, "<h3>{}: {}</h3>", esc(kind), esc(key));
            h.push_str(&line_plot(&lines, &format!("{key} per interval (interval number)")));
        }
    }
    h
}

/// A tick's label: whole numbers without decimals (an interval's number,
/// a frame size), others as `fmt_num` writes them.
fn tick(t: f64) -> String {
    if t.fract() == 0.0 && t.abs() < 1000.0 {
        format!("{}", t as i64)
    } else {
        fmt_num(t)
    }
}

/// `lines` drawn over a shared x axis, `caption` under it.
fn line_plot(lines: &[Line], caption: &str) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let (w, h, left, bottom) = (760.0, 300.0, 70.0, 40.0);
    let xs = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let ys = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let (x_lo, x_hi) = (xs.clone().fold(f64::INFINITY, f64::min), xs.fold(0.0, f64::max));
    let y_hi = ys.fold(0.0, f64::max) * 1.05 + 1e-12;
    let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
    let x = |v: f64| left + (v - x_lo) / (x_hi - x_lo) * (w - left - 20.0);
    let y = |v: f64| 10.0 + (1.0 - v / y_hi) * (h - bottom - 10.0);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{}" font-size="12">"#,
        h + 20.0 * lines.len() as f64
    );
    for t in ticks(x_lo, x_hi) {
        let _ = write!(
            s,
            r##"<line x1="{0}" x2="{0}" y1="10" y2="{1}" stroke="#ddd"/><text x="{0}" y="{2}" text-anchor="middle">{3}</text>"##,
            x(t),
            h - bottom,
            h - bottom + 15.0,
            tick(t)
        );
    }
    for t in ticks(0.0, y_hi) {
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{x2}" y1="{yy}" y2="{yy}" stroke="#eee"/><text x="{tx}" y="{ty}" text-anchor="end">{v}</text>"##,
            x2 = w - 20.0,
            yy = y(t),
            tx = left - 5.0,
            ty = y(t) + 4.0,
            v = tick(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        w / 2.0,
        h - 8.0,
        esc(caption)
    );
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = pts.iter().map(|(a, b)| format!("{:.1},{:.1}", x(*a), y(*b))).collect();
        for (a, b) in pts {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                x(*a),
                y(*b)
            );
        }
        let _ = write!(
            s,
            r##"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/><rect x="{left}" y="{ly}" width="12" height="3" fill="{color}"/><text x="{}" y="{}">{}</text>"##,
            path.join(" "),
            left + 18.0,
            h + 20.0 * i as f64 + 4.0,
            esc(name),
            ly = h + 20.0 * i as f64,
        );
    }
    s.push_str("</svg>");
    s
}

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
fn identical_metrics(summary: &Summary, metrics: &[crate::Metric]) -> BTreeMap<String, String> {
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
fn scenario_labels(runs: &[Run]) -> BTreeMap<String, String> {
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
fn answers(
    runs: &[Run],
    summary: &Summary,
    metrics: &[crate::Metric],
    same_as: &BTreeMap<String, String>,
    label: &dyn Fn(&str) -> String,
) -> String {
    let mut h = String::from("<h2 id=\"answers\">What this run shows</h2><table class=\"answers\"><tr><th>metric</th><th>medians</th><th>better</th><th>by</th><th>how sure</th></tr>");
    let n = crate::verdict::tested(&summary.verdicts);
    // By how much: a percentage, or a factor once one is twice the other.
    let pct = |good: f64, bad: f64| {
        let (hi, lo) = (good.abs().max(bad.abs()), good.abs().min(bad.abs()));
        let how = if good > bad { "higher" } else { "lower" };
        if !(good.is_finite() && bad.is_finite()) || bad == 0.0 {
            "-".into()
        } else if lo > 0.0 && hi / lo >= 2.0 {
            format!("{}x {how}", fmt_num(hi / lo))
        } else {
            format!("{:.1} % {how}", (good - bad).abs() / bad.abs() * 100.0)
        }
    };
    for m in metrics.iter().filter(|m| !same_as.contains_key(&m.name)) {
        let cells: Vec<&crate::Cell> = summary.cells.iter().filter(|c| c.metric == m.name).collect();
        let largest = cells.iter().map(|c| c.summary.median.abs()).fold(0.0, f64::max);
        let scale = Scale::for_values(&m.unit, largest);
        let name = format!("{} ({})", m.display_name(), scale.header());
        let verdicts: Vec<&crate::verdict::Verdict> = summary.verdicts.iter().filter(|v| v.metric == m.name).collect();
        if !verdicts.is_empty() {
            for v in verdicts {
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
                            pct(g, w),
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
                    esc(&name),
                    esc(&at),
                    esc(&medians),
                    esc(&better),
                    by,
                    esc(&sure)
                );
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
                        pct(best, runner_up)
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

/// A command as the setup shows it: an environment's PATH=... (dozens of
/// directories) elided; meta.json keeps it whole.
fn elide_path(command: &str) -> String {
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
fn param_text(v: &serde_json::Value) -> String {
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
fn setup(runs: &[Run]) -> String {
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
    for m in &metrics {
        if same_as.contains_key(&m.name) {
            continue;
        }
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
        for (other, same) in &same_as {
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
    }
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
