"""Context precision without a reference: whether the contexts useful for the answer are ranked
first (Ragas's context precision, with "useful in arriving at the answer" as the relevance).

    score = sum_k precision@k * v_k / sum_k v_k,   precision@k = sum_{i<=k} v_i / k

over the contexts in retrieval order, v_k the judge's usefulness of context k (0/1 for an LLM's
verdict, a degree for the local judge). No useful context at all scores 0, as in Ragas: the
retrieval gave the answer nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure, checked_unit


def context_precision(judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]:
    if not any(c.strip() for c in rec.contexts):
        raise MetricFailure("no_contexts", "context precision needs at least one retrieved context")
    if not rec.answer.strip():
        raise MetricFailure("empty_answer", "context precision without a reference judges usefulness for the answer")
    useful = judge.useful_contexts(rec, usage)
    if len(useful) != len(rec.contexts):
        raise MetricFailure("invalid_judge_output", f"{len(useful)} verdicts for {len(rec.contexts)} contexts")
    useful = [checked_unit(v, "context usefulness") for v in useful]
    return average_precision(useful), {"usefulness": [round(v, 3) for v in useful]}


def average_precision(relevance: list[float]) -> float:
    v = np.asarray(relevance, dtype=float)
    if v.sum() <= 0:
        return 0.0
    precision_at_k = np.cumsum(v) / np.arange(1, len(v) + 1)
    return float((precision_at_k * v).sum() / v.sum())
