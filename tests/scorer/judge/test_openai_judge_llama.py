"""The openai judge end to end against a real OpenAI-compatible LLM server on 127.0.0.1
(llama-cpp-python's server with Qwen2.5-Coder-1.5B-Instruct Q4_K_M; deploy/llm/install.sh).

Skipped only when the LLM venv is absent and RAGPULSE_REQUIRE_LLM is unset; CI sets it after
running install.sh, so there a missing server is a failure, not a skip."""

from __future__ import annotations

import math
import os

import llm_server
import pytest

from ragpulse.core.metric_names import DEFAULT_METRICS
from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.openai.judge import OpenAIJudge
from ragpulse.scorer.metrics import METRICS

# RAGPULSE_LLM_BASE_URL: use a server that is already running (…/v1) instead of starting one.
RUNNING = os.environ.get("RAGPULSE_LLM_BASE_URL")

if not RUNNING and not llm_server.available() and not os.environ.get("RAGPULSE_REQUIRE_LLM"):
    pytest.skip(
        f"no LLM venv at {llm_server.llm_venv()} (run deploy/llm/install.sh; set RAGPULSE_REQUIRE_LLM=1 "
        "to make this a failure)",
        allow_module_level=True,
    )

# ~7 min alone on 2 cores; 15 min was not enough while other jobs loaded the machine.
pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

RECORDS = {
    "en_grounded": RecordText(
        question="When was the Eiffel Tower completed?",
        contexts=["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."],
        answer="The Eiffel Tower was completed in 1889.",
    ),
    "en_ungrounded": RecordText(
        question="When was the Eiffel Tower completed?",
        contexts=["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."],
        answer="The Eiffel Tower was completed in 1925 by Gustave Klimt.",
    ),
    "ja_grounded": RecordText(
        question="富士山の高さはどれくらいですか？",
        contexts=["富士山は日本で最も高い山です。標高は3776メートルです。"],
        answer="富士山の標高は3776メートルです。",
    ),
    "ja_noncommittal": RecordText(
        question="富士山の高さはどれくらいですか？",
        contexts=["富士山は日本で最も高い山です。標高は3776メートルです。"],
        answer="申し訳ありませんが、わかりません。",
    ),
}


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    with llm_server.openai_judge(tmp_path_factory.mktemp("llm")) as judge:
        yield judge


def score(judge: OpenAIJudge, rec: RecordText) -> tuple[dict[str, float | str], Usage]:
    total = Usage()
    out: dict[str, float | str] = {}
    for name in DEFAULT_METRICS:
        usage = Usage()
        try:
            out[name], _ = METRICS[name](judge, rec, usage)
        except Exception as exc:  # reported below; a failure must carry a reason, never a NaN
            out[name] = getattr(exc, "reason", repr(exc))
        total.add(usage)
    return out, total


def test_real_server_scores_english_and_japanese(judge):
    results = {key: score(judge, RecordText(r.question, r.contexts, r.answer)) for key, r in RECORDS.items()}
    for i, (key, (scores, usage)) in enumerate(results.items()):
        print(key, scores, usage)
        # At most 3 LLM calls for all three metrics (the local embedder's work is not a call); the
        # first record may add one: llama.cpp's server rejects json_schema once, and the judge
        # then uses JSON mode with the schema for the rest of the process.
        assert usage.calls <= (4 if i == 0 else 3), key
        assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    for key in ("en_grounded", "en_ungrounded", "ja_grounded"):
        scores, _ = results[key]
        for name, value in scores.items():
            assert isinstance(value, float) and not math.isnan(value) and 0.0 <= value <= 1.0, (key, name, value)
    assert results["en_grounded"][0]["faithfulness"] > results["en_ungrounded"][0]["faithfulness"]
    assert results["ja_grounded"][0]["faithfulness"] >= 0.5
    assert results["ja_noncommittal"][0]["answer_relevancy"] == 0.0
    # Temperature 0, seed and the verdict cache: the same record again costs nothing, same numbers.
    again, usage = score(judge, RECORDS["en_grounded"])
    assert again == results["en_grounded"][0]
    assert usage.prompt_tokens == 0
