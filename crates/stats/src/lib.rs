//! Statistics for benchmark results, shared by every `sdnlab bench`:
//! summaries (mean, median, standard deviation, quantiles), 95 % confidence
//! intervals (Student's t and percentile bootstrap), hypothesis tests
//! (Mann-Whitney U / Wilcoxon rank-sum, Wilcoxon signed-rank, Welch's t),
//! and the best-scenario procedure of the paper this project reproduces:
//! test "different", then "better", and where no scenario is better than
//! all others, pick by the median.
//!
//! Every function follows scipy's definitions (scipy.stats 1.10), and the
//! tests compare against values scipy computed (`scripts/stats-vectors.py`).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// A sample described.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n - 1).
    pub stdev: f64,
    pub min: f64,
    pub max: f64,
    pub q25: f64,
    pub q75: f64,
    /// 95 % confidence interval of the mean (Student's t).
    pub ci95: (f64, f64),
}

pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1); 0 for fewer than two values.
pub fn stdev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// Quantile `q` (0..=1) with linear interpolation (numpy's default).
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    quantile_sorted(&sorted(xs), q)
}

fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    if s.is_empty() {
        return f64::NAN;
    }
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

pub fn median(xs: &[f64]) -> f64 {
    quantile(xs, 0.5)
}

/// Confidence interval of the mean at `level` (e.g. 0.95), Student's t.
pub fn ci_t(xs: &[f64], level: f64) -> (f64, f64) {
    let n = xs.len();
    let m = mean(xs);
    if n < 2 {
        return (m, m);
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n > 1");
    let half = t.inverse_cdf(0.5 + level / 2.0) * stdev(xs) / (n as f64).sqrt();
    (m - half, m + half)
}

/// A small deterministic generator (splitmix64), so bootstrap intervals are
/// reproducible from their seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }
}

/// Percentile-bootstrap confidence interval of the mean at `level`, from
/// `resamples` resamples drawn with `seed`.
pub fn ci_bootstrap(xs: &[f64], level: f64, resamples: usize, seed: u64) -> (f64, f64) {
    if xs.len() < 2 {
        let m = mean(xs);
        return (m, m);
    }
    let mut rng = SplitMix(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..xs.len()).map(|_| xs[rng.below(xs.len())]).sum::<f64>() / xs.len() as f64)
        .collect();
    means.sort_by(|a, b| a.total_cmp(b));
    let alpha = 1.0 - level;
    (
        quantile_sorted(&means, alpha / 2.0),
        quantile_sorted(&means, 1.0 - alpha / 2.0),
    )
}

/// Describes a sample (NaN everywhere for an empty one).
pub fn summary(xs: &[f64]) -> Summary {
    let s = sorted(xs);
    Summary {
        n: xs.len(),
        mean: mean(xs),
        median: quantile_sorted(&s, 0.5),
        stdev: stdev(xs),
        min: s.first().copied().unwrap_or(f64::NAN),
        max: s.last().copied().unwrap_or(f64::NAN),
        q25: quantile_sorted(&s, 0.25),
        q75: quantile_sorted(&s, 0.75),
        ci95: ci_t(xs, 0.95),
    }
}

/// Holm's step-down correction of `p` for multiple comparisons (as
/// statsmodels' `multipletests(method="holm")`): the adjusted p-values, in
/// the order given, each at most 1 and never below an earlier-ranked one.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![f64::NAN; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        if p[i].is_nan() {
            continue;
        }
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Which difference a test looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alternative {
    TwoSided,
    /// The first sample is greater.
    Greater,
    /// The first sample is less.
    Less,
}

/// How a rank test computes its p-value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// The exact distribution (ties ignored, as scipy does).
    Exact,
    /// The normal approximation (with tie correction).
    Asymptotic,
    /// Exact for small samples without ties, as scipy decides.
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TestResult {
    pub statistic: f64,
    pub p: f64,
}

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// Ranks 1..=n with ties given their average rank; also the tie group sizes.
fn ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut r = vec![0.0; values.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = avg;
        }
        if j > i {
            ties.push(j - i + 1);
        }
        i = j + 1;
    }
    (r, ties)
}

