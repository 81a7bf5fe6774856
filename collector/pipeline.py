"""The collector pipeline: extract → limit → redact → sample → publish, for one OTLP export request.

Receivers (gRPC, HTTP, the OTel Collector's Kafka topic) decode and hand the request here; this
module decides nothing about transports, only about spans and records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from ragpulse.collector.attributes import attributes
from ragpulse.collector.bus import BusFull, RecordPublisher
from ragpulse.collector.extract.native import extract_native
from ragpulse.collector.extract.triple import ExtractRejection, Triple
from ragpulse.collector.record import Record
from ragpulse.collector.redact import Redactor
from ragpulse.collector.sampling import ConsistentSampler
from ragpulse.collector.telemetry import CollectorMetrics

from ragpulse.config import Config, ExtractConfig

log = logging.getLogger(__name__)


@dataclass
class ExportResult:
    """OTLP partial success: spans refused for a reason the client should hear about."""

    rejected_spans: int = 0
    error_message: str = ""


def limit_triple(triple: Triple, limits: ExtractConfig) -> bool:
    """Cut oversize text in place; contexts keep their order and the last kept one is cut short.
    Returns whether anything was cut."""
    cut = False
    if len(triple.question) > limits.max_question_chars:
        triple.question, cut = triple.question[: limits.max_question_chars], True
    if len(triple.answer) > limits.max_answer_chars:
        triple.answer, cut = triple.answer[: limits.max_answer_chars], True
    budget = limits.max_context_chars
    kept: list[str] = []
    for context in triple.contexts:
        if budget <= 0:
            cut = True
            break
        if len(context) > budget:
            context, cut = context[:budget], True
        kept.append(context)
        budget -= len(context)
    triple.contexts = kept
    return cut


class CollectorPipeline:
    def __init__(self, config: Config, publisher: RecordPublisher, metrics: CollectorMetrics) -> None:
        self._limits = config.extract
        self._sampler = ConsistentSampler(config.sampling)
        self._redact = Redactor(config.redaction) if config.redaction.enabled else None
        self._publisher = publisher
        self._metrics = metrics

    def consume_export_request(self, request: ExportTraceServiceRequest, transport: str) -> ExportResult:
        """Raises BusFull when the bus pushes back: the client should retry the whole request."""
        result = ExportResult()
        errors: list[str] = []
        spans = 0
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            service = str(resource.get("service.name") or "unknown_service")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans += 1
                    try:
                        self._span(service, span)
                    except ExtractRejection as e:
                        result.rejected_spans += 1
                        self._metrics.records_dropped.labels(service=service, reason=e.reason).inc()
                        if len(errors) < 5:
                            errors.append(f"span {span.span_id.hex()}: {e.message}")
        self._metrics.spans.labels(transport=transport).inc(spans)
        if errors:
            more = result.rejected_spans - len(errors)
            result.error_message = "; ".join(errors) + (f"; and {more} more" if more > 0 else "")
        return result

    def _span(self, service: str, span: Span) -> None:
        triple = extract_native(attributes(span.attributes))
        if triple is None:
            self._metrics.spans_without_triple.inc()
            return
        self._metrics.records_received.labels(service=service).inc()
        trace_id, span_id = span.trace_id, span.span_id
        if len(trace_id) != 16 or len(span_id) != 8:
            raise ExtractRejection("invalid_ids", "trace_id must be 16 bytes and span_id 8 bytes")
        sampling = self._sampler.decide(trace_id, service)
        if sampling is None:
            self._metrics.records_dropped.labels(service=service, reason="sampled_out").inc()
            return
        truncated = limit_triple(triple, self._limits)
        if truncated:
            self._metrics.records_truncated.labels(service=service).inc()
        if self._redact is not None:
            triple = self._redact(triple)
        record = Record(
            trace_id=trace_id.hex(),
            span_id=span_id.hex(),
            service=service,
            question=triple.question,
            contexts=triple.contexts,
            answer=triple.answer,
            time_unix_nano=int(span.end_time_unix_nano or span.start_time_unix_nano),
            sampling=sampling,
            route=triple.route,
            model=triple.model,
            truncated=truncated,
            attributes=triple.attributes,
        )
        try:
            self._publisher.publish(trace_id.hex().encode("ascii"), record.to_json())
        except BusFull:
            self._metrics.records_dropped.labels(service=service, reason="bus_full").inc()
            raise
        self._metrics.records_sampled.labels(service=service).inc()
        log.debug("record %s from %s published", record.id, service)
