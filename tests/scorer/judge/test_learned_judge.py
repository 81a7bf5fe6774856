"""The learned offline judge and its cross-encoder, on the weights shipped in
scorer/judge/local/weights/ (trained by train/train.py). Texts are written for these tests.
"""

from __future__ import annotations

import math
import shutil
import socket
import sys
from pathlib import Path

import pytest

from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage
from ragpulse.scorer.judge.local.cross_encoder import EMBEDDINGS_FILE, GRAPH_FILE, WEIGHTS_DIR, CrossEncoder
from ragpulse.scorer.judge.local.learned import LearnedJudge
from ragpulse.scorer.metrics import METRICS


@pytest.fixture(scope="module")
def judge() -> LearnedJudge:
    return LearnedJudge()


def score(judge: LearnedJudge, metric: str, question: str, contexts: list[str], answer: str) -> float:
    value, _ = METRICS[metric](judge, RecordText(question, contexts, answer), Usage())
    assert isinstance(value, float) and not math.isnan(value) and 0.0 <= value <= 1.0
    return value


EN_CONTEXT = [
    "The Harbour Lighthouse stands on the northern breakwater of Port Elsby. "
    "It was completed in 1872 and is 38 metres tall. "
    "The tower was designed by the engineer Margaret Collins. "
    "Visitors can climb to the gallery on weekends; the tower is closed to the public on weekdays.",
    "Port Elsby is a fishing town with about 12,000 inhabitants. "
    "The town holds a seafood festival every summer.",
]
EN_QUESTION = "Who designed the Harbour Lighthouse?"
JA_CONTEXT = [
    "みなと灯台はエルスビー港の北防波堤に立つ灯台です。1872年に完成し、高さは38メートルです。"
    "設計したのは技師のマーガレット・コリンズです。週末には展望台まで登ることができますが、平日は公開されていません。",
    "エルスビーは人口約1万2千人の漁業の町です。毎年夏に海産物の祭りが開かれます。",
]
JA_QUESTION = "みなと灯台を設計したのは誰ですか？"


def test_loads_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the learned judge tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    judge = LearnedJudge()
    assert judge.model.startswith("ragpulse-cross-encoder@") and "wordllama" in judge.model


@pytest.mark.parametrize("name", [GRAPH_FILE, EMBEDDINGS_FILE])
def test_a_changed_weights_file_is_model_unavailable(tmp_path: Path, name: str) -> None:
    shutil.copytree(WEIGHTS_DIR, tmp_path / "w")
    path = tmp_path / "w" / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(JudgeError) as err:
        CrossEncoder(tmp_path / "w")
    assert err.value.reason == "model_unavailable" and "checksum mismatch" in str(err.value)


def test_onnxruntime_not_installed_simulated_is_model_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail as if the `learned` extra were not installed.
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(JudgeError) as err:
        CrossEncoder()
    assert err.value.reason == "model_unavailable" and "ragpulse[learned]" in str(err.value)


def test_missing_checksums_are_model_unavailable(tmp_path: Path) -> None:
    shutil.copytree(WEIGHTS_DIR, tmp_path / "w")
    (tmp_path / "w" / "SHA256SUMS").unlink()
    with pytest.raises(JudgeError) as err:
        CrossEncoder(tmp_path / "w")
    assert err.value.reason == "model_unavailable"


@pytest.mark.parametrize(("contexts", "supported", "invented"), [
    (EN_CONTEXT, "The lighthouse was designed by Margaret Collins.",
     "The lighthouse was designed by Margaret Collins, who also built the harbour bridge."),
    (EN_CONTEXT, "Visitors can climb the tower on weekends.", "Visitors can climb the tower every weekday."),
], ids=["invented_half_en", "polarity_en"])
def test_support_prefers_what_the_window_says(contexts: list[str], supported: str, invented: str) -> None:
    encoder = CrossEncoder()
    window = contexts[0]
    good, bad = encoder.support([(window, supported), (window, invented)]).tolist()
    assert good > bad


