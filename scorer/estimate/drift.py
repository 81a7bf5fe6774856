"""Drift detection: per service and metric, a two-sided CUSUM of recent scores against a baseline.

Why CUSUM: a quality regression in a RAG app (a new prompt, a new model, a broken retriever) is a
step change in the mean score, and CUSUM is the detector with the shortest mean delay for a step of
a given size at a given false-alarm rate (Lorden/Moustakides). Page-Hinkley is the same statistic
with a running-mean baseline; we keep an explicit baseline so it can be shown on a dashboard.

The detector works in standardised units: z = (x - baseline mean) / baseline sd, and

    S_down = max(0, S_down + r * (-z - k))      S_up = max(0, S_up + r * (z - k))

where r is the record's sampling weight (adjusted count) divided by the root-mean-square weight, so
a record kept at 10% counts ten times a record kept at 100%: the detector follows the
sampling-weighted (population) mean, not the mean of whatever happened to be sampled. Dividing by
the RMS rather than the mean weight keeps the increments' variance at 1 whatever the mix of
sampling rates, so h means the same false-alarm rate for every service; unequal weights show up
as a smaller effective shift (fewer effective samples), which is the honest price of sampling. The alarm is
raised while max(S_down, S_up) > h. The choice of k and h (docs/dashboards.md):
k = half the smallest shift worth paging for (a 0.15 drop is ~0.6 sd of a typical faithfulness
stream, so k = 0.3), h = 30 measured (tests/scorer/estimate/test_drift.py) to give no false alarm
in 10^6 stationary samples.

The baseline is learnt from the first `min_samples` records (no alarm before: a quiet service
cannot alarm on a handful of noisy scores) and afterwards follows the long-run level slowly: a
record enters the baseline only when it leaves the recent window and only while no alarm is
raised, so a drift in progress never teaches the baseline that it is normal.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.metric_names import METRIC_NAMES
from ragpulse.core.settings import key, require, require_at_least, require_one_of
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.weighted import WeightedSums, WeightedWindow

# Two-sided normal quantiles for the confidence levels a config may ask for.
_Z = {0.8: 1.2816, 0.9: 1.6449, 0.95: 1.96, 0.99: 2.5758}


@dataclass(frozen=True)
class DriftConfig:
    # The CUSUM detector per service and metric (docs/dashboards.md: how drift detection works).
    enabled: bool = True
    # Records needed before the detector arms: they form the first baseline.
    min_samples: int = 200
    # Records in the "current" mean (and its confidence interval) shown next to the baseline.
    recent_window: int = 100
    # CUSUM allowance and threshold, in baseline standard deviations.
    k: float = 0.3
    h: float = 30.0  # the threshold: an alarm while the statistic is above it
    # The statistic is capped at cap_factor * h so that an alarm clears within about
    # (cap_factor - 1) * h / k records after quality comes back, however long the drift lasted.
    cap_factor: float = 2.0
    # Lower bound on the baseline sd: a service whose scores have all been 1.0 would otherwise
    # alarm on its first 0.9.
    sigma_floor: float = 0.1
    # Half-life, in records, of the baseline's exponential forgetting after warm-up.
    baseline_halflife: int = 5000
    # A single record may count at most this many times the RMS weight (one heavily
    # down-sampled record must not trip the alarm alone).
    max_relative_weight: float = 10.0
    # Confidence level of the current mean's interval: 0.8, 0.9, 0.95 or 0.99.
    confidence: float = 0.95
    # Metrics watched for drift (a list, so the YAML config can set it).
    metrics: list[str] = field(default_factory=lambda: list(METRIC_NAMES))

    def validate(self, where: str) -> None:
        require_one_of(key(where, "confidence"), self.confidence, sorted(_Z))
        for name in ("min_samples", "recent_window"):
            require_at_least(key(where, name), getattr(self, name), 2)
        for name in ("k", "h", "sigma_floor"):
            require(getattr(self, name) > 0, key(where, name), "positive", getattr(self, name))
        require_at_least(key(where, "cap_factor"), self.cap_factor, 1)
        require_at_least(key(where, "baseline_halflife"), self.baseline_halflife, 1)
        require(self.max_relative_weight > 0, key(where, "max_relative_weight"), "positive", self.max_relative_weight)
        for name in self.metrics:
            require_one_of(key(where, "metrics"), name, METRIC_NAMES)


@dataclass(frozen=True)
class DriftState:
    armed: bool
    samples: int
    statistic: float
    alarm: bool
    direction: str  # "down", "up" or "" (no alarm)
    baseline_mean: float
    baseline_sd: float
    current_mean: float
    current_lower: float
    current_upper: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CusumDetector:
    """One stream's detector. Not thread-safe: DriftDetectorBank serialises access."""

    def __init__(self, config: DriftConfig) -> None:
        self.cfg = config
        self.samples = 0
        # The baseline's weighted sums, with exponential forgetting after warm-up.
        self._baseline = WeightedSums()
        self._decay = 0.5 ** (1.0 / config.baseline_halflife)
        self._recent = WeightedWindow(config.recent_window)
        self.s_down = 0.0
        self.s_up = 0.0
        self._armed = False
        # Frozen baseline used by the statistic; refreshed from the sums while no alarm is raised.
        self._mu = 0.0
        self._sd = config.sigma_floor
        self._wrms = 1.0

    def _refresh_baseline(self) -> None:
        self._mu = self._baseline.mean
        self._sd = max(math.sqrt(self._baseline.variance), self.cfg.sigma_floor)
        self._wrms = self._baseline.rms_weight

    @property
    def alarm(self) -> bool:
        return self._armed and max(self.s_down, self.s_up) > self.cfg.h

    def update(self, x: float, w: float = 1.0) -> None:
        cfg = self.cfg
        w = w if w > 0 else 1.0
        self.samples += 1
        if not self._armed:
            # Warm-up: every record is baseline; nothing is tested yet.
            self._baseline.add(x, w)
            self._recent.add(x, w)
            if self.samples >= cfg.min_samples:
                self._refresh_baseline()
                self._armed = True
            return
        r = min(w / self._wrms, cfg.max_relative_weight)
        z = (x - self._mu) / self._sd
        cap = cfg.cap_factor * cfg.h
        self.s_down = min(max(0.0, self.s_down + r * (-z - cfg.k)), cap)
        self.s_up = min(max(0.0, self.s_up + r * (z - cfg.k)), cap)
        left = self._recent.add(x, w)
        if left is not None and not self.alarm:
            self._baseline.add(*left, decay=self._decay)
            self._refresh_baseline()

    def state(self) -> DriftState:
        recent = self._recent.sums
        if recent.w > 0:
            mean = recent.mean
            # Kish's effective sample size: unequal sampling weights widen the interval.
            n_eff = recent.effective_n
            half = _Z[self.cfg.confidence] * math.sqrt(recent.variance / n_eff) if n_eff > 1 else 1.0
        else:
            mean, half = 0.0, 1.0
        stat = max(self.s_down, self.s_up)
        alarm = self.alarm
        direction = ("down" if self.s_down >= self.s_up else "up") if alarm else ""
        return DriftState(
            armed=self._armed,
            samples=self.samples,
            statistic=stat,
            alarm=alarm,
            direction=direction,
            baseline_mean=self._mu if self._armed else (self._baseline.mean if self._baseline.w else 0.0),
            baseline_sd=self._sd,
            current_mean=mean,
            current_lower=max(0.0, mean - half),
            current_upper=min(1.0, mean + half),
        )


