"""Evaluations written back to the user's tracing backend (export.otlp): each scored record becomes a
`gen_ai.evaluation` child span of the evaluated span with one `gen_ai.evaluation.result` event per
metric. Checked on the real SDK's in-memory exporter, against real sockets for failures, and end to
end through a real Jaeger v2, asserted through Jaeger's own query API."""

from __future__ import annotations

import threading
import time

import pytest
from jaeger_server import jaeger  # noqa: F401 - the fixture
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otel_app import RagApp
from ports import free_port
from prometheus_client import CollectorRegistry
from prometheus_server import CORPUS
from ragpulse_process import RagpulseProcess

from ragpulse.config import ConfigError, load_config
from ragpulse.core.metric_names import DEFAULT_BAD_EVENT_THRESHOLDS
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.export.config import OtlpExportConfig
from ragpulse.scorer.export.otlp import OtlpEvaluationExporter
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome

TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
UNSUPPORTED = "The tower is made of bamboo."


def scored(trace_id: str = TRACE_ID) -> ScoredRecord:
    record = Record(trace_id=trace_id, span_id=SPAN_ID, service="support-bot", question="q", contexts=["c"],
                    answer="a", time_unix_nano=1, sampling=Sampling(1.0, 1.0, "default"))
    statements = [{"statement": "The tower is in Paris.", "verdict": 1.0, "evidence": "c"},
                  {"statement": UNSUPPORTED, "verdict": 0.0, "evidence": None}]
    return ScoredRecord(record, {
        "faithfulness": MetricOutcome(0.5 - 0.25, detail={"statements": statements}),
        "answer_relevancy": MetricOutcome(0.9),
        "context_relevancy": MetricOutcome(None, error="no_contexts"),
    }, seconds=0.2, judge="local", judge_model="wordllama-l2-supercat+lexical")


def outcomes(registry: CollectorRegistry) -> dict[str, float]:
    return {s.labels["outcome"]: s.value for f in registry.collect() if f.name == "ragpulse_evaluation_spans"
            for s in f.samples if s.name.endswith("_total")}


def test_config_is_off_by_default_and_validated():
    assert not load_config(environ={}).export.otlp.enabled
    config = load_config(environ={"RAGPULSE_EXPORT__OTLP__ENDPOINT": "http://127.0.0.1:4318",
                                  "RAGPULSE_EXPORT__OTLP__PROTOCOL": "http"})
    assert config.export.otlp.traces_url() == "http://127.0.0.1:4318/v1/traces"
    assert OtlpExportConfig(endpoint="https://otlp.example:443/custom", protocol="http").traces_url() == \
        "https://otlp.example:443/custom"
    for bad, where in ((" {protocol: zipkin}", "export.otlp.protocol"), ("{endpoint: '127.0.0.1:4317'}",
                       "export.otlp.endpoint"), ("{timeout_s: 0}", "export.otlp.timeout_s")):
        with pytest.raises(ConfigError, match=where):
            load_config(environ={"RAGPULSE_EXPORT__OTLP": bad})


def test_one_child_span_of_the_evaluated_span_with_an_event_per_metric():
    memory = InMemorySpanExporter()
    registry = CollectorRegistry()
    exporter = OtlpEvaluationExporter(OtlpExportConfig(endpoint="http://127.0.0.1:9"), registry,
                                      DEFAULT_BAD_EVENT_THRESHOLDS, exporter=memory)
    exporter.on_scores(scored())
    exporter.shutdown()
    (span,) = memory.get_finished_spans()
    assert span.name == "gen_ai.evaluation"
    assert format(span.context.trace_id, "032x") == TRACE_ID and format(span.parent.span_id, "016x") == SPAN_ID
    assert span.resource.attributes["service.name"] == "ragpulse"
    assert span.attributes["ragpulse.judge"] == "local"  # the judge that gave this record's scores
    assert span.end_time - span.start_time == pytest.approx(0.2e9, rel=0.01)
    events = {e.attributes["gen_ai.evaluation.name"]: dict(e.attributes) for e in span.events}
    assert {e.name for e in span.events} == {"gen_ai.evaluation.result"}
    # Each event says who judged (ragpulse.* until the conventions name an evaluator).
    judge = {"ragpulse.judge": "local", "ragpulse.judge_model": "wordllama-l2-supercat+lexical"}
    assert events["faithfulness"] == judge | {
        "gen_ai.evaluation.name": "faithfulness", "gen_ai.evaluation.score.value": 0.25,
        "gen_ai.evaluation.score.label": "fail",
        "gen_ai.evaluation.explanation": f"Unsupported by the contexts: {UNSUPPORTED}"}
    assert events["answer_relevancy"] == judge | {
        "gen_ai.evaluation.name": "answer_relevancy", "gen_ai.evaluation.score.value": 0.9,
        "gen_ai.evaluation.score.label": "pass"}
    # No score, no label: the reason, as the convention's error.type.
    assert events["context_relevancy"] == judge | {"gen_ai.evaluation.name": "context_relevancy",
                                                   "error.type": "no_contexts"}
    assert outcomes(registry) == {"exported": 1.0, "failed": 0.0, "queue_full": 0.0}


