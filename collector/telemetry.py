"""The collector's own Prometheus families, on an explicit registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class CollectorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
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
