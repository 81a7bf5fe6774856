"""Spans no enabled convention reads are sorted out from their attribute keys alone (collector/
attributes.py ReadKeys): their values never become Python objects, and the outcome is the one the
full path gives (counted as spans without a RAG triple)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, SpanFlags
from prometheus_client import CollectorRegistry

import ragpulse.collector.attributes as attributes_module
import ragpulse.collector.pipeline as pipeline_module
from ragpulse.collector.attributes import ReadKeys
from ragpulse.collector.extract.config import CONVENTIONS, ExtractConfig
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.redact import RedactionConfig
from ragpulse.collector.sampling import SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record

HTTP = {"http.request.method": "GET", "url.full": "https://example.com/a", "http.response.status_code": 200,
        "server.address": "example.com", "server.port": 443}
DB = {"db.system": "postgresql", "db.query.text": "SELECT 1", "db.namespace": "shop"}


def _span(attrs: dict[str, Any], parent: bytes = b"", events: tuple[str, ...] = (), flags: int = 0) -> Span:
    span = Span(trace_id=os.urandom(16), span_id=os.urandom(8), parent_span_id=parent, name="s", flags=flags)
    for key, value in attrs.items():
        kv = span.attributes.add()
        kv.key = key
        if isinstance(value, int):
            kv.value.int_value = value
        elif isinstance(value, list):
            for v in value:
                kv.value.array_value.values.add().string_value = v
        else:
            kv.value.string_value = value
    for name in events:
        span.events.add().name = name
    return span


@pytest.mark.parametrize(("convention", "attrs", "events"), [
    ("native", {"rag.question": "q"}, ()),
    ("native", {"rag.route": "r"}, ()),
    ("openinference", {"openinference.span.kind": "RETRIEVER"}, ()),
    ("openllmetry", {"traceloop.span.kind": "workflow"}, ()),
    ("openllmetry", {"gen_ai.prompt.0.content": "q"}, ()),
    ("openllmetry", {"gen_ai.output.messages": "[]"}, ()),
    ("openllmetry", {}, ("db.query.result",)),
    ("genai", {"gen_ai.operation.name": "chat"}, ()),
    ("genai", {"gen_ai.input.messages": "[]"}, ()),
    ("genai", {}, ("gen_ai.user.message",)),
    ("genai", {}, ("gen_ai.client.inference.operation.details",)),
])
def test_each_convention_keeps_what_it_reads(convention: str, attrs: dict[str, Any], events: tuple[str, ...]) -> None:
    span = _span({**HTTP, **attrs}, parent=os.urandom(8), events=events)
    assert ReadKeys([convention], keep_roots=False).may_matter(span)
    others = [c for c in CONVENTIONS if c != convention]
    if convention != "openllmetry" or "gen_ai.output.messages" not in attrs:  # genai reads that key too
        assert not ReadKeys(others, keep_roots=False).may_matter(span)


def test_http_and_db_spans_are_sorted_out_but_local_roots_kept_for_assembly() -> None:
    reads = ReadKeys(CONVENTIONS, keep_roots=True)
    assert not reads.may_matter(_span(HTTP, parent=os.urandom(8)))
    assert not reads.may_matter(_span(DB, parent=os.urandom(8), events=("exception",)))
    assert reads.may_matter(_span(HTTP))  # a root: it may complete a buffered trace
    remote = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
    assert reads.may_matter(_span(HTTP, parent=os.urandom(8), flags=remote))
    assert not ReadKeys(["native"], keep_roots=False).may_matter(_span(HTTP))


def test_mixed_trace_values_built_only_for_spans_a_convention_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real = pipeline_module.attributes

    def counting(kvs: Any, keys: Any = None) -> Any:
        built.append(len(kvs))
        return real(kvs, keys)

    monkeypatch.setattr(pipeline_module, "attributes", counting)
    bus, registry = InProcessBus(100), CollectorRegistry()
    pipeline = CollectorPipeline(ExtractConfig(), SamplingConfig(), RedactionConfig(), bus, CollectorMetrics(registry))
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "shop"
    spans = rs.scope_spans.add().spans
    root = _span(HTTP)
    spans.append(root)
    rag = _span({"rag.question": "Who?", "rag.contexts": ["Ada wrote it."], "rag.answer": "Ada."}, parent=root.span_id)
    spans.append(rag)
    for k in range(18):
        spans.append(_span(HTTP if k % 2 else DB, parent=root.span_id))
    for span in spans:
        span.trace_id = root.trace_id

    result = pipeline.consume_export_request(request, "test")

    assert result.rejected_spans == 0
    records = [Record.from_json(d.value) for d in bus.poll(10, 0.05)]
    assert [(r.question, r.answer, r.span_id) for r in records] == [("Who?", "Ada.", rag.span_id.hex())]
    # Built: the resource's attributes, the root (the native convention's keys, then all of them for
    # assembly) and the RAG span; not the 18 others.
    assert len(built) == 4
    assert registry.get_sample_value("ragpulse_spans_without_rag_triple_total") == 19


def test_keys_past_the_remembered_bound_are_still_tested() -> None:
    """The verdicts per key are remembered up to a bound (keys are the app's to choose); a key seen
    after the bound is full is tested afresh, so a RAG span still gets through."""
    reads = ReadKeys(["native"], keep_roots=False)
    parent = os.urandom(8)
    for i in range(attributes_module.SEEN_KEYS + 10):
        assert not reads.may_matter(_span({f"app.user.{i}": "x"}, parent=parent))
    assert reads.may_matter(_span({"app.user.late": "x", "rag.question": "q"}, parent=parent))
    assert not reads.may_matter(_span({"app.user.later": "x"}, parent=parent))
