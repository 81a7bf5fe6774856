"""The process's metrics over OTLP (export.otlp_metrics): the registry's families through the SDK's
real OTLP exporters over real sockets, into an OTLP receiver in the test and through a real
OpenTelemetry Collector to its otlphttp and prometheus exporters; and a Collector that is down or
never answers costs counted failures only."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from otel_app import RagApp
from otelcol_server import OtlpMetricsSink, otelcol, otelcol_binary  # noqa: F401 - the fixture
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_server import CORPUS
from ragpulse_process import RagpulseProcess

from ragpulse.config import ConfigError, load_config
from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.otlp_metrics import OtlpMetricsExport
from ragpulse.core.otlp_metrics_config import OtlpMetricsConfig

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
CUMULATIVE, DELTA = 2, 1  # AggregationTemporality in OTLP's protobuf


def by_name(metrics: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for _, m in metrics:
        out.setdefault(m.name, []).append(m)
    return out


def attributes(point) -> dict[str, str]:
    return {a.key: a.value.string_value for a in point.attributes}


def test_config_is_off_by_default_and_validated():
    assert not load_config(environ={}).export.otlp_metrics.enabled
    config = load_config(environ={"RAGPULSE_EXPORT__OTLP_METRICS__ENDPOINT": "http://127.0.0.1:4318",
                                  "RAGPULSE_EXPORT__OTLP_METRICS__PROTOCOL": "http/protobuf"})
    assert config.export.otlp_metrics.metrics_url() == "http://127.0.0.1:4318/v1/metrics"
    for bad, where in (("{protocol: http}", "export.otlp_metrics.protocol"),
                       ("{temporality: monthly}", "export.otlp_metrics.temporality"),
                       ("{endpoint: '127.0.0.1:4317'}", "export.otlp_metrics.endpoint"),
                       ("{interval_s: 5, timeout_s: 10}", "export.otlp_metrics.timeout_s"),
                       ("{endpoint: 'http://c:4317', ca_file: /ca.pem}", "export.otlp_metrics.ca_file"),
                       ("{cert_file: /c.pem}", "export.otlp_metrics.cert_file")):
        with pytest.raises(ConfigError, match=where):
            load_config(environ={"RAGPULSE_EXPORT__OTLP_METRICS": bad})


def registry_with_scores() -> tuple[CollectorRegistry, object, object]:
    registry = CollectorRegistry()
    score = catalog.histogram(registry, "ragpulse_faithfulness_score").labels(service="support-bot")
    scored = catalog.counter(registry, "ragpulse_records_scored_total").labels(service="support-bot")
    return registry, score, scored


def test_delta_temporality_sends_what_changed_and_each_exemplar_once():
    sink = OtlpMetricsSink()
    registry, score, scored = registry_with_scores()
    export = OtlpMetricsExport(OtlpMetricsConfig(endpoint=sink.url, protocol="http/protobuf", temporality="delta"),
                               registry, "test")
    try:
        score.observe(0.3, {"trace_id": TRACE_ID, "span_id": SPAN_ID})
        scored.inc()
        assert export.export_once()
        score.observe(0.95)
        score.observe(0.97)
        assert export.export_once()
        first, second = (by_name([(None, m) for sm in r.resource_metrics[0].scope_metrics for m in sm.metrics])
                         for r in sink.requests)
        for sent, count, total in ((first, 1, 0.3), (second, 2, 1.92)):
            (histogram,) = sent["ragpulse.faithfulness_score"]
            assert histogram.unit == "1" and histogram.histogram.aggregation_temporality == DELTA
            (point,) = histogram.histogram.data_points
            assert (point.count, round(point.sum, 6)) == (count, total)
            assert list(point.explicit_bounds) == list(catalog.SCORE_BUCKETS)
            assert sum(point.bucket_counts) == count and len(point.bucket_counts) == len(catalog.SCORE_BUCKETS) + 1
            assert attributes(point) == {"service": "support-bot"}
            (evaluation,) = sent["gen_ai.evaluation.score"]
            assert attributes(evaluation.histogram.data_points[0]) == {
                "gen_ai.evaluation.name": "faithfulness", "service": "support-bot"}
        # Upper bounds are inclusive, in Prometheus as in OTLP: 0.3 counts in (0.2, 0.3], the third bucket.
        assert list(first["ragpulse.faithfulness_score"][0].histogram.data_points[0].bucket_counts)[2] == 1
        (exemplar,) = first["ragpulse.faithfulness_score"][0].histogram.data_points[0].exemplars
        assert (exemplar.trace_id.hex(), exemplar.span_id.hex(), exemplar.as_double) == (TRACE_ID, SPAN_ID, 0.3)
        # The second export has the new scores' exemplar only: prometheus_client keeps one per bucket.
        assert all(e.trace_id.hex() != TRACE_ID for p in second["ragpulse.faithfulness_score"][0].histogram.data_points
                   for e in p.exemplars)
        (counter,) = first["ragpulse.records_scored"]
        assert counter.sum.is_monotonic and counter.unit == "{count}"
        assert counter.sum.data_points[0].as_double == 1.0
        assert second["ragpulse.records_scored"][0].sum.data_points[0].as_double == 0.0
        resource = {a.key: a.value.string_value for a in sink.requests[0].resource_metrics[0].resource.attributes}
        assert resource["service.name"] == "ragpulse" and resource["ragpulse.role"] == "test"
        assert resource["service.instance.id"]
    finally:
        export.stop()
        sink.stop()


def test_an_endpoint_that_is_down_or_never_answers_costs_counted_failures():
    # One port nobody listens on, one that accepts connections and never answers (a blackhole).
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(16)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: blackhole.accept()[0], None)), daemon=True).start()
    try:
        for port in (closed_port, blackhole.getsockname()[1]):
            registry, score, _ = registry_with_scores()
            export = OtlpMetricsExport(OtlpMetricsConfig(endpoint=f"http://127.0.0.1:{port}", protocol="http/protobuf",
                                                         timeout_s=1.0), registry, "test")
            score.observe(0.5)
            assert not export.export_once()
            export.stop()
            failed = registry.get_sample_value("ragpulse_otlp_metric_exports_total", {"outcome": "failed"})
            assert failed == 1.0 and registry.get_sample_value("ragpulse_otlp_metric_exports_total",
                                                                {"outcome": "ok"}) == 0.0
    finally:
        blackhole.close()
        for s in held:
            s.close()


@pytest.mark.slow
def test_scoring_goes_on_while_the_metrics_endpoint_is_a_blackhole(tmp_path):
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(16)
    endpoint = f"http://127.0.0.1:{blackhole.getsockname()[1]}"
    proc = RagpulseProcess(tmp_path, settings={"export": {"otlp_metrics": {
        "endpoint": endpoint, "protocol": "grpc", "interval_s": 1, "timeout_s": 1}}})
    app = RagApp("support-bot", "http", proc.http)
    try:
        for question, contexts, good, _ in CORPUS[:3]:
            app.answer(question, contexts, good)
        proc.wait_for("ragpulse_records_scored_total", 3, service="support-bot")
        proc.wait_for("ragpulse_otlp_metric_exports_total", 2, outcome="failed")
        assert proc.value("ragpulse_otlp_metric_exports_total", outcome="ok") == 0
    finally:
        app.close()
        proc.stop()
        blackhole.close()


def _scores(families, name: str, service: str) -> dict[tuple[str, float], float]:
    """A score histogram's samples for one service: (sample name, le or -1) -> value (le as a number:
    the Collector writes 1 where prometheus_client writes 1.0)."""
    return {(s.name, float(s.labels.get("le", -1))): s.value for f in families if f.name == name for s in f.samples
            if s.labels.get("service") == service and not s.name.endswith("_created")}


@pytest.mark.slow
@pytest.mark.parametrize(("protocol", "temporality"), [("grpc", "cumulative"), ("http/protobuf", "delta")])
def test_scores_arrive_through_the_real_collector(tmp_path, otelcol, protocol, temporality):  # noqa: F811
    endpoint = otelcol.otlp_grpc if protocol == "grpc" else otelcol.otlp_http
    proc = RagpulseProcess(tmp_path, settings={"export": {"otlp_metrics": {
        "endpoint": endpoint, "protocol": protocol, "temporality": temporality, "interval_s": 1, "timeout_s": 1}}})
    app = RagApp("support-bot", "http", proc.http)
    try:
        question, contexts, good, bad = CORPUS[0]
        traces = {app.answer(question, contexts, bad), app.answer(question, contexts, good)}
        proc.wait_for("ragpulse_records_scored_total", 2, service="support-bot")

        def faithfulness_count(metrics: list) -> int:
            histograms = by_name(metrics).get("ragpulse.faithfulness_score", [])
            points = [p for m in histograms for p in m.histogram.data_points
                      if attributes(p).get("service") == "support-bot"]
            if temporality == "delta":
                return sum(p.count for p in points)
            return max((p.count for p in points), default=0)

        metrics = otelcol.sink.wait_for(lambda ms: faithfulness_count(ms) >= 2)
        sent = by_name(metrics)
        want = CUMULATIVE if temporality == "cumulative" else DELTA
        (resource, _) = metrics[0]
        resource = {a.key: a.value.string_value for a in resource.resource.attributes}
        assert (resource["service.name"], resource["ragpulse.role"]) == ("ragpulse", "up")
        histogram = sent["ragpulse.faithfulness_score"][-1].histogram
        assert histogram.aggregation_temporality == want
        assert list(histogram.data_points[0].explicit_bounds) == list(catalog.SCORE_BUCKETS)
        evaluation = {attributes(p)["gen_ai.evaluation.name"] for m in sent["gen_ai.evaluation.score"]
                      for p in m.histogram.data_points}
        assert {"faithfulness", "answer_relevancy", "context_relevancy"} <= evaluation
        assert all(m.unit == "1" for m in sent["gen_ai.evaluation.score"])
        # The exemplars name the scored records' traces, through the Collector.
        exemplar_traces = {e.trace_id.hex() for m in sent["ragpulse.faithfulness_score"]
                           for p in m.histogram.data_points for e in p.exemplars}
        assert traces <= exemplar_traces
        for name in ("ragpulse.records_scored", "ragpulse.score_weighted_sum", "ragpulse.records_received"):
            assert sent[name][-1].sum.is_monotonic and sent[name][-1].sum.aggregation_temporality == want, name
        assert sent["ragpulse.judge_latency"][-1].unit == "s"
        # The Collector's prometheus exporter serves the same score histograms as ragpulse's /metrics.
        ours = _scores(text_string_to_metric_families(proc.scrape_text()), "ragpulse_faithfulness_score", "support-bot")
        assert ours[("ragpulse_faithfulness_score_count", -1.0)] == 2
        scraped = ""
        for _ in range(50):
            scraped = otelcol.scrape() or ""
            theirs = _scores(text_string_to_metric_families(scraped), "ragpulse_faithfulness_score", "support-bot")
            if theirs.get(("ragpulse_faithfulness_score_count", -1.0)) == 2:
                break
            threading.Event().wait(0.2)
        assert theirs == ours, scraped[-2000:]
    finally:
        app.close()
        proc.stop()


@pytest.mark.parametrize("name", ["metrics-to-prometheus.yaml", "scores-to-otlp-backend.yaml"])
def test_the_documented_collector_configs_are_valid(name):
    """docs/backends.md's configs, checked by the Collector they are written for."""
    env = {**os.environ, "OTLP_BACKEND_ENDPOINT": "https://api.example.com", "OTLP_BACKEND_HEADER": "x-api-key",
           "OTLP_BACKEND_TOKEN": "token"}
    done = subprocess.run([str(otelcol_binary()), "validate", f"--config={ROOT / 'deploy' / 'otelcol' / name}"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
