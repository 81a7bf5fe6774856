"""The offline `local` judge (the lexical one), on the real model files shipped by the pinned wordllama wheel.

Texts are written for these tests (not WikiEval, whose terms keep it out of the repository).
"""

from __future__ import annotations

import math
import shutil
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage, Verdict
from ragpulse.scorer.judge.local import LexicalJudge
from ragpulse.scorer.judge.local.model import TOKENIZER, WEIGHTS, ModelLoadError, package_dir
from ragpulse.scorer.metrics import METRICS, MetricFailure


@pytest.fixture(scope="module")
def judge() -> LexicalJudge:
    return LexicalJudge()


def score(judge: LexicalJudge, metric: str, question: str, contexts: list[str], answer: str) -> float:
    value, _ = METRICS[metric](judge, RecordText(question, contexts, answer), Usage())
    assert isinstance(value, float) and not math.isnan(value) and 0.0 <= value <= 1.0
    return value


EN_CONTEXT = [
    "The Harbour Lighthouse stands on the northern breakwater of Port Elsby. "
    "It was completed on Tuesday, 14 May 1872 and is 38 metres tall. "
    "The tower was designed by the engineer Margaret Collins. "
    "Its lamp was converted to electricity in 1931.",
    "Port Elsby is a fishing town with about 12,000 inhabitants. "
    "The town holds a seafood festival every summer.",
]
EN_QUESTION = "When was the Harbour Lighthouse completed and who designed it?"
EN_FAITHFUL = "The Harbour Lighthouse was completed on 14 May 1872. It was designed by Margaret Collins."
EN_UNFAITHFUL = "The Harbour Lighthouse was completed on Friday, 2 June 1890. It was designed by Thomas Reid."

JA_CONTEXT = [
    "みなと灯台はエルスビー港の北防波堤に立つ灯台です。1872年5月14日に完成し、高さは38メートルです。"
    "設計したのは技師のマーガレット・コリンズです。",
    "エルスビーは人口約1万2千人の漁業の町です。毎年夏に海産物の祭りが開かれます。",
]
JA_QUESTION = "みなと灯台はいつ完成し、誰が設計しましたか？"
JA_FAITHFUL = "みなと灯台は1872年5月14日に完成しました。設計したのはマーガレット・コリンズです。"
JA_UNFAITHFUL = "みなと灯台は1890年6月2日に完成しました。設計したのはトーマス・リードです。"


def test_loads_offline_and_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local judge tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    start = time.perf_counter()
    judge = LexicalJudge()
    assert time.perf_counter() - start < 5.0
    assert judge.name == "local" and "wordllama" in judge.model
    vectors = judge.embed(["a lighthouse on the coast", "灯台"], Usage())
    assert vectors.shape[0] == 2
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_checksum_mismatch_is_a_clear_error(tmp_path: Path) -> None:
    root = package_dir()
    for rel in (WEIGHTS, TOKENIZER):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, tmp_path / rel)
    with (tmp_path / WEIGHTS).open("r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x00\x01\x02\x03")
    with pytest.raises(ModelLoadError, match="checksum mismatch") as info:
        LexicalJudge(model_root=tmp_path)
    assert "wordllama==" in str(info.value)
    assert isinstance(info.value, JudgeError) and info.value.reason == "model_unavailable"


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="missing"):
        LexicalJudge(model_root=tmp_path)


@pytest.mark.parametrize(
    ("question", "contexts", "faithful", "unfaithful"),
    [
        (EN_QUESTION, EN_CONTEXT, EN_FAITHFUL, EN_UNFAITHFUL),
        (JA_QUESTION, JA_CONTEXT, JA_FAITHFUL, JA_UNFAITHFUL),
    ],
    ids=["en", "ja"],
)
def test_faithful_answer_ranks_above_unfaithful(
    judge: LexicalJudge, question: str, contexts: list[str], faithful: str, unfaithful: str
) -> None:
    good = score(judge, "faithfulness", question, contexts, faithful)
    bad = score(judge, "faithfulness", question, contexts, unfaithful)
    assert good > bad
    assert good >= 0.6 and bad <= 0.3


def test_wrong_date_is_not_supported(judge: LexicalJudge) -> None:
    rec = RecordText(EN_QUESTION, EN_CONTEXT, "")
    right, wrong = judge.verify(
        rec, ["It was completed on Tuesday, 14 May 1872.", "It was completed on Sunday, 14 July 1873."], Usage()
    )
    assert isinstance(right, Verdict) and isinstance(wrong, Verdict)
    assert right.support > 0.6 and wrong.support < 0.2
    assert right.evidence == "It was completed on Tuesday, 14 May 1872 and is 38 metres tall."


@pytest.mark.parametrize(
    ("question", "contexts", "answer", "off_topic"),
    [
        (EN_QUESTION, EN_CONTEXT, EN_FAITHFUL, "Port Elsby is a lovely town with a summer seafood festival."),
        (JA_QUESTION, JA_CONTEXT, JA_FAITHFUL, "エルスビーは美しい町で、夏には海産物の祭りがあります。"),
    ],
    ids=["en", "ja"],
)
def test_answer_relevancy_ranks_on_topic_above_off_topic(
    judge: LexicalJudge, question: str, contexts: list[str], answer: str, off_topic: str
) -> None:
    assert score(judge, "answer_relevancy", question, contexts, answer) > score(
        judge, "answer_relevancy", question, contexts, off_topic
    )