/// Number of arrangements giving each U = 0..=n1*n2 (Gaussian binomial
/// coefficient [n1+n2 choose n1] in q), and their total.
fn mann_whitney_counts(n1: usize, n2: usize) -> Vec<i128> {
    let top = n1 * n2;
    let mut poly = vec![0i128; top + 1];
    poly[0] = 1;
    for i in 1..=n1 {
        // Multiply by (1 - q^(n2+i)), then divide by (1 - q^i): exact at every step.
        let m = n2 + i;
        for k in (m..=top).rev() {
            poly[k] -= poly[k - m];
        }
        for k in i..=top {
            poly[k] += poly[k - i];
        }
    }
    poly
}

/// Mann-Whitney U test (the Wilcoxon rank-sum test) of two independent
/// samples, as scipy.stats.mannwhitneyu with the continuity correction;
/// the statistic is U of the first sample.
pub fn mann_whitney_u(a: &[f64], b: &[f64], alternative: Alternative, method: Method) -> TestResult {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return TestResult {
            statistic: f64::NAN,
            p: f64::NAN,
        };
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let (u, factor) = match alternative {
        Alternative::Greater => (u1, 1.0),
        Alternative::Less => (u2, 1.0),
        Alternative::TwoSided => (u1.max(u2), 2.0),
    };
    let exact = match method {
        Method::Exact => true,
        Method::Asymptotic => false,
        Method::Auto => n1 <= 8 && n2 <= 8 && ties.is_empty(),
    };
    let p = if exact {
        let counts = mann_whitney_counts(n1, n2);
        let total: i128 = counts.iter().sum();
        let from = (u.floor() as usize).min(counts.len());
        counts[from..].iter().sum::<i128>() as f64 / total as f64
    } else {
        let n = (n1 + n2) as f64;
        let tie_term: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
        let s = ((n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
        let z = (u - (n1 * n2) as f64 / 2.0 - 0.5) / s;
        std_normal().sf(z)
    };
    TestResult {
        statistic: u1,
        p: (p * factor).clamp(0.0, 1.0),
    }
}

/// Why paired samples cannot be tested.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairedError {
    #[error("paired samples differ in length ({0} and {1})")]
    Lengths(usize, usize),
    #[error("every pair is equal: nothing to test")]
    AllEqual,
}

/// Wilcoxon signed-rank test of paired samples (differences a - b; zero
/// differences dropped), as scipy.stats.wilcoxon without continuity
/// correction. The statistic is min(W+, W-) two-sided, else W+.
pub fn wilcoxon_signed_rank(
    a: &[f64],
    b: &[f64],
    alternative: Alternative,
    method: Method,
) -> Result<TestResult, PairedError> {
    if a.len() != b.len() {
        return Err(PairedError::Lengths(a.len(), b.len()));
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).filter(|d| *d != 0.0).collect();
    let n = d.len();
    if n == 0 {
        return Err(PairedError::AllEqual);
    }
    let abs: Vec<f64> = d.iter().map(|x| x.abs()).collect();
    let (r, ties) = ranks(&abs);
    let w_plus: f64 = r.iter().zip(&d).filter(|(_, d)| **d > 0.0).map(|(r, _)| r).sum();
    let w_minus: f64 = r.iter().zip(&d).filter(|(_, d)| **d < 0.0).map(|(r, _)| r).sum();
    let statistic = if alternative == Alternative::TwoSided {
        w_plus.min(w_minus)
    } else {
        w_plus
    };
    let exact = match method {
        Method::Exact => true,
        Method::Asymptotic => false,
        Method::Auto => n <= 50 && ties.is_empty() && n == a.len(),
    };
    let p = if exact {
        // counts[s]: subsets of 1..=n whose sum is s.
        let top = n * (n + 1) / 2;
        let mut counts = vec![0f64; top + 1];
        counts[0] = 1.0;
        for k in 1..=n {
            for s in (k..=top).rev() {
                counts[s] += counts[s - k];
            }
        }
        let total = 2f64.powi(n as i32);
        let w = w_plus as usize;
        let upper = |from: usize| counts[from.min(top + 1)..].iter().sum::<f64>() / total;
        let lower = |to: usize| counts[..=to.min(top)].iter().sum::<f64>() / total;
        match alternative {
            Alternative::Greater => upper(w),
            Alternative::Less => lower(w),
            Alternative::TwoSided => {
                let mid = top / 2;
                if w == mid {
                    1.0
                } else if w > mid {
                    2.0 * upper(w)
                } else {
                    2.0 * lower(w)
                }
            }
        }
    } else {
        let nf = n as f64;
        let mn = nf * (nf + 1.0) * 0.25;
        let tie: f64 = ties.iter().map(|&t| (t * (t * t - 1)) as f64).sum();
        let se = ((nf * (nf + 1.0) * (2.0 * nf + 1.0) - 0.5 * tie) / 24.0).sqrt();
        let z = (statistic - mn) / se;
        let norm = std_normal();
        match alternative {
            Alternative::TwoSided => 2.0 * norm.sf(z.abs()),
            Alternative::Greater => norm.sf(z),
            Alternative::Less => norm.cdf(z),
        }
    };
    Ok(TestResult {
        statistic,
        p: p.clamp(0.0, 1.0),
    })
}

/// Welch's t-test (unequal variances), as scipy.stats.ttest_ind(equal_var=False).
pub fn welch_t(a: &[f64], b: &[f64], alternative: Alternative) -> TestResult {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (stdev(a).powi(2) / na, stdev(b).powi(2) / nb);
    let t = (mean(a) - mean(b)) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let p = match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) if t.is_finite() => match alternative {
            Alternative::TwoSided => 2.0 * dist.sf(t.abs()),
            Alternative::Greater => dist.sf(t),
            Alternative::Less => dist.cdf(t),
        },
        _ => f64::NAN,
    };
    TestResult { statistic: t, p }
}

