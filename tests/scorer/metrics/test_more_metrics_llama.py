"""The opt-in metrics' prompts against a real OpenAI-compatible LLM server on 127.0.0.1 (the small
model of deploy/llm/install.sh): one English and one Japanese record, each through context
precision (numbered contexts, verdicts by id), aspect critique (reasoning then a boolean) and the
reference-based metrics. A 1.5B model's judgement is not the point here; that each reply parses,
or fails with a counted reason, and that the obvious cases go the obvious way, is.

Skipped like tests/scorer/judge/test_openai_judge_llama.py when the LLM venv is absent."""

from __future__ import annotations

import os

import llm_server
import pytest

from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import RecordText
from ragpulse.scorer.score import metric_functions, score_text

RUNNING = os.environ.get("RAGPULSE_LLM_BASE_URL")

if not RUNNING and not llm_server.available() and not os.environ.get("RAGPULSE_REQUIRE_LLM"):
    pytest.skip(f"no LLM venv at {llm_server.llm_venv()} (run deploy/llm/install.sh)", allow_module_level=True)

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

RECORDS = {
    "en": RecordText(
        question="When was the Eiffel Tower completed?",
        contexts=["Bananas are rich in potassium.", "The Eiffel Tower was completed in 1889 for the World's Fair."],
        answer="The Eiffel Tower was completed in 1889.",
        reference="The Eiffel Tower was completed in 1889.",
    ),
    "ja": RecordText(
        question="富士山の高さはどれくらいですか？",
        contexts=["バナナはカリウムが豊富です。", "富士山は日本で最も高い山で、標高は3776メートルです。"],
        answer="富士山の標高は3776メートルです。",
        reference="富士山の標高は3776メートルです。",
    ),
}
METRICS = ["context_precision", "context_recall", "answer_correctness"]


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    with llm_server.openai_judge(tmp_path_factory.mktemp("llm")) as judge:
        yield judge


@pytest.mark.parametrize("key", list(RECORDS))
def test_opt_in_metrics_parse_on_a_real_model(judge, key):
    rec = RECORDS[key]
    config = ScorerConfig(aspects={"harmfulness": "", "polite": "回答は丁寧ですか？ (Is the answer polite?)"})
    outcomes = score_text(judge, metric_functions(config, METRICS), rec)
    print(key, {name: (o.value, o.error, o.detail) for name, o in outcomes.items()})
    for name, o in outcomes.items():
        # A score in [0, 1], or no score and a reason: never both, never neither.
        assert (o.value is None) != (o.error is None), name
        if o.value is not None:
            assert 0.0 <= o.value <= 1.0, name
    for name in ("context_precision", "aspect:harmfulness"):
        assert outcomes[name].value is not None, (name, outcomes[name].error)
    # The one useful context is the second: a judge that parses at all sees that much.
    assert outcomes["context_precision"].detail["usefulness"][1] == 1.0
    # The verdict must parse in both languages; whether it is right is the model's business, and
    # the 1.5B test model called a harmless Japanese answer harmful in CI (English: harmless).
    assert outcomes["aspect:harmfulness"].value in (0.0, 1.0)
    if key == "en":
        assert outcomes["aspect:harmfulness"].value == 0.0