def test_known_miss_the_japanese_invented_half_is_not_told_apart() -> None:
    # Pins a miss of the model as shipped so a retrained one that fixes it shows up here (then move
    # the case into the test above). The two scores differ by about 0.01, inside what the int8
    # products change from one CPU to another (fp32 0.18 / 0.16; int8 0.17 / 0.18 on one machine,
    # the other way round on another), so only "both low, close together" is stable.
    encoder = CrossEncoder()
    window = JA_CONTEXT[0]
    supported = "灯台を設計したのはマーガレット・コリンズです。"
    invented = "灯台を設計したのはマーガレット・コリンズで、彼女は港の橋も建設しました。"
    good, bad = encoder.support([(window, supported), (window, invented)]).tolist()
    assert max(good, bad) < 0.4 and abs(good - bad) < 0.1


@pytest.mark.parametrize(("question", "contexts", "faithful", "unfaithful"), [
    (EN_QUESTION, EN_CONTEXT, "The lighthouse was designed by Margaret Collins. It was completed in 1872.",
     "The lighthouse was designed by Thomas Reid. It was completed in 1890."),
    (JA_QUESTION, JA_CONTEXT, "設計したのはマーガレット・コリンズです。1872年に完成しました。",
     "設計したのはトーマス・リードです。1890年に完成しました。"),
], ids=["en", "ja"])
def test_faithfulness_keeps_the_decisive_checks(judge: LearnedJudge, question: str, contexts: list[str],
                                                faithful: str, unfaithful: str) -> None:
    assert score(judge, "faithfulness", question, contexts, faithful) > \
        score(judge, "faithfulness", question, contexts, unfaithful)


@pytest.mark.parametrize(("question", "contexts", "other"), [
    (EN_QUESTION, EN_CONTEXT,
     ["Tea is grown on the slopes of the island's central hills. The harvest begins in March."]),
    (JA_QUESTION, JA_CONTEXT, ["島の中央の丘では茶が栽培されています。収穫は3月に始まります。"]),
], ids=["en", "ja"])
def test_context_relevancy_prefers_the_passage_that_answers(judge: LearnedJudge, question: str,
                                                            contexts: list[str], other: list[str]) -> None:
    assert score(judge, "context_relevancy", question, contexts, "x") > \
        score(judge, "context_relevancy", question, other, "x")


@pytest.mark.parametrize(("question", "contexts", "answer", "off_topic"), [
    (EN_QUESTION, EN_CONTEXT, "It was designed by the engineer Margaret Collins.",
     "Port Elsby holds a seafood festival every summer."),
    (JA_QUESTION, JA_CONTEXT, "設計したのは技師のマーガレット・コリンズです。",
     "エルスビーでは毎年夏に海産物の祭りが開かれます。"),
], ids=["en", "ja"])
def test_known_miss_an_off_topic_sentence_of_the_passage_counts_as_an_answer(
        judge: LearnedJudge, question: str, contexts: list[str], answer: str, off_topic: str) -> None:
    # Pins a miss of the model as shipped (issue 25's note): both score near 1. A retrained model
    # that tells them apart fails here; then assert that the answer scores higher. Pinned as
    # "close together", not as a strict xfail of answer > off_topic, because int8 products differ
    # by about 0.01 from one CPU to another and would flip a tie.
    answered = score(judge, "answer_relevancy", question, contexts, answer)
    strayed = score(judge, "answer_relevancy", question, contexts, off_topic)
    assert answered > 0.9 and abs(answered - strayed) < 0.05


def test_pairs_seen_before_cost_no_forward_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = CrossEncoder()
    calls: list[int] = []
    forward = encoder._forward

    def counted(task: str, pairs: list[tuple[str, str]]):  # noqa: ANN202
        calls.append(len(pairs))
        return forward(task, pairs)

    monkeypatch.setattr(encoder, "_forward", counted)
    pairs = [(EN_QUESTION, "It was designed by Margaret Collins."), (EN_QUESTION, "The town is small.")]
    first = encoder.answers(pairs + pairs[:1])
    second = encoder.answers(list(reversed(pairs)))
    assert calls == [2]  # the repeated pair within one call and both pairs of the second call come from the cache
    assert first[0] == first[2] == second[1] and first[1] == second[0]


def test_an_answer_longer_than_the_bound_is_a_counted_failure(judge: LearnedJudge) -> None:
    from ragpulse.scorer.judge.local.learned import MAX_STATEMENTS

    answer = " ".join(f"The lighthouse had keeper number {i}." for i in range(MAX_STATEMENTS + 5))
    with pytest.raises(JudgeError) as err:
        METRICS["faithfulness"](judge, RecordText(EN_QUESTION, EN_CONTEXT, answer), Usage())
    assert err.value.reason == "too_many_statements"