class FaultInjectingBlockedExporter(SpanExporter):
    """Fault injection: a backend that never answers until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def export(self, spans):
        self.release.wait(30)
        return SpanExportResult.SUCCESS


def test_a_stuck_backend_never_blocks_scoring_and_drops_are_counted():
    blocked = FaultInjectingBlockedExporter()
    registry = CollectorRegistry()
    exporter = OtlpEvaluationExporter(OtlpExportConfig(endpoint="http://127.0.0.1:9", max_queue=5), registry,
                                      DEFAULT_BAD_EVENT_THRESHOLDS, exporter=blocked)
    started = time.perf_counter()
    for i in range(50):
        exporter.on_scores(scored(f"{i + 1:032x}"))
    assert time.perf_counter() - started < 1.0
    # At most max_queue spans wait, whether the processor's thread has taken a batch yet or not.
    assert outcomes(registry)["queue_full"] == 45
    blocked.release.set()
    exporter.shutdown()
    assert outcomes(registry) == {"exported": 5.0, "failed": 0.0, "queue_full": 45.0}


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_an_unreachable_backend_is_counted_as_failed(protocol):
    # A real exporter over a real socket: nothing listens on the port.
    config = OtlpExportConfig(endpoint=f"http://127.0.0.1:{free_port()}", protocol=protocol, timeout_s=1.0)
    registry = CollectorRegistry()
    exporter = OtlpEvaluationExporter(config, registry, DEFAULT_BAD_EVENT_THRESHOLDS)
    exporter.on_scores(scored())
    started = time.perf_counter()
    exporter.shutdown()
    assert time.perf_counter() - started < 10
    assert outcomes(registry) == {"exported": 0.0, "failed": 1.0, "queue_full": 0.0}


def _fields(log: dict) -> dict:
    return {f["key"]: f["value"] for f in log["fields"]}


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_evaluations_sit_on_the_evaluated_trace_in_jaeger(tmp_path, jaeger, protocol):  # noqa: F811
    endpoint = jaeger.otlp_grpc if protocol == "grpc" else jaeger.otlp_http
    proc = RagpulseProcess(tmp_path, settings={"export": {"otlp": {"endpoint": endpoint, "protocol": protocol}}})
    # The app sends its spans to its tracing backend and to ragpulse, as in production.
    app = RagApp("support-bot", "http", proc.http)
    app.provider.add_span_processor(SimpleSpanProcessor(HttpExporter(endpoint=f"{jaeger.otlp_http}/v1/traces")))
    try:
        question, contexts, good, bad = CORPUS[0]
        unfaithful = app.answer(question, contexts, bad)
        faithful = app.answer(question, contexts, good)
        proc.wait_for("ragpulse_records_scored_total", 2, service="support-bot")
        # Stopped at once, inside the processor's batching delay: what waits is sent on the way out.
        assert proc.stop() == 0
        for trace_id, label in ((unfaithful, "fail"), (faithful, "pass")):
            found = jaeger.wait_for_spans(trace_id, 2)
            spans = {s["operationName"]: s for s in found["spans"]}
            rag, evaluation = spans["rag"], spans["gen_ai.evaluation"]
            assert evaluation["references"] == [{"refType": "CHILD_OF", "traceID": trace_id,
                                                 "spanID": rag["spanID"]}]
            services = {p: v["serviceName"] for p, v in found["processes"].items()}
            assert (services[rag["processID"]], services[evaluation["processID"]]) == ("support-bot", "ragpulse")
            events = {f["gen_ai.evaluation.name"]: f for f in map(_fields, evaluation["logs"])
                      if f.get("event") == "gen_ai.evaluation.result"}
            assert set(events) == {"faithfulness", "answer_relevancy", "context_relevancy"}
            faithfulness = events["faithfulness"]
            assert faithfulness["gen_ai.evaluation.score.label"] == label
            assert faithfulness["ragpulse.judge"] == "local" and faithfulness["ragpulse.judge_model"]
            assert 0.0 <= faithfulness["gen_ai.evaluation.score.value"] <= 1.0
            if label == "fail":
                # The statements the judge found unsupported say what the bot made up.
                assert "1925" in faithfulness["gen_ai.evaluation.explanation"]
    finally:
        app.close()
        proc.stop()
