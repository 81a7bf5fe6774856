"""The judge cascade: the offline judge scores every record, the expensive judge a share of them,
chosen with known probabilities that favour the records whose offline scores say the most.

An LLM judge on every answer can cost more than the app, and most answers are fine. So every
record gets the cheap offline scores, and a record goes to the expensive judge with probability

    π = clip(c * g(s), floor * share, 1)
    g(s) = exp(low_score_weight * (1 - s)) * (1 + uncertainty_weight * (1 - |2s - 1|))

where s is the record's lowest offline score among `selection_metrics` (0.5 when the offline judge
has none: it knows nothing) and c is solved so that the mean π of recent records is the target
share: what the budget pacer (scorer/pacing.py) says the budget affords, or `share` without a paced
budget. The floor (a fraction of the share) gives every record a chance, so where the offline
judge is confidently wrong the expensive judge still finds out, and no verdict weighs more than
1/(floor * share). Records kept by an `always_rules` sampling rule get π = 1.

The choice itself is the trace id's randomness against upstream probability × π, as in sampling
and pacing: every scorer and every redelivery decide alike. Because π is known for every record,
the estimates (scorer/estimates.py, docs/estimates.md) undo the favouring and stay unbiased.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import threading

import numpy as np
from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.wire import Record
from ragpulse.scorer.cascade_config import CascadeConfig
from ragpulse.scorer.judge.base import Judge, RecordText
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.observer import CascadeVerdict
from ragpulse.scorer.pacing import BudgetPacer, kept_by_trace
from ragpulse.scorer.score import MetricOutcome, RecordSkipped, score_text

# Records whose weights set the scale c: enough for a stable mean, recent enough to follow a shift
# in the offline scores within minutes at a few records a second.
SCALE_WINDOW = 500
# Bisection steps for c: the mean of π is monotone in c, and 2^-50 of the bracket is exact enough.
_BISECTION_STEPS = 50


class Cascade:
    def __init__(self, config: CascadeConfig, offline: Judge, expensive: Judge, metrics: dict[str, Metric],
                 registry: CollectorRegistry, pacer: BudgetPacer | None = None) -> None:
        self._cfg = config
        self._offline = offline
        self._expensive = expensive
        self._metrics = metrics
        self._pacer = pacer
        self._always = frozenset(config.always_rules)
        self._weights: collections.deque[float] = collections.deque(maxlen=SCALE_WINDOW)
        self._lock = threading.Lock()
        records = catalog.counter(registry, "ragpulse_cascade_records_total")
        self._judged = records.labels(outcome="judged")
        self._offline_only = records.labels(outcome="offline_only")
        self._no_budget = records.labels(outcome="no_budget")

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
        if not kept_by_trace(record.trace_id, record.sampling.probability * inclusion, record.sampling.rv):
            self._offline_only.inc()
            return offline_outcomes, self._offline, CascadeVerdict(offline, inclusion, None)
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
        return judged_outcomes, self._expensive, CascadeVerdict(offline, inclusion, _values(judged_outcomes))

    def inclusion(self, record: Record, offline: dict[str, float]) -> float:
        """π for this record; counts it as an arrival for the pacer and the scale."""
        share = self._pacer.arrival_share() if self._pacer is not None else self._cfg.share
        if record.sampling.rule in self._always:
            weight = math.inf
        else:
            scores = [offline[m] for m in self._cfg.selection_metrics if m in offline]
            weight = self.weight(min(scores) if scores else 0.5)
        with self._lock:
            self._weights.append(weight)
            if share <= 0.0:
                return 0.0
            if share >= 1.0:
                return 1.0
            floor = self._cfg.floor * share
            scale = scale_for_share(np.fromiter(self._weights, float, len(self._weights)), share, floor)
        return 1.0 if math.isinf(weight) else min(1.0, max(floor, scale * weight))

    def weight(self, score: float) -> float:
        """g(s): how much a record with this offline score is favoured."""
        # Exponential in the score: each 0.1 lower multiplies the chance by the same factor, so the
        # rare very low scores stand out however many middling ones there are (bench/RESULTS.md,
        # "Judge cascade": a linear favour barely reaches the hallucinated answers).
        return (math.exp(self._cfg.low_score_weight * (1.0 - score))
                * (1.0 + self._cfg.uncertainty_weight * (1.0 - abs(2.0 * score - 1.0))))


def scale_for_share(weights: np.ndarray, share: float, floor: float) -> float:
    """c such that the mean of clip(c * weights, floor, 1) is the share (or as close as it gets)."""
    finite = weights[np.isfinite(weights)]
    if finite.size == 0:
        return 1.0
    low, high = 0.0, 1.0 / float(finite.min())  # at `high` every record is certain to be judged
    for _ in range(_BISECTION_STEPS):
        mid = (low + high) / 2.0
        # inf * mid = inf: the always-judged records count as 1.
        if np.clip(weights * mid, floor, 1.0).mean() > share:
            high = mid
        else:
            low = mid
    return low


def _values(outcomes: dict[str, MetricOutcome]) -> dict[str, float]:
    return {name: o.value for name, o in outcomes.items() if o.value is not None}
