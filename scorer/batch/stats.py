"""Statistics of a batch run: a mean's 95% confidence interval and a paired comparison.

The interval is Student's t (mean ± t(0.975, n-1)·s/√n). The paired comparison reports the mean
difference with its paired-t interval and the Wilcoxon signed-rank test's two-sided p-value
(normal approximation with tie correction, zero differences dropped): scores are bounded and
often skewed, and the signed-rank test does not assume normal differences. Written with numpy
and math only (the project does not depend on scipy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float
    # None when n < 2: one value has no spread to estimate.
    low: float | None
    high: float | None


def mean_ci(values: list[float], bounds: tuple[float, float] = (0.0, 1.0)) -> MeanCI:
    """`bounds`: where the values can lie; the interval is cut to them (t's can overshoot)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return MeanCI(len(x), float(x.mean()) if len(x) else math.nan, None, None)
    mean = float(x.mean())
    half = t_quantile(0.5 + LEVEL / 2, len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return MeanCI(len(x), mean, max(mean - half, bounds[0]), min(mean + half, bounds[1]))


@dataclass(frozen=True)
class Paired:
    n: int
    # Mean of (current - baseline) over matched rows, with its paired-t interval.
    diff: MeanCI
    # Wilcoxon signed-rank two-sided p; None when every difference is zero (nothing to test).
    p_wilcoxon: float | None


def paired(current: list[float], baseline: list[float]) -> Paired:
    d = np.asarray(current, dtype=float) - np.asarray(baseline, dtype=float)
    return Paired(len(d), mean_ci(d.tolist(), (-1.0, 1.0)), wilcoxon_p(d))


def wilcoxon_p(d: np.ndarray) -> float | None:
    d = d[np.abs(d) > 1e-12]
    n = len(d)
    if n == 0:
        return None
    ranks = _average_ranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    mean = n * (n + 1) / 4
    _, tie_counts = np.unique(ranks, return_counts=True)
    var = n * (n + 1) * (2 * n + 1) / 24 - float((tie_counts**3 - tie_counts).sum()) / 48
    if var <= 0:
        return None
    z = (abs(w_plus - mean) - 0.5) / math.sqrt(var)  # continuity correction
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(1, len(x) + 1)
    # Tied values share the mean of their ranks.
    for value in np.unique(x):
        tied = x == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 0.5) of Student's t, by bisection on its CDF."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


def t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), by its continued fraction (Lentz's method)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only
        return 1 - _betainc(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)) / a
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1) < 1e-14:
            break
    return front * f
