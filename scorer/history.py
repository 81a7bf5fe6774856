"""Bounded recent history of scores, for the live page and for per-route/model and worst-record views.

Three things, each with a fixed memory bound:
- per service and metric, one bucket per minute (weighted sum, weight, count, bad count) for the
  last `minutes` minutes: the live page's charts (a ring of buckets, old minutes fall off);
- per service, route, model and metric, weighted counters on the registry
  (ragpulse_segment_score_weighted_sum_total / ragpulse_segment_score_weight_total) so the
  per-service Grafana dashboard can break quality down by route and model; route and model are span
  values, so they pass through a LabelGuard;
- per service, the `worst_per_service` lowest faithfulness scores among its last `worst_window`
  records, exported as ragpulse_recent_worst_score{service, route, model, record_id}: the only
  record ids that reach Prometheus, a bounded set that churns (series are removed as records leave),
  so a dashboard can name the records to look at.
"""

from __future__ import annotations

import collections
import heapq
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric

from ragpulse.core.labels import LabelGuard
from ragpulse.core.wire import Record


@dataclass
class MinuteBucket:
    minute: int  # unix time // 60
    weighted_sum: dict[str, float] = field(default_factory=dict)
    weight: dict[str, float] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)
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
        registry: CollectorRegistry | None = None,
        minutes: int = 360,
        max_services: int = 50,
        bad_event_threshold: dict[str, float] | None = None,
        worst_per_service: int = 10,
        worst_window: int = 200,
        worst_metric: str = "faithfulness",
        label_cap: int = 20,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.minutes = minutes
        self.max_services = max_services
        self.bad_threshold = dict(bad_event_threshold or {"faithfulness": 0.5})
        self.worst_per_service = worst_per_service
        self.worst_metric = worst_metric
        self._worst_window = worst_window
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[str, collections.deque[MinuteBucket]] = {}
        # Per service, the last `worst_window` (score, record) of the worst metric, oldest first.
        self._recent: dict[str, collections.deque[WorstRecord]] = {}
        self._route = LabelGuard(cap=label_cap)
        self._model = LabelGuard(cap=label_cap)
        self._seg_sum = self._seg_weight = None
        # labels() costs a lock and a tuple per call; the bounded label sets make a cache safe.
        self._seg_children: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
        if registry is not None:
            seg_labels = ["service", "route", "model", "metric"]
            self._seg_sum = Counter(
                "ragpulse_segment_score_weighted_sum",
                "Sum of adjusted count x score per service, route, model and metric (divide by "
                "ragpulse_segment_score_weight_total for the weighted mean of a route or model).",
                seg_labels, registry=registry)
            self._seg_weight = Counter(
                "ragpulse_segment_score_weight",
                "Sum of adjusted counts of scored records per service, route, model and metric.",
                seg_labels, registry=registry)
            # The worst records are ranked when Prometheus scrapes, not on every record.
            registry.register(self)

    def _service_key(self, service: str) -> str | None:
        if service in self._series or len(self._series) < self.max_services:
            return service
        return None  # beyond the bound: the page shows the first max_services services

    def on_scores(self, record: Record, values: dict[str, float], detail: dict) -> None:
        w = record.sampling.adjusted_count if record.sampling.adjusted_count > 0 else 1.0
        route = self._route(record.route)
        model = self._model(record.model)
        minute = int(self._clock() // 60)
        with self._lock:
            service = self._service_key(record.service or "unknown")
            if service is None:
                return
            bucket = self._bucket(service, minute)
            bucket.records += 1
            for metric, value in values.items():
                if value is None or math.isnan(value):
                    continue
                bucket.weighted_sum[metric] = bucket.weighted_sum.get(metric, 0.0) + w * value
                bucket.weight[metric] = bucket.weight.get(metric, 0.0) + w
                bucket.count[metric] = bucket.count.get(metric, 0) + 1
                if value < self.bad_threshold.get(metric, -1.0):
                    bucket.bad[metric] = bucket.bad.get(metric, 0) + 1
                if self._seg_sum is not None and self._seg_weight is not None:
                    key = (service, route, model, metric)
                    children = self._seg_children.get(key)
                    if children is None:
                        children = self._seg_children[key] = (
                            self._seg_sum.labels(*key), self._seg_weight.labels(*key))
                    children[0].inc(w * value)
                    children[1].inc(w)
            worst_value = values.get(self.worst_metric)
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
        family = GaugeMetricFamily(
            "ragpulse_recent_worst_score",
            f"The lowest {self.worst_metric} scores among each service's recent records, by record id "
            "(a bounded, churning set: look the id up on the live page or the scores topic).",
            labels=["service", "route", "model", "record_id"])
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
                metrics = sorted({m for b in buckets for m in b.weight})
                out[service] = {
                    "t": [b.minute * 60 for b in buckets],
                    "records": [b.records for b in buckets],
                    "mean": {m: [(b.weighted_sum[m] / b.weight[m]) if b.weight.get(m) else None
                                 for b in buckets] for m in metrics},
                    "count": {m: [b.count.get(m, 0) for b in buckets] for m in metrics},
                    "bad": {m: [b.bad.get(m, 0) for b in buckets] for m in metrics},
                }
        return out
