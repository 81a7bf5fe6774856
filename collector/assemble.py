"""Trace assembly: spans of the multi-span conventions are buffered per trace until the trace is done.

OpenInference, OpenLLMetry and the GenAI conventions put question, contexts and answer on different
spans of one trace, and exporters send those spans in separate batches (children usually before
their parent). A trace is assembled when its root span has arrived plus a grace period (for spans
still in other exporters' queues), or a timeout after its first span (its root was lost or lives
in another process). The buffer is bounded in traces and bytes, and each trace in spans: when it is
full the oldest trace is assembled early. Each assembled trace yields one triple per RAG run in it
(an agent that retrieved and answered twice gives two; multispan.answer_units says how a trace is
cut), each named after its own span.

GenAI content may also come as OTLP log records (collector/otlp_logs.py): they are buffered with
their trace, whichever arrives first, and put on their span's events when the trace is assembled.

Nothing here publishes: the pipeline takes assembled traces and sends their triples through the
same limit → redact → sample → publish path as single spans.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragpulse.collector.extract import genai, openinference, openllmetry
from ragpulse.collector.extract.config import AssemblyConfig
from ragpulse.collector.extract.multispan import Assembled, TraceSpan
from ragpulse.collector.telemetry import CollectorMetrics


class Convention(Protocol):
    def wants(self, span: TraceSpan) -> bool: ...

    def assemble(self, spans: list[TraceSpan]) -> list[Assembled]: ...


# Tried in this order on a finished trace; the first that finds triples wins. OpenInference marks every span
# with its kind; OpenLLMetry's newer LLM spans also carry GenAI attributes, so GenAI comes last.
MULTI_SPAN_CONVENTIONS: dict[str, Convention] = {
    "openinference": openinference,
    "openllmetry": openllmetry,
    "genai": genai,
}


@dataclass
class PendingTrace:
    trace_id: bytes
    first_seen: float
    spans: dict[bytes, TraceSpan] = field(default_factory=dict)
    # Log-record events by the span id they name (genai_events), until the span is assembled.
    events: dict[bytes, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    event_count: int = 0
    size: int = 0
    root_seen: float | None = None
    # For tail sampling: the first W3C tracestate a span brought (an upstream sampler's threshold),
    # and whether any span's status was ERROR.
    trace_state: str = ""
    error: bool = False


class TraceAssembler:
    def __init__(self, config: AssemblyConfig, conventions: Iterable[str], metrics: CollectorMetrics) -> None:
        wanted = set(conventions)
        self._conventions = [c for name, c in MULTI_SPAN_CONVENTIONS.items() if name in wanted]
        self.reads_events = "genai" in wanted
        self._config = config
        self._metrics = metrics
        self._lock = threading.Lock()
        # By arrival of the trace's first span: the front is the oldest, the first to time out or be
        # evicted. Traces whose root has arrived are also kept in root-arrival order, so both kinds
        # of deadline are found from the front without scanning the buffer.
        self._pending: OrderedDict[bytes, PendingTrace] = OrderedDict()
        self._rooted: OrderedDict[bytes, float] = OrderedDict()
        # Recently assembled trace ids: a straggler span must not start a second, partial record.
        self._done: OrderedDict[bytes, None] = OrderedDict()
        self._bytes = 0
        metrics.pending_traces.set_function(lambda: len(self._pending))
        metrics.pending_bytes.set_function(lambda: self._bytes)

    @property
    def enabled(self) -> bool:
        return bool(self._conventions)

    def claims(self, trace_id: bytes, span: TraceSpan) -> bool:
        """Whether the span goes to the buffer: a convention reads it, or it is the root of a buffered
        trace (a web framework's server span around the RAG pipeline): its arrival completes the trace."""
        if any(c.wants(span) for c in self._conventions):
            return True
        with self._lock:
            return span.is_local_root and trace_id in self._pending

    def add(self, trace_id: bytes, span: TraceSpan, size: int, now: float, trace_state: str = "",
            error: bool = False) -> list[PendingTrace]:
        """Buffer a span (with its tracestate and whether its status is ERROR); returns the traces taken
        out early to keep the buffer within its bounds."""
        with self._lock:
            if trace_id in self._done:
                self._metrics.trace_spans.labels(outcome="late").inc()
                return []
            trace = self._pending.get(trace_id)
            if trace is None:
                trace = self._pending[trace_id] = PendingTrace(trace_id, now)
            if span.span_id in trace.spans:
                # The client retried an export after a "retry later": the span is already here.
                return []
            if len(trace.spans) >= self._config.max_spans_per_trace and not span.is_local_root:
                self._metrics.trace_spans.labels(outcome="over_limit").inc()
                return []
            trace.spans[span.span_id] = span
            trace.trace_state = trace.trace_state or trace_state
            trace.error = trace.error or error
            trace.size += size
            self._bytes += size
            if span.is_local_root and trace.root_seen is None:
                trace.root_seen = now
                self._rooted[trace_id] = now
            self._metrics.trace_spans.labels(outcome="buffered").inc()
            return self._evict()

    def add_event(
        self, trace_id: bytes, span_id: bytes, event: tuple[str, dict[str, Any]], size: int, now: float
    ) -> list[PendingTrace]:
        """Buffer a log-record event for its span, which may not have arrived yet; returns the traces
        taken out early, as add() does. An event beyond the trace's span limit is dropped."""
        with self._lock:
            if trace_id in self._done:
                return []
            trace = self._pending.get(trace_id)
            if trace is None:
                trace = self._pending[trace_id] = PendingTrace(trace_id, now)
            if trace.event_count >= self._config.max_spans_per_trace:
                return []
            trace.events.setdefault(span_id, []).append(event)
            trace.event_count += 1
            trace.size += size
            self._bytes += size
            return self._evict()

    def _evict(self) -> list[PendingTrace]:
        evicted = []
        while self._pending and (
            len(self._pending) > self._config.max_traces or self._bytes > self._config.max_bytes
        ):
            evicted.append(self._pop(next(iter(self._pending)), "buffer_full"))
        return evicted

    def pop_due(self, now: float) -> PendingTrace | None:
        """The next trace whose root arrived `grace_s` ago, or whose first span `timeout_s` ago."""
        with self._lock:
            if self._rooted:
                trace_id, root_seen = next(iter(self._rooted.items()))
                if root_seen + self._config.grace_s <= now:
                    return self._pop(trace_id, "root")
            if self._pending:
                trace_id, trace = next(iter(self._pending.items()))
                if trace.first_seen + self._config.timeout_s <= now:
                    return self._pop(trace_id, "timeout")
            return None

    def pop_oldest(self) -> PendingTrace | None:
        """For shutdown: every trace still buffered, oldest first, complete or not."""
        with self._lock:
            return self._pop(next(iter(self._pending)), "shutdown") if self._pending else None

    def _pop(self, trace_id: bytes, trigger: str) -> PendingTrace:
        trace = self._pending.pop(trace_id)
        self._rooted.pop(trace_id, None)
        self._bytes -= trace.size
        self._done[trace_id] = None
        if len(self._done) > self._config.max_traces:
            self._done.popitem(last=False)
        self._metrics.traces_assembled.labels(trigger=trigger).inc()
        return trace

    def assemble(self, trace: PendingTrace) -> list[Assembled]:
        for span_id, events in trace.events.items():
            if (span := trace.spans.get(span_id)) is not None:
                span.events.extend(events)
        spans = list(trace.spans.values())
        for convention in self._conventions:
            if assembled := convention.assemble(spans):
                return assembled
        return []
