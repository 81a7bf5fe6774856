"""Bounded recent history of scores, for the live page and for per-route/model and worst-record views.

Three things, each with a fixed memory bound:
- per service and metric, one bucket per minute (weighted sum, weight, count, bad count) for the
  last `minutes` minutes: the live page's charts (a ring of buckets, old minutes fall off);
- per service, route, model and metric, weighted counters on the registry
  (ragpulse_segment_score_weighted_sum_total / ragpulse_segment_score_weight_total) so the
  per-service Grafana dashboard can break quality down by route and model;
- per service, the `worst_per_service` lowest faithfulness scores among its last `worst_window`
  records, exported as ragpulse_recent_worst_score{service, route, model, record_id}: the only
  record ids that reach Prometheus, a bounded set that churns (series are removed as records leave),
  so a dashboard can name the records to look at.

Service, route and model come bounded by the worker's LabelGuards (the prometheus section), which
bound the number of services, segments and rings too.
"""

from __future__ import annotations

import collections
import heapq
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.weighted import WeightedSums

# The metric whose lowest recent scores are exported (ragpulse_recent_worst_score's help names it).
WORST_METRIC = "faithfulness"


@dataclass
class MinuteBucket:
    minute: int  # unix time // 60
    scores: dict[str, WeightedSums] = field(default_factory=dict)
    bad: dict[str, int] = field(default_factory=dict)
    records: int = 0


@dataclass(frozen=True)
class WorstRecord:
    score: float
    record_id: str
    route: str
    model: str


class History:
    """A worker observer (`on_scores`) keeping the bounded views described in the module doc."""

    def __init__(
        self,
        registry: CollectorRegistry,
        bad_event_threshold: dict[str, float],
        minutes: int = 360,
        worst_per_service: int = 10,
        worst_window: int = 200,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.minutes = minutes
        self.bad_threshold = dict(bad_event_threshold)
        self.worst_per_service = worst_per_service
        self._worst_window = worst_window
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[str, collections.deque[MinuteBucket]] = {}
        # Per service, the last `worst_window` (score, record) of the worst metric, oldest first.
        self._recent: dict[str, collections.deque[WorstRecord]] = {}
        self._seg_sum = catalog.counter(registry, "ragpulse_segment_score_weighted_sum_total")
        self._seg_weight = catalog.counter(registry, "ragpulse_segment_score_weight_total")
        # labels() costs a lock and a tuple per call; the bounded label sets make a cache safe.
        self._seg_children: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
        # The worst records are ranked when Prometheus scrapes, not on every record.
        registry.register(self)

    def on_scores(self, scored: ScoredRecord) -> None:
        record = scored.record
        service, route, model = record.service, record.route, record.model
        w = record.sampling.adjusted_count if record.sampling.adjusted_count > 0 else 1.0
        minute = int(self._clock() // 60)
        with self._lock:
            bucket = self._bucket(service, minute)
            bucket.records += 1
            for metric, value in scored.values.items():
                sums = bucket.scores.get(metric)
                if sums is None:
                    sums = bucket.scores[metric] = WeightedSums()
                sums.add(value, w)
                if value < self.bad_threshold.get(metric, -1.0):
                    bucket.bad[metric] = bucket.bad.get(metric, 0) + 1
                key = (service, route, model, metric)
                children = self._seg_children.get(key)
                if children is None:
                    children = self._seg_children[key] = (self._seg_sum.labels(*key), self._seg_weight.labels(*key))
                children[0].inc(w * value)
                children[1].inc(w)
            worst_value = scored.values.get(WORST_METRIC)
            if worst_value is not None and self.worst_per_service > 0:
                recent = self._recent.setdefault(service, collections.deque(maxlen=self._worst_window))
                recent.append(WorstRecord(worst_value, record.id, route, model))

    def _bucket(self, service: str, minute: int) -> MinuteBucket:
        ring = self._series.setdefault(service, collections.deque())
        if not ring or ring[-1].minute < minute:
            ring.append(MinuteBucket(minute))
        while ring and ring[0].minute <= minute - self.minutes:
            ring.popleft()
        # A record stamped in an earlier minute than the newest bucket (clock step) joins the newest.
        return ring[-1]

    def collect(self) -> Iterator[Metric]:
        family = catalog.family("ragpulse_recent_worst_score")
        with self._lock:
            for service, recent in self._recent.items():
                for r in heapq.nsmallest(self.worst_per_service, recent, key=lambda r: r.score):
                    family.add_metric([service, r.route, r.model, r.record_id], r.score)
        yield family

    def series(self) -> dict[str, dict[str, object]]:
        """Per service: minute timestamps (unix seconds), per-metric weighted means (None where a
        minute has no score), counts, bad counts and records per minute; minutes without any
        record are left out, so a chart shows a gap rather than a made-up value."""
        now_minute = int(self._clock() // 60)
        out: dict[str, dict[str, object]] = {}
        with self._lock:
            for service, ring in self._series.items():
                buckets = [b for b in ring if b.minute > now_minute - self.minutes]
                metrics = sorted({m for b in buckets for m in b.scores})
                out[service] = {
                    "t": [b.minute * 60 for b in buckets],
                    "records": [b.records for b in buckets],
                    "mean": {m: [b.scores[m].mean if m in b.scores else None for b in buckets] for m in metrics},
                    "count": {m: [int(b.scores[m].n) if m in b.scores else 0 for b in buckets] for m in metrics},
                    "bad": {m: [b.bad.get(m, 0) for b in buckets] for m in metrics},
                }
        return out