@pytest.mark.parametrize("contexts", [[], [""], ["..."], ["—"]], ids=["none", "empty", "dots", "dash"])
def test_answer_relevancy_needs_no_context_sentence(judge: LexicalJudge, contexts: list[str]) -> None:
    # It reads the contexts to link an answer to its source, but scores without them.
    value, _ = METRICS["answer_relevancy"](judge, RecordText(EN_QUESTION, contexts, EN_FAITHFUL), Usage())
    assert 0.0 < value <= 1.0


@pytest.mark.parametrize(
    "answer",
    ["I don't know.", "I'm sorry, but I cannot answer that.", "わかりません。", "その情報は提供されていません。"],
)
def test_noncommittal_answer_has_zero_relevancy(judge: LexicalJudge, answer: str) -> None:
    value, detail = METRICS["answer_relevancy"](judge, RecordText(EN_QUESTION, EN_CONTEXT, answer), Usage())
    assert value == 0.0 and detail["noncommittal"] is True


@pytest.mark.parametrize("answer", ["I don't know.", "わかりません。", "Yes."])
def test_answer_without_claims_is_a_metric_failure(judge: LexicalJudge, answer: str) -> None:
    with pytest.raises(MetricFailure) as info:
        METRICS["faithfulness"](judge, RecordText(EN_QUESTION, EN_CONTEXT, answer), Usage())
    assert info.value.reason == "no_statements"


@pytest.mark.parametrize(
    ("question", "focused", "padding"),
    [
        (EN_QUESTION, EN_CONTEXT[:1], "Fishing boats leave at dawn. The market sells fresh crab every morning."),
        (JA_QUESTION, JA_CONTEXT[:1], "漁船は夜明けに出港します。市場では毎朝新鮮なカニが売られています。"),
    ],
    ids=["en", "ja"],
)
def test_context_relevancy_drops_with_irrelevant_padding(
    judge: LexicalJudge, question: str, focused: list[str], padding: str
) -> None:
    answer = "irrelevant to this metric"
    assert score(judge, "context_relevancy", question, focused, answer) > score(
        judge, "context_relevancy", question, [*focused, padding], answer
    )


def test_degrees_are_in_unit_interval_and_never_nan(judge: LexicalJudge) -> None:
    rec = RecordText(EN_QUESTION, EN_CONTEXT, EN_FAITHFUL)
    sentences = ["The lamp was converted in 1931.", "Nothing here matches at all!", "灯台"]
    for values in (
        [v.support for v in judge.verify(rec, sentences, Usage())],  # type: ignore[union-attr]
        judge.relevant_sentences(rec, sentences, Usage()),
    ):
        assert len(values) == len(sentences)
        assert all(0.0 <= v <= 1.0 and not math.isnan(v) for v in values)


def test_context_sentences_are_embedded_once_per_record(judge: LexicalJudge) -> None:
    rec = RecordText(EN_QUESTION, EN_CONTEXT, EN_FAITHFUL)
    usage = Usage()
    for name in ("faithfulness", "context_relevancy"):
        METRICS[name](judge, rec, usage)
    index = rec.memo["local.contexts"]
    assert len(index.sentences) == 6  # type: ignore[attr-defined]
    again = Usage()
    METRICS["context_relevancy"](judge, rec, again)
    assert again.calls == 1  # only the question is embedded; the context index is reused


def test_text_without_any_token_is_a_judge_error(judge: LexicalJudge) -> None:
    with pytest.raises(JudgeError):
        judge.embed([""], Usage())


def test_statements_split_japanese_and_glued_sentences(judge: LexicalJudge) -> None:
    ja = RecordText(JA_QUESTION, JA_CONTEXT, "完成はいつですか？１８７２年です！設計者はコリンズです。")
    assert len(judge.statements(ja, Usage())) == 3
    en = RecordText(EN_QUESTION, EN_CONTEXT, "It was completed in 1872.It is 38 metres tall; it stands in Port Elsby.")
    expected = ["It was completed in 1872.", "It is 38 metres tall", "it stands in Port Elsby."]
    assert judge.statements(en, Usage()) == expected


def test_a_line_break_after_a_dot_ends_the_sentence_even_after_a_capital() -> None:
    from ragpulse.scorer.sentences import split_sentences

    # "F." reads as an initial within a line ("J. R. R. Tolkien"), not at its end.
    assert split_sentences("Roast at 375°F.\nRub the roast with salt. J. R. R. Tolkien wrote it.") == [
        "Roast at 375°F.", "Rub the roast with salt.", "J. R. R. Tolkien wrote it."]
    assert split_sentences("温度は375°F.\n塩を振ります。") == ["温度は375°F.", "塩を振ります。"]
