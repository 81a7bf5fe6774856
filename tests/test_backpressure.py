"""A full in-process bus answers OTLP with the retryable status, and the record is not lost."""

from __future__ import annotations

import urllib.error
import urllib.request

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otlp_requests import add_rag_span, rag_request
from prometheus_client import CollectorRegistry

from ragpulse.app import build_collector
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus


def one_record_request(trace_byte: int) -> ExportTraceServiceRequest:
    request, scope = rag_request()
    add_rag_span(scope, bytes([trace_byte]) * 16, b"\x02" * 8)
    return request


@pytest.fixture
def full_bus_collector():
    config = Config(receiver=ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0"))
    bus = InProcessBus(capacity=1, put_timeout_s=0.05)
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
