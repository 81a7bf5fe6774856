"""Consistent probabilistic sampling on the trace id."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otel_app import RagApp
from otlp_requests import add_rag_span, rag_request
from prometheus_client import CollectorRegistry
from ragpulse_process import RagpulseProcess

from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.policies import Subject
from ragpulse.collector.sampling import ConsistentSampler, SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus


def test_rate_within_five_sigma_of_probability() -> None:
    n = 40_000
    for p in (0.01, 0.1, 0.5, 0.9):
        sampler = ConsistentSampler(SamplingConfig(default_probability=p))
        kept = sum(sampler.decide(os.urandom(16), Subject("svc")).sampling is not None for _ in range(n))
        sigma = math.sqrt(n * p * (1 - p))
        assert abs(kept - n * p) <= 5 * sigma, (p, kept)


def test_per_service_probability_and_adjusted_count() -> None:
    sampler = ConsistentSampler(SamplingConfig(default_probability=1.0, per_service={"noisy": 0.25}))
    kept = sampler.decide(b"\xff" * 16, Subject("noisy")).sampling
    assert kept is not None and kept.adjusted_count == 4.0 and kept.rule == "service:noisy"
    assert sampler.decide(b"\x00" * 16, Subject("noisy")).sampling is None
    assert sampler.decide(b"\x00" * 16, Subject("other")).rule == "default"
    never = ConsistentSampler(SamplingConfig(default_probability=0.0))
    assert never.decide(b"\xff" * 16, Subject("x")).sampling is None


def test_lower_probability_keeps_a_subset() -> None:
    """Consistency across rates: what 10 % keeps, 50 % keeps too (nested samples)."""
    low = ConsistentSampler(SamplingConfig(default_probability=0.1))
    high = ConsistentSampler(SamplingConfig(default_probability=0.5))
    ids = [os.urandom(16) for _ in range(5_000)]
    assert all(high.decide(t, Subject("s")).sampling is not None for t in ids
               if low.decide(t, Subject("s")).sampling is not None)


def _request(trace_ids: list[bytes]) -> ExportTraceServiceRequest:
    request, scope = rag_request("twin")
    for trace_id in trace_ids:
        add_rag_span(scope, trace_id, os.urandom(8))
    return request


def test_two_collector_pipelines_keep_the_same_traces() -> None:
    config = Config(sampling=SamplingConfig(default_probability=0.3))
    buses = [InProcessBus(10_000), InProcessBus(10_000)]
    pipelines = [CollectorPipeline(
        config.extract, config.sampling, config.redaction, bus, CollectorMetrics(CollectorRegistry())) for bus in buses]
    trace_ids = [os.urandom(16) for _ in range(2_000)]
    for pipeline in pipelines:
        pipeline.consume_export_request(_request(trace_ids), "test")
    kept = [{d.key for d in bus.poll(10_000, 0.1)} for bus in buses]
    assert kept[0] == kept[1]
    assert 400 < len(kept[0]) < 800


@pytest.mark.slow
def test_two_collector_processes_sample_alike(tmp_path: Path) -> None:
    """Two real `ragpulse up` collectors receive the same traces (one over HTTP, one over gRPC)."""
    settings = {"sampling": {"default_probability": 0.5}}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = RagpulseProcess(tmp_path / "a", settings), RagpulseProcess(tmp_path / "b", settings)
    try:
        apps = [RagApp("twin", "http", first.http), RagApp("twin", "grpc", second.grpc)]
        n = 40
        for i in range(n):
            # One trace seen by both collectors: the second app's span is a child of the first's.
            with apps[0].tracer.start_as_current_span("rag") as span, \
                    apps[1].tracer.start_as_current_span("rag-copy") as copy:
                for target in (span, copy):
                    target.set_attribute("rag.question", f"q{i}?")
                    target.set_attribute("rag.contexts", ["c."])
                    target.set_attribute("rag.answer", "a.")
        for app in apps:
            app.close()
        for proc in (first, second):
            proc.wait_for("ragpulse_records_received_total", n, service="twin")
        kept = [p.value("ragpulse_records_sampled_total", service="twin") for p in (first, second)]
        assert kept[0] == kept[1]
        assert 0 < kept[0] < n
    finally:
        first.stop()
        second.stop()
