"""The judge cascade: the offline judge scores every record, the expensive judge a share of them,
chosen with known probabilities that favour the records whose offline scores say the most.

An LLM judge on every answer can cost more than the app, and most answers are fine. So every
record gets the cheap offline scores, and a record goes to the expensive judge with probability

    π = clip(c * g(s), floor * share, 1)
    g(s) = exp(low_score_weight * (1 - s)) * (1 + uncertainty_weight * (1 - |2s - 1|))

where s is the record's lowest offline score among `selection_metrics` (0.5 when the offline judge
has none: it knows nothing) and c is solved so that the mean π of recent records is the target
share: what the budget pacer (scorer/estimate/pacing.py) says the budget affords, or `share` without a paced
budget. The floor (a fraction of the share) gives every record a chance, so where the offline
judge is confidently wrong the expensive judge still finds out, and no verdict weighs more than
1/(floor * share). Records kept by an `always_rules` sampling rule get π = 1.

The choice itself is the trace id's randomness against upstream probability × π, as in sampling
and pacing: every scorer and every redelivery decide alike. Because π is known for every record,
the estimates (scorer/estimate/estimates.py, docs/estimates.md) undo the favouring and stay unbiased.

With `adaptive` on, the cascade also learns from its own verdicts where the offline judge is wrong,
and spends there (active inference, Zrnic and Candès 2024):

    π = clip(c * g(s) * σ(s), floor * share, 1)

where σ(s)² is the mean squared residual y - (λ f + κ) of the verdicts whose offline score s fell in
the same bin (`adaptive_bins` equal bins of [0, 1]): the expensive judge's score against the line
that best predicts it from the offline score. The estimate's variance holds Σ residual² (1/π - 1),
which π ∝ |residual| minimises for a given mean π; σ(s) is that residual's size as far as the offline
score can tell it. The sums behind σ weigh each verdict by 1/π (so they describe all records, not
the favoured ones), forget RESIDUAL_MEMORY times slower than the estimates (`estimate_half_life_s`),
and each bin's σ² is shrunk toward the pooled one by PRIOR_VERDICTS pseudo-verdicts, so that a bin
with few verdicts follows the pooled value and, before any verdict, π is the fixed favour's. σ
changes only when a verdict arrives: π stays known and deterministic given what the scorer has seen,
which is all the estimate needs (each record's π is recorded with it; Zrnic and Candès: a π that
depends on earlier verdicts keeps the estimate unbiased).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable

import numpy as np
from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.wire import Record
from ragpulse.scorer.estimate.config import CascadeConfig
from ragpulse.scorer.estimate.pacing import BudgetPacer, kept_by_trace
from ragpulse.scorer.judge.base import Judge, RecordText
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.observer import CascadeVerdict
from ragpulse.scorer.score import MetricOutcome, RecordSkipped, score_text

# Records whose weights set the scale c: enough for a stable mean, recent enough to follow a shift
# in the offline scores within minutes at a few records a second.
SCALE_WINDOW = 500
# Pseudo-verdicts of the pooled residual that each bin's starts from: a bin's own residual counts
# half once it has this many verdicts. Fewer let a handful of verdicts at the floor (weight 1/π up to
# 25 at 10 %) swing the allocation; more keep it near the fixed favour for a window's worth of records.
PRIOR_VERDICTS = 20.0
# The residual sums forget this many times slower than the estimates: σ(s) describes the offline
# judge's errors, which change with a model or prompt, not with the traffic of the hour, and a σ
# learnt from few verdicts is noise in π (it costs width, never correctness). On the labelled data
# of bench/RESULTS.md, 4 rather than 1 sent 2.0-2.15 times the uniform share of hallucinated answers
# to the expensive judge instead of 1.9-2.0, at the same width.
RESIDUAL_MEMORY = 4.0
# The recent residual sums, set against those above to see the offline judge's errors change, forget
# this many times faster than the estimates: a shift shows within a quarter of their half-life.
RECENT_MEMORY = 0.25
# HT-weighted verdicts the recent sums need before their residual is compared: fewer are noise.
MIN_RECENT_VERDICTS = 20.0
# How many of its standard errors the recent mean squared residual must stand above the usual one
# for a rise past residual_shift_ratio to count as a shift. At a small share the recent sums hold
# a few dozen verdicts, of very unequal weights 1/π, and the ratio alone crossed 1.5 by chance
# 0.4-0.5 times per 2,000 records at 5 % on steady traffic (bench/cascade.py, "shifts seen"): tickets
# that meant nothing. 2 s.e. cut those counts 3-40 fold at 5-10 % and still counted a sudden change
# 0.62 times per window at 10 % (1.01 at 25 %); 3 s.e. only 0.09 times (bench/RESULTS.md, "The
# residual shift detector's false alarms").
SHIFT_STANDARD_ERRORS = 2.0


class Cascade:
    def __init__(self, config: CascadeConfig, offline: Judge, expensive: Judge, metrics: dict[str, Metric],
                 registry: CollectorRegistry, pacer: BudgetPacer | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cfg = config
        self._offline = offline
        self._expensive = expensive
        self._metrics = metrics
        self._pacer = pacer
        self._clock = clock
        self._always = frozenset(config.always_rules)
        self._allocator = Allocator(config)
        records = catalog.counter(registry, "ragpulse_cascade_records_total")
        self._judged = records.labels(outcome="judged")
        self._offline_only = records.labels(outcome="offline_only")
        self._no_budget = records.labels(outcome="no_budget")
        ratio = catalog.gauge(registry, "ragpulse_cascade_residual_ratio")
        shifts = catalog.counter(registry, "ragpulse_cascade_residual_shifts_total")
        self._residual = {m: (ratio.labels(metric=m), shifts.labels(metric=m)) for m in config.selection_metrics}
        for gauge, _ in self._residual.values():
            gauge.set(1.0)
        self._shifts_seen = dict.fromkeys(config.selection_metrics, 0)
        self._lock = threading.Lock()  # records are scored on several threads

    def score(self, record: Record, text: RecordText) -> tuple[dict[str, MetricOutcome], Judge, CascadeVerdict]:
        """The outcomes to show (the expensive judge's where it was asked), the judge that gave them,
        and what the estimates need. Raises what score_text raises for the expensive judge, except
        a budget refusal, which leaves the record with its offline scores."""
        offline_outcomes = score_text(self._offline, self._metrics, text)
        offline = _values(offline_outcomes)
        inclusion = self.inclusion(record, offline)
        if inclusion <= 0.0:
            self._no_budget.inc()
            return offline_outcomes, self._offline, CascadeVerdict(offline, 0.0, None)
        # Read before this record's own verdict is learnt, as π was chosen.
        residual = self._allocator.expected_residual(offline)
        if not kept_by_trace(record.trace_id, record.sampling.probability * inclusion, record.sampling.rv):
            self._offline_only.inc()
            return offline_outcomes, self._offline, CascadeVerdict(offline, inclusion, None, residual=residual)
        # A fresh memo: it holds judge-specific work (embeddings) that must not cross judges; the
        # reference and the samples travel with the rest.
        fresh = dataclasses.replace(text, memo={})
        try:
            judged_outcomes = score_text(self._expensive, self._metrics, fresh)
        except RecordSkipped:
            # The budget ran out between the choice and the call: as if it had been spent before.
            self._no_budget.inc()
            return offline_outcomes, self._offline, CascadeVerdict(offline, 0.0, None)
        if self._pacer is not None:
            self._pacer.scored(sum(o.usage.cost_usd for o in judged_outcomes.values()))
        self._judged.inc()
        judged = _values(judged_outcomes)
        # Weighed as the estimates weigh it: its adjusted count (the records the upstream sampler
        # dropped for it) over π (the records the cascade left to the offline judge for it).
        self._allocator.learn(offline, judged, inclusion, self._clock(), record.sampling.adjusted_count)
        self._export_residual()
        return judged_outcomes, self._expensive, CascadeVerdict(offline, inclusion, judged, offline_outcomes, residual)

    def _export_residual(self) -> None:
        for metric, (ratio, shifts_seen) in self._allocator.residual_shift().items():
            gauge, counter = self._residual[metric]
            gauge.set(ratio)
            with self._lock:
                new = shifts_seen - self._shifts_seen[metric]
                self._shifts_seen[metric] = shifts_seen
            if new > 0:
                counter.inc(new)

    def inclusion(self, record: Record, offline: dict[str, float]) -> float:
        """π for this record; counts it as an arrival for the pacer and the scale."""
        share = self._pacer.arrival_share() if self._pacer is not None else self._cfg.share
        return self._allocator.inclusion(offline, share, record.sampling.rule in self._always)

    @property
    def offline_judge(self) -> Judge:
        return self._offline

    @property
    def allocator(self) -> Allocator:
        return self._allocator


class Allocator:
    """The inclusion probabilities: the fixed favour g(s), the learnt residual size σ(s), and the
    scale c that makes their mean the share. Thread-safe. Kept apart from the judges so that
    bench/cascade.py drives the very same code record by record."""

    def __init__(self, config: CascadeConfig) -> None:
        self._cfg = config
        self._bins = config.adaptive_bins if config.adaptive else 1
        self._metrics = tuple(config.selection_metrics)
        # The last SCALE_WINDOW arrivals' g(s) (inf for an always rule) and bin, as a ring: the scale
        # is solved on them with the σ of now, so a new verdict re-weighs the whole window at once.
        self._g = np.empty(SCALE_WINDOW)
        self._bin = np.zeros(SCALE_WINDOW, dtype=np.intp)
        self._count = self._next = 0
        # Per selection metric and bin, decayed sums over verdicts: their number, Σw, Σw·f, Σw·y,
        # Σw·f², Σw·y², Σw·f·y with w = adjusted count / π, so that they describe all records, not
        # the favoured ones.
        self._sums = np.zeros((len(self._metrics), self._bins, 7))
        # The same sums over recent verdicts only, against which the residual shift is measured,
        # and per metric the recent verdicts' Σw², Σw²r², Σw²r⁴ (r: the residual against the
        # long-run line when the verdict came), for the standard error of their mean squared residual.
        self._recent = np.zeros_like(self._sums)
        self._recent_spread = np.zeros((len(self._metrics), 3))
        self._ratio = np.ones(len(self._metrics))
        self._shifts = [0] * len(self._metrics)
        self._above = [False] * len(self._metrics)
        self._last: float | None = None
        self._sigma = np.ones(self._bins)
        # Each selection metric's mean squared residual per bin (shrunk like σ): what a verdict on a
        # record of that bin is expected to correct, for the residual model's half of the estimates' variance.
        self._mse = np.zeros((len(self._metrics), self._bins))
        self._lock = threading.Lock()

    def inclusion(self, offline: dict[str, float], share: float, always: bool = False) -> float:
        """π for a record with these offline scores; counts it as an arrival for the scale."""
        score = self.selection_score(offline)
        weight = math.inf if always else self.weight(score)
        with self._lock:
            b = self._bin_of(score)
            self._g[self._next] = weight
            self._bin[self._next] = b
            self._next = (self._next + 1) % SCALE_WINDOW
            self._count = min(self._count + 1, SCALE_WINDOW)
            if share <= 0.0:
                return 0.0
            if share >= 1.0:
                return 1.0
            floor = self._cfg.floor * share
            weights = self._g[:self._count] * self._sigma[self._bin[:self._count]]
            scale = scale_for_share(weights, share, floor)
            sigma = self._sigma[b]
        if math.isinf(weight):
            return 1.0
        favoured = min(1.0, max(floor, scale * weight * sigma))
        # A defensive mixture with uniform sampling (Hesterberg 1995): its mean is still the share.
        return (1.0 - self._cfg.defensive_share) * favoured + self._cfg.defensive_share * share

    def learn(self, offline: dict[str, float], judged: dict[str, float], inclusion: float, now: float,
              count: float = 1.0) -> None:
        """A verdict on a record chosen at π = inclusion standing for `count` records: updates σ when
        adaptive (nothing to learn otherwise)."""
        if inclusion <= 0.0:
            return
        b = self._bin_of(self.selection_score(offline))
        w = count / inclusion
        with self._lock:
            if self._last is not None:
                elapsed = max(now - self._last, 0.0)
                self._sums *= 0.5 ** (elapsed / (self._cfg.estimate_half_life_s * RESIDUAL_MEMORY))
                recent = 0.5 ** (elapsed / (self._cfg.estimate_half_life_s * RECENT_MEMORY))
                self._recent *= recent
                # Squared weights forget at the square of the weights' rate.
                self._recent_spread *= recent * recent
            self._last = now if self._last is None else max(self._last, now)
            for m, name in enumerate(self._metrics):
                if name in offline and name in judged:
                    f, y = offline[name], judged[name]
                    row = (1.0, w, w * f, w * y, w * f * f, w * y * y, w * f * y)
                    pooled = self._sums[m].sum(axis=0)
                    lam, kappa = _line(pooled) if pooled[1] > 0.0 else (0.0, y)
                    r2 = (y - lam * f - kappa) ** 2
                    self._recent_spread[m] += (w * w, w * w * r2, w * w * r2 * r2)
                    self._sums[m, b] += row
                    self._recent[m, b] += row
            self._watch_residual()
            self._mse, pooled = _residual_mse(self._sums)
            if self._bins > 1:
                self._sigma = _residual_scale(self._mse, pooled)

    def _watch_residual(self) -> None:
        """The recent verdicts' mean squared residual against the older verdicts' line, over the
        older verdicts' own, per selection metric. Rising past `residual_shift_ratio`, the offline
        judge has started to be wrong where it was not (a new kind of hallucination it does not
        see): counted once, when the rise is also SHIFT_STANDARD_ERRORS standard errors of the
        recent mean above the usual one, until the ratio falls back halfway to 1. The allocation goes on learning
        as before: it follows the new errors within its memory, and the estimates stay unbiased
        whatever it does; the count is for a person, who can retrain the offline judge."""
        for m, (long_run, recent, spread) in enumerate(zip(self._sums, self._recent, self._recent_spread,
                                                           strict=True)):
            # The recent sums forget faster, so every verdict counts less in them than in the
            # long-run ones: the difference is a weighting of the verdicts that leans on the older
            # ones, and a shift shows against it instead of being absorbed into it.
            now = recent.sum(axis=0)
            older = np.maximum(long_run.sum(axis=0) - now, 0.0)
            if min(now[0], older[0]) < MIN_RECENT_VERDICTS or older[1] <= 0.0 or now[1] <= 0.0:
                continue
            lam, kappa = _line(older)
            usual = float(_squared_residual(older, lam, kappa)) / older[1]
            lately = float(_squared_residual(now, lam, kappa)) / now[1]
            self._ratio[m] = lately / usual if usual > 0.0 else 1.0
            limit = self._cfg.residual_shift_ratio
            # The linearised variance of the weighted mean Σw·r² / Σw.
            spread_sq = max(spread[2] - 2.0 * lately * spread[1] + lately * lately * spread[0], 0.0)
            clear = lately - usual >= SHIFT_STANDARD_ERRORS * math.sqrt(spread_sq) / now[1]
            if not self._above[m] and self._ratio[m] >= limit and clear:
                self._shifts[m] += 1
                self._above[m] = True
            # Re-armed only halfway back to 1: a ratio hovering at the limit is one shift, not many.
            elif self._above[m] and self._ratio[m] < 1.0 + (limit - 1.0) / 2.0:
                self._above[m] = False

    def residual_shift(self) -> dict[str, tuple[float, int]]:
        """Per selection metric: the recent-over-usual residual ratio and the times it rose past
        residual_shift_ratio."""
        with self._lock:
            return {name: (float(self._ratio[m]), self._shifts[m]) for m, name in enumerate(self._metrics)}

    def weight(self, score: float) -> float:
        """g(s): how much a record with this offline score is favoured."""
        # Exponential in the score: each 0.1 lower multiplies the chance by the same factor, so the
        # rare very low scores stand out however many middling ones there are (bench/RESULTS.md,
        # "Judge cascade": a linear favour barely reaches the hallucinated answers).
        return (math.exp(self._cfg.low_score_weight * (1.0 - score))
                * (1.0 + self._cfg.uncertainty_weight * (1.0 - abs(2.0 * score - 1.0))))

    def expected_residual(self, offline: dict[str, float]) -> dict[str, float]:
        """Per selection metric, the mean squared residual learnt for records with these offline
        scores (0 before any verdict): fed to the estimates with the record."""
        b = self._bin_of(self.selection_score(offline))
        with self._lock:
            return {name: float(self._mse[m, b]) for m, name in enumerate(self._metrics)}

    def residual_scale(self, score: float) -> float:
        with self._lock:
            return float(self._sigma[self._bin_of(score)])

    def selection_score(self, offline: dict[str, float]) -> float:
        scores = [offline[m] for m in self._metrics if m in offline]
        # 0.5 when the offline judge has none: it knows nothing.
        return min(scores) if scores else 0.5

    def _bin_of(self, score: float) -> int:
        return min(self._bins - 1, max(0, int(score * self._bins)))


def _residual_mse(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per metric and bin, from the sums (metrics × bins × 7): the mean squared residual against
    the metric's weighted least-squares line, each bin shrunk toward the pooled value by
    PRIOR_VERDICTS pseudo-verdicts; and per metric the pooled value. 0 for a metric without a verdict."""
    out = np.zeros(sums.shape[:2])
    pooled_out = np.zeros(sums.shape[0])
    for m, per_bin in enumerate(sums):
        pooled = per_bin.sum(axis=0)
        if pooled[0] <= 0.0 or pooled[1] <= 0.0:
            continue
        lam, kappa = _line(pooled)
        pooled_mse = float(_squared_residual(pooled, lam, kappa)) / pooled[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            own = np.where(per_bin[:, 1] > 0.0, _squared_residual(per_bin, lam, kappa) / per_bin[:, 1], pooled_mse)
        counts = per_bin[:, 0]
        out[m] = (counts * own + PRIOR_VERDICTS * pooled_mse) / (counts + PRIOR_VERDICTS)
        pooled_out[m] = pooled_mse
    return out, pooled_out


def _residual_scale(mse: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """σ per bin relative to the pooled σ: √ of the shrunk mean squared residual summed over the
    metrics (the allocation serves all their estimates)."""
    total = mse.sum(axis=0)
    pooled_total = float(pooled.sum())
    if pooled_total <= 0.0:
        # No verdict yet, or the offline judge was right on every one: nothing says where to spend.
        return np.ones(mse.shape[1])
    return np.sqrt(total / pooled_total)


def _line(pooled: np.ndarray) -> tuple[float, float]:
    """λ and κ of the weighted least-squares line y ≈ λ f + κ from the sums, λ kept in [0, 1] as the
    estimates keep the offline score's weight (scorer/estimate/estimates.py)."""
    _, w, wf, wy, wff, _, wfy = pooled
    mf, my = wf / w, wy / w
    var_f = wff / w - mf * mf
    lam = min(1.0, max(0.0, (wfy / w - mf * my) / var_f)) if var_f > 1e-12 else 0.0
    return lam, my - lam * mf


def _squared_residual(s: np.ndarray, lam: float, kappa: float) -> np.ndarray:
    """Σw(y - λf - κ)² from the raw sums, clamped: rounding can leave a residue below 0."""
    return np.maximum(s[..., 5] - 2 * lam * s[..., 6] - 2 * kappa * s[..., 3] + lam * lam * s[..., 4]
                      + 2 * lam * kappa * s[..., 2] + kappa * kappa * s[..., 1], 0.0)


def scale_for_share(weights: np.ndarray, share: float, floor: float) -> float:
    """The largest c such that the mean of clip(c * weights, floor, 1) is at most the share (the share
    itself when it can be reached; 0 when the floor alone exceeds it). Solved exactly rather than by
    bisection, because it runs on every arrival: the sum is piecewise linear in c, its slope growing
    by w where a weight leaves the floor (c = floor / w) and falling by w where it reaches 1 (c = 1 / w)."""
    finite = weights[np.isfinite(weights)]
    if finite.size == 0:
        return 1.0
    # inf * c = inf: the always-judged records count as 1.
    target = share * weights.size - (weights.size - finite.size)
    if floor * finite.size > target:
        return 0.0  # the floor alone spends more than the share
    kinks = np.concatenate((floor / finite, 1.0 / finite))
    # Ties need no order (the last kink of a tie carries the whole slope), so the fastest sort will do.
    order = np.argsort(kinks, kind="heapsort")
    kinks = kinks[order]
    slope = np.cumsum(np.concatenate((finite, -finite))[order])  # the slope just after each kink
    # The sum at each kink: floor * n at c = 0, where every weight is at the floor (or, with a zero
    # floor, the first kinks are at 0), then each stretch's slope times its length.
    total = floor * finite.size + np.concatenate(([0.0], np.cumsum(slope[:-1] * np.diff(kinks))))
    below = int(np.searchsorted(total, target, side="right")) - 1  # the last kink whose sum is ≤ target
    if below == kinks.size - 1:
        return float(kinks[-1])  # every record certain to be judged
    if below < 0:
        return 0.0  # only with rounding: the sum before the first kink is floor * n ≤ target
    return float(kinks[below] + (target - total[below]) / slope[below]) if slope[below] > 0.0 else float(kinks[below])


def _values(outcomes: dict[str, MetricOutcome]) -> dict[str, float]:
    return {name: o.value for name, o in outcomes.items() if o.value is not None}
