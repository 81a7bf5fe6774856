"""The openai judge wired through configuration into `ragpulse score` and `ragpulse up`, against the
fault-injecting OpenAI-compatible test server (a real HTTP server on loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from otel_app import RagApp
from ragpulse_process import RagpulseProcess

from ragpulse.config import load_config
from ragpulse.scorer.judge.factory import build_judge
from ragpulse.scorer.judge.openai.judge import OpenAIJudge

ROW = {"question": "Where is the Louvre?", "contexts": ["The Louvre is an art museum in Paris."],
       "answer": "The Louvre is in Paris."}


@pytest.fixture
def fault_server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer() as server:
        yield server


def judge_settings(server: FaultInjectingOpenAIServer, **extra: object) -> dict:
    return {"judge": "openai", "openai": {"model": "tiny", "base_url": server.base_url, "api_key": "unused",
                                          "max_retries": 1, "backoff_base_s": 0.05, "backoff_max_s": 0.1,
                                          "timeout_s": 5, **extra}}


def test_config_builds_the_openai_judge_with_the_local_embedder(fault_server, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"scorer": judge_settings(fault_server)}))
    judge = build_judge(load_config(path, environ={}).scorer)
    assert isinstance(judge, OpenAIJudge) and judge.model == "tiny"


@pytest.mark.slow
def test_fault_injected_429s_become_counted_failures_in_ragpulse_score(fault_server, tmp_path: Path) -> None:
    fault_server.set_script("429")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"scorer": judge_settings(fault_server, breaker_failures=100)}))
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps(ROW) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "score", "--config", str(config), "--input", str(source),
         "--output", str(out), "--metrics", "faithfulness", "context_relevancy"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    row = json.loads(out.read_text())
    assert row["faithfulness"] is None and row["faithfulness_error"] == "rate_limited"
    assert row["context_relevancy"] is None and row["context_relevancy_error"] == "rate_limited"
    assert "NaN" not in out.read_text()


@pytest.mark.slow
def test_fault_injecting_server_ok_path_scores_through_ragpulse_up(fault_server, tmp_path: Path) -> None:
    proc = RagpulseProcess(tmp_path, {"scorer": judge_settings(fault_server)})
    try:
        app = RagApp("judged", "http", proc.http)
        app.answer(ROW["question"], ROW["contexts"], ROW["answer"])
        app.close()
        proc.wait_for("ragpulse_records_scored_total", 1, service="judged")
        assert proc.value("ragpulse_metric_failures_total") == 0
        assert proc.value("ragpulse_judge_calls_total", judge="openai") >= 3
        assert proc.value("ragpulse_judge_tokens_total", judge="openai", kind="prompt") > 0
        assert proc.value("ragpulse_judge_endpoint_requests_total", judge="openai", outcome="ok") >= 3
        assert "(judge openai" in proc.log()
    finally:
        proc.stop()