/// Which direction is better for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Better {
    /// Throughput, rates.
    Higher,
    /// Latency, times.
    Lower,
}

/// Which test compares two scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Wilcoxon rank-sum (Mann-Whitney U): no normality assumed.
    RankSum,
    /// Welch's t-test.
    Welch,
}

/// One ordered pair of scenarios compared.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub a: usize,
    pub b: usize,
    /// Two-sided p-value: are they different?
    pub p_different: f64,
    /// One-sided p-value that `a` is better than `b` (when they differ).
    pub p_better: Option<f64>,
    pub a_better: bool,
}

/// How the best scenario was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChosenBy {
    /// Significantly better than every other scenario.
    Test,
    /// No scenario beat all others: best median among those no other beat.
    Median,
}

#[derive(Clone, Debug, Serialize)]
pub struct BestScenario {
    pub best: usize,
    pub chosen_by: ChosenBy,
    pub comparisons: Vec<Comparison>,
}

/// The paper's procedure: for every pair of scenarios, test whether they
/// differ (two-sided, p < alpha), then whether one is better (one-sided,
/// p < alpha). A scenario better than every other is the best; otherwise
/// the best median among the scenarios no other was better than.
pub fn best_scenario(scenarios: &[&[f64]], better: Better, test: TestKind, alpha: f64) -> Option<BestScenario> {
    if scenarios.is_empty() {
        return None;
    }
    let run = |a: &[f64], b: &[f64], alt: Alternative| match test {
        TestKind::RankSum => mann_whitney_u(a, b, alt, Method::Auto).p,
        TestKind::Welch => welch_t(a, b, alt).p,
    };
    let toward = match better {
        Better::Higher => Alternative::Greater,
        Better::Lower => Alternative::Less,
    };
    let mut comparisons = Vec::new();
    let k = scenarios.len();
    let mut beats = vec![vec![false; k]; k];
    for a in 0..k {
        for b in 0..k {
            if a == b {
                continue;
            }
            let p_different = run(scenarios[a], scenarios[b], Alternative::TwoSided);
            let p_better = (p_different < alpha).then(|| run(scenarios[a], scenarios[b], toward));
            let a_better = p_better.is_some_and(|p| p < alpha);
            beats[a][b] = a_better;
            comparisons.push(Comparison {
                a,
                b,
                p_different,
                p_better,
                a_better,
            });
        }
    }
    if let Some(best) = (0..k).find(|&a| (0..k).all(|b| a == b || beats[a][b])) {
        return Some(BestScenario {
            best,
            chosen_by: ChosenBy::Test,
            comparisons,
        });
    }
    let unbeaten: Vec<usize> = (0..k).filter(|&a| (0..k).all(|b| !beats[b][a])).collect();
    let pool = if unbeaten.is_empty() {
        (0..k).collect()
    } else {
        unbeaten
    };
    let key = |i: &usize| {
        let m = median(scenarios[*i]);
        if better == Better::Higher {
            m
        } else {
            -m
        }
    };
    let best = pool.into_iter().max_by(|x, y| key(x).total_cmp(&key(y)))?;
    Some(BestScenario {
        best,
        chosen_by: ChosenBy::Median,
        comparisons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_scenario_is_found_by_test_or_by_median() {
        let low = [100.0, 101.0, 99.0, 100.5, 100.2, 99.8, 100.1, 99.9, 100.4, 100.3];
        let high: Vec<f64> = low.iter().map(|x| x + 10.0).collect();
        let also_high: Vec<f64> = low.iter().map(|x| x + 10.05).collect();
        // One clear winner for throughput; the lowest for latency.
        let r = best_scenario(&[&low, &high], Better::Higher, TestKind::RankSum, 0.05).unwrap();
        assert_eq!((r.best, r.chosen_by), (1, ChosenBy::Test));
        let r = best_scenario(&[&low, &high], Better::Lower, TestKind::Welch, 0.05).unwrap();
        assert_eq!((r.best, r.chosen_by), (0, ChosenBy::Test));
        // Two that the tests cannot tell apart: the median decides between them,
        // and the clearly worse one is never chosen.
        let r = best_scenario(&[&low, &high, &also_high], Better::Higher, TestKind::RankSum, 0.05).unwrap();
        assert_eq!((r.best, r.chosen_by), (2, ChosenBy::Median));
        assert!(r.comparisons.iter().any(|c| c.a == 1 && c.b == 0 && c.a_better));
        assert!(best_scenario(&[], Better::Higher, TestKind::RankSum, 0.05).is_none());
    }

    #[test]
    fn holm_adjusts_step_down_and_keeps_the_order() {
        // statsmodels.stats.multipletests([0.01, 0.04, 0.03, 0.005], method="holm")[1]
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        let s = summary(&[]);
        assert!(s.mean.is_nan() && s.median.is_nan());
        assert_eq!(summary(&[5.0]).ci95, (5.0, 5.0));
        assert_eq!(
            wilcoxon_signed_rank(&[1.0, 2.0], &[1.0, 2.0], Alternative::TwoSided, Method::Auto).unwrap_err(),
            PairedError::AllEqual
        );
        assert_eq!(
            wilcoxon_signed_rank(&[1.0], &[1.0, 2.0], Alternative::TwoSided, Method::Auto).unwrap_err(),
            PairedError::Lengths(1, 2)
        );
        assert!(mann_whitney_u(&[], &[1.0], Alternative::TwoSided, Method::Auto)
            .p
            .is_nan());
        // Identical constant samples: no difference, not a crash.
        let r = welch_t(&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0], Alternative::TwoSided);
        assert!(r.p.is_nan() || r.p == 1.0);
    }
}
