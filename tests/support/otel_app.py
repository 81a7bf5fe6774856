"""An app instrumented with the real OpenTelemetry SDK and OTLP exporters, as users write it."""

from __future__ import annotations

from typing import Literal

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class RagApp:
    def __init__(self, service: str, transport: Literal["grpc", "http"], endpoint: str) -> None:
        if transport == "grpc":
            exporter = GrpcExporter(endpoint=f"http://{endpoint}", insecure=True)
        else:
            exporter = HttpExporter(endpoint=f"http://{endpoint}/v1/traces")
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        # Simple (synchronous) export: each answer is on the wire when answer() returns.
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("tests.rag_app")

    def answer(self, question: str, contexts: list[str], answer: str, **extra: str) -> str:
        # A root span, as a request handler's would be: a span some earlier test left current in
        # this thread must not make every answer one trace (kept or dropped together by sampling).
        with self.tracer.start_as_current_span("rag", context=Context()) as span:
            span.set_attribute("rag.question", question)
            span.set_attribute("rag.contexts", contexts)
            span.set_attribute("rag.answer", answer)
            for key, value in extra.items():
                span.set_attribute(key, value)
            return format(span.get_span_context().trace_id, "032x")

    def close(self) -> None:
        self.provider.shutdown()
