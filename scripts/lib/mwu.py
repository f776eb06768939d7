"""Mann-Whitney U for the benchmark scripts' summaries: two-sided, by the
normal approximation with continuity correction (ties counted half), as
the workers' benchmarks compare their arms. For the exact test on small
samples use crate `stats` (its results are checked against scipy by
scripts/stats-vectors.sh)."""
import math


def mwu(a, b):
    """U of `a` against `b`, and its two-sided p (at most 1)."""
    u = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    n1, n2 = len(a), len(b)
    mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    z = max(0.0, (abs(u - mu) - 0.5) / sd) if sd else 0.0
    return u, min(1.0, math.erfc(z / math.sqrt(2)))
