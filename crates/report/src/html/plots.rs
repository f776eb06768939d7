//! The report's figures as inline SVG: box plots (scaled to a readable
//! unit), round-trip CDFs, a metric against the network size, and the
//! per-interval line plots.

use super::*;

pub(super) const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Axis ticks: about five round numbers covering lo..hi.
pub(super) fn ticks(lo: f64, hi: f64) -> Vec<f64> {
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

pub(super) fn cdf_plot(runs: &[Run]) -> String {
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
        line_with_legend(&mut s, color, &path, (left, h), i, name);
    }
    s.push_str("</svg>");
    s
}

/// A series' line through `path` (its points, "x,y" each), and its
/// legend entry: the `i`-th below the plot whose left edge and bottom are
/// `at`.
fn line_with_legend(s: &mut String, color: &str, path: &[String], at: (f64, f64), i: usize, name: &str) {
    let (left, h) = at;
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

#[cfg(test)]
/// Each run's trials as (label, switches, value) for `metric`, where the trials record a network size.
pub(crate) fn by_size(runs: &[Run], metric: &str) -> Vec<(String, Vec<(f64, f64)>)> {
    by_x(runs, metric).1
}

/// The x axis of a trial: its network size ("switches": a line per run),
/// its load ("concurrency") or its frame size ("frame_bytes"): a line per
/// run and scenario, the scenario's last word (the x value) left out.
pub(super) fn x_of(s: &Sample) -> Option<(&'static str, f64)> {
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
pub(super) type Line = (String, Vec<(f64, f64)>);

pub(super) fn by_x(runs: &[Run], metric: &str) -> (&'static str, Vec<Line>) {
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
pub(super) fn tick(t: f64) -> String {
    if t.fract() == 0.0 && t.abs() < 1000.0 {
        format!("{}", t as i64)
    } else {
        fmt_num(t)
    }
}

/// `lines` drawn over a shared x axis, `caption` under it.
pub(super) fn line_plot(lines: &[Line], caption: &str) -> String {
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
        line_with_legend(&mut s, color, &path, (left, h), i, name);
    }
    s.push_str("</svg>");
    s
}
