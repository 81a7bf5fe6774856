"""The collector's own Prometheus families, on an explicit registry (declared in
ragpulse/core/telemetry_catalog.py)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core import tls_telemetry
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.labels import LabelGuard


class ServiceCounters:
    """One service's children of the per-service families, for its bounded label. The pipeline
    looks them up once per resource, not per record: every lookup passes the label guard, which
    takes a lock."""

    def __init__(self, metrics: CollectorMetrics, label: str) -> None:
        self._metrics = metrics
        self.label = label
        self.received = metrics.records_received.labels(service=label)
        self.sampled = metrics.records_sampled.labels(service=label)
        self.truncated = metrics.records_truncated.labels(service=label)
        # labels() takes a lock and builds a tuple per call; children are looked up once per value.
        self._dropped: dict[str, Any] = {}
        self._decisions: dict[tuple[str, bool], Any] = {}

    def dropped(self, reason: str) -> Any:
        child = self._dropped.get(reason)
        if child is None:
            child = self._dropped[reason] = self._metrics.records_dropped.labels(service=self.label, reason=reason)
        return child

    def decision(self, rule: str, kept: bool) -> Any:
        # Rules are named in the config, so their number is bounded like the services'.
        child = self._decisions.get((rule, kept))
        if child is None:
            child = self._decisions[rule, kept] = self._metrics.sampling_decisions.labels(
                service=self.label, rule=rule, decision="kept" if kept else "dropped")
        return child


class Tally:
    """Counter increments gathered over one request (or one assembled trace) and applied once per
    counter: `inc` takes a lock, and three of them per record were a tenth of the collector's CPU
    per RAG span. Not thread-safe: one per call."""

    def __init__(self) -> None:
        self._counts: dict[Any, int] = {}

    def add(self, counter: Any, amount: int = 1) -> None:
        self._counts[counter] = self._counts.get(counter, 0) + amount

    def apply(self) -> None:
        for counter, amount in self._counts.items():
            counter.inc(amount)
        self._counts.clear()


class CollectorMetrics:
    def __init__(self, registry: CollectorRegistry, service_label: LabelGuard | None = None) -> None:
        # service.name comes from apps: bounded like every span value, by the prometheus section.
        self._service_label = service_label or PrometheusConfig().label_bounds().service
        self._services: dict[str, ServiceCounters] = {}
        self.requests = catalog.counter(registry, "ragpulse_otlp_requests_total")
        self.refused = catalog.counter(registry, "ragpulse_otlp_requests_refused_total")
        self.spans = catalog.counter(registry, "ragpulse_spans_received_total")
        self.records_received = catalog.counter(registry, "ragpulse_records_received_total")
        self.records_sampled = catalog.counter(registry, "ragpulse_records_sampled_total")
        self.records_dropped = catalog.counter(registry, "ragpulse_records_dropped_total")
        self.spans_without_triple = catalog.counter(registry, "ragpulse_spans_without_rag_triple_total")
        self.records_truncated = catalog.counter(registry, "ragpulse_records_truncated_total")
        # Tail sampling (collector/policies.py): per rule, and what upstream samplers said.
        self.sampling_decisions = catalog.counter(registry, "ragpulse_sampling_decisions_total")
        self.sampling_upstream = catalog.counter(registry, "ragpulse_sampling_upstream_total")
        # Multi-span conventions (collector/assemble.py).
        self.trace_spans = catalog.counter(registry, "ragpulse_trace_spans_total")
        self.traces_assembled = catalog.counter(registry, "ragpulse_traces_assembled_total")
        self.pending_traces = catalog.gauge(registry, "ragpulse_assembly_pending_traces")
        self.pending_bytes = catalog.gauge(registry, "ragpulse_assembly_pending_bytes")
        self.http_tls = tls_telemetry.TlsCounts(registry, "otlp_http")
        self.grpc_tls = tls_telemetry.TlsCounts(registry, "otlp_grpc", handshakes=False)

    def service(self, name: str) -> ServiceCounters:
        # Keyed by the bounded label, so the cache is as bounded as the series.
        label = self._service_label(name)
        counters = self._services.get(label)
        if counters is None:
            counters = self._services[label] = ServiceCounters(self, label)
        return counters
