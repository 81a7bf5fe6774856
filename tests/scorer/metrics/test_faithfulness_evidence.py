"""The faithfulness metric's detail: each statement's verdict with the evidence the judge names, or
null for a judge that names none (the openai judge returns bare numbers)."""

from __future__ import annotations

import numpy as np

from ragpulse.scorer.judge.base import GeneratedQuestions, RecordText, Usage, Verdict
from ragpulse.scorer.metrics import METRICS


class FixedJudge:
    name = "fixed"
    model = "none"

    def __init__(self, verdicts: list[float | Verdict]) -> None:
        self.verdicts = verdicts

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        return ["First claim.", "Second claim."]

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[float | Verdict]:
        return self.verdicts

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        return GeneratedQuestions([rec.question], False)

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        return [1.0] * len(sentences)

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        return np.ones((len(texts), 2)) / np.sqrt(2.0)


def faithfulness(verdicts: list[float | Verdict]) -> tuple[float, dict]:
    rec = RecordText("q", ["Some context."], "First claim. Second claim.")
    return METRICS["faithfulness"](FixedJudge(verdicts), rec, Usage())


def test_verdicts_with_evidence_reach_the_detail() -> None:
    value, detail = faithfulness([Verdict(1.0, "Some context."), Verdict(0.0, "Some context.")])
    assert value == 0.5
    assert detail["statements"] == [
        {"statement": "First claim.", "verdict": 1.0, "evidence": "Some context."},
        {"statement": "Second claim.", "verdict": 0.0, "evidence": "Some context."},
    ]


def test_bare_numbers_are_verdicts_without_evidence() -> None:
    value, detail = faithfulness([1.0, 0.5])
    assert value == 0.75
    assert [s["evidence"] for s in detail["statements"]] == [None, None]


def test_long_evidence_is_cut() -> None:
    long = "x" * 5000  # an unpunctuated context: one "sentence" as long as the context
    _, detail = faithfulness([Verdict(1.0, long), Verdict(1.0, "short")])
    first, second = (s["evidence"] for s in detail["statements"])
    assert len(first) == 400 and first.endswith("…") and second == "short"
