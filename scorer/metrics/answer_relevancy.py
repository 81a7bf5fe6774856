"""Answer relevancy = mean cosine similarity between the question and n questions generated from
the answer (Ragas §3); 0 when the answer is noncommittal."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure

DEFAULT_N = 3


def answer_relevancy(
    judge: Judge, rec: RecordText, usage: Usage, n: int = DEFAULT_N
) -> tuple[float, dict[str, Any]]:
    if not rec.answer.strip():
        raise MetricFailure("empty_answer", "answer relevancy needs an answer")
    generated = judge.questions(rec, n, usage)
    detail: dict[str, Any] = {"generated_questions": generated.questions, "noncommittal": generated.noncommittal}
    if generated.noncommittal:
        return 0.0, detail
    if not generated.questions:
        raise MetricFailure("no_questions", "the judge generated no question from the answer")
    vectors = judge.embed([rec.question, *generated.questions], usage)
    sims = vectors[1:] @ vectors[0]
    # Cosine can be slightly negative; the metric is defined on [0, 1].
    return float(np.clip(sims.mean(), 0.0, 1.0)), detail