class DriftDetectorBank:
    """All detectors of one scorer, one per (service, metric), and their Prometheus gauges.

    A worker observer: `on_scores` is called after each record's scores."""

    def __init__(self, config: DriftConfig, registry: CollectorRegistry) -> None:
        self.cfg = config
        # Keyed by the worker's bounded service label: as many detectors as /metrics has services.
        self._detectors: dict[tuple[str, str], CusumDetector] = {}
        self._lock = threading.Lock()
        # Gauges are computed when Prometheus scrapes, not on every record: the detector's state
        # (window means, interval) costs more than the update itself.
        registry.register(self)

    def collect(self) -> Iterator[Metric]:
        families = {
            key: catalog.family(name) for key, name in (
                ("statistic", "ragpulse_score_drift_statistic"),
                ("alarm", "ragpulse_score_drift_alarm"),
                ("direction", "ragpulse_score_drift_direction"),
                ("baseline", "ragpulse_score_baseline_mean"),
                ("current", "ragpulse_score_current_mean"),
                ("lower", "ragpulse_score_current_mean_lower"),
                ("upper", "ragpulse_score_current_mean_upper"),
                ("samples", "ragpulse_score_drift_samples"),
            )
        }
        for (service, metric), st in self.states().items():
            key = [service, metric]
            families["samples"].add_metric(key, st.samples)
            families["current"].add_metric(key, st.current_mean)
            families["lower"].add_metric(key, st.current_lower)
            families["upper"].add_metric(key, st.current_upper)
            # Before warm-up ends there is no baseline and no statistic: export none rather than
            # a misleading 0 (a dashboard shows "no data", never a fake flat line).
            if not st.armed:
                continue
            families["baseline"].add_metric(key, st.baseline_mean)
            families["statistic"].add_metric(key, st.statistic)
            families["alarm"].add_metric(key, 1.0 if st.alarm else 0.0)
            families["direction"].add_metric(
                key, -1.0 if st.direction == "down" else 1.0 if st.direction == "up" else 0.0)
        yield from families.values()
        for name, value in (("ragpulse_score_drift_threshold", self.cfg.h),
                            ("ragpulse_score_drift_min_samples", self.cfg.min_samples)):
            family = catalog.family(name)
            family.add_metric([], value)
            yield family

    def on_scores(self, scored: ScoredRecord) -> None:
        if not self.cfg.enabled:
            return
        service = scored.record.service
        w = scored.record.sampling.adjusted_count
        with self._lock:
            for metric, value in scored.values.items():
                if metric not in self.cfg.metrics:
                    continue
                det = self._detectors.get((service, metric))
                if det is None:
                    det = self._detectors[(service, metric)] = CusumDetector(self.cfg)
                det.update(value, w)

    def states(self) -> dict[tuple[str, str], DriftState]:
        with self._lock:
            return {key: det.state() for key, det in self._detectors.items()}
