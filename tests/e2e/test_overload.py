"""Overload: real OTel SDK exporters (default timeouts and retries) push far more spans than a small
in-process bus holds. The bus refuses whole requests at once, the exporters retry, and in the end
every acknowledged record is scored exactly once and nothing else is: no duplicates, no losses."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from ragpulse.app import OneProcess
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.config import BusConfig, Config
from ragpulse.core.bus import MemoryBusConfig
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.scorer.config import ScorerConfig

APPS = 3
BATCHES_PER_APP = 6
SPANS_PER_BATCH = 4
CAPACITY = 8


class Collecting(SpanProcessor):
    """Keeps ended spans, so the test decides when and how they are exported."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def rag_spans(app: int, count: int) -> list[ReadableSpan]:
    collecting = Collecting()
    provider = TracerProvider(resource=Resource.create({"service.name": f"app{app}"}))
    provider.add_span_processor(collecting)
    tracer = provider.get_tracer("tests.overload")
    for i in range(count):
        with tracer.start_as_current_span("rag") as span:
            span.set_attribute("rag.question", f"How high is peak {app}-{i}?")
            span.set_attribute("rag.contexts", [f"Peak {app}-{i} is {1000 + i} metres high."])
            span.set_attribute("rag.answer", f"Peak {app}-{i} is {1000 + i} metres high.")
    return collecting.spans


def record_id(span: ReadableSpan) -> str:
    context = span.get_span_context()
    return f"{context.trace_id:032x}-{context.span_id:016x}"


@pytest.fixture
def small_bus_process() -> Iterator[OneProcess]:
    process = OneProcess(Config(
        receiver=ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0"),
        bus=BusConfig(memory=MemoryBusConfig(capacity=CAPACITY)),
        scorer=ScorerConfig(recent_scores=APPS * BATCHES_PER_APP * SPANS_PER_BATCH),
        prometheus=PrometheusConfig(endpoint="127.0.0.1:0"),
    ))
    process.start()
    yield process
    process.stop()


def export_all(transport: str, endpoint: str, app: int, acknowledged: list[str], refused: list[str]) -> None:
    exporter: Any = (GrpcExporter(endpoint=f"http://{endpoint}", insecure=True) if transport == "grpc"
                     else HttpExporter(endpoint=f"http://{endpoint}/v1/traces"))
    spans = rag_spans(app, BATCHES_PER_APP * SPANS_PER_BATCH)
    for start in range(0, len(spans), SPANS_PER_BATCH):
        batch: Sequence[ReadableSpan] = spans[start:start + SPANS_PER_BATCH]
        ids = [record_id(s) for s in batch]
        (acknowledged if exporter.export(batch) == SpanExportResult.SUCCESS else refused).extend(ids)
    exporter.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_overloaded_small_bus_scores_every_acknowledged_record_once(small_bus_process: OneProcess, transport: str):
    process = small_bus_process
    endpoint = process.collector.endpoint(transport)
    acknowledged: list[str] = []
    refused: list[str] = []
    apps = [threading.Thread(target=export_all, args=(transport, endpoint, app, acknowledged, refused))
            for app in range(APPS)]
    for app in apps:
        app.start()
    for app in apps:
        app.join()
    assert process.bus.drained(60)

    value = process.registry.get_sample_value
    # The overload happened: whole requests were refused and retried.
    assert value("ragpulse_otlp_requests_total", {"transport": transport, "outcome": "retry_later"}) > 0
    assert value("ragpulse_otlp_requests_refused_total", {"transport": transport, "reason": "bus_full"}) > 0
    scored = Counter(s["record_id"] for s in process.scorer.scores.snapshot())
    assert not [rid for rid, n in scored.items() if n > 1], "a record was scored twice"
    assert set(scored) == set(acknowledged), "scored records differ from acknowledged ones"
    assert len(acknowledged) + len(refused) == APPS * BATCHES_PER_APP * SPANS_PER_BATCH
    # Nothing of a refused request reached the bus, so the scorer had nothing to skip.
    assert (value("ragpulse_scorer_records_skipped_total", {"reason": "duplicate"}) or 0) == 0
    sampled = sum(value("ragpulse_records_sampled_total", {"service": f"app{a}"}) or 0 for a in range(APPS))
    assert sampled == len(acknowledged)
