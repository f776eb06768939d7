//! Every statistic against the value scipy computed on the same samples
//! (`scripts/stats-vectors.py` wrote `scipy_vectors.json`).

use serde_json::Value;
use stats::{Alternative, Method};

fn vectors() -> Value {
    serde_json::from_str(include_str!("scipy_vectors.json")).unwrap()
}

fn sample(v: &Value, name: &str) -> Vec<f64> {
    v["samples"][name]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(what: &str, ours: f64, scipy: f64, rel: f64) {
    let tol = rel * scipy.abs().max(1e-12);
    assert!((ours - scipy).abs() <= tol, "{what}: ours {ours}, scipy {scipy}");
}

#[test]
fn summaries_and_intervals() {
    let v = vectors();
    for (name, d) in v["describe"].as_object().unwrap() {
        let xs = sample(&v, name);
        let s = stats::summary(&xs);
        let f = |k: &str| d[k].as_f64().unwrap();
        assert_eq!(s.n as u64, d["n"].as_u64().unwrap());
        for (what, ours, theirs) in [
            ("mean", s.mean, f("mean")),
            ("median", s.median, f("median")),
            ("stdev", s.stdev, f("stdev")),
            ("min", s.min, f("min")),
            ("max", s.max, f("max")),
            ("q25", s.q25, f("q25")),
            ("q75", s.q75, f("q75")),
            ("ci95_t.low", s.ci95.0, d["ci95_t"][0].as_f64().unwrap()),
            ("ci95_t.high", s.ci95.1, d["ci95_t"][1].as_f64().unwrap()),
        ] {
            close(&format!("{name} {what}"), ours, theirs, 1e-9);
        }
        // The bootstrap is random on both sides: the endpoints agree to a
        // small fraction of the interval's width.
        let (lo, hi) = stats::ci_bootstrap(&xs, 0.95, 20_000, 7);
        let (slo, shi) = (
            d["ci95_bootstrap"][0].as_f64().unwrap(),
            d["ci95_bootstrap"][1].as_f64().unwrap(),
        );
        let width = shi - slo;
        assert!(
            (lo - slo).abs() < 0.05 * width && (hi - shi).abs() < 0.05 * width,
            "{name}: bootstrap ({lo}, {hi}) vs scipy ({slo}, {shi})"
        );
    }
}

#[test]
fn hypothesis_tests() {
    let v = vectors();
    let mut checked = 0;
    for t in v["tests"].as_array().unwrap() {
        let a = sample(&v, t["a"].as_str().unwrap());
        let b = sample(&v, t["b"].as_str().unwrap());
        let alt = match t["alternative"].as_str().unwrap() {
            "two-sided" => Alternative::TwoSided,
            "greater" => Alternative::Greater,
            _ => Alternative::Less,
        };
        let method = match t["method"].as_str() {
            Some("exact") => Method::Exact,
            _ => Method::Asymptotic,
        };
        let r = match t["test"].as_str().unwrap() {
            "mann_whitney" => stats::mann_whitney_u(&a, &b, alt, method),
            "welch" => stats::welch_t(&a, &b, alt),
            "wilcoxon" => stats::wilcoxon_signed_rank(&a, &b, alt, method).unwrap(),
            other => panic!("unknown test {other}"),
        };
        let what = format!("{t}");
        close(
            &format!("{what} statistic"),
            r.statistic,
            t["statistic"].as_f64().unwrap(),
            1e-9,
        );
        close(&format!("{what} p"), r.p, t["p"].as_f64().unwrap(), 1e-6);
        checked += 1;
    }
    assert!(checked >= 70, "only {checked} vectors");
}
