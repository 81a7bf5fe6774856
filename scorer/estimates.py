"""Prediction-powered estimates of quality per service and metric, with confidence intervals: a
worker observer, beside drift and history, fed by the judge cascade (scorer/cascade.py).

Prediction-powered inference (Angelopoulos et al., Science 2023) with power tuning (PPI++,
Angelopoulos, Duchi and Zrnic 2023): the offline score f of every record, corrected by the
expensive judge's verdict y on the records it judged, each correction weighted by 1/π
(Horvitz-Thompson) so that the favoured records count no more than they are:

    z_i(λ) = λ f_i + I_i (y_i - λ f_i) / π_i     (I_i = 1 when the expensive judge was asked)
    estimate = Σ d_i z_i(λ) / Σ d_i              d_i = adjusted count_i * 2^(-age_i / half-life)

E[z_i(λ)] = y_i for every λ whatever the offline judge's errors, so the estimate is unbiased for
the mean the expensive judge would give on every record; the offline scores only make it less
noisy. λ = 1 is plain PPI; λ = 0 ignores the offline scores (the Horvitz-Thompson mean of the
verdicts). λ is chosen from the data to minimise the variance and kept in [0, 1]: an offline judge
that agrees well with the expensive one gets λ near 1, one whose scores are off in scale (the
local judge is harsher than an LLM) or barely related gets less, so the estimate is never much
worse than the verdicts alone. The variance is the linearised one of a weighted mean of
independent z_i,

    V = Σ d_i² (z_i - estimate)² / (Σ d_i)²

which holds both parts: the spread of the offline scores and the Horvitz-Thompson correction's
(large where π is small and the judges disagree). The interval is estimate ± q √V with q Student's
t quantile of the configured level, with as many degrees of freedom as verdicts less the three
fitted quantities: V is estimated from the verdicts, and with a hundred of them the normal
quantile's interval covered a point less than it says (bench/RESULTS.md, "Judge cascade"). The
window is an exponentially decayed one: a record `estimate_half_life_s` old counts half
(docs/estimates.md says when the interval is wide).

Records whose π is 0 (the budget was spent) carry no correction and are left out: the estimate
then describes the records the budget covered. A metric the expensive judge failed on counts as
not judged; one the offline judge failed on leaves the record out of that metric's estimate.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.scorer.batch_stats import t_quantile
from ragpulse.scorer.observer import ScoredRecord

# Verdicts needed before λ is chosen from the data: with fewer, the covariances behind it are noise,
# and plain PPI (λ = 1, unbiased like any fixed λ) is used.
MIN_VERDICTS_FOR_TUNING = 20
# Quantities fitted on the verdicts: the mean, λ and κ.
_FITTED = 3
# Read at every scrape for every (service, metric), under the bank's lock that scoring threads wait
# on: a bisection each time (~1 ms) would hold them; degrees of freedom are rounded to whole verdicts.
_t_quantile = functools.lru_cache(maxsize=4096)(t_quantile)


@dataclass(frozen=True)
class Estimate:
    mean: float
    lower: float
    upper: float
    # Kish's effective number of records: (Σd)² / Σd².
    effective_samples: float
    # Decayed number of records with the expensive judge's verdict.
    judged_samples: float
    # How much the offline scores are trusted (power tuning): 1 plain PPI, 0 the verdicts alone.
    offline_weight: float


class PpiEstimator:
    """One service and metric's decayed sums. Not thread-safe: EstimateBank serialises access.

    z = a + λ b + κ c with a = I y / π, b = f (1 - I / π) and c = 1 - I / π, all three known for
    every record and b, c of mean 0: the sums of d·v and of d²·v·vᵀ (v = (a, b, c)) give the
    estimate and its variance for any λ and κ, so both are chosen when the estimate is read."""

    def __init__(self, half_life_s: float, confidence: float) -> None:
        self._half_life_s = half_life_s
        self._p = 0.5 + confidence / 2.0
        self._last: float | None = None
        # Decayed by the factor f per step: Σd, Σd·v and the judged count; by f²: Σd², Σd²·v, Σd²·v·vᵀ.
        self._d = self._judged = 0.0
        self._dv = [0.0, 0.0, 0.0]
        self._dd = 0.0
        self._ddv = [0.0, 0.0, 0.0]
        self._ddvv = [[0.0] * 3 for _ in range(3)]

    def add(self, offline: float, judged: float | None, inclusion: float, weight: float, now: float) -> None:
        """A record's offline score, the expensive judge's (None when not asked), π, adjusted count."""
        c = 1.0 if judged is None else 1.0 - 1.0 / inclusion
        v = (0.0 if judged is None else judged / inclusion, offline * c, c)
        if self._last is not None:
            f = 0.5 ** (max(now - self._last, 0.0) / self._half_life_s)
            ff = f * f
            self._d *= f
            self._judged *= f
            self._dd *= ff
            for i in range(3):
                self._dv[i] *= f
                self._ddv[i] *= ff
                row = self._ddvv[i]
                for j in range(3):
                    row[j] *= ff
        self._last = now if self._last is None else max(self._last, now)
        ww = weight * weight
        self._d += weight
        self._dd += ww
        self._judged += judged is not None
        for i in range(3):
            self._dv[i] += weight * v[i]
            self._ddv[i] += ww * v[i]
            row = self._ddvv[i]
            for j in range(3):
                row[j] += ww * v[i] * v[j]

    def estimate(self) -> Estimate:
        """Only once a record with a positive weight was added. Decay scales every sum alike, so the
        estimate does not change while no record arrives."""
        mean = [x / self._d for x in self._dv]
        # Centred second moments with weights d²: the linearised variance of the estimate with
        # coefficients k = (1, λ, κ) is kᵀ S k / (Σd)².
        s = [[self._ddvv[i][j] - mean[i] * self._ddv[j] - mean[j] * self._ddv[i] + mean[i] * mean[j] * self._dd
              for j in range(3)] for i in range(3)]
        lam, kappa = self._coefficients(s)
        k = (1.0, lam, kappa)
        estimate = sum(k[i] * mean[i] for i in range(3))
        # Clamped: the running sums can leave a rounding residue just below 0.
        variance = max(sum(k[i] * s[i][j] * k[j] for i in range(3) for j in range(3)), 0.0) / (self._d * self._d)
        # The verdicts are the sample that matters: residuals of coefficients fitted on them
        # understate their spread (the usual degrees-of-freedom correction), and a variance
        # estimated from few of them calls for t's wider quantile.
        freedom = max(self._judged - _FITTED, 1.0)
        if self._judged > _FITTED:
            variance *= self._judged / freedom
        half = _t_quantile(self._p, max(round(freedom), 1)) * math.sqrt(variance)
        return Estimate(estimate, estimate - half, estimate + half, self._d * self._d / self._dd, self._judged, lam)

    def _coefficients(self, s: list[list[float]]) -> tuple[float, float]:
        """λ and κ of least variance, λ kept in [0, 1]; plain PPI (1, 0) until enough verdicts."""
        if self._judged < MIN_VERDICTS_FOR_TUNING or s[2][2] <= 0.0:
            return 1.0, 0.0
        det = s[1][1] * s[2][2] - s[1][2] * s[1][2]
        if det > 1e-12 * s[1][1] * s[2][2]:
            lam = (-s[0][1] * s[2][2] + s[0][2] * s[1][2]) / det
        else:  # the offline scores hardly vary: they carry nothing the intercept does not
            lam = 0.0
        lam = min(1.0, max(0.0, lam))
        # κ given λ: least variance of a + λ b + κ c.
        return lam, -(s[0][2] + lam * s[1][2]) / s[2][2]


class EstimateBank:
    """The estimators of one scorer, one per (service, metric), and their gauges (computed when
    Prometheus scrapes)."""

    def __init__(self, half_life_s: float, confidence: float, registry: CollectorRegistry,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._half_life_s = half_life_s
        self._confidence = confidence
        self._clock = clock
        # Keyed by the worker's bounded service label: as many estimators as /metrics has services.
        self._estimators: dict[tuple[str, str], PpiEstimator] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def on_scores(self, scored: ScoredRecord) -> None:
        verdict = scored.cascade
        if verdict is None or verdict.inclusion <= 0.0:
            return
        weight = scored.record.sampling.adjusted_count
        judged = verdict.judged or {}
        now = self._clock()
        with self._lock:
            for metric, offline in verdict.offline.items():
                key = (scored.record.service, metric)
                estimator = self._estimators.get(key)
                if estimator is None:
                    estimator = self._estimators[key] = PpiEstimator(self._half_life_s, self._confidence)
                estimator.add(offline, judged.get(metric), verdict.inclusion, weight, now)

    def estimates(self) -> dict[tuple[str, str], Estimate]:
        with self._lock:
            return {key: est.estimate() for key, est in self._estimators.items()}

    def collect(self) -> Iterator[Metric]:
        families = [catalog.family(name) for name in (
            "ragpulse_quality_estimate", "ragpulse_quality_estimate_lower", "ragpulse_quality_estimate_upper",
            "ragpulse_quality_estimate_effective_samples", "ragpulse_quality_estimate_judged_samples",
            "ragpulse_quality_estimate_offline_weight")]
        for (service, metric), est in self.estimates().items():
            # Scores live in [0, 1]; an estimate or bound just outside it (a large correction on few
            # verdicts) is shown at the edge.
            values = (_unit(est.mean), _unit(est.lower), _unit(est.upper), est.effective_samples, est.judged_samples,
                      est.offline_weight)
            for family, value in zip(families, values, strict=True):
                family.add_metric([service, metric], value)
        yield from families


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))
