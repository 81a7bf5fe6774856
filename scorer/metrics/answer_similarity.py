"""Answer semantic similarity = cosine of the answer's and the reference's embeddings (Ragas), cut
to [0, 1]. Needs a reference answer; a record without one is not scored (no failure counted)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure
from ragpulse.scorer.metrics.reference import reference_of


def answer_similarity(judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]:
    reference = reference_of(rec)
    if not rec.answer.strip():
        raise MetricFailure("empty_answer", "answer similarity needs an answer")
    vectors = judge.embed([rec.answer, reference], usage)
    return float(np.clip(vectors[0] @ vectors[1], 0.0, 1.0)), {}
