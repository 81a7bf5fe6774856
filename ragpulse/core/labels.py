"""Bounded label values for Prometheus: span values (service, route, model) pass through here.

Three bounds, because each alone leaves a way to explode the series count: a value's length (one
1 MiB `service.name` made /metrics 98.7 MB), the number of distinct values per label (an
allow-list or the first `cap` seen), and the number of (service, route, model) combinations, since
per-label caps multiply (50 x 50 x 50 segments). The distinct values a bound changed are counted
(not the lookups: a value is looked up several times per record), so a dashboard can tell "other"
from a real service called other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog

OTHER = "other"
# Distinct changed values remembered for the counts; past it the counts stop growing, memory does not.
_COUNTED_MAX = 10_000


class _DistinctCount:
    """How many distinct values were seen, remembering at most _COUNTED_MAX of them."""

    def __init__(self) -> None:
        self._seen: set[object] = set()

    def add(self, value: object) -> None:
        if len(self._seen) < _COUNTED_MAX:
            self._seen.add(value)

    @property
    def value(self) -> int:
        return len(self._seen)


class LabelGuard:
    """Bounds one label's values: longer than `max_chars` is cut (ending in "…"); then an
    allow-list if configured, otherwise the first `cap` distinct values; everything else becomes
    `other`."""

    def __init__(self, allow: tuple[str, ...] = (), cap: int = 50, max_chars: int = 128) -> None:
        self._allow = frozenset(allow)
        self._cap = cap
        self._max_chars = max_chars
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.truncated = _DistinctCount()
        self.collapsed = _DistinctCount()

    def __call__(self, value: str) -> str:
        value = value or "unknown"
        if len(value) > self._max_chars:
            value = value[: self._max_chars - 1] + "…"
            with self._lock:
                self.truncated.add(value)
        if self._allow:
            if value in self._allow:
                return value
        else:
            with self._lock:
                if value in self._seen:
                    return value
                if len(self._seen) < self._cap:
                    self._seen.add(value)
                    return value
        with self._lock:
            self.collapsed.add(value)
        return OTHER


class CombinationGuard:
    """Bounds the distinct (service, route, model) combinations to the first `cap` seen; a later
    one keeps its service (alerts are per service) and becomes (service, other, other)."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._seen: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self.collapsed = _DistinctCount()

    def __call__(self, service: str, route: str, model: str) -> tuple[str, str, str]:
        combination = (service, route, model)
        with self._lock:
            if combination in self._seen:
                return combination
            if len(self._seen) < self._cap:
                self._seen.add(combination)
                return combination
            self.collapsed.add(combination)
        return (service, OTHER, OTHER)


@dataclass
class LabelBounds:
    """Every bound on span values as labels in one process: the collector's and the scorer's
    families share it, so both say `other` for the same values."""

    service: LabelGuard
    route: LabelGuard
    model: LabelGuard
    combinations: CombinationGuard
    _registered: set[int] = field(default_factory=set)

    def __call__(self, service: str, route: str, model: str) -> tuple[str, str, str]:
        return self.combinations(self.service(service), self.route(route), self.model(model))

    def register(self, registry: CollectorRegistry) -> None:
        """Export the bounds' counts on `registry`, once however many parts ask."""
        if id(registry) not in self._registered:
            self._registered.add(id(registry))
            registry.register(_LabelBoundsCollector(self))


class _LabelBoundsCollector:
    def __init__(self, bounds: LabelBounds) -> None:
        self._bounds = bounds

    def collect(self) -> Iterator[Metric]:
        b = self._bounds
        truncated = catalog.family("ragpulse_label_values_truncated_total")
        collapsed = catalog.family("ragpulse_label_values_collapsed_total")
        for name, guard in (("service", b.service), ("route", b.route), ("model", b.model)):
            truncated.add_metric([name], guard.truncated.value)
            collapsed.add_metric([name], guard.collapsed.value)
        collapsed.add_metric(["combination"], b.combinations.collapsed.value)
        yield truncated
        yield collapsed
