"""Prediction-powered estimates of quality per service and metric, with confidence intervals: a
worker observer, beside drift and history, fed by the judge cascade (scorer/cascade.py).

Prediction-powered inference (Angelopoulos et al., Science 2023): the offline score f of every
record, corrected by the expensive judge's verdict y on the records it judged, each correction
weighted by 1/π (Horvitz-Thompson) so that the favoured records do not count more than they are:

    z_i = f_i + I_i * (y_i - f_i) / π_i          (I_i = 1 when the expensive judge was asked)
    estimate = Σ d_i z_i / Σ d_i                 d_i = adjusted count_i * 2^(-age_i / half-life)

E[z_i] = y_i whatever the offline judge's errors, so the estimate is unbiased for the mean the
expensive judge would give on every record; the offline scores only make it less noisy. The
variance is the linearised one of a weighted mean of independent z_i,

    V = Σ d_i² (z_i - estimate)² / (Σ d_i)²

which holds both parts: the spread of the offline scores and the Horvitz-Thompson correction's
(large where π is small and the judges disagree). The interval is estimate ± q * √V with q the
normal quantile of the configured level. The window is an exponentially decayed one: a record
`estimate_half_life_s` old counts half (docs/estimates.md says when the interval is wide).

Records whose π is 0 (the budget was spent) carry no correction and are left out: the estimate
then describes the records the budget covered. A metric the expensive judge failed on counts as
not judged; one the offline judge failed on leaves the record out of that metric's estimate.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.scorer.observer import ScoredRecord


@dataclass(frozen=True)
class Estimate:
    mean: float
    lower: float
    upper: float
    # Kish's effective number of records: (Σd)² / Σd².
    effective_samples: float
    # Decayed number of records with the expensive judge's verdict.
    judged_samples: float


class PpiEstimator:
    """One service and metric's decayed sums. Not thread-safe: EstimateBank serialises access."""

    def __init__(self, half_life_s: float, quantile: float) -> None:
        self._half_life_s = half_life_s
        self._quantile = quantile
        self._last: float | None = None
        # Σd, Σd·z, Σd², Σd²·z, Σd²·z² and the judged count, all decayed to the last add.
        self._d = self._dz = self._dd = self._ddz = self._ddzz = self._judged = 0.0

    def add(self, offline: float, judged: float | None, inclusion: float, weight: float, now: float) -> None:
        """A record's offline score, the expensive judge's (None when not asked), π, adjusted count."""
        z = offline if judged is None else offline + (judged - offline) / inclusion
        if self._last is not None:
            f = 0.5 ** (max(now - self._last, 0.0) / self._half_life_s)
            self._d *= f
            self._dz *= f
            self._judged *= f
            self._dd *= f * f
            self._ddz *= f * f
            self._ddzz *= f * f
        self._last = now if self._last is None else max(self._last, now)
        self._d += weight
        self._dz += weight * z
        self._dd += weight * weight
        self._ddz += weight * weight * z
        self._ddzz += weight * weight * z * z
        self._judged += judged is not None

    def estimate(self) -> Estimate:
        """Only once a record with a positive weight was added. Decay scales every sum alike, so the
        estimate does not change while no record arrives."""
        mean = self._dz / self._d
        # Clamped: the running sums can leave a rounding residue just below 0.
        variance = max(self._ddzz - 2.0 * mean * self._ddz + mean * mean * self._dd, 0.0) / (self._d * self._d)
        half = self._quantile * math.sqrt(variance)
        return Estimate(mean, mean - half, mean + half, self._d * self._d / self._dd, self._judged)


class EstimateBank:
    """The estimators of one scorer, one per (service, metric), and their gauges (computed when
    Prometheus scrapes)."""

    def __init__(self, half_life_s: float, confidence: float, registry: CollectorRegistry,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._half_life_s = half_life_s
        self._quantile = statistics.NormalDist().inv_cdf((1.0 + confidence) / 2.0)
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
                    estimator = self._estimators[key] = PpiEstimator(self._half_life_s, self._quantile)
                estimator.add(offline, judged.get(metric), verdict.inclusion, weight, now)

    def estimates(self) -> dict[tuple[str, str], Estimate]:
        with self._lock:
            return {key: est.estimate() for key, est in self._estimators.items()}

    def collect(self) -> Iterator[Metric]:
        families = [catalog.family(name) for name in (
            "ragpulse_quality_estimate", "ragpulse_quality_estimate_lower", "ragpulse_quality_estimate_upper",
            "ragpulse_quality_estimate_effective_samples", "ragpulse_quality_estimate_judged_samples")]
        for (service, metric), est in self.estimates().items():
            # Scores live in [0, 1]; an estimate or bound just outside it (a large correction on few
            # verdicts) is shown at the edge.
            values = (_unit(est.mean), _unit(est.lower), _unit(est.upper), est.effective_samples, est.judged_samples)
            for family, value in zip(families, values, strict=True):
                family.add_metric([service, metric], value)
        yield from families


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))
