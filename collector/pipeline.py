"""The collector pipeline: extract (or assemble a trace) → limit → redact → sample → publish, for OTLP requests.

Receivers (gRPC, HTTP, the OTel Collector's Kafka topic) decode and hand the request here; this
module decides nothing about transports, only about spans and records.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ragpulse.collector.assemble import PendingTrace, TraceAssembler
from ragpulse.collector.attributes import ReadKeys, attributes
from ragpulse.collector.extract.config import ExtractConfig
from ragpulse.collector.extract.multispan import TraceSpan
from ragpulse.collector.extract.native import NATIVE_READS, extract_native
from ragpulse.collector.extract.triple import ExtractRejection, Triple
from ragpulse.collector.otlp_logs import genai_log_events
from ragpulse.collector.policies import Subject
from ragpulse.collector.redact import RedactionConfig, Redactor
from ragpulse.collector.sampling import ConsistentSampler, SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics, ServiceCounters, Tally
from ragpulse.core.bus import BusFull, RecordPublisher
from ragpulse.core.wire import record_dict, wire_json

log = logging.getLogger(__name__)

_ERROR = Status.STATUS_CODE_ERROR
# What the pipeline reads of a resource's attributes.
_RESOURCE_READS = frozenset({"service.name"})


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
    if sum(map(len, triple.contexts)) < budget:  # the usual case: the budget is never spent
        return cut
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
        self._reads = ReadKeys(extract.conventions, keep_roots=self._assembler.enabled)
        # Assembly deadlines are checked this often: a fraction of the grace period, at most 4 times a second.
        self._tick_interval_s = min(0.25, max(0.01, extract.assembly.grace_s / 4))
        self._sampler = ConsistentSampler(sampling)
        self._redact = Redactor(redaction) if redaction.enabled else None
        self._publisher = publisher
        self._metrics = metrics
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        # An assembled trace's records the bus refused, offered again on the next tick.
        self._held: list[_Outgoing] = []

    def consume_export_request(self, request: ExportTraceServiceRequest, transport: str) -> ExportResult:
        """All of the request or none of it: its records go onto the bus in one batch, and only
        then are its multi-span spans buffered for assembly. Raises BusFull when the bus pushes
        back, before anything of the request was published or buffered, so the client's retry of
        the whole request duplicates nothing."""
        result = ExportResult()
        errors: list[str] = []
        records: list[_Outgoing] = []
        to_buffer: list[_Buffered] = []
        spans = without_triple = 0
        may_matter = self._reads.may_matter
        tally = Tally()
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes, _RESOURCE_READS)
            service = str(resource.get("service.name") or "unknown_service")
            if self._redact is not None:  # a label on /metrics and on the record: no PII there either
                service = self._redact.label(service)
            # Looked up at the first span that needs them: the label guard admits a service's label
            # when it first counts something, as it did when each record looked its counters up.
            counters: ServiceCounters | None = None
            for scope_spans in resource_spans.scope_spans:
                spans += len(scope_spans.spans)
                for span in scope_spans.spans:
                    # Most of an app's spans: no convention reads them, so their values are never
                    # built. Counted once per request (a counter's lock per span cost a tenth).
                    if not may_matter(span):
                        without_triple += 1
                        continue
                    try:
                        triple = self._native_triple(span)
                        if triple is not None:
                            counters = counters or self._metrics.service(service)
                            record = self._prepare(
                                counters, service, triple, span.trace_id, span.span_id,
                                int(span.end_time_unix_nano or span.start_time_unix_nano), span.trace_state,
                                span.status.code == _ERROR, tally)
                            if record is not None:
                                records.append(record)
                        else:
                            without_triple += self._span(service, span, to_buffer)
                    except ExtractRejection as e:
                        # A rejected span is a record received and dropped by a named rule, so that
                        # received = sampled + dropped holds.
                        result.rejected_spans += 1
                        counters = counters or self._metrics.service(service)
                        tally.add(counters.received)
                        tally.add(counters.dropped(e.reason))
                        if len(errors) < 5:
                            errors.append(f"span {span.span_id.hex()}: {e.message}")
        tally.add(self._metrics.spans.labels(transport=transport), spans)
        if without_triple:
            tally.add(self._metrics.spans_without_triple, without_triple)
        tally.apply()
        try:
            self._send(records)
        except BusFull:
            for record in records:
                record.counters.dropped("bus_full").inc()
            raise
        now = time.monotonic()
        for b in to_buffer:
            for evicted in self._assembler.add(b.trace_id, b.span, b.size, now, b.trace_state, b.error):
                self._publish_evicted(evicted)
        if errors:
            more = result.rejected_spans - len(errors)
            result.error_message = "; ".join(errors) + (f"; and {more} more" if more > 0 else "")
        return result

    def consume_logs_request(self, request: ExportLogsServiceRequest) -> None:
        """The request's GenAI events go to the assembly buffer with their trace (sampled as its
        spans are); nothing is published from here but traces the buffer evicts to make room."""
        if not self._assembler.reads_events:
            return
        now = time.monotonic()
        for log_event in genai_log_events(request):
            service = self._redact.label(log_event.service) if self._redact is not None else log_event.service
            # A log record has no tracestate: the pre-check uses the trace id's randomness.
            if not self._sampler.may_keep(log_event.trace_id, service):
                continue
            for evicted in self._assembler.add_event(log_event.trace_id, log_event.span_id, log_event.event,
                                                     log_event.size, now):
                self._publish_evicted(evicted)

    def _native_triple(self, span: Span) -> Triple | None:
        """The span's native triple, decoding only the attributes that convention reads."""
        return extract_native(attributes(span.attributes, NATIVE_READS)) if self._native else None

    def _span(self, service: str, span: Span, to_buffer: list[_Buffered]) -> bool:
        """Sort one span that a convention may read and that has no native triple: a span for the
        assembly buffer, or neither (True: it holds no RAG triple)."""
        if self._assembler.enabled:
            view = TraceSpan.from_proto(span, service, attributes(span.attributes))
            if self._assembler.claims(span.trace_id, view):
                _check_ids(span.trace_id, span.span_id)
                # A trace whose records the policies will drop whatever they hold is never buffered.
                if not self._sampler.may_keep(span.trace_id, service, span.trace_state):
                    self._metrics.trace_spans.labels(outcome="sampled_out").inc()
                else:
                    to_buffer.append(_Buffered(span.trace_id, view, span.ByteSize(), span.trace_state,
                                               span.status.code == _ERROR))
                return False
        return True

    def _finish(self, trace: PendingTrace) -> list[_Outgoing]:
        """The records of a trace's RAG runs (none when sampled out), to be published in one batch."""
        assembled = self._assembler.assemble(trace)
        if not assembled and trace.spans:  # a trace of log events only had no span to count
            self._metrics.spans_without_triple.inc()
        tally = Tally()
        prepared = (self._prepare(self._metrics.service(a.span.service), a.span.service, a.triple, trace.trace_id,
                                  a.span.span_id, a.span.time_unix_nano, trace.trace_state, trace.error, tally)
                    for a in assembled)
        records = [record for record in prepared if record is not None]
        tally.apply()
        return records

    def _prepare(
        self, counters: ServiceCounters, service: str, triple: Triple, trace_id: bytes, span_id: bytes,
        time_unix_nano: int, trace_state: str, error: bool, tally: Tally,
    ) -> _Outgoing | None:
        """One triple, from a single span or an assembled trace: sample → limit → redact → the
        record for the bus (None when sampled out). `counters`: the service's; `trace_state` and
        `error`: the span's (or trace's) W3C tracestate and whether its status is ERROR, for the
        sampling policies; `tally` gathers the counts."""
        _check_ids(trace_id, span_id)
        tally.add(counters.received)
        decision = self._sampler.decide(
            trace_id, Subject(service, triple.route, triple.model, triple.attributes, error), trace_state)
        if decision.upstream.outcome != "none":
            tally.add(self._metrics.sampling_upstream.labels(outcome=decision.upstream.outcome))
        sampling = decision.sampling
        tally.add(counters.decision(decision.rule, sampling is not None))
        if sampling is None:
            tally.add(counters.dropped("sampled_out"))
            return None
        truncated = limit_triple(triple, self._limits)
        if truncated:
            tally.add(counters.truncated)
        if self._redact is not None:
            triple = self._redact(triple)
        trace_hex = trace_id.hex()
        record = record_dict(trace_hex, span_id.hex(), service, triple.question, triple.contexts, triple.answer,
                             time_unix_nano, sampling, triple.route, triple.model, truncated, triple.attributes)
        return _Outgoing(service, counters, record["id"], trace_hex.encode("ascii"), wire_json(record))

    def _send(self, records: list[_Outgoing]) -> None:
        """Publish all or none (BusFull; the caller counts a refusal as it sees fit). A record too
        large for a bus message even when cut is the one exception: its text is cut already, what
        is left (service, route, model, attributes) is the app's doing; it is dropped, counted as
        too_large, and the rest go."""
        if not records:
            return
        too_large = set(self._publisher.publish_batch([(r.key, r.value) for r in records]))
        tally = Tally()
        # Asked once per batch: even a disabled log.debug call per record costs a call and a level check.
        debug = log.isEnabledFor(logging.DEBUG)
        for index, record in enumerate(records):
            if index in too_large:
                tally.add(record.counters.dropped("too_large"))
                log.warning("record %s from %s dropped: too large for a bus message even when cut",
                            record.id, record.service)
            else:
                tally.add(record.counters.sampled)
                if debug:
                    log.debug("record %s from %s published", record.id, record.service)
        tally.apply()

    def _publish_evicted(self, trace: PendingTrace) -> None:
        """A trace pushed out of a full assembly buffer by a request's spans. Its own spans were
        acknowledged long ago, so it is no part of the request and the request's retry cannot
        repeat it; with both the assembly buffer and the bus full it is dropped, counted."""
        records = self._finish(trace)
        try:
            self._send(records)
        except BusFull:
            for record in records:
                record.counters.dropped("bus_full").inc()

    def tick(self, now: float) -> None:
        """Assemble the traces whose grace period or timeout has passed (`now` on time.monotonic()).

        Their spans were acknowledged long ago, so a full bus must not lose them: records the bus
        refuses are held and offered again on the next tick, and the traces due after them wait in
        the (bounded) assembly buffer meanwhile."""
        if self._held:
            if not self._offer(self._held):
                return
            self._held = []
        while (trace := self._assembler.pop_due(now)) is not None:
            records = self._finish(trace)
            if not self._offer(records):
                self._held = records
                return

    def _offer(self, records: list[_Outgoing]) -> bool:
        try:
            self._send(records)
        except BusFull:
            return False
        return True

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

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the timer and assemble every trace still buffered (call after the receivers stop).
        A full bus gets `timeout_s` in all to make room (the scorer or Kafka drains it meanwhile);
        records still refused then are dropped, counted as bus_full."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        deadline = time.monotonic() + timeout_s
        self._offer_until(self._held, deadline)
        self._held = []
        while (trace := self._assembler.pop_oldest()) is not None:
            self._offer_until(self._finish(trace), deadline)

    def _offer_until(self, records: list[_Outgoing], deadline: float) -> None:
        while not self._offer(records):
            if time.monotonic() >= deadline:
                for record in records:
                    record.counters.dropped("bus_full").inc()
                return
            time.sleep(0.05)


@dataclass(frozen=True)
class _Buffered:
    """A span for the assembly buffer, with what tail sampling needs of it."""

    trace_id: bytes
    span: TraceSpan
    size: int
    trace_state: str
    error: bool


class _Outgoing(NamedTuple):
    """A record ready for the bus, with what its counters need (a tuple: one per record, and a
    frozen dataclass's __init__ costs several times as much)."""

    service: str
    counters: ServiceCounters
    id: str
    key: bytes
    value: bytes


def _check_ids(trace_id: bytes, span_id: bytes) -> None:
    if len(trace_id) != 16 or len(span_id) != 8:
        raise ExtractRejection("invalid_ids", "trace_id must be 16 bytes and span_id 8 bytes")
