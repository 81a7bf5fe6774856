"""The collector pipeline: extract (or assemble a trace) → limit → redact → sample → publish, for OTLP requests.

Receivers (gRPC, HTTP, the OTel Collector's Kafka topic) decode and hand the request here; this
module decides nothing about transports, only about spans and records.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragpulse.collector.assemble import PendingTrace, TraceAssembler
from ragpulse.collector.attributes import attributes
from ragpulse.collector.extract.config import ExtractConfig
from ragpulse.collector.extract.multispan import TraceSpan
from ragpulse.collector.extract.native import extract_native
from ragpulse.collector.extract.triple import ExtractRejection, Triple
from ragpulse.collector.redact import RedactionConfig, Redactor
from ragpulse.collector.sampling import ConsistentSampler, SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.collector.truncate import RecordTooLarge
from ragpulse.core.bus import BusFull, RecordPublisher
from ragpulse.core.wire import Record

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
    def __init__(
        self,
        extract: ExtractConfig,
        sampling: SamplingConfig,
        redaction: RedactionConfig,
        publisher: RecordPublisher,
        metrics: CollectorMetrics,
    ) -> None:
        self._limits = extract
        self._native = "native" in extract.conventions
        self._assembler = TraceAssembler(extract.assembly, extract.conventions, metrics)
        # Assembly deadlines are checked this often: a fraction of the grace period, at most 4 times a second.
        self._tick_interval_s = min(0.25, max(0.01, extract.assembly.grace_s / 4))
        self._sampler = ConsistentSampler(sampling)
        self._redact = Redactor(redaction) if redaction.enabled else None
        self._publisher = publisher
        self._metrics = metrics
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def consume_export_request(self, request: ExportTraceServiceRequest, transport: str) -> ExportResult:
        """Raises BusFull when the bus pushes back: the client should retry the whole request."""
        result = ExportResult()
        errors: list[str] = []
        spans = 0
        now = time.monotonic()
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            service = str(resource.get("service.name") or "unknown_service")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans += 1
                    try:
                        self._span(service, span, now)
                    except ExtractRejection as e:
                        # A rejected span is a record received and dropped by a named rule, so that
                        # received = sampled + dropped holds.
                        result.rejected_spans += 1
                        self._metrics.service(service).received.inc()
                        self._metrics.dropped(service, e.reason).inc()
                        if len(errors) < 5:
                            errors.append(f"span {span.span_id.hex()}: {e.message}")
        self._metrics.spans.labels(transport=transport).inc(spans)
        if errors:
            more = result.rejected_spans - len(errors)
            result.error_message = "; ".join(errors) + (f"; and {more} more" if more > 0 else "")
        return result

    def _span(self, service: str, span: Span, now: float) -> None:
        attrs = attributes(span.attributes)
        triple = extract_native(attrs) if self._native else None
        if triple is not None:
            time_unix_nano = int(span.end_time_unix_nano or span.start_time_unix_nano)
            self._publish(service, triple, span.trace_id, span.span_id, time_unix_nano)
            return
        if self._assembler.enabled and self._buffer(service, span, attrs, now):
            return
        self._metrics.spans_without_triple.inc()

    def _buffer(self, service: str, span: Span, attrs: dict[str, Any], now: float) -> bool:
        """Hand a span of a multi-span convention to the assembler; False when it is none of theirs."""
        view = TraceSpan.from_proto(span, service, attrs)
        if not self._assembler.claims(span.trace_id, view):
            return False
        _check_ids(span.trace_id, span.span_id)
        # Sampling is decided on the trace id, so a trace that will be dropped is never buffered.
        if self._sampler.decide(span.trace_id, service) is None:
            self._metrics.trace_spans.labels(outcome="sampled_out").inc()
            return True
        for trace in self._assembler.add(span.trace_id, view, span.ByteSize(), now):
            self._finish(trace)
        return True

    def _finish(self, trace: PendingTrace) -> None:
        assembled = self._assembler.assemble(trace)
        if assembled is None:
            self._metrics.spans_without_triple.inc()
            return
        record_span = assembled.span
        self._publish(record_span.service, assembled.triple, trace.trace_id, record_span.span_id,
                      record_span.time_unix_nano)

    def _publish(self, service: str, triple: Triple, trace_id: bytes, span_id: bytes, time_unix_nano: int) -> None:
        """One triple, from a single span or an assembled trace: limit → redact → sample → publish."""
        _check_ids(trace_id, span_id)
        counters = self._metrics.service(service)
        counters.received.inc()
        sampling = self._sampler.decide(trace_id, service)
        if sampling is None:
            self._metrics.dropped(service, "sampled_out").inc()
            return
        truncated = limit_triple(triple, self._limits)
        if truncated:
            counters.truncated.inc()
        if self._redact is not None:
            triple = self._redact(triple)
        record = Record(
            trace_id=trace_id.hex(),
            span_id=span_id.hex(),
            service=service,
            question=triple.question,
            contexts=triple.contexts,
            answer=triple.answer,
            time_unix_nano=time_unix_nano,
            sampling=sampling,
            route=triple.route,
            model=triple.model,
            truncated=truncated,
            attributes=triple.attributes,
        )
        try:
            self._publisher.publish(trace_id.hex().encode("ascii"), record.to_json())
        except BusFull:
            self._metrics.dropped(service, "bus_full").inc()
            raise
        except RecordTooLarge as e:
            # The text is cut already; what is left (service, route, model, attributes) is the app's
            # doing. One record cannot go, the rest of the request can: a named drop, not an error.
            self._metrics.dropped(service, "too_large").inc()
            log.warning("record dropped: %s", e)
            return
        counters.sampled.inc()
        log.debug("record %s from %s published", record.id, service)

    def tick(self, now: float) -> None:
        """Assemble the traces whose grace period or timeout has passed (`now` on time.monotonic())."""
        while (trace := self._assembler.pop_due(now)) is not None:
            try:
                self._finish(trace)
            except BusFull:
                # Counted as dropped; the traces still due wait for the next tick instead of each
                # waiting out the bus's put timeout now.
                return

    def start(self) -> None:
        """Run tick() in the background; the app calls stop() on shutdown."""
        if self._assembler.enabled and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick_loop, name="ragpulse-assembly", daemon=True)
            self._ticker.start()

    def _tick_loop(self) -> None:
        while not self._stop.wait(self._tick_interval_s):
            try:
                self.tick(time.monotonic())
            except Exception:
                # A malformed trace must not stop assembly for every later trace.
                log.exception("trace assembly failed")

    def stop(self) -> None:
        """Stop the timer and assemble every trace still buffered (call after the receivers stop)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        while (trace := self._assembler.pop_oldest()) is not None:
            try:
                self._finish(trace)
            except BusFull:
                continue  # counted as dropped; the rest may still fit while the scorer drains


def _check_ids(trace_id: bytes, span_id: bytes) -> None:
    if len(trace_id) != 16 or len(span_id) != 8:
        raise ExtractRejection("invalid_ids", "trace_id must be 16 bytes and span_id 8 bytes")
