"""The collector's own Prometheus families, on an explicit registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from ragpulse.core.labels import LabelGuard


@dataclass(frozen=True)
class ServiceCounters:
    received: Any
    sampled: Any
    truncated: Any


class CollectorMetrics:
    def __init__(self, registry: CollectorRegistry, service_label: LabelGuard | None = None) -> None:
        # service.name comes from apps: bounded like every span value, default cap as the scorer's.
        self._service_label = service_label or LabelGuard()
        # labels() takes a lock and builds a tuple per call; children are looked up once per value.
        self._services: dict[str, ServiceCounters] = {}
        self._dropped: dict[tuple[str, str], Any] = {}
        self.requests = Counter(
            "ragpulse_otlp_requests",
            "OTLP export requests, by transport (grpc, http) and outcome (ok, invalid, retry_later).",
            ["transport", "outcome"],
            registry=registry,
        )
        self.spans = Counter(
            "ragpulse_spans_received",
            "Spans received over OTLP.",
            ["transport"],
            registry=registry,
        )
        self.records_received = Counter(
            "ragpulse_records_received",
            "RAG records extracted from spans (one per question/contexts/answer triple).",
            ["service"],
            registry=registry,
        )
        self.records_sampled = Counter(
            "ragpulse_records_sampled",
            "RAG records kept by sampling and handed to the bus.",
            ["service"],
            registry=registry,
        )
        self.records_dropped = Counter(
            "ragpulse_records_dropped",
            "RAG records not handed to the bus, by rule (sampled_out, invalid, bus_full).",
            ["service", "reason"],
            registry=registry,
        )
        self.spans_without_triple = Counter(
            "ragpulse_spans_without_rag_triple",
            "Spans (or assembled traces) that carried no question/contexts/answer triple: counted "
            "and dropped, never an error.",
            registry=registry,
        )
        self.records_truncated = Counter(
            "ragpulse_records_truncated",
            "Records whose contexts were cut to the configured size limit.",
            ["service"],
            registry=registry,
        )
        # Multi-span conventions (collector/assemble.py).
        self.trace_spans = Counter(
            "ragpulse_trace_spans",
            "Spans of multi-span conventions, by outcome: buffered, sampled_out (trace dropped by "
            "sampling before buffering), late (trace already assembled), over_limit (trace at its span cap).",
            ["outcome"],
            registry=registry,
        )
        self.traces_assembled = Counter(
            "ragpulse_traces_assembled",
            "Buffered traces assembled, by trigger: root (root span plus grace), timeout, buffer_full "
            "(oldest assembled early to make room), shutdown.",
            ["trigger"],
            registry=registry,
        )
        self.pending_traces = Gauge(
            "ragpulse_assembly_pending_traces", "Traces buffered for assembly.", registry=registry
        )
        self.pending_bytes = Gauge(
            "ragpulse_assembly_pending_bytes", "Encoded size of the spans buffered for assembly.", registry=registry
        )

    def service(self, name: str) -> ServiceCounters:
        # Keyed by the bounded label, so the cache is as bounded as the series.
        label = self._service_label(name)
        counters = self._services.get(label)
        if counters is None:
            counters = self._services[label] = ServiceCounters(
                received=self.records_received.labels(service=label),
                sampled=self.records_sampled.labels(service=label),
                truncated=self.records_truncated.labels(service=label),
            )
        return counters

    def dropped(self, service: str, reason: str) -> Any:
        key = (self._service_label(service), reason)
        child = self._dropped.get(key)
        if child is None:
            child = self._dropped[key] = self.records_dropped.labels(service=key[0], reason=reason)
        return child
