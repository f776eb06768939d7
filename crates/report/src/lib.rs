//! Benchmark results on disk and the reports made from them, shared by
//! every `sdnlab bench`. A run is a directory:
//!
//! - `meta.json`: the setup RFC 8456 asks a report to state (CPU model,
//!   cores, memory, OS, kernel, the controllers measured with their version
//!   and command, sdnlab's version, every parameter, start and end times);
//! - `samples.jsonl`: one JSON object per measurement, appended and flushed
//!   as it is measured, before anything is summarised;
//! - `summary.json`, `summary.csv`: per scenario and metric, the statistics
//!   (`stats`), and per metric the best scenario with the pairwise tests;
//! - `report.html`: all of it in one self-contained page (inline SVG box
//!   plots and round-trip CDFs; no script, no network).
//!
//! `load` reads a run back, so reports can be rebuilt and runs compared.

pub mod compare;
pub mod html;
pub mod suite;
mod text;
pub mod verdict;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

mod files;
mod model;
mod summary;
mod tables;
pub use files::*;
pub use model::*;
pub use summary::*;
pub use tables::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell's line of summary.csv has a field for each column the
    /// header names, in its order (the suite's adds its section and target).
    #[test]
    fn a_cells_csv_row_matches_the_header() {
        let c = Cell::of("s1", "rate", "trials", &[1.0, 2.0, 3.0]);
        let row = c.csv_row();
        assert_eq!(row.split(',').count(), Cell::CSV_HEADER.split(',').count(), "{row}");
        assert!(row.starts_with("\"s1\",rate,trials,3,2,2,1,1,3,"), "{row}");
        let quoted = Cell::of("a,b", "rate", "trials", &[1.0]).csv_row();
        assert!(quoted.starts_with("\"a,b\",rate,"), "{quoted}");
    }

    fn sample(kind: &str, scenario: &str, trial: u32, v: f64) -> Sample {
        Sample {
            kind: kind.into(),
            scenario: scenario.into(),
            trial,
            index: 0,
            unix: 0.0,
            values: BTreeMap::from([("rate".to_string(), v)]),
            rtt_cdf: vec![(10.0, 0.5), (20.0, 1.0)],
            note: None,
            system: None,
            condition: None,
        }
    }

    /// A report of several systems (a run per peer) opens with what it
    /// shows: per metric the medians, the better one or why there is no
    /// verdict, then the warnings; the setup once, a column per system, a
    /// row said once where all agree, the parameters used (none null,
    /// integers as integers); a metric identical to another in every
    /// trial shown once; microseconds that run to tens of thousands in ms;
    /// a Faucet-style run (new sources learnt) labelled; values spanning
    /// orders of magnitude on a logarithmic axis.
    #[test]
    fn a_report_answers_first_and_says_its_setup_once() {
        let base = std::env::temp_dir().join(format!("sdnlab-report-answers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let mut runs = Vec::new();
        for (name, rate, rtt, answers) in [
            ("fast", 1_000_000.0, 5_268_046.0, "buffer"),
            ("slow", 2_000.0, 2_000_000.0, "new-source"),
        ] {
            let dir = base.join(name);
            let meta = Meta {
                run_id: name.into(),
                parameters: serde_json::json!({"switches": 16, "connect_rate": 0.0, "app": null, "answers": answers}),
                events: vec![format!(
                    "switches=16: ... UNRELIABLE: its runs spread more than 20 % ({name})"
                )],
                metrics: vec![
                    Metric::new("rate", "responses/s", stats::Better::Higher).titled("Responses per second"),
                    Metric::new("matched", "matched responses/s", stats::Better::Higher).titled("Matched"),
                    Metric::new("rtt", "us", stats::Better::Lower).titled("Round trip"),
                    Metric::new("errors", "errors", stats::Better::Lower).titled("Errors"),
                    Metric::new("lost", "frames", stats::Better::Lower).titled("Lost"),
                ],
                ..Default::default()
            };
            let mut w = RunWriter::create(&dir, &meta).unwrap();
            for t in 0..5 {
                let mut s = sample("trial", "switches=16", t, rate + t as f64);
                s.values.insert("matched".into(), rate + t as f64);
                s.values.insert("rtt".into(), rtt + t as f64);
                s.values.insert("errors".into(), 0.0);
                s.values.insert("lost".into(), 0.0);
                w.append(&s).unwrap();
            }
            w.finish(&meta).unwrap();
            runs.push(load(&dir).unwrap());
        }
        write_outputs(&base, &runs).unwrap();
        let html = std::fs::read_to_string(base.join("report.html")).unwrap();
        let at = |what: &str| html.find(what).unwrap_or_else(|| panic!("no '{what}' in the page"));
        assert!(
            at("What this run shows") < at("<h2 id=\"setup\">"),
            "the answers come first"
        );
        assert!(at("UNRELIABLE") < at("<h2 id=\"setup\">"), "the warnings too");
        assert!(html.contains("<b>fast / switches=16</b>"), "the better one named");
        assert!(html.contains("499.5x higher"), "by how much: a factor");
        // The machine said once for both, the runs side by side.
        assert_eq!(html.matches("<td>CPU</td>").count(), 1);
        assert!(html.contains("<th>fast</th><th>slow</th>"));
        assert!(
            html.contains("<td>connect_rate</td><td class=\"l\" colspan=\"2\">0</td>"),
            "integers as integers"
        );
        assert!(!html.contains("<td>app</td>"), "a parameter not used is not listed");
        // Matched responses are the same figure: one section.
        assert!(html.contains("Matched (<code>matched</code>) is the same figure in every trial"));
        assert!(!html.contains("id=\"m-matched\""));
        // Two counts that are zero everywhere are not one figure.
        assert!(html.contains("id=\"m-errors\"") && html.contains("id=\"m-lost\""));
        // 5,268,046 µs reads 5.268 s; no "us" left.
        assert!(
            html.contains("Round trip (time; lower is better)"),
            "{}",
            &html[at("id=\"m-rtt\"")..][..200]
        );
        assert!(
            html.contains("5.268 s") && html.contains("2.000 s"),
            "each time in its unit"
        );
        assert!(
            !html.contains("(us"),
            "{}",
            &html[html.find("(us").unwrap_or(0).saturating_sub(150)..][..300]
        );
        assert!(html.contains("slow / switches=16 (new sources learnt)"));
        assert!(html.contains("(logarithmic axis)"), "1,000,000 against 2,000");
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Two switches in one run, each measured at two frame sizes: the
    /// verdicts compare them per frame size (never across sizes), name
    /// the better one where the corrected test shows it, and say "no
    /// difference shown" where it does not; the page and summary.md
    /// write them out, and rebuilding the report does not repeat them.
    #[test]
    fn one_run_of_several_systems_gets_verdicts_per_condition() {
        let dir = std::env::temp_dir().join(format!("sdnlab-report-verdicts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let meta = Meta {
            run_id: "dp".into(),
            metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher).titled("Throughput")],
            ..Default::default()
        };
        let mut w = RunWriter::create(&dir, &meta).unwrap();
        for t in 0..8 {
            let x = t as f64;
            for (dut, frame, v) in [
                ("sdnlab", "64B", 2000.0 + x),
                ("ovs", "64B", 1000.0 + x),
                ("sdnlab", "1518B", 500.0 + x),
                ("ovs", "1518B", 500.0 + (7 - t) as f64),
            ] {
                let s = sample("trial", &format!("{dut} {frame}"), t, v).under_test(dut, frame);
                w.append(&s).unwrap();
            }
        }
        let summary = w.finish(&meta).unwrap();
        assert!(summary.best.is_empty(), "no best scenario across frame sizes");
        assert_eq!(summary.verdicts.len(), 2, "{:?}", summary.verdicts);
        let at = |c: &str| summary.verdicts.iter().find(|v| v.scenario == c).unwrap();
        assert_eq!(at("64B").better.as_deref(), Some("sdnlab"));
        assert!(at("64B").p_holm < 0.05 && at("64B").p_holm >= at("64B").p);
        assert!(at("1518B").better.is_none(), "{:?}", at("1518B"));
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains(
                "64B: <strong>sdnlab</strong> is better than ovs: median 2,004 against 1,004 frames/s (99.7 % higher"
            ),
            "{html}"
        );
        assert!(
            html.contains("1518B: No difference shown between sdnlab and ovs"),
            "{html}"
        );
        assert!(
            html.contains("Holm-corrected over the report's 2 comparisons"),
            "{html}"
        );
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(
            md.contains("- Throughput (frames/s), 64B: **sdnlab** is better than ovs"),
            "{md}"
        );
        write_outputs(&dir, &[load(&dir).unwrap()]).unwrap();
        let again = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert_eq!(again, md, "a rebuild writes the same summary.md");
        // The sample's system and condition survive the round trip.
        let back = load(&dir).unwrap();
        assert_eq!(back.samples[0].system.as_deref(), Some("sdnlab"));
        assert_eq!(back.samples[0].condition.as_deref(), Some("64B"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Counts and times are never negative, and neither is the interval
    /// shown for them: a t interval over these (0, 0, 0, 1, 5) goes below zero.
    #[test]
    fn csv_fields_keep_their_quotes() {
        assert_eq!(csv_quoted("leaf-spine,2,2,1"), "\"leaf-spine,2,2,1\"");
        assert_eq!(csv_quoted("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn times_are_written_in_iso_8601() {
        assert_eq!(iso8601(0.0), "1970-01-01T00:00:00Z");
        // date -u -d @1795699374 +%FT%TZ
        assert_eq!(iso8601(1_795_699_374.6), "2026-11-26T13:22:54Z");
        assert_eq!(iso8601(951_782_400.0), "2000-02-29T00:00:00Z");
    }

    fn ctl_run(trials: &[f64]) -> Run {
        Run {
            dir: PathBuf::new(),
            meta: Meta {
                benchmark: "bench ctl".into(),
                parameters: serde_json::json!({ "trials": trials.len() }),
                metrics: vec![Metric::new("rate", "/s", stats::Better::Higher)],
                ..Meta::default()
            },
            samples: trials
                .iter()
                .enumerate()
                .map(|(k, v)| sample("trial", "s", k as u32, *v))
                .collect(),
        }
    }

    /// Under RFC 8456's 10 trials, the run says so once; trials a factor
    /// of two apart are called out, naming the widest; an interval from
    /// one or two values is n/a, on the terminal and in summary.md.
    #[test]
    fn small_and_disagreeing_runs_say_so() {
        let s = summarise(&[ctl_run(&[8.5e6, 2.6e6])]);
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(
            s.notes[0].starts_with("2 trial(s) per scenario, under RFC 8456's 10"),
            "{:?}",
            s.notes
        );
        assert!(
            s.notes[1].contains("rate of s: 2,600,000 to 8,500,000 (x3.3)"),
            "{:?}",
            s.notes
        );
        let t = terminal_table(&s, &[]);
        assert!(t.contains("n/a (under 3 values)"), "{t}");
        assert_eq!(t.matches("note: ").count(), 2, "{t}");
        assert!(markdown_table(&s, &[]).contains("Note: Trials disagree"));
        // Ten steady trials: nothing to say, and an interval.
        let s = summarise(&[ctl_run(&[10.0, 11.0, 10.5, 10.2, 10.8, 10.1, 10.9, 10.4, 10.6, 10.3])]);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        assert!(!terminal_table(&s, &[]).contains("n/a"));
        // Another benchmark is not held to RFC 8456's count.
        let mut other = ctl_run(&[10.0, 11.0, 10.5]);
        other.meta.benchmark = "bench dp".into();
        assert!(summarise(&[other]).notes.is_empty());
    }

    #[test]
    fn the_instruments_ceiling_is_never_a_measurement() {
        // One trial: the statistics run over its loops, and the ceiling
        // measured before it (same scenario) is not one of them.
        let runs = [Run {
            dir: PathBuf::new(),
            meta: Meta::default(),
            samples: vec![
                sample(CEILING_KIND, "s", 0, 1000.0),
                sample("loop", "s", 0, 10.0),
                sample("loop", "s", 0, 12.0),
                sample("trial", "s", 0, 11.0),
            ],
        }];
        assert_eq!(values(&runs, "s", "rate"), (vec![10.0, 12.0], "loops"));
    }

    /// Two trials a side with a tenfold gap: no test can show it, and the
    /// best scenario says it was picked by median for that reason; ten a
    /// side, the test shows it.
    #[test]
    fn a_best_scenario_with_too_few_trials_says_so() {
        let run = |n: u32| Run {
            dir: PathBuf::new(),
            meta: Meta {
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples: (0..n)
                .flat_map(|t| {
                    [
                        sample("trial", "fast", t, 100.0 + t as f64),
                        sample("trial", "slow", t, 10.0 + t as f64),
                    ]
                })
                .collect(),
        };
        let few = summarise(&[run(2)]);
        let t = terminal_table(&few, &[]);
        assert!(
            t.contains("best rate: fast (by median: too few trials to test (2 in the smallest scenario"),
            "{t}"
        );
        let many = summarise(&[run(10)]);
        let t = terminal_table(&many, &[]);
        assert!(
            t.contains("best rate: fast (by test: better than every other, p < 0.05)"),
            "{t}"
        );
    }

    #[test]
    fn the_interval_shown_stays_in_the_metric_domain() {
        let meta = Meta {
            metrics: vec![Metric::new("rate", "frames", stats::Better::Lower)],
            ..Default::default()
        };
        let samples: Vec<Sample> = [0.0, 0.0, 0.0, 1.0, 5.0]
            .iter()
            .enumerate()
            .map(|(t, v)| sample("trial", "s", t as u32, *v))
            .collect();
        assert!(stats::summary(&[0.0, 0.0, 0.0, 1.0, 5.0]).ci95.0 < 0.0);
        let runs = [Run {
            dir: PathBuf::new(),
            meta: meta.clone(),
            samples,
        }];
        let summary = summarise(&runs);
        let c = &summary.cells[0];
        assert!(
            c.ci95_bootstrap.0 >= 0.0 && c.ci95_bootstrap.1 <= 5.0,
            "{:?}",
            c.ci95_bootstrap
        );
        let table = terminal_table(&summary, &meta.metrics);
        assert!(!table.lines().skip(2).any(|l| l.contains('-')), "{table}");
        let html = html::render(&runs, &summary);
        assert!(!html.contains(">-0"), "a negative bound in the page");
        assert!(html.contains("bootstrap"));
    }

    #[test]
    fn a_run_is_written_read_back_and_summarised() {
        let dir = std::env::temp_dir().join(format!("sdnlab-report-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let meta = Meta {
            run_id: "t1".into(),
            benchmark: "bench ctl".into(),
            metrics: vec![
                Metric::new("rate", "responses/s", stats::Better::Higher),
                Metric::new("unmeasured", "s", stats::Better::Lower).titled("Never measured"),
            ],
            setup: Setup::detect(),
            ..Default::default()
        };
        let mut w = RunWriter::create(&dir, &meta).unwrap();
        for t in 0..10 {
            w.append(&sample("trial", "switches=1", t, 100.0 + t as f64)).unwrap();
            w.append(&sample("trial", "switches=2", t, 200.0 + t as f64)).unwrap();
        }
        // Samples are on disk before anything is summarised.
        let on_disk = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
        assert_eq!(on_disk.lines().count(), 20);
        let summary = w.finish(&meta).unwrap();
        assert_eq!(summary.cells.len(), 2);
        assert_eq!(summary.cells[1].summary.mean, 204.5);
        assert_eq!(summary.best[0].scenario, "switches=2");
        for f in ["summary.json", "summary.csv", "report.html", "summary.md"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        // The Markdown table names the metric with its unit, a row per scenario.
        let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
        assert!(
            md.contains("| switches=2 | rate (responses/s) | 10 trials | 204.5 |"),
            "{md}"
        );
        assert!(md.contains("- best rate: switches=2"), "{md}");
        // An experiment's own table is kept when the report is rebuilt.
        std::fs::write(dir.join("summary.md"), "own table").unwrap();
        write_outputs(&dir, &[load(&dir).unwrap()]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("summary.md")).unwrap(), "own table");
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(html.contains("<svg") && html.contains("switches=2") && !html.contains("<script"));
        // A table of contents with a section per metric measured, and the
        // files beside the page linked.
        assert!(html.contains("<a href=\"#m-rate\">rate</a>") && html.contains("<h2 id=\"m-rate\">"));
        assert!(
            !html.contains("Never measured"),
            "a metric with no figure gets no section"
        );
        assert!(html.contains("<a href=\"summary.csv\">"));
        assert!(
            RunWriter::create(&dir, &meta).is_err(),
            "a second run into the same directory"
        );
        // A run killed mid-line still loads.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("samples.jsonl"))
            .unwrap()
            .write_all(b"{\"kind\": \"tri")
            .unwrap();
        assert_eq!(load(&dir).unwrap().samples.len(), 20);
        // Two runs side by side: scenarios carry the run id.
        let a = load(&dir).unwrap();
        let mut b = a.clone();
        b.meta.run_id = "t2".into();
        let both = summarise(&[a, b]);
        assert_eq!(both.cells.len(), 4);
        assert!(both.cells.iter().any(|c| c.scenario == "t2 / switches=1"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// RFC 8456's result format: a row per trial, and the metric against
    /// the network size when trials record one.
    #[test]
    fn every_trial_is_listed_and_plotted_against_the_network_size() {
        let run = |sized: bool| Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "sized".into(),
                metrics: vec![Metric::new("rate", "paths/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples: (0..6)
                .map(|t| {
                    let mut s = sample("trial", if t < 3 { "small" } else { "large" }, t % 3, t as f64);
                    if sized {
                        s.values.insert("switches".into(), if t < 3 { 4.0 } else { 34.0 });
                    }
                    s
                })
                .collect(),
        };
        let with = html::render(&[run(true)], &summarise(&[run(true)]));
        assert!(with.contains("every trial (6 rows)"), "one row per trial");
        assert!(
            with.contains("<tr><td>large</td><td>2</td><td>5.000</td></tr>"),
            "{with}"
        );
        assert!(with.contains("switches (mean rate per size"), "a plot against the size");
        // Means per size: (0+1+2)/3 = 1 at 4 switches, (3+4+5)/3 = 4 at 34.
        assert_eq!(html::by_size(&[run(true)], "rate")[0].1, vec![(4.0, 1.0), (34.0, 4.0)]);
        let without = html::render(&[run(false)], &summarise(&[run(false)]));
        assert!(!without.contains("switches (mean"), "no size, no size plot");
    }

    /// RFC 2544's figures against the frame size: a line per switch (the
    /// scenario without its size).
    #[test]
    fn frame_sizes_give_a_line_per_switch() {
        let mut samples = Vec::new();
        for (t, (dut, frame, fps)) in [
            ("a", 64.0, 10.0),
            ("a", 1518.0, 2.0),
            ("b", 64.0, 30.0),
            ("b", 1518.0, 4.0),
            ("b", 64.0, 50.0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = sample("trial", &format!("{dut} {frame}B"), t as u32, fps);
            s.values.insert("frame_bytes".into(), frame);
            samples.push(s);
        }
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "dp".into(),
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples,
        };
        let lines = html::by_size(std::slice::from_ref(&run), "rate");
        assert_eq!(
            lines,
            vec![
                ("a".to_string(), vec![(64.0, 10.0), (1518.0, 2.0)]),
                ("b".to_string(), vec![(64.0, 40.0), (1518.0, 4.0)])
            ]
        );
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("frame size (bytes) (mean rate per size"));
    }

    /// The load balancer's figures against the offered load: a line per
    /// policy, load and client.
    #[test]
    fn concurrency_gives_a_line_per_policy() {
        let mut samples = Vec::new();
        for (t, (scenario, level, ms)) in [
            ("load homogeneous open-loop", 20.0, 21.0),
            ("load homogeneous open-loop", 200.0, 90.0),
            ("txbytes homogeneous open-loop", 20.0, 20.0),
            ("txbytes homogeneous open-loop", 200.0, 40.0),
            ("txbytes homogeneous open-loop", 200.0, 60.0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut s = sample("trial", &format!("{scenario} {level}"), t as u32, ms);
            s.values.insert("concurrency".into(), level);
            samples.push(s);
        }
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "lb".into(),
                metrics: vec![Metric::new("rate", "ms", stats::Better::Lower)],
                ..Default::default()
            },
            samples,
        };
        assert_eq!(
            html::by_size(std::slice::from_ref(&run), "rate"),
            vec![
                (
                    "load homogeneous open-loop".to_string(),
                    vec![(20.0, 21.0), (200.0, 90.0)]
                ),
                (
                    "txbytes homogeneous open-loop".to_string(),
                    vec![(20.0, 20.0), (200.0, 50.0)]
                )
            ]
        );
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("concurrency (new connections/s)"));
    }

    /// Samples streamed in intervals (a flow's receiver) are drawn over
    /// the interval's index, a line per scenario, a chart per figure; the
    /// send times (`_ns`) are not figures.
    #[test]
    fn intervals_are_drawn_as_they_were_measured() {
        let mut samples = Vec::new();
        for (scenario, rates) in [("h1>h3", [100.0, 120.0, 110.0]), ("h3>h2", [90.0, 95.0, 99.0])] {
            for (i, r) in rates.into_iter().enumerate() {
                let mut s = sample("flow-interval", scenario, 0, r);
                s.index = i as u32;
                s.values.insert("end_unix_ns".into(), 1e18);
                samples.push(s);
            }
        }
        samples.push(sample("trial", "flow h1>h3", 0, 5.0));
        let run = Run {
            dir: PathBuf::new(),
            meta: Meta {
                run_id: "net".into(),
                metrics: vec![Metric::new("rate", "frames/s", stats::Better::Higher)],
                ..Default::default()
            },
            samples,
        };
        let charts = html::interval_plots(std::slice::from_ref(&run));
        assert!(charts.contains("<h3>flow-interval: rate</h3>"), "{charts}");
        assert!(!charts.contains("end_unix_ns"), "{charts}");
        assert_eq!(charts.matches("<polyline").count(), 2, "{charts}");
        assert_eq!(charts.matches("<circle").count(), 6, "{charts}");
        let page = html::render(std::slice::from_ref(&run), &summarise(std::slice::from_ref(&run)));
        assert!(page.contains("Over time, as measured"));
        let none = Run {
            samples: vec![sample("trial", "s", 0, 1.0)],
            ..run
        };
        assert!(html::interval_plots(std::slice::from_ref(&none)).is_empty());
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(fmt_num(12157045.3), "12,157,045");
        assert_eq!(fmt_num(-1234.0), "-1,234");
        assert_eq!(fmt_num(50.25), "50.2");
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(f64::NAN), "-");
    }
}
