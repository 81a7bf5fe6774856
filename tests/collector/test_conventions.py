"""The multi-span conventions (OpenInference, OpenLLMetry, GenAI) and trace assembly.

Two kinds of input: OTLP requests built span by span in the shapes the instrumentors' sources write
(for what cannot run here: traceloop-sdk's decorators, vector-DB instrumentors), and the real
instrumentors around real LangChain code (fake LLMs, an in-memory vector store) exporting through
the real OTel SDK OTLP exporter over loopback to the collector.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span, SpanFlags
from otel_app import RagApp
from prometheus_client import CollectorRegistry
from ragpulse_process import RagpulseProcess

from ragpulse.collector.extract.config import AssemblyConfig, ExtractConfig
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.receiver_http import OtlpHttpReceiver
from ragpulse.collector.sampling import SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config, ConfigError, load_config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record

QUESTION = "When was the Eiffel Tower completed?"
DOCS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
    "The tower is 330 metres tall.",
    "Gustave Eiffel's company designed and built the tower.",
]
ANSWER = "It was completed in 1889."
GRACE_S = 2.0
SUPPORT = Path(__file__).resolve().parents[1] / "support"


# --- OTLP requests built by hand -------------------------------------------------------------


def _set(value: AnyValue, python: Any) -> None:
    if isinstance(python, bool):
        value.bool_value = python
    elif isinstance(python, int):
        value.int_value = python
    elif isinstance(python, float):
        value.double_value = python
    elif isinstance(python, str):
        value.string_value = python
    elif isinstance(python, dict):
        for k, v in python.items():
            kv = value.kvlist_value.values.add()
            kv.key = k
            _set(kv.value, v)
    else:
        for item in python:
            _set(value.array_value.values.add(), item)


class Trace:
    """Spans of one trace, added in export order, each with its own start/end (ns)."""

    def __init__(self, service: str = "shop") -> None:
        self.trace_id = os.urandom(16)
        self.service = service
        self.clock = 1_700_000_000_000_000_000

    def span(self, scope: ScopeSpans, name: str, attrs: dict[str, Any], parent: Span | None = None,
             events: list[tuple[str, dict[str, Any]]] = (), span_id: bytes | None = None) -> Span:  # type: ignore[assignment]
        span = scope.spans.add()
        span.trace_id, span.span_id, span.name = self.trace_id, span_id or os.urandom(8), name
        if parent is not None:
            span.parent_span_id = parent.span_id
        self.clock += 1_000_000
        span.start_time_unix_nano, span.end_time_unix_nano = self.clock, self.clock + 500_000
        for key, value in attrs.items():
            kv = span.attributes.add()
            kv.key = key
            _set(kv.value, value)
        for event_name, event_attrs in events:
            event = span.events.add()
            event.name = event_name
            for key, value in event_attrs.items():
                kv = event.attributes.add()
                kv.key = key
                _set(kv.value, value)
        return span

    def request(self) -> tuple[ExportTraceServiceRequest, ScopeSpans]:
        request = ExportTraceServiceRequest()
        resource = request.resource_spans.add()
        kv = resource.resource.attributes.add()
        kv.key, kv.value.string_value = "service.name", self.service
        return request, resource.scope_spans.add()


@dataclass
class Collector:
    pipeline: CollectorPipeline
    bus: InProcessBus
    registry: CollectorRegistry

    def send(self, request: ExportTraceServiceRequest) -> None:
        self.pipeline.consume_export_request(request, "test")

    def records(self) -> list[Record]:
        return [Record.from_json(d.value) for d in self.bus.poll(100, 0.05)]

    def value(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


def _collector(**extract: Any) -> Collector:
    assembly = AssemblyConfig(grace_s=GRACE_S, timeout_s=30.0, **extract.pop("assembly", {}))
    sampling = SamplingConfig(**extract.pop("sampling", {}))
    config = Config(extract=ExtractConfig(assembly=assembly, **extract), sampling=sampling)
    bus, registry = InProcessBus(1_000), CollectorRegistry()
    return Collector(CollectorPipeline(
        config.extract, config.sampling, config.redaction, bus, CollectorMetrics(registry)), bus, registry)


def _later(seconds: float) -> float:
    return time.monotonic() + seconds


def _llamaindex_rag(trace: Trace, scope: ScopeSpans) -> Span:
    """OpenInference spans of a LlamaIndex query engine with a reranker, in export order (children
    end first); returns the root."""
    root_id = os.urandom(8)
    root = Span(span_id=root_id)
    retrieve = trace.span(scope, "BaseRetriever.retrieve", {
        "openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
        **{f"retrieval.documents.{i}.document.content": d for i, d in enumerate(DOCS)},
        **{f"retrieval.documents.{i}.document.score": 0.9 - i / 10 for i in range(len(DOCS))},
    }, parent=root)
    trace.span(scope, "SentenceTransformerRerank.postprocess_nodes", {
        "openinference.span.kind": "RERANKER", "reranker.query": QUESTION, "reranker.top_k": 2,
        "reranker.input_documents.0.document.content": DOCS[0],
        # Indices past 9 must sort numerically, not as strings.
        "reranker.output_documents.10.document.content": DOCS[2],
        "reranker.output_documents.2.document.content": DOCS[0],
    }, parent=root)
    trace.span(scope, "OpenAI.chat", {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Context: ...",
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": ANSWER,
    }, parent=root)
    assert retrieve.parent_span_id == root_id
    return trace.span(scope, "RetrieverQueryEngine.query", {
        "openinference.span.kind": "CHAIN", "input.value": QUESTION, "output.value": ANSWER,
        "rag.route": "/faq",
    }, span_id=root_id)


def test_openinference_trace_is_assembled_after_root_and_grace() -> None:
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    root = _llamaindex_rag(trace, scope)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S / 2))
    assert c.records() == []
    c.pipeline.tick(_later(GRACE_S + 0.1))
    (record,) = c.records()
    assert (record.question, record.answer) == (QUESTION, ANSWER)
    assert record.contexts == [DOCS[0], DOCS[2]]  # the reranker's output, in its order
    assert record.span_id == root.span_id.hex() and record.trace_id == trace.trace_id.hex()
    assert (record.service, record.route, record.model) == ("shop", "/faq", "gpt-4o-mini")
    assert record.time_unix_nano == root.end_time_unix_nano
    assert c.value("ragpulse_traces_assembled_total", trigger="root") == 1
    assert c.value("ragpulse_trace_spans_total", outcome="buffered") == 4
    assert c.value("ragpulse_spans_without_rag_triple_total") == 0
    assert c.value("ragpulse_assembly_pending_traces") == 0


def test_openinference_answer_from_last_llm_when_root_output_is_not_text() -> None:
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    root = Span(span_id=os.urandom(8))
    trace.span(scope, "VectorStoreRetriever", {
        "openinference.span.kind": "RETRIEVER", "input.value": "rewritten query",
        "retrieval.documents.0.document.content": DOCS[0],
        "retrieval.documents.1.document.content": DOCS[0],  # duplicates collapse
    }, parent=root)
    trace.span(scope, "ChatOpenAI", {"openinference.span.kind": "LLM",
                                     "llm.output_messages.0.message.content": "draft"}, parent=root)
    last_llm = trace.span(scope, "ChatOpenAI", {
        "openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": ANSWER,
    }, parent=root)
    trace.span(scope, "RunnableSequence", {
        "openinference.span.kind": "CHAIN", "input.mime_type": "application/json",
        "input.value": json.dumps({"question": QUESTION, "chat_history": []}),
        "output.value": json.dumps({"generations": []}), "output.mime_type": "application/json",
    }, span_id=root.span_id)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, [DOCS[0]], ANSWER)
    assert record.span_id == last_llm.span_id.hex()


def test_openllmetry_decorated_workflow_with_chroma_results() -> None:
    """traceloop-sdk @workflow / @task spans (decorators/base.py: {"args", "kwargs"} in, the return
    value out), a Chroma query span with one db.query.result event per hit (chromadb/wrapper.py)
    and an OpenAI span in the indexed gen_ai.prompt / gen_ai.completion shape."""
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    workflow = Span(span_id=os.urandom(8))
    trace.span(scope, "chroma.query", {"db.system": "chroma", "db.chroma.query.n_results": 2}, parent=workflow,
               events=[("db.query.embeddings", {"db.query.embeddings.vector": "[0.1, 0.2]"})]
               + [("db.query.result", {"db.query.result.id": f"d{i}", "db.query.result.distance": 0.1 * i,
                                       "db.query.result.document": d}) for i, d in enumerate(DOCS[:2])])
    trace.span(scope, "openai.chat", {
        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Answer from the context.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": f"{DOCS[0]}\n{QUESTION}",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": ANSWER,
    }, parent=workflow)
    trace.span(scope, "answer.workflow", {
        "traceloop.span.kind": "workflow", "traceloop.entity.name": "answer", "traceloop.workflow.name": "answer",
        "traceloop.entity.input": json.dumps({"args": [QUESTION], "kwargs": {"k": 2}}),
        "traceloop.entity.output": json.dumps(ANSWER),
    }, span_id=workflow.span_id)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, DOCS[:2], ANSWER)
    assert record.span_id == workflow.span_id.hex() and record.model == "gpt-4o-mini-2024"


def test_genai_retrieval_and_chat_spans() -> None:
    """GenAI semconv: documents in structured form (kvlist array) with content where present."""
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    agent = Span(span_id=os.urandom(8))
    trace.span(scope, "retrieval products", {
        "gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "products",
        "gen_ai.retrieval.query.text": QUESTION,
        "gen_ai.retrieval.documents": [{"id": "a", "score": 0.9, "content": DOCS[1]}, {"id": "b", "score": 0.5}],
    }, parent=agent)
    chat = trace.span(scope, "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "ctx + q"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                               "parts": [{"type": "text", "content": ANSWER}]}]),
    }, parent=agent)
    c.send(request)
    # No root ever arrives (the agent span is still open): the timeout assembles the trace.
    c.pipeline.tick(_later(GRACE_S + 1))
    assert c.records() == []
    c.pipeline.tick(_later(30.1))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, [DOCS[1]], ANSWER)
    assert record.span_id == chat.span_id.hex() and record.model == "gpt-4o"
    assert c.value("ragpulse_traces_assembled_total", trigger="timeout") == 1


def _genai_run(trace: Trace, scope: ScopeSpans, parent: Span, question: str, docs: list[str], answer: str,
               rewrite: bool = False) -> Span:
    """A GenAI agent step: optionally a query-rewriting chat, then a retrieval and the answering chat
    (returned) under one invoke_agent span, which is exported last."""
    step = Span(span_id=os.urandom(8))

    def chat(text: str) -> Span:
        return trace.span(scope, "chat gpt-4o", {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]),
        }, parent=step)

    if rewrite:
        chat(f"search: {question}")
    trace.span(scope, "retrieval faq", {
        "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": question,
        "gen_ai.retrieval.documents": json.dumps([{"id": str(i), "score": 0.5, "content": d}
                                                  for i, d in enumerate(docs)]),
    }, parent=step)
    answered = chat(answer)
    trace.span(scope, "invoke_agent step", {"gen_ai.operation.name": "invoke_agent"}, parent=parent,
               span_id=step.span_id)
    return answered


def test_one_record_per_rag_run_of_a_trace() -> None:
    """An agent that retrieved and answered twice in one trace: two records, each with its own span id,
    question, contexts and answer. The query rewrite before the second retrieval is part of that
    run, not a third one."""
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    agent = Span(span_id=os.urandom(8))
    other = ("Who designed the Colosseum?", ["It was begun under Vespasian."], "Vespasian's architects.")
    first = _genai_run(trace, scope, agent, QUESTION, DOCS[:2], ANSWER)
    second = _genai_run(trace, scope, agent, *other, rewrite=True)
    trace.span(scope, "invoke_agent planner", {"gen_ai.operation.name": "invoke_agent"}, span_id=agent.span_id)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S))
    records = c.records()
    assert [(r.span_id, r.question, r.contexts, r.answer) for r in records] == [
        (first.span_id.hex(), QUESTION, DOCS[:2], ANSWER), (second.span_id.hex(), *other)]
    assert c.value("ragpulse_records_received_total", service="shop") == 2


def test_an_answer_given_after_the_runs_is_a_record_of_its_own() -> None:
    """A sub-question agent: two RAG runs, then its own answer to the user from what they found. The
    runs get their records and the final answer one more, with every run's contexts and the user's
    question (not the first sub-query)."""
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    agent = Span(span_id=os.urandom(8))
    asked = "When was the Eiffel Tower completed, and who designed the Colosseum?"
    other = ("Who designed the Colosseum?", ["It was begun under Vespasian."], "Vespasian's architects.")
    _genai_run(trace, scope, agent, QUESTION, DOCS[:1], ANSWER)
    _genai_run(trace, scope, agent, *other)
    final = trace.span(scope, "chat gpt-4o", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": asked}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "1889; Vespasian's architects."}]}]),
    }, parent=agent)
    trace.span(scope, "invoke_agent planner", {"gen_ai.operation.name": "invoke_agent"}, span_id=agent.span_id)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S))
    records = c.records()
    assert [r.question for r in records] == [QUESTION, other[0], asked]
    assert records[2].contexts == [DOCS[0], *other[1]] and records[2].span_id == final.span_id.hex()


def test_genai_content_as_span_events() -> None:
    """The inference span's messages in its gen_ai.client.inference.operation.details span event."""
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    agent = Span(span_id=os.urandom(8))
    trace.span(scope, "retrieval faq", {"gen_ai.operation.name": "retrieval",
                                        "gen_ai.retrieval.documents": [{"id": "a", "score": 0.9, "content": DOCS[0]}]},
               parent=agent)
    chat = trace.span(scope, "chat gpt-4o", {"gen_ai.operation.name": "chat"}, parent=agent, events=[
        ("gen_ai.client.inference.operation.details", {
            "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}],
            "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]})])
    trace.span(scope, "invoke_agent faq", {"gen_ai.operation.name": "invoke_agent"}, span_id=agent.span_id)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, [DOCS[0]], ANSWER)
    assert record.span_id == chat.span_id.hex()


def test_spans_arrive_in_several_requests_and_a_remote_parent_marks_the_root() -> None:
    """The app's top span has a parent in another service (W3C traceparent): for this collector it is
    the root. A straggler after assembly is counted as late, not turned into a second record."""
    c = _collector()
    trace = Trace()
    top = Span(span_id=os.urandom(8))
    request, scope = trace.request()
    trace.span(scope, "retrieve", {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
                                   "retrieval.documents.0.document.content": DOCS[0]}, parent=top)
    c.send(request)
    c.pipeline.tick(_later(GRACE_S + 1))
    assert c.records() == [] and c.value("ragpulse_assembly_pending_traces") == 1
    request, scope = trace.request()
    root = trace.span(scope, "query", {"openinference.span.kind": "CHAIN", "input.value": QUESTION,
                                       "output.value": ANSWER}, parent=Span(span_id=os.urandom(8)), span_id=top.span_id)
    root.flags = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
    c.send(request)
    c.pipeline.tick(_later(GRACE_S + 0.1))
    (record,) = c.records()
    assert record.span_id == top.span_id.hex()
    request, scope = trace.request()
    trace.span(scope, "late", {"openinference.span.kind": "LLM"}, parent=top)
    c.send(request)
    c.pipeline.tick(_later(60))
    assert c.records() == [] and c.value("ragpulse_trace_spans_total", outcome="late") == 1


def test_trace_without_rag_triple_is_counted_not_an_error() -> None:
    c = _collector()
    trace = Trace()
    request, scope = trace.request()
    root = Span(span_id=os.urandom(8))
    trace.span(scope, "ChatOpenAI", {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "hi"},
               parent=root)
    trace.span(scope, "chat", {"openinference.span.kind": "CHAIN", "input.value": "hello", "output.value": "hi"},
               span_id=root.span_id)
    result = c.pipeline.consume_export_request(request, "test")
    assert result.rejected_spans == 0
    c.pipeline.tick(_later(GRACE_S))
    assert c.records() == []
    assert c.value("ragpulse_spans_without_rag_triple_total") == 1
    assert c.value("ragpulse_records_received_total", service="shop") == 0


def test_full_buffer_assembles_the_oldest_trace_early() -> None:
    c = _collector(assembly={"max_traces": 2})
    traces = [Trace() for _ in range(3)]
    for trace in traces:
        request, scope = trace.request()
        # Roots not yet exported: only the buffer bound can finish the first trace now.
        parent = Span(span_id=os.urandom(8))
        trace.span(scope, "retrieve", {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
                                       "retrieval.documents.0.document.content": DOCS[0]}, parent=parent)
        trace.span(scope, "llm", {"openinference.span.kind": "LLM",
                                  "llm.output_messages.0.message.content": ANSWER}, parent=parent)
        c.send(request)
    (record,) = c.records()
    assert record.trace_id == traces[0].trace_id.hex()
    assert c.value("ragpulse_traces_assembled_total", trigger="buffer_full") == 1
    assert c.value("ragpulse_assembly_pending_traces") == 2


def test_byte_and_span_bounds() -> None:
    c = _collector(assembly={"max_bytes": 2_000, "max_spans_per_trace": 3})
    trace = Trace()
    request, scope = trace.request()
    parent = Span(span_id=os.urandom(8))
    for _ in range(5):
        trace.span(scope, "llm", {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "x"},
                   parent=parent)
    c.send(request)
    assert c.value("ragpulse_trace_spans_total", outcome="over_limit") == 2
    assert c.value("ragpulse_assembly_pending_traces") == 1
    big = Trace()
    request, scope = big.request()
    big.span(scope, "retrieve", {"openinference.span.kind": "RETRIEVER", "input.value": "q" * 3_000})
    c.send(request)
    # Over the byte budget: every trace is assembled early (no triple in either) and the buffer is empty.
    assert c.value("ragpulse_traces_assembled_total", trigger="buffer_full") == 2
    assert c.value("ragpulse_assembly_pending_bytes") == 0
    assert c.value("ragpulse_spans_without_rag_triple_total") == 2


def test_sampled_out_traces_are_never_buffered() -> None:
    c = _collector(sampling={"default_probability": 0.5})
    kept = dropped = 0
    for _ in range(40):
        trace = Trace()
        request, scope = trace.request()
        _llamaindex_rag(trace, scope)
        c.send(request)
        if int.from_bytes(trace.trace_id[-7:], "big") >= 2**55:
            kept += 1
        else:
            dropped += 1
    assert kept and dropped
    assert c.value("ragpulse_assembly_pending_traces") == kept
    assert c.value("ragpulse_trace_spans_total", outcome="sampled_out") == 4 * dropped
    c.pipeline.tick(_later(GRACE_S))
    assert len(c.records()) == kept


def test_conventions_can_be_switched_off() -> None:
    c = _collector(conventions=["native", "genai"])
    trace = Trace()
    request, scope = trace.request()
    _llamaindex_rag(trace, scope)
    c.send(request)
    c.pipeline.tick(_later(60))
    assert c.records() == [] and c.value("ragpulse_spans_without_rag_triple_total") == 4


def test_stop_assembles_what_is_still_buffered() -> None:
    c = _collector()
    c.pipeline.start()
    trace = Trace()
    request, scope = trace.request()
    parent = Span(span_id=os.urandom(8))
    trace.span(scope, "retrieve", {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION,
                                   "retrieval.documents.0.document.content": DOCS[0]}, parent=parent)
    trace.span(scope, "llm", {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": ANSWER},
               parent=parent)
    c.send(request)
    c.pipeline.stop()
    (record,) = c.records()
    assert record.answer == ANSWER
    assert c.value("ragpulse_traces_assembled_total", trigger="shutdown") == 1


def test_assembly_config_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    for text, message in (
        ("extract: {conventions: [native, zipkin]}", "unknown convention 'zipkin'"),
        ("extract: {assembly: {grace_s: 5, timeout_s: 1}}", "extract.assembly.timeout_s"),
        ("extract: {assembly: {max_traces: 0}}", "extract.assembly.max_traces must be at least 1"),
    ):
        path.write_text(text)
        with pytest.raises(ConfigError, match=message):
            load_config(path, environ={})
    config = load_config(None, environ={"RAGPULSE_EXTRACT__CONVENTIONS": "[openinference]",
                                        "RAGPULSE_EXTRACT__ASSEMBLY__GRACE_S": "0.5"})
    assert config.extract.conventions == ["openinference"] and config.extract.assembly.grace_s == 0.5
    assert load_config(None, environ={}).extract.conventions == ["native", "openinference", "openllmetry", "genai"]


# --- real instrumentors, real OTel SDK exporter, real sockets ------------------------------------


@pytest.fixture
def collector_over_http() -> Iterator[tuple[Collector, str]]:
    c = _collector()
    receiver = OtlpHttpReceiver("127.0.0.1", 0, c.pipeline, CollectorMetrics(CollectorRegistry()), ReceiverConfig())
    receiver.start()
    yield c, f"127.0.0.1:{receiver.port}"
    receiver.stop()


def _run_langchain_app(convention: str, endpoint: str, chat: bool, service: str = "lc-shop") -> None:
    spec = {"service": service, "question": QUESTION, "answer": ANSWER, "docs": DOCS}
    subprocess.run([sys.executable, str(SUPPORT / "langchain_app.py"), convention, endpoint,
                    "chat" if chat else "llm", json.dumps(spec)], check=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("chat", [False, True], ids=["llm", "chat"])
def test_openinference_langchain_instrumentor(collector_over_http: tuple[Collector, str], chat: bool) -> None:
    c, endpoint = collector_over_http
    _run_langchain_app("openinference", endpoint, chat)
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.answer, record.service) == (QUESTION, ANSWER, "lc-shop")
    assert sorted(record.contexts) == sorted(DOCS)
    assert c.value("ragpulse_traces_assembled_total", trigger="root") == 1


@pytest.mark.slow
@pytest.mark.parametrize("chat", [False, True], ids=["llm", "chat"])
def test_openllmetry_langchain_instrumentor(collector_over_http: tuple[Collector, str], chat: bool) -> None:
    c, endpoint = collector_over_http
    _run_langchain_app("openllmetry", endpoint, chat)
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.answer, record.service) == (QUESTION, ANSWER, "lc-shop")
    assert sorted(record.contexts) == sorted(DOCS)


# Two questions an agent answers in one trace, each from its own store.
AGENT_RUNS = [
    {"question": QUESTION, "answer": ANSWER, "docs": DOCS},
    {"question": "Who designed the Colosseum?", "answer": "Architects working for Vespasian.",
     "docs": ["The Colosseum was begun under Vespasian around 72 AD.", "It held about 50,000 spectators."]},
]


@pytest.mark.slow
@pytest.mark.parametrize("convention", ["openinference", "openllmetry"])
def test_agent_with_two_rag_chains_in_one_trace_gives_two_records(
    collector_over_http: tuple[Collector, str], convention: str
) -> None:
    """An agent step runs two retrieval chains in one trace: one record per answer, each named after
    its chain's root span, with that chain's question, contexts and answer."""
    c, endpoint = collector_over_http
    spec = {"service": "agent-shop", "runs": AGENT_RUNS}
    done = subprocess.run([sys.executable, str(SUPPORT / "langchain_app.py"), convention, endpoint, "agent",
                           json.dumps(spec)], check=True, timeout=120, capture_output=True, text=True)
    chain_roots = json.loads(done.stdout.strip().splitlines()[-1])
    c.pipeline.tick(_later(GRACE_S))
    records = sorted(c.records(), key=lambda r: r.time_unix_nano)
    assert [(r.question, r.answer, sorted(r.contexts)) for r in records] == [
        (run["question"], run["answer"], sorted(run["docs"])) for run in AGENT_RUNS]
    assert [r.span_id for r in records] == chain_roots
    assert len({r.trace_id for r in records}) == 1 and {r.service for r in records} == {"agent-shop"}
    assert c.value("ragpulse_traces_assembled_total", trigger="root") == 1


@pytest.mark.slow
def test_agent_with_two_llamaindex_query_engines_gives_two_records(collector_over_http: tuple[Collector, str]) -> None:
    """Two LlamaIndex query engines queried in turn under one plain OTel parent span: one record per
    query, named after its engine's query span."""
    c, endpoint = collector_over_http
    spec = {"service": "index-agent", "runs": AGENT_RUNS}
    done = subprocess.run([sys.executable, str(SUPPORT / "llamaindex_app.py"), endpoint, json.dumps(spec)],
                          check=True, timeout=180, capture_output=True, text=True)
    query_spans = json.loads(done.stdout.strip().splitlines()[-1])
    c.pipeline.tick(_later(GRACE_S))
    records = sorted(c.records(), key=lambda r: r.time_unix_nano)
    assert [(r.question, r.answer, sorted(r.contexts)) for r in records] == [
        (run["question"], run["answer"], sorted(run["docs"])) for run in AGENT_RUNS]
    assert [r.span_id for r in records] == query_spans


@pytest.mark.slow
def test_openinference_index_query_engine_with_reranker(collector_over_http: tuple[Collector, str]) -> None:
    """LlamaIndex: contexts come from the RERANKER span's output documents, not the retriever's."""
    c, endpoint = collector_over_http
    spec = {"service": "index-shop", "question": QUESTION, "answer": ANSWER, "docs": DOCS}
    done = subprocess.run([sys.executable, str(SUPPORT / "llamaindex_app.py"), endpoint,
                           json.dumps(spec)], check=True, timeout=180, capture_output=True, text=True)
    reranked = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(reranked) == 2
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, reranked, ANSWER)
    assert record.service == "index-shop"


def test_genai_util_handler_spans(collector_over_http: tuple[Collector, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """opentelemetry-util-genai, the GenAI conventions' reference helper for instrumentations: a
    workflow around a retrieval and an inference invocation, content captured on spans."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, TextPart

    c, endpoint = collector_over_http
    app = RagApp("genai-shop", "http", endpoint)
    handler = TelemetryHandler(tracer_provider=app.provider)
    with handler.workflow("answer"):
        with handler.retrieval(data_source_id="faq") as retrieval:
            retrieval.query_text = QUESTION
            retrieval.documents = [{"id": str(i), "score": 1.0 - i / 10, "content": d} for i, d in enumerate(DOCS)]
        with handler.inference("openai", request_model="gpt-4o-mini") as inference:
            inference.input_messages = [InputMessage(role="user", parts=[TextPart(content=f"{DOCS}\n{QUESTION}")])]
            inference.output_messages = [OutputMessage(role="assistant", parts=[TextPart(content=ANSWER)],
                                                       finish_reason="stop")]
    app.close()
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, DOCS, ANSWER)
    assert record.model == "gpt-4o-mini"


class LogApp:
    """The real OTel SDK logs pipeline (LoggerProvider and the OTLP log exporter) of an app."""

    def __init__(self, service: str, transport: str, endpoint: str) -> None:
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        exporter = (GrpcLogExporter(endpoint=f"http://{endpoint}", insecure=True) if transport == "grpc"
                    else HttpLogExporter(endpoint=f"http://{endpoint}/v1/logs"))
        self.provider = LoggerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))


def test_genai_content_as_log_events_from_the_util_handler(
    collector_over_http: tuple[Collector, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """opentelemetry-util-genai with content in events only: the inference span carries no messages,
    the gen_ai.client.inference.operation.details log record does, over OTLP /v1/logs. The retrieval
    (another instrumentation, content on its span) gives the contexts."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, TextPart

    c, endpoint = collector_over_http
    app, logs = RagApp("genai-events", "http", endpoint), LogApp("genai-events", "http", endpoint)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    retriever = TelemetryHandler(tracer_provider=app.provider)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    llm = TelemetryHandler(tracer_provider=app.provider, logger_provider=logs.provider)
    with retriever.workflow("answer"):
        with retriever.retrieval(data_source_id="faq") as retrieval:
            retrieval.query_text = QUESTION
            retrieval.documents = [{"id": str(i), "score": 1.0 - i / 10, "content": d} for i, d in enumerate(DOCS)]
        with llm.inference("openai", request_model="gpt-4o-mini") as inference:
            inference.input_messages = [InputMessage(role="user", parts=[TextPart(content=f"{DOCS}\n{QUESTION}")])]
            inference.output_messages = [OutputMessage(role="assistant", parts=[TextPart(content=ANSWER)],
                                                       finish_reason="stop")]
    logs.provider.shutdown()
    app.close()
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer) == (QUESTION, DOCS, ANSWER)
    assert record.model == "gpt-4o-mini"
    assert c.value("ragpulse_traces_assembled_total", trigger="root") == 1


def test_genai_per_message_log_events_over_grpc() -> None:
    """The per-message events of the conventions up to 1.36 (gen_ai.user.message, gen_ai.choice with
    a body), emitted with the real SDK logs API and exported over OTLP/gRPC before the spans: they
    wait in the buffer for their span."""
    from opentelemetry._logs import LogRecord

    from ragpulse.collector.receiver_grpc import OtlpGrpcReceiver

    c = _collector()
    receiver = OtlpGrpcReceiver("127.0.0.1", 0, c.pipeline, CollectorMetrics(CollectorRegistry()), ReceiverConfig())
    receiver.start()
    try:
        app, logs = RagApp("genai-v1", "grpc", receiver.endpoint), LogApp("genai-v1", "grpc", receiver.endpoint)
        logger = logs.provider.get_logger("tests.genai")
        # Each span is exported when it ends: the chat span's events are on the wire before it.
        with app.tracer.start_as_current_span("invoke_agent faq") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            with app.tracer.start_as_current_span("retrieval faq") as retrieval:
                retrieval.set_attribute("gen_ai.operation.name", "retrieval")
                retrieval.set_attribute("gen_ai.retrieval.query.text", QUESTION)
                retrieval.set_attribute("gen_ai.retrieval.documents",
                                        json.dumps([{"id": "a", "score": 0.9, "content": DOCS[0]}]))
            with app.tracer.start_as_current_span("chat gpt-4o") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", "gpt-4o")
                logger.emit(LogRecord(event_name="gen_ai.system.message", body={"content": "Answer briefly."}))
                logger.emit(LogRecord(event_name="gen_ai.user.message", body={"content": f"{DOCS[0]} {QUESTION}"}))
                logger.emit(LogRecord(event_name="gen_ai.choice", body={
                    "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}}))
        logs.provider.shutdown()
        app.close()
        c.pipeline.tick(_later(GRACE_S))
        (record,) = c.records()
        assert (record.question, record.contexts, record.answer) == (QUESTION, [DOCS[0]], ANSWER)
        assert record.span_id == format(chat.get_span_context().span_id, "016x")
    finally:
        receiver.stop()


@pytest.mark.slow
def test_openinference_traces_scored_by_ragpulse_up(tmp_path: Path) -> None:
    """The whole way: instrumented LangChain → OTLP HTTP → `ragpulse up` assembles, scores, exports."""
    proc = RagpulseProcess(tmp_path, {"extract": {"assembly": {"grace_s": 0.2}}})
    try:
        _run_langchain_app("openinference", proc.http, chat=False)
        proc.wait_for("ragpulse_records_scored_total", 1, service="lc-shop")
        assert proc.value("ragpulse_faithfulness_score_count", service="lc-shop") == 1
        assert proc.value("ragpulse_traces_assembled_total", trigger="root") == 1
        assert proc.value("ragpulse_metric_failures_total") == 0
    finally:
        assert proc.stop() == 0


@pytest.mark.slow
def test_ragpulse_up_shutdown_assembles_buffered_traces(tmp_path: Path) -> None:
    """SIGTERM before the grace period ends: the buffered trace still becomes a published record."""
    settings = {"extract": {"assembly": {"grace_s": 60, "timeout_s": 120}}, "log_level": "debug"}
    proc = RagpulseProcess(tmp_path, settings)
    try:
        _run_langchain_app("openinference", proc.http, chat=False, service="late-shop")
        proc.wait_for("ragpulse_assembly_pending_traces", 1)
        assert proc.value("ragpulse_records_received_total") == 0
    finally:
        assert proc.stop() == 0
    log = proc.log()
    assert "from late-shop published" in log and "'drained': True" in log
    assert QUESTION not in log and ANSWER not in log
