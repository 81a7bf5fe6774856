"""Aspect critique: majority of sampled yes/no verdicts per criterion, built-in and user-defined
(Japanese too) criteria, the local judge's honest refusal, a verdict that is neither yes nor no,
the configuration's checks and the Prometheus family with its `aspect` label."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry
from scripted_chat_client import ScriptedChatClient

from ragpulse.config import ConfigError, load_config
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.export.prometheus import PrometheusScoreExporter
from ragpulse.scorer.judge.base import RecordText
from ragpulse.scorer.judge.local.judge import LexicalJudge
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.judge import SAMPLE_TEMPERATURE, OpenAIJudge
from ragpulse.scorer.metric_defaults import BUILTIN_ASPECTS
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome, metric_functions, score_text

HARMFUL = RecordText("How do I clean my oven?", [], "Mix bleach and ammonia in the oven and breathe in the fumes.")
KIND = RecordText("How do I clean my oven?", [], "Spread a paste of baking soda and water, wait, then wipe it off.")
POLITE_JA = "回答は丁寧語（です・ます調）で書かれていますか？"


def stand_in(system: str, data: dict) -> dict:
    """A model that calls bleach-and-ammonia harmful and a です/ます answer polite."""
    assert '"criterion"' in system
    if data["criterion"] == POLITE_JA:
        return {"reasoning": "文末を確認しました。", "verdict": data["answer"].endswith(("です。", "ます。"))}
    return {"reasoning": "checked", "verdict": "ammonia" in data["answer"]}


def openai_judge(client: ScriptedChatClient, **config: object) -> OpenAIJudge:
    settings = {"model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key": "k", "max_retries": 0, **config}
    return OpenAIJudge(OpenAIJudgeConfig(**settings), client=client)  # type: ignore[arg-type,arg-type]


def test_builtin_criterion_judged_by_the_model() -> None:
    judge = openai_judge(ScriptedChatClient(stand_in))
    metrics = metric_functions(ScorerConfig(aspects={"harmfulness": ""}, aspect_strictness=1), [])
    assert score_text(judge, metrics, HARMFUL)["aspect:harmfulness"].value == 1.0
    assert score_text(judge, metrics, KIND)["aspect:harmfulness"].value == 0.0


def test_japanese_criterion_text_reaches_the_model_as_written() -> None:
    client = ScriptedChatClient(stand_in)
    metrics = metric_functions(ScorerConfig(aspects={"polite": POLITE_JA}, aspect_strictness=1), [])
    polite = RecordText("駐車場はありますか？", [], "はい、50台分の駐車場があります。")
    blunt = RecordText("駐車場はありますか？", [], "ある。50台分。")
    assert score_text(openai_judge(client), metrics, polite)["aspect:polite"].value == 1.0
    assert score_text(openai_judge(client), metrics, blunt)["aspect:polite"].value == 0.0
    assert POLITE_JA in client.requests[0]["messages"][1]["content"]


def test_strictness_samples_and_majority_vote() -> None:
    votes = iter([True, False, True, False, False, True])
    client = ScriptedChatClient(lambda system, data: {"reasoning": "", "verdict": next(votes)})
    judge = openai_judge(client)
    metrics = metric_functions(ScorerConfig(aspects={"coherence": ""}, aspect_strictness=3), [])
    first = score_text(judge, metrics, KIND)["aspect:coherence"]
    assert first.value == 1.0 and first.detail == {"yes_votes": 2, "samples": 3}
    assert score_text(judge, metrics, HARMFUL)["aspect:coherence"].value == 0.0  # 1 of 3
    # Samples differ: sampling temperature and a seed of their own, so the vote is not one answer thrice.
    assert [r["temperature"] for r in client.requests] == [SAMPLE_TEMPERATURE] * 6
    assert [r["seed"] for r in client.requests[:3]] == [0, 1, 2]


def test_a_verdict_neither_yes_nor_no_is_a_counted_failure() -> None:
    client = ScriptedChatClient(lambda system, data: {"reasoning": "hmm", "verdict": "maybe"})
    metrics = metric_functions(ScorerConfig(aspects={"correctness": ""}), [])
    outcome = score_text(openai_judge(client), metrics, KIND)
    assert outcome["aspect:correctness"].value is None
    assert outcome["aspect:correctness"].error == "malformed_output"


def test_local_judge_refuses_every_aspect_honestly() -> None:
    metrics = metric_functions(ScorerConfig(aspects={name: "" for name in BUILTIN_ASPECTS}), [])
    outcomes = score_text(LexicalJudge(), metrics, KIND)
    assert {o.error for o in outcomes.values()} == {"unsupported_by_judge"}
    assert all(o.value is None for o in outcomes.values())


def write_config(tmp_path: Path, scorer: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"scorer": scorer}, allow_unicode=True), encoding="utf-8")
    return path


def test_config_takes_builtin_and_own_criteria(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"aspects": {"harmfulness": "", "polite": POLITE_JA},
                                                 "aspect_strictness": 3}), environ={})
    assert config.scorer.aspects == {"harmfulness": "", "polite": POLITE_JA}


@pytest.mark.parametrize(("scorer", "message"), [
    ({"aspects": {"Polite": "Is it polite?"}}, "lower-case"),
    ({"aspects": {"polite": ""}}, "scorer.aspects.polite: give a definition"),
    ({"aspects": {"harmfulness": ""}, "aspect_strictness": 2}, "odd"),
])
def test_config_rejects_bad_criteria(tmp_path: Path, scorer: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(tmp_path, scorer), environ={})


def test_exported_as_verdict_counts_per_criterion() -> None:
    registry = CollectorRegistry()
    exporter = PrometheusScoreExporter(registry, "openai", 10, {"faithfulness": 0.5})
    rec = Record(trace_id="t", span_id="s", service="shop", question="q", contexts=["c"], answer="a",
                 time_unix_nano=0, sampling=Sampling(1.0, 1.0, "test"))
    for verdict in (1.0, 1.0, 0.0):
        exporter.on_scores(ScoredRecord(rec, {"aspect:harmfulness": MetricOutcome(verdict),
                                              "aspect:polite": MetricOutcome(None, "malformed_output")}, 0.1, "openai"))

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert sample("ragpulse_aspect_verdicts_total", service="shop", aspect="harmfulness", verdict="yes") == 2
    assert sample("ragpulse_aspect_verdicts_total", service="shop", aspect="harmfulness", verdict="no") == 1
    assert sample("ragpulse_metric_failures_total", metric="aspect:polite", reason="malformed_output") == 3
    assert sample("ragpulse_score_rolling_mean", service="shop", metric="aspect:harmfulness") is None


def test_batch_summary_shows_the_share_of_yes(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"question": "Q?", "contexts": ["C."], "answer": "A."}) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "score", "--input", str(source), "--output", str(tmp_path / "o"),
         "--metrics", "faithfulness", "--aspects", "conciseness", "polite=Is it polite?"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    # The local judge: a counted failure per criterion, no fake verdict.
    assert "aspect:conciseness" in result.stdout and "unsupported_by_judge x1" in result.stdout
    row = json.loads((tmp_path / "o").read_text())
    assert row["aspect:polite"] is None and row["aspect:polite_error"] == "unsupported_by_judge"
