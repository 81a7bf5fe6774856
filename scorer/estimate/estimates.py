"""Prediction-powered estimates of quality per service and metric, with confidence intervals: a
worker observer, beside drift and history, fed by the judge cascade (scorer/estimate/cascade.py).

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
(large where π is small and the judges disagree). q is Student's t quantile of the configured
level, with as many degrees of freedom as verdicts less the three fitted quantities: V is estimated
from the verdicts, and with a hundred of them the normal quantile's interval covered a point less
than it says (bench/RESULTS.md, "Judge cascade").

The interval is not estimate ± q √V but skewness-corrected. Most corrections are small, and a few
(verdicts at a small π that disagree with their offline score: a hallucinated answer the offline
judge scored high) are large and of one sign, so the estimate's distribution has a long tail on that
side, and a symmetric interval misses on the other side more often than it says (the window that
happened to judge fewer of those answers reads high and narrow). The estimate's skewness

    ε = Σ d_i³ (z_i - estimate)³ / (Σ d_i² (z_i - estimate)²)^(3/2)      (|ε| ≤ 1)

enters Hall's transformation (Hall 1992, "On the removal of skewness by transformation") of the
studentised estimate T = (estimate - mean)/√V: h(T) = T + εT²/3 + ε²T³/27 + ε/6 has no skewness
term to first order (the 1/√n term of its Edgeworth expansion) and is increasing in T, so

    interval = [estimate - √V h⁻¹(q), estimate - √V h⁻¹(-q)],
    h⁻¹(t) = (3/ε) ((1 + ε (t - ε/6))^(1/3) - 1)

With ε = 0 it is estimate ± q √V. The correction is a first-order one and ε is itself estimated
from the verdicts, so it is kept within ±3(√(q² + 1/3) - q) (0.29 at 90 % with many verdicts, less
with few), where the cube root's argument stays within [1/2, 3/2] and h is near its linear part over
±q. Beyond, the bounds run away: on windows of ~50 verdicts (1,000 records at 5 %, the labelled
data of bench/RESULTS.md) the uncapped correction covered 0.92-0.95 with intervals 9 points less
narrow against uniform sampling, the capped one 0.91. The third-moment sums behind ε are kept like
the others (decayed by the cube of the factor), so memory stays constant.

The window is an exponentially decayed one: a record `estimate_half_life_s` old counts half
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
from ragpulse.scorer.batch.stats import t_quantile
from ragpulse.scorer.observer import ScoredRecord

# Verdicts needed before λ is chosen from the data: with fewer, the covariances behind it are noise,
# and plain PPI (λ = 1, unbiased like any fixed λ) is used.
MIN_VERDICTS_FOR_TUNING = 20
# Weight of the residual model's variance against the verdicts' own, where the allocation knows the
# model (see PpiEstimator.estimate).
MODEL_SHARE = 0.5
# Quantities fitted on the verdicts: the mean, λ and κ.
_FITTED = 3
# Read at every scrape for every (service, metric), under the bank's lock that scoring threads wait
# on: a bisection each time (~1 ms) would hold them; degrees of freedom are rounded to whole verdicts.
_t_quantile = functools.lru_cache(maxsize=4096)(t_quantile)
# The distinct products v_i v_j v_h (i ≤ j ≤ h) and how many ordered triples each stands for.
_TRIPLES = tuple((i, j, h) for i in range(3) for j in range(i, 3) for h in range(j, 3))
_TRIPLE_COUNT = tuple(6 // (math.factorial(t.count(0)) * math.factorial(t.count(1)) * math.factorial(t.count(2)))
                      for t in _TRIPLES)


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
        # Decayed by f³: Σd³, Σd³·v, Σd³·v·vᵀ and Σd³·v⊗v⊗v (index triples i ≤ j ≤ h only), for the
        # estimate's skewness.
        self._ddd = 0.0
        self._dddv = [0.0, 0.0, 0.0]
        self._dddvv = [[0.0] * 3 for _ in range(3)]
        self._dddvvv = [0.0] * len(_TRIPLES)
        # Decayed by f²: Σd²·r·(1 - π)/π over every record, r its expected squared residual (the
        # Horvitz-Thompson variance the allocation's residual model predicts for the window), and
        # Σd²·f, Σd²·f² (the offline scores' own spread, the rest of the variance).
        self._expected = 0.0
        self._ddf = self._ddff = 0.0

    def add(self, offline: float, judged: float | None, inclusion: float, weight: float, now: float,
            residual: float = 0.0) -> None:
        """A record's offline score, the expensive judge's (None when not asked), π, adjusted count,
        and the squared residual its verdict is expected to have (the allocation's, learnt over a
        longer memory than the window's; 0: none known)."""
        c = 1.0 if judged is None else 1.0 - 1.0 / inclusion
        v = (0.0 if judged is None else judged / inclusion, offline * c, c)
        if self._last is not None:
            f = 0.5 ** (max(now - self._last, 0.0) / self._half_life_s)
            ff = f * f
            fff = ff * f
            self._d *= f
            self._judged *= f
            self._dd *= ff
            self._expected *= ff
            self._ddf *= ff
            self._ddff *= ff
            self._ddd *= fff
            for i in range(3):
                self._dv[i] *= f
                self._ddv[i] *= ff
                self._dddv[i] *= fff
                row, row3 = self._ddvv[i], self._dddvv[i]
                for j in range(3):
                    row[j] *= ff
                    row3[j] *= fff
            for t in range(len(_TRIPLES)):
                self._dddvvv[t] *= fff
        self._last = now if self._last is None else max(self._last, now)
        ww = weight * weight
        www = ww * weight
        self._d += weight
        self._dd += ww
        self._expected += ww * residual * (1.0 - inclusion) / inclusion
        self._ddf += ww * offline
        self._ddff += ww * offline * offline
        self._ddd += www
        self._judged += judged is not None
        for i in range(3):
            self._dv[i] += weight * v[i]
            self._ddv[i] += ww * v[i]
            self._dddv[i] += www * v[i]
            row, row3 = self._ddvv[i], self._dddvv[i]
            for j in range(3):
                row[j] += ww * v[i] * v[j]
                row3[j] += www * v[i] * v[j]
        for t, (i, j, h) in enumerate(_TRIPLES):
            self._dddvvv[t] += www * v[i] * v[j] * v[h]

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
        spread = variance
        freedom = max(self._judged - _FITTED, 1.0)
        if self._judged > _FITTED:
            variance *= self._judged / freedom
        if self._expected > 0.0:
            # The variance the verdicts show is low exactly when the estimate is high: a window that
            # judged fewer of the rare answers the offline judge scores high and the expensive judge
            # low misses both their pull and their spread. The residual model, learnt from many
            # windows' verdicts, predicts the variance whichever were judged; half of each is a
            # variance that no longer moves with the estimate as much, and is right on average.
            # Only ever upwards: where the verdicts show more than the model predicts, the offline
            # judge errs in a way the model has not learnt yet (a sudden new kind of error), and
            # averaging would hide half of what the verdicts see.
            shift = kappa - estimate
            spread_f = (lam * lam * self._ddff + 2.0 * lam * shift * self._ddf + shift * shift * self._dd)
            modelled = (max(spread_f, 0.0) + self._expected) / (self._d * self._d)
            variance = max(variance, (1.0 - MODEL_SHARE) * variance + MODEL_SHARE * modelled)
        q = _t_quantile(self._p, max(round(freedom), 1))
        sd = math.sqrt(variance)
        # Skewness of the estimate, ε = Σd³(z - estimate)³ / (Σd²(z - estimate)²)^(3/2): a few
        # verdicts weighing 1/π that disagree with their offline score make it long-tailed on one side.
        skew = self._third(k, estimate) / (spread * self._d * self._d) ** 1.5 if spread > 0.0 else 0.0
        # The correction is a first-order one, and ε is estimated from the same verdicts: kept where
        # the transformation stays near its linear part over ±q (the cube root's argument in
        # [1/2, 3/2]). Beyond, its bounds run away (ε = -0.5 puts a 90 % lower bound 7 √V below),
        # and a few verdicts with a noisy ε made the interval twice as wide for no coverage.
        limit = 3.0 * (math.sqrt(q * q + 1.0 / 3.0) - q)
        skew = min(limit, max(-limit, skew))
        return Estimate(estimate, estimate - sd * _hall_inverse(q, skew), estimate - sd * _hall_inverse(-q, skew),
                        self._d * self._d / self._dd, self._judged, lam)

    def _third(self, k: tuple[float, float, float], m: float) -> float:
        """Σd³(w - m)³ for w = k·v, from the raw third-moment sums."""
        w3 = sum(_TRIPLE_COUNT[t] * k[i] * k[j] * k[h] * self._dddvvv[t] for t, (i, j, h) in enumerate(_TRIPLES))
        w2 = sum(k[i] * self._dddvv[i][j] * k[j] for i in range(3) for j in range(3))
        w1 = sum(k[i] * self._dddv[i] for i in range(3))
        return w3 - 3.0 * m * w2 + 3.0 * m * m * w1 - m * m * m * self._ddd

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
                estimator.add(offline, judged.get(metric), verdict.inclusion, weight, now,
                              verdict.residual.get(metric, 0.0))

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


def _hall_inverse(t: float, skew: float) -> float:
    """The inverse of Hall's (1992) transformation h(T) = T + εT²/3 + ε²T³/27 + ε/6 of the
    studentised estimate T = (estimate - mean) / sd: h(T) is close to symmetric where T is not, and
    h is increasing, so the mean's interval is estimate - sd·h⁻¹(±q)."""
    if abs(skew) < 1e-9:
        return t - skew / 6.0
    return 3.0 / skew * (math.cbrt(1.0 + skew * (t - skew / 6.0)) - 1.0)


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))
