"""A full bus answers OTLP at once with the retryable status, takes a request whole or not at all,
and loses nothing: not the refused request (the client retries it), not an assembled trace (it
waits), and a record sent twice is scored once."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_requests import add_rag_span, rag_request
from ports import loopback_receivers
from prometheus_client import CollectorRegistry

from ragpulse.app import OneProcess, build_collector
from ragpulse.collector.extract.config import AssemblyConfig, ExtractConfig
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.config import Config
from ragpulse.core.bus import BusFull, InProcessBus
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.wire import Record


def one_record_request(trace_byte: int) -> ExportTraceServiceRequest:
    request, scope = rag_request()
    add_rag_span(scope, bytes([trace_byte]) * 16, b"\x02" * 8)
    return request


@pytest.fixture
def full_bus_collector():
    config = Config(receiver=ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0"))
    bus = InProcessBus(capacity=1)
    registry = CollectorRegistry()
    parts = build_collector(config, bus, registry)
    for receiver in parts.receivers:
        receiver.start()
    bus.publish(b"filler", b"{}")  # the bus is now full and nobody consumes it
    yield parts, bus, registry
    for receiver in parts.receivers:
        receiver.stop()


def test_http_answers_503_with_retry_after(full_bus_collector) -> None:
    parts, bus, registry = full_bus_collector
    request = urllib.request.Request(
        f"http://{parts.endpoint('http')}/v1/traces",
        data=one_record_request(7).SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=5)
    assert err.value.code == 503
    assert int(err.value.headers["Retry-After"]) >= 1
    labels = {"transport": "http", "outcome": "retry_later"}
    assert registry.get_sample_value("ragpulse_otlp_requests_total", labels) == 1
    # Once there is room, the client's retry goes through.
    bus.poll(1, 0.1)
    with urllib.request.urlopen(request, timeout=5) as r:
        assert r.status == 200
    assert bus.depth() == 1


def test_grpc_answers_unavailable(full_bus_collector) -> None:
    parts, _, registry = full_bus_collector
    with grpc.insecure_channel(parts.endpoint("grpc")) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as err:
            stub.Export(one_record_request(9), timeout=5)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    labels = {"transport": "grpc", "outcome": "retry_later"}
    assert registry.get_sample_value("ragpulse_otlp_requests_total", labels) == 1


def test_a_batch_goes_onto_the_bus_whole_or_not_at_all() -> None:
    bus = InProcessBus(capacity=4)
    bus.publish_batch([(b"k", b"1"), (b"k", b"2")])
    with pytest.raises(BusFull):
        bus.publish_batch([(b"k", b"3"), (b"k", b"4"), (b"k", b"5")])
    assert bus.depth() == 2
    bus.publish_batch([(b"k", b"3"), (b"k", b"4")])
    assert [d.value for d in bus.poll(10, 0.1)] == [b"1", b"2", b"3", b"4"]
    # A batch larger than the whole bus goes in when the bus is empty, or it never could.
    bus.publish_batch([(b"k", bytes([i])) for i in range(10)])
    assert bus.depth() == 10


def _received_sampled_dropped(registry: CollectorRegistry) -> tuple[float, float, float]:
    def total(family: str) -> float:
        return sum(s.value for m in registry.collect() if m.name == family for s in m.samples
                   if s.name == family + "_total")

    return total("ragpulse_records_received"), total("ragpulse_records_sampled"), total("ragpulse_records_dropped")


def test_a_refused_request_publishes_and_buffers_nothing_and_its_retry_everything() -> None:
    config = loopback_receivers(Config(extract=ExtractConfig(assembly=AssemblyConfig(grace_s=0.1))))
    bus, registry = InProcessBus(capacity=4), CollectorRegistry()
    parts = build_collector(config, bus, registry)
    bus.publish_batch([(b"filler", b"{}")] * 2)
    request, scope = rag_request()
    for i in range(3):
        add_rag_span(scope, bytes([i + 1]) * 16, bytes([i + 1]) * 8)
    add_openinference_trace(scope, b"\x09" * 16)

    with pytest.raises(BusFull):
        parts.pipeline.consume_export_request(request, "test")
    assert bus.depth() == 2
    assert registry.get_sample_value("ragpulse_assembly_pending_traces") == 0
    assert _received_sampled_dropped(registry) == (3, 0, 3)  # dropped as bus_full: the client retries

    bus.poll(2, 0.1)
    parts.pipeline.consume_export_request(request, "test")
    assert bus.depth() == 3
    assert registry.get_sample_value("ragpulse_assembly_pending_traces") == 1
    assert _received_sampled_dropped(registry) == (6, 3, 3)


def test_an_assembled_trace_waits_for_room_instead_of_being_dropped() -> None:
    config = loopback_receivers(Config(extract=ExtractConfig(assembly=AssemblyConfig(grace_s=0.1))))
    bus, registry = InProcessBus(capacity=1), CollectorRegistry()
    parts = build_collector(config, bus, registry)
    bus.publish(b"filler", b"{}")
    request, scope = rag_request()
    add_openinference_trace(scope, b"\x09" * 16)
    parts.pipeline.consume_export_request(request, "test")  # only buffered: nothing for the bus yet

    later = time.monotonic() + 1
    parts.pipeline.tick(later)  # assembled, refused by the full bus, held
    parts.pipeline.tick(later)
    assert bus.depth() == 1 and _received_sampled_dropped(registry) == (1, 0, 0)
    bus.poll(1, 0.1)
    parts.pipeline.tick(later)
    (delivery,) = bus.poll(1, 0.1)
    assert Record.from_json(delivery.value).trace_id == "09" * 16
    assert _received_sampled_dropped(registry) == (1, 1, 0)


def add_openinference_trace(scope: ScopeSpans, trace_id: bytes) -> None:
    """A CHAIN root with the question and answer and a RETRIEVER child with the contexts."""
    root_id = b"\x0a" * 8
    for span_id, parent, attrs in (
        (b"\x0b" * 8, root_id, {"openinference.span.kind": "RETRIEVER", "input.value": "q?",
                                 "retrieval.documents.0.document.content": "c."}),
        (root_id, b"", {"openinference.span.kind": "CHAIN", "input.value": "q?", "output.value": "a."}),
    ):
        span = scope.spans.add()
        span.trace_id, span.span_id, span.parent_span_id, span.name = trace_id, span_id, parent, "step"
        span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
        for key, value in attrs.items():
            kv = span.attributes.add()
            kv.key, kv.value.string_value = key, value


def test_one_process_scores_a_record_sent_twice_once() -> None:
    """An exporter that gave up waiting for an answer that did come sends the same spans again."""
    config = Config(receiver=ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0"),
                    prometheus=PrometheusConfig(endpoint="127.0.0.1:0"))
    process = OneProcess(config)
    process.start()
    try:
        exporter = HttpExporter(endpoint=f"http://{process.collector.endpoint('http')}/v1/traces")
        spans = ended_rag_spans()
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        assert exporter.export(spans) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert process.bus.drained(30)
        value = process.registry.get_sample_value
        assert value("ragpulse_records_scored_total", {"service": "resent"}) == 1
        assert value("ragpulse_scorer_records_skipped_total", {"reason": "duplicate"}) == 1
    finally:
        process.stop()


def ended_rag_spans() -> list[ReadableSpan]:
    ended: list[ReadableSpan] = []

    class Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            ended.append(span)

    provider = TracerProvider(resource=Resource.create({"service.name": "resent"}))
    provider.add_span_processor(Keep())
    with provider.get_tracer("tests").start_as_current_span("rag") as span:
        span.set_attribute("rag.question", "How high is Everest?")
        span.set_attribute("rag.contexts", ["Everest is 8,849 metres high."])
        span.set_attribute("rag.answer", "8,849 metres.")
    return ended
