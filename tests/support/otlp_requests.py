"""OTLP export requests built by hand, for tests that talk protobuf to the collector directly."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans


def rag_request(service: str = "svc") -> tuple[ExportTraceServiceRequest, ScopeSpans]:
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    kv = resource.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", service
    return request, resource.scope_spans.add()


def add_rag_span(
    scope: ScopeSpans, trace_id: bytes, span_id: bytes, question: str = "q?",
    contexts: tuple[str, ...] = ("c.",), answer: str = "a.",
) -> None:
    span = scope.spans.add()
    span.trace_id, span.span_id, span.name = trace_id, span_id, "rag"
    for key, value in (("rag.question", question), ("rag.answer", answer)):
        kv = span.attributes.add()
        kv.key, kv.value.string_value = key, value
    kv = span.attributes.add()
    kv.key = "rag.contexts"
    for context in contexts:
        kv.value.array_value.values.add().string_value = context
