"""Answer correctness = w_f * factual F1 + w_s * semantic similarity with the reference (Ragas;
weights scorer.answer_correctness_weights, default 0.75 and 0.25).

Factual F1 = TP / (TP + (FP + FN) / 2) over statements: TP the answer's statements the reference
supports, FP the answer's statements it does not, FN the reference's statements the answer does
not support. A judge that answers degrees counts each statement by its degree. Needs a reference
answer; a record without one is not scored (no failure counted).
"""

from __future__ import annotations

from typing import Any

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metric_defaults import ANSWER_CORRECTNESS_WEIGHTS
from ragpulse.scorer.metrics.answer_similarity import answer_similarity
from ragpulse.scorer.metrics.base import MetricFailure
from ragpulse.scorer.metrics.reference import reference_of, statements_of, support


def answer_correctness(
    judge: Judge, rec: RecordText, usage: Usage, weights: tuple[float, float] = ANSWER_CORRECTNESS_WEIGHTS
) -> tuple[float, dict[str, Any]]:
    reference = reference_of(rec)
    if not rec.answer.strip():
        raise MetricFailure("empty_answer", "answer correctness needs an answer")
    try:
        claimed = statements_of(judge, rec, rec.answer, usage)
    except MetricFailure as e:
        if e.reason != "no_statements":
            raise
        claimed = []  # a noncommittal answer states none of the reference's facts: F1 = 0
    expected = statements_of(judge, rec, reference, usage)
    tp = sum(support(judge, rec.question, [reference], claimed, usage))
    fp = len(claimed) - tp
    fn = len(expected) - sum(support(judge, rec.question, [rec.answer], expected, usage))
    f1 = tp / (tp + (fp + fn) / 2) if tp > 0 else 0.0
    similarity, _ = answer_similarity(judge, rec, usage)
    factual_weight, similarity_weight = weights
    score = (factual_weight * f1 + similarity_weight * similarity) / (factual_weight + similarity_weight)
    return score, {"factual_f1": round(f1, 3), "similarity": round(similarity, 3),
                   "tp": round(tp, 3), "fp": round(fp, 3), "fn": round(fn, 3)}
