"""The score histograms carry each record's trace id as an exemplar, so a dashboard can jump from a
bad bucket to the trace. Served in OpenMetrics only when the scraper asks for it; checked on the
scorer's real HTTP server, then through a real Prometheus with exemplar storage on
(/api/v1/query_exemplars returns the trace ids of the answers just scored)."""

from __future__ import annotations

import time
import urllib.request

import pytest
from otel_app import RagApp
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_text
from prometheus_server import CORPUS, PrometheusServer, prometheus_binary
from ragpulse_process import RagpulseProcess

from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.export.http_server import ScorerHttpServer
from ragpulse.scorer.export.prometheus import PrometheusScoreExporter
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome

OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def _scrape(port: int, accept: str | None) -> tuple[str, str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as r:
        return r.headers["Content-Type"], r.headers.get("Vary", ""), r.read().decode()


def test_exemplar_served_in_openmetrics_only_when_asked():
    registry = CollectorRegistry()
    exporter = PrometheusScoreExporter(registry, "local", 10, {"faithfulness": 0.5})
    record = Record(trace_id=TRACE_ID, span_id=SPAN_ID, service="support-bot", question="q", contexts=["c"],
                    answer="a", time_unix_nano=1, sampling=Sampling(1.0, 1.0, "default"))
    exporter.on_scores(ScoredRecord(record, {"faithfulness": MetricOutcome(0.25)}, seconds=0.01, judge="local"))
    server = ScorerHttpServer("127.0.0.1", 0, registry)
    server.start()
    try:
        content_type, vary, body = _scrape(server.port, OPENMETRICS)
        assert content_type.startswith("application/openmetrics-text") and vary == "Accept"
        buckets = [s for f in parse_openmetrics(body) if f.name == "ragpulse_faithfulness_score"
                   for s in f.samples if s.name.endswith("_bucket") and s.exemplar is not None]
        # The exemplar sits on the bucket the score fell in, the smallest `le` holding 0.25.
        assert [(b.labels["le"], b.exemplar.labels, b.exemplar.value) for b in buckets] == [
            ("0.3", {"trace_id": TRACE_ID, "span_id": SPAN_ID}, 0.25)]

        content_type, _, body = _scrape(server.port, None)
        assert content_type.startswith("text/plain") and "trace_id" not in body
        assert any(f.name == "ragpulse_faithfulness_score" for f in parse_text(body))
    finally:
        server.stop()


@pytest.mark.prometheus
def test_prometheus_stores_the_trace_ids_of_scored_answers(tmp_path):
    prometheus_binary()
    proc = RagpulseProcess(tmp_path)
    prom = PrometheusServer(tmp_path, [proc.metrics], flags=("--enable-feature=exemplar-storage",)).start()
    app = RagApp("exemplar-bot", "http", proc.http)
    try:
        prom.wait_for_target_up()
        sent = {}
        for i, (question, contexts, _good, bad) in enumerate(CORPUS):
            trace_id = app.answer(f"{question} ({i})", contexts, bad)
            sent[trace_id] = i
            proc.wait_for("ragpulse_records_scored_total", i + 1, service="exemplar-bot")
            # Longer than a scrape interval: a bucket keeps only its latest exemplar, and each
            # answer's must be scraped before the next one may replace it.
            time.sleep(1.5)
        found: set[str] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and found != set(sent):
            now = time.time()
            data = prom.api("query_exemplars", query='ragpulse_faithfulness_score_bucket{service="exemplar-bot"}',
                            start=str(now - 300), end=str(now))
            found = {e["labels"]["trace_id"] for series in data for e in series["exemplars"]}
            time.sleep(1)
        assert found == set(sent), (found, sent)
    finally:
        app.close()
        prom.stop()
        proc.stop()
