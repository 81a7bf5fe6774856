"""Reference-based metrics (context recall, answer similarity, answer correctness): obvious answers
with the local judge in English and Japanese, the exact formulas on a judge with fixed verdicts,
silence on records without a reference, the weights setting and the span attribute."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ragpulse.collector.extract.triple import make_triple
from ragpulse.config import ConfigError, load_config
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import GeneratedQuestions, RecordText, Usage
from ragpulse.scorer.judge.local.judge import LexicalJudge
from ragpulse.scorer.metrics.answer_correctness import answer_correctness
from ragpulse.scorer.record_text import span_reference
from ragpulse.scorer.score import metric_functions, score_text

REFERENCE_METRICS = ["context_recall", "answer_similarity", "answer_correctness"]
CASES = {
    "en": dict(
        question="When was the Eiffel Tower completed and who designed it?",
        contexts=["The Eiffel Tower in Paris was completed in 1889 for the World's Fair. It was designed by the "
                  "company of Gustave Eiffel."],
        unrelated=["Bananas are rich in potassium and grow in tropical climates."],
        reference="The Eiffel Tower was completed in 1889. It was designed by Gustave Eiffel's company.",
        right="The Eiffel Tower was completed in 1889 and designed by Gustave Eiffel's company.",
        wrong="The Eiffel Tower was completed in 1925 by Marco Rossi."),
    "ja": dict(
        question="日本の首都はどこで、人口は何人ですか？",
        contexts=["日本の首都は東京です。東京の人口は約1400万人です。"],
        unrelated=["富士山は静岡県と山梨県にまたがる山です。"],
        reference="日本の首都は東京です。東京の人口は約1400万人です。",
        right="日本の首都は東京で、人口は約1400万人です。",
        wrong="日本の首都は大阪で、人口は約300万人です。"),
}


@pytest.fixture(scope="module")
def local() -> LexicalJudge:
    return LexicalJudge()


def scores(judge, case: dict, answer: str, contexts: list[str] | None = None) -> dict[str, float | None]:
    rec = RecordText(case["question"], contexts or case["contexts"], answer, reference=case["reference"])
    return {k: o.value for k, o in score_text(judge, metric_functions(ScorerConfig(), REFERENCE_METRICS),
                                                 rec).items()}


@pytest.mark.parametrize("language", ["en", "ja"])
def test_right_answer_beats_wrong_one(local: LexicalJudge, language: str) -> None:
    case = CASES[language]
    right, wrong = scores(local, case, case["right"]), scores(local, case, case["wrong"])
    assert right["answer_correctness"] > 0.75 > 0.25 > wrong["answer_correctness"]
    assert right["answer_similarity"] > wrong["answer_similarity"]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_context_recall_finds_the_reference_in_the_contexts(local: LexicalJudge, language: str) -> None:
    case = CASES[language]
    found = scores(local, case, case["right"])["context_recall"]
    missed = scores(local, case, case["right"], contexts=case["unrelated"])["context_recall"]
    assert found > 0.8 and missed < 0.2


def test_no_reference_no_outcome_and_no_failure(local: LexicalJudge) -> None:
    case = CASES["en"]
    metrics = metric_functions(ScorerConfig(), ["faithfulness", *REFERENCE_METRICS])
    for reference in (None, "", "  "):
        outcomes = score_text(local, metrics, RecordText(case["question"], case["contexts"], case["right"],
                                                         reference=reference))
        assert list(outcomes) == ["faithfulness"]


def test_noncommittal_answer_is_not_correct(local: LexicalJudge) -> None:
    case = CASES["en"]
    outcome = scores(local, case, "I don't know.")
    assert outcome["answer_correctness"] == pytest.approx(0.25 * outcome["answer_similarity"])


class FixedJudge:
    """Statements and verdicts fixed by hand: the answer claims a1, a2; the reference r1, r2, r3."""

    name = model = "fixed"

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        return ["a1", "a2"] if rec.answer == "a1 a2" else ["r1", "r2", "r3"]

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[float]:
        truth = {"a1": 1.0, "a2": 0.0, "r1": 1.0, "r2": 0.0, "r3": 0.0}
        return [truth[s] for s in statements]

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        return GeneratedQuestions(["q"], False)

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        return np.array([[1.0, 0.0], [0.6, 0.8]])[: len(texts)]  # cosine 0.6


def test_formula_on_fixed_verdicts() -> None:
    rec = RecordText("q", ["c"], "a1 a2", reference="r1 r2 r3")
    # TP 1 (a1), FP 1 (a2), FN 2 (r2, r3): F1 = 1 / (1 + 3/2) = 0.4; similarity 0.6.
    score, detail = answer_correctness(FixedJudge(), rec, Usage())  # type: ignore[arg-type]
    assert detail["factual_f1"] == 0.4 and detail["similarity"] == 0.6
    assert score == pytest.approx(0.75 * 0.4 + 0.25 * 0.6)
    assert answer_correctness(FixedJudge(), rec, Usage(), weights=(1.0, 0.0))[0] == pytest.approx(0.4)
    assert answer_correctness(FixedJudge(), rec, Usage(), weights=(0.0, 2.0))[0] == pytest.approx(0.6)


def test_weights_from_config(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"scorer": {"answer_correctness_weights": [1.0, 0.0]}}))
    config = load_config(path, environ={})
    fn = metric_functions(config.scorer, ["answer_correctness"])["answer_correctness"]
    rec = RecordText("q", ["c"], "a1 a2", reference="r1 r2 r3")
    assert fn(FixedJudge(), rec, Usage())[0] == pytest.approx(0.4)  # type: ignore[arg-type]
    path.write_text(yaml.safe_dump({"scorer": {"answer_correctness_weights": [0.5]}}))
    with pytest.raises(ConfigError, match="answer_correctness_weights"):
        load_config(path, environ={})


def test_reference_travels_on_the_record_and_only_when_given() -> None:
    with_ref = make_triple("q", ["c"], "a", "m", {"rag.reference": "The answer.", "other": "x"})
    without = make_triple("q", ["c"], "a", "m", {"other": "x"})
    assert with_ref.attributes == {"rag.reference": "The answer."} and without.attributes == {}
    record = Record(trace_id="t", span_id="s", service="svc", question="q", contexts=["c"], answer="a",
                    time_unix_nano=0, sampling=Sampling(1.0, 1.0, "test"), attributes=with_ref.attributes)
    assert span_reference(Record.from_json(record.to_json()).attributes) == "The answer."
    assert span_reference({}) is None and span_reference({"rag.reference": 3}) is None


def test_batch_reference_column(tmp_path: Path) -> None:
    case = CASES["en"]
    rows = [{"id": 1, "question": case["question"], "contexts": case["contexts"], "answer": case["right"],
             "reference": case["reference"]},
            {"id": 2, "question": case["question"], "contexts": case["contexts"], "answer": case["right"]}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    result = subprocess.run([sys.executable, "-m", "ragpulse.cli", "score", "--input", str(source), "--output",
                             str(out), "--metrics", *REFERENCE_METRICS], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert first["answer_correctness"] > 0.75 and "answer_correctness" not in second
    line = next(x for x in result.stdout.splitlines() if x.startswith("answer_correctness"))
    assert line.split()[1] == "1" and line.split()[4] == "0"  # one scored, no failure


def test_openai_judge_reads_the_reference_and_checks_it_against_the_contexts() -> None:
    from scripted_chat_client import ScriptedChatClient

    from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
    from ragpulse.scorer.judge.openai.judge import OpenAIJudge

    def model(system: str, data: dict) -> dict:
        if '"verdicts"' in system:  # supported: the claim is written in the contexts
            evidence = "".join(data["contexts"])
            return {"verdicts": [{"id": int(k), "supported": s in evidence} for k, s in data["statements"].items()]}
        claims = [s + "。" for s in data["answer"].split("。") if s]
        return {"statements": claims, "questions": ["q"] * 3, "noncommittal": False}

    client = ScriptedChatClient(model)
    judge = OpenAIJudge(OpenAIJudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key="k", max_retries=0),
                        client=client)  # type: ignore[arg-type]
    contexts = ["日本の首都は東京です。富士山は日本一高い山です。"]
    rec = RecordText("日本について教えてください。", contexts, "東京が首都です。",
                     reference="日本の首都は東京です。日本の人口は約1億2千万人です。")
    outcome = score_text(judge, metric_functions(ScorerConfig(), ["context_recall"]), rec)["context_recall"]
    assert outcome.value == 0.5  # the capital is in the contexts, the population is not
    assert [s["statement"] for s in outcome.detail["reference_statements"]] == ["日本の首都は東京です。",
                                                                                "日本の人口は約1億2千万人です。"]
