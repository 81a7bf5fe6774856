"""The real OTel SDK exporters send spans over loopback to `ragpulse up`; scores appear on /metrics."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from otel_app import RagApp
from ragpulse_process import RagpulseProcess

pytestmark = pytest.mark.slow

CONTEXTS = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 for the World's Fair.",
    "The tower is 330 metres tall and was designed by the company of Gustave Eiffel.",
]
QUESTION = "When was the Eiffel Tower completed and how tall is it?"
FAITHFUL = "The Eiffel Tower was completed in 1889 and is 330 metres tall."
UNFAITHFUL = "The Eiffel Tower was completed in 1925 in Lyon and is 95 metres tall."


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_scores_reach_metrics(ragpulse_up: RagpulseProcess, transport: str) -> None:
    endpoint = ragpulse_up.grpc if transport == "grpc" else ragpulse_up.http
    app = RagApp(f"shop-{transport}", transport, endpoint)  # type: ignore[arg-type]
    app.answer(QUESTION, CONTEXTS, FAITHFUL, **{"rag.route": "/faq"})
    app.answer(QUESTION, CONTEXTS, UNFAITHFUL, **{"rag.route": "/faq"})
    app.close()
    service = f"shop-{transport}"
    ragpulse_up.wait_for("ragpulse_records_scored_total", 2, service=service)
    for metric in ("faithfulness", "answer_relevancy", "context_relevancy"):
        assert ragpulse_up.value(f"ragpulse_{metric}_score_count", service=service) == 2
    assert ragpulse_up.value("ragpulse_records_received_total", service=service) == 2
    assert ragpulse_up.value("ragpulse_records_sampled_total", service=service) == 2
    assert ragpulse_up.value("ragpulse_otlp_requests_total", transport=transport, outcome="ok") == 2
    # Weighted counters: at 100 % sampling the weight is the record count.
    assert ragpulse_up.value("ragpulse_score_weight_total", service=service, metric="faithfulness") == 2
    total = ragpulse_up.value("ragpulse_score_weighted_sum_total", service=service, metric="faithfulness")
    assert 0 < total < 2
    assert ragpulse_up.value("ragpulse_metric_failures_total") == 0


def test_japanese_records_score(ragpulse_up: RagpulseProcess) -> None:
    app = RagApp("社内ボット", "http", ragpulse_up.http)
    contexts = ["富士山は日本で最も高い山で、標高は3776メートルです。山梨県と静岡県にまたがっています。"]
    app.answer("富士山の標高は何メートルですか？", contexts, "富士山の標高は3776メートルです。")
    app.answer("富士山の標高は何メートルですか？", contexts, "富士山の標高は5000メートルで、北海道にあります。")
    app.close()
    ragpulse_up.wait_for("ragpulse_records_scored_total", 2, service="社内ボット")
    assert ragpulse_up.value("ragpulse_faithfulness_score_count", service="社内ボット") == 2
    assert ragpulse_up.value("ragpulse_metric_failures_total") == 0


def test_sigterm_finishes_in_flight_records(tmp_path: Path) -> None:
    proc = RagpulseProcess(tmp_path)
    app = RagApp("drain", "http", proc.http)
    for i in range(8):
        app.answer(f"{QUESTION} ({i})", CONTEXTS, FAITHFUL)
    app.close()
    assert proc.stop(signal.SIGTERM) == 0
    assert "'drained': True" in proc.log()
    assert "'left_in_queue': 0" in proc.log()


def test_demo_traffic_scores_appear(tmp_path: Path) -> None:
    proc = RagpulseProcess(tmp_path, demo=True)
    try:
        proc.wait_for("ragpulse_faithfulness_score_count", 3, timeout_s=30)
        banner = proc.log().splitlines()[0]
        assert proc.http in banner and proc.metrics in banner
    finally:
        assert proc.stop() == 0
