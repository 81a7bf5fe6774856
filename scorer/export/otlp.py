"""Scores written back to the user's tracing backend: a worker observer, beside the Prometheus export.

Each scored record becomes one small span named `gen_ai.evaluation`, a child of the evaluated span
(the record's trace id and span id), carrying one OpenTelemetry GenAI `gen_ai.evaluation.result`
event per metric: `gen_ai.evaluation.name`, `gen_ai.evaluation.score.value`,
`gen_ai.evaluation.score.label` (pass or fail against `scorer.bad_event_threshold`),
`gen_ai.evaluation.explanation` (for faithfulness, the statements the judge found unsupported), or
`error.type` when the metric has no score; and who gave the score, `ragpulse.judge` (local, learned,
openai) and `ragpulse.judge_model` (the LLM's name, or the offline model's id). The conventions have
no evaluator attributes yet: the open proposal (semantic-conventions-genai pull request 359) names
them `gen_ai.evaluation.evaluator.id` and `.type`; the `ragpulse.*` names stay until one is merged.

Why a child span and not a log record with the span's ids (the convention's own form): an event
must belong to something the backend shows with the trace, and ragpulse does not own the app's
span, which was exported long before it was scored. Tracing backends (Jaeger, Zipkin, Tempo, the
hosted ones) store and show spans; a log record joins its trace only in backends that also store
logs and link them. A child span is on the trace everywhere, under the answer it judges.

Export never blocks scoring: spans go through the SDK's BatchSpanProcessor on its own thread, at
most `export.otlp.max_queue` of them waiting (beyond, the new record's span is dropped), and every
span is counted by outcome (ragpulse_evaluation_spans_total). Spans still waiting when the process
ends are sent on the way out (the SDK's provider shuts down at exit, within export.otlp.timeout_s
per batch).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.scorer.export.config import OtlpExportConfig
from ragpulse.scorer.observer import ScoredRecord

SPAN_NAME = "gen_ai.evaluation"
EVENT_NAME = "gen_ai.evaluation.result"
# A verdict below this leaves a statement unsupported (as on the live page).
_UNSUPPORTED_BELOW = 0.5
# Attribute values are stored whole by most backends: the explanation stays readable, not a dump.
_MAX_EXPLANATION_CHARS = 2000
# A record's evaluations reach its trace within a second of scoring; under load a full batch
# leaves at once anyway.
_EXPORT_DELAY_MS = 1000
_MAX_BATCH = 512


class OtlpEvaluationExporter:
    def __init__(
        self,
        config: OtlpExportConfig,
        registry: CollectorRegistry,
        bad_event_threshold: dict[str, float],
        exporter: SpanExporter | None = None,
    ) -> None:
        """`exporter`: the OTLP exporter the config names unless given (tests inject faults)."""
        outcomes = catalog.counter(registry, "ragpulse_evaluation_spans_total")
        self._exported = outcomes.labels(outcome="exported")
        self._failed = outcomes.labels(outcome="failed")
        self._queue_full = outcomes.labels(outcome="queue_full")
        self._bad_threshold = dict(bad_event_threshold)
        self._max_queue = config.max_queue
        # Spans handed to the processor and not yet to the exporter. Bounded here rather than by the
        # SDK's queue, which drops the oldest span with a warning each time and counts nothing.
        self._waiting = 0
        self._lock = threading.Lock()
        self._provider = TracerProvider(
            sampler=ALWAYS_ON,  # the record was sampled by the collector already
            resource=Resource.create({"service.name": config.service_name}),
        )
        self._provider.add_span_processor(BatchSpanProcessor(
            _CountingExporter(exporter or _otlp_exporter(config), self),
            max_queue_size=config.max_queue,
            max_export_batch_size=min(_MAX_BATCH, config.max_queue),
            schedule_delay_millis=_EXPORT_DELAY_MS,
        ))
        self._tracer = self._provider.get_tracer("ragpulse.scorer")

    def on_scores(self, scored: ScoredRecord) -> None:
        with self._lock:
            if self._waiting >= self._max_queue:
                self._queue_full.inc()
                return
            self._waiting += 1
        record = scored.record
        parent = trace.NonRecordingSpan(trace.SpanContext(
            trace_id=int(record.trace_id, 16), span_id=int(record.span_id, 16), is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        ))
        end = time.time_ns()
        span = self._tracer.start_span(
            SPAN_NAME, context=trace.set_span_in_context(parent), kind=trace.SpanKind.INTERNAL,
            start_time=end - int(scored.seconds * 1e9),
            attributes={"gen_ai.operation.name": "evaluation", "ragpulse.judge": scored.judge,
                        "ragpulse.record.id": record.id},
        )
        # On every event, not only the span: backends that list events alone still say who judged.
        evaluator = {"ragpulse.judge": scored.judge}
        if scored.judge_model:
            evaluator["ragpulse.judge_model"] = scored.judge_model
        for name, outcome in scored.outcomes.items():
            attributes = self._event_attributes(name, outcome.value, outcome.error, outcome.detail)
            span.add_event(EVENT_NAME, attributes | evaluator, timestamp=end)
        span.end(end_time=end)

    def _event_attributes(self, name: str, value: float | None, error: str | None,
                          detail: dict) -> dict[str, str | float]:
        attributes: dict[str, str | float] = {"gen_ai.evaluation.name": name}
        if value is None:
            attributes["error.type"] = error or "unknown"
            return attributes
        attributes["gen_ai.evaluation.score.value"] = value
        threshold = self._bad_threshold.get(name)
        if threshold is not None:
            attributes["gen_ai.evaluation.score.label"] = "fail" if value < threshold else "pass"
        explanation = _unsupported_statements(detail)
        if explanation:
            attributes["gen_ai.evaluation.explanation"] = explanation
        return attributes

    def exported(self, spans: int, ok: bool) -> None:
        """Called by the exporter, on the processor's thread, for each batch it sent or failed."""
        with self._lock:
            self._waiting -= spans
        (self._exported if ok else self._failed).inc(spans)

    def shutdown(self) -> None:
        """Export what waits (up to export.otlp.timeout_s), then stop the processor's thread."""
        self._provider.shutdown()


def _unsupported_statements(detail: dict) -> str:
    statements = detail.get("statements") or []
    unsupported = [str(s.get("statement", "")) for s in statements
                   if isinstance(s, dict) and (s.get("verdict") or 0.0) < _UNSUPPORTED_BELOW]
    if not unsupported:
        return ""
    text = "Unsupported by the contexts: " + " | ".join(unsupported)
    return text if len(text) <= _MAX_EXPLANATION_CHARS else text[: _MAX_EXPLANATION_CHARS - 1] + "…"


class _CountingExporter(SpanExporter):
    """The OTLP exporter, reporting each batch's outcome: an exception counts as a failure too."""

    def __init__(self, inner: SpanExporter, owner: OtlpEvaluationExporter) -> None:
        self._inner = inner
        self._owner = owner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        try:
            result = self._inner.export(spans)
        finally:
            self._owner.exported(len(spans), result is SpanExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _otlp_exporter(config: OtlpExportConfig) -> SpanExporter:
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        # The scheme says whether TLS is used (http:// is plain text).
        return GrpcExporter(endpoint=config.traces_url(), headers=dict(config.headers), timeout=config.timeout_s)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=config.traces_url(), headers=dict(config.headers), timeout=config.timeout_s)
