"""Context precision without a reference: the rank-aware formula, both judges' usefulness
verdicts on records with obvious answers, English and Japanese, and its failures."""

from __future__ import annotations

import pytest
from scripted_chat_client import ScriptedChatClient

from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.local.judge import LexicalJudge
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.judge.openai.judge import OpenAIJudge
from ragpulse.scorer.metrics import METRICS
from ragpulse.scorer.metrics.context_precision import average_precision, context_precision
from ragpulse.scorer.score import score_text

USEFUL_EN = "The Eiffel Tower was completed in 1889 for the World's Fair."
OFF_TOPIC_EN = "The Eiffel Tower is in Paris and is popular with tourists."
USEFUL_JA = "日本の首都は東京です。東京の人口は約1400万人です。"
OFF_TOPIC_JA = "富士山は日本で一番高い山です。"


def test_formula_rewards_useful_contexts_ranked_first() -> None:
    assert average_precision([1, 0]) == 1.0
    assert average_precision([0, 1]) == 0.5
    assert average_precision([1, 0, 1]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([0, 0, 1]) == pytest.approx(1 / 3)
    assert average_precision([1, 1, 1]) == 1.0
    assert average_precision([0, 0]) == 0.0  # nothing useful was retrieved


@pytest.fixture(scope="module")
def local() -> LexicalJudge:
    return LexicalJudge()


@pytest.mark.parametrize(("question", "useful", "off_topic", "answer"), [
    ("When was the Eiffel Tower completed?", USEFUL_EN, OFF_TOPIC_EN, "It was completed in 1889."),
    ("日本の首都はどこですか？", USEFUL_JA, OFF_TOPIC_JA, "日本の首都は東京です。"),
])
def test_local_judge_ranks_the_useful_context(local: LexicalJudge, question, useful, off_topic, answer) -> None:
    first, _ = context_precision(local, RecordText(question, [useful, off_topic], answer), Usage())
    last, detail = context_precision(local, RecordText(question, [off_topic, off_topic, useful], answer), Usage())
    assert first == 1.0
    assert last == pytest.approx(1 / 3)
    assert detail["usefulness"] == [0.0, 0.0, 1.0]


def test_answer_unrelated_to_every_context_scores_zero(local: LexicalJudge) -> None:
    rec = RecordText("When was the Eiffel Tower completed?", [OFF_TOPIC_EN], "Bananas are yellow.")
    assert context_precision(local, rec, Usage())[0] == 0.0


def test_failures_are_counted_not_scored(local: LexicalJudge) -> None:
    metrics = {"context_precision": METRICS["context_precision"]}
    no_contexts = score_text(local, metrics, RecordText("Q?", [], "An answer."))["context_precision"]
    assert no_contexts.value is None and no_contexts.error == "no_contexts"
    blank = score_text(local, metrics, RecordText("Q?", [" "], "An answer."))["context_precision"]
    assert blank.error == "no_contexts"
    empty = score_text(local, metrics, RecordText("Q?", [USEFUL_EN], " "))["context_precision"]
    assert empty.value is None and empty.error == "empty_answer"


def useful_by_words(system: str, data: dict) -> dict:
    """A stand-in model: a context is useful when it shares a number or a kanji pair with the answer."""
    assert '"useful"' in system
    answer = data["answer"]
    verdicts = [{"id": int(k), "useful": any(w in c for w in ("1889", "東京") if w in answer)}
                for k, c in data["contexts"].items()]
    return {"verdicts": verdicts[::-1]}  # matched by id, not by position


def openai_judge(client: ScriptedChatClient) -> OpenAIJudge:
    return OpenAIJudge(OpenAIJudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k",
                                         max_retries=0), client=client)  # type: ignore[arg-type]


@pytest.mark.parametrize(("question", "useful", "off_topic", "answer"), [
    ("When was the Eiffel Tower completed?", USEFUL_EN, OFF_TOPIC_EN, "It was completed in 1889."),
    ("日本の首都はどこですか？", USEFUL_JA, OFF_TOPIC_JA, "日本の首都は東京です。"),
])
def test_openai_judge_one_call_with_numbered_contexts(question, useful, off_topic, answer) -> None:
    client = ScriptedChatClient(useful_by_words)
    judge = openai_judge(client)
    score, detail = context_precision(judge, RecordText(question, [off_topic, useful, off_topic], answer), Usage())
    assert score == 0.5 and detail["usefulness"] == [0.0, 1.0, 0.0]
    assert len(client.requests) == 1
    sent = client.requests[0]["messages"][1]["content"]
    assert '"contexts": {"1":' in sent and answer in sent


def test_openai_judge_reply_with_a_missing_id_is_malformed(local: LexicalJudge) -> None:
    client = ScriptedChatClient(lambda system, data: {"verdicts": [{"id": 1, "useful": True}]})
    rec = RecordText("Q?", [USEFUL_EN, OFF_TOPIC_EN], "It was completed in 1889.")
    outcome = score_text(openai_judge(client), {"context_precision": METRICS["context_precision"]}, rec)
    assert outcome["context_precision"].value is None
    assert outcome["context_precision"].error == "malformed_output"
    assert len(client.requests) == 2  # the reply and its repair turn
