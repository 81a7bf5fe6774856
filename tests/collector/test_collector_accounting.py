"""The collector's own counters keep their promises: received = sampled + dropped, and service
labels bounded by the `prometheus` section like the scorer's."""

from __future__ import annotations

from otlp_requests import add_rag_span, rag_request
from ports import loopback_receivers
from prometheus_client import CollectorRegistry

from ragpulse.app import build_collector
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.exposition import PrometheusConfig


def _count(registry: CollectorRegistry, family: str) -> float:
    return sum(s.value for m in registry.collect() if m.name == family for s in m.samples
               if s.name == family + "_total")


def _series(registry: CollectorRegistry, family: str) -> set[str]:
    return {s.labels["service"] for m in registry.collect() if m.name == family for s in m.samples
            if s.name == family + "_total"}


def test_a_rejected_native_span_is_received_and_dropped():
    registry = CollectorRegistry()
    parts = build_collector(loopback_receivers(Config()), InProcessBus(10), registry)
    request, scope = rag_request()
    add_rag_span(scope, b"\x01" * 16, b"\x02" * 8)
    add_rag_span(scope, b"\x03" * 16, b"\x04" * 8, answer="")  # empty_answer: rejected by the extractor
    add_rag_span(scope, b"\x05" * 15, b"\x06" * 8)  # invalid_ids
    result = parts.pipeline.consume_export_request(request, "test")
    assert result.rejected_spans == 2
    received = _count(registry, "ragpulse_records_received")
    assert received == 3
    assert received == _count(registry, "ragpulse_records_sampled") + _count(registry, "ragpulse_records_dropped")


def test_collector_service_labels_follow_the_prometheus_section():
    registry = CollectorRegistry()
    config = loopback_receivers(Config(prometheus=PrometheusConfig(service_allow_list=["shop"])))
    parts = build_collector(config, InProcessBus(10), registry)
    for i, service in enumerate(("shop", "blog", "wiki")):
        request, scope = rag_request(service)
        add_rag_span(scope, bytes([i + 1]) * 16, bytes([i + 1]) * 8)
        parts.pipeline.consume_export_request(request, "test")
    assert _series(registry, "ragpulse_records_received") == {"shop", "other"}
    assert _series(registry, "ragpulse_records_sampled") == {"shop", "other"}


def test_a_span_whose_kept_attribute_is_bytes_is_rejected_alone_with_its_reason():
    """A bytes value (OTLP's bytes_value) in an attribute the record keeps cannot go into the
    record's JSON: it was a TypeError that failed the whole request with a 500, losing its other
    spans uncounted. Now that span is rejected with a reason the client reads, and the rest land."""
    registry = CollectorRegistry()
    bus = InProcessBus(10)
    parts = build_collector(loopback_receivers(Config()), bus, registry)
    request, scope = rag_request()
    add_rag_span(scope, b"\x01" * 16, b"\x02" * 8)
    add_rag_span(scope, b"\x03" * 16, b"\x04" * 8)
    kv = scope.spans[1].attributes.add()
    kv.key, kv.value.bytes_value = "rag.feedback", b"\xff\x00"
    result = parts.pipeline.consume_export_request(request, "test")
    assert result.rejected_spans == 1
    assert "rag.feedback" in result.error_message
    assert _count(registry, "ragpulse_records_received") == 2
    assert _count(registry, "ragpulse_records_sampled") == 1
    assert bus.depth() == 1
