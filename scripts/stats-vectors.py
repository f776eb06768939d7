#!/usr/bin/python3
"""Writes crates/stats/tests/scipy_vectors.json: statistics computed by
scipy on fixed samples, the reference the `stats` crate is tested against.
Run through scripts/stats-vectors.sh (installs Debian's python3-scipy)."""
import json, os, sys
import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(8456)
samples = {
    "small": [3.1, 2.7, 4.5, 3.9, 2.2, 5.0, 3.3],
    "ties": [1, 2, 2, 3, 3, 3, 4, 5, 5, 6],
    "normal30": list(np.round(rng.normal(100, 15, 30), 3)),
    "shifted30": list(np.round(rng.normal(110, 15, 30), 3)),
    "skewed10": list(np.round(rng.lognormal(3, 1, 10), 3)),
    "rates10": [103819, 98121, 101002, 99870, 104511, 97420, 100310, 102255, 99001, 100876],
    "rates10b": [104900, 99010, 102930, 100880, 105600, 98800, 101010, 103300, 99950, 101700],
    "tied10": [5, 5, 6, 6, 7, 7, 8, 8, 9, 9],
    "tied10b": [5, 6, 6, 7, 7, 8, 8, 9, 9, 10],
}
samples = {k: [float(x) for x in v] for k, v in samples.items()}

def describe(x):
    x = np.array(x)
    n = len(x)
    lo, hi = stats.t.interval(0.95, n - 1, loc=x.mean(), scale=stats.sem(x))
    boot = stats.bootstrap((x,), np.mean, confidence_level=0.95, n_resamples=20000,
                           method="percentile", random_state=1).confidence_interval
    return {"n": n, "mean": x.mean(), "median": float(np.median(x)), "stdev": x.std(ddof=1),
            "min": x.min(), "max": x.max(), "q25": float(np.quantile(x, 0.25)),
            "q75": float(np.quantile(x, 0.75)), "ci95_t": [lo, hi],
            "ci95_bootstrap": [boot.low, boot.high]}

pairs = [("small", "skewed10"), ("normal30", "shifted30"), ("rates10", "rates10b"),
         ("tied10", "tied10b"), ("ties", "tied10"), ("skewed10", "rates10")]
tests = []
for a, b in pairs:
    x, y = samples[a], samples[b]
    for alt in ["two-sided", "greater", "less"]:
        for method in ["asymptotic", "exact"]:
            r = stats.mannwhitneyu(x, y, alternative=alt, method=method, use_continuity=True)
            tests.append({"test": "mann_whitney", "a": a, "b": b, "alternative": alt, "method": method,
                          "statistic": float(r.statistic), "p": float(r.pvalue)})
        r = stats.ttest_ind(x, y, equal_var=False, alternative=alt)
        tests.append({"test": "welch", "a": a, "b": b, "alternative": alt,
                      "statistic": float(r.statistic), "p": float(r.pvalue)})
        if len(x) == len(y):
            for method in ["approx", "exact"]:
                d = np.array(x) - np.array(y)
                if method == "exact" and (np.any(d == 0) or len(np.unique(np.abs(d))) < len(d)):
                    continue  # scipy's exact mode does not handle zeros or ties
                r = stats.wilcoxon(x, y, alternative=alt, mode=method, zero_method="wilcox", correction=False)
                tests.append({"test": "wilcoxon", "a": a, "b": b, "alternative": alt, "method": method,
                              "statistic": float(r.statistic), "p": float(r.pvalue)})

out = {"generator": f"scipy {scipy.__version__}, numpy {np.__version__}",
       "samples": samples, "describe": {k: describe(v) for k, v in samples.items()}, "tests": tests}
path = os.path.join(os.path.dirname(__file__), "..", "crates", "stats", "tests", "scipy_vectors.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1, default=float)
print(f"wrote {len(tests)} test vectors and {len(samples)} samples to {os.path.normpath(path)}", file=sys.stderr)
