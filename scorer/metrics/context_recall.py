"""Context recall = |reference statements attributable to the contexts| / |reference statements|
(Ragas): did retrieval find what a correct answer needs? Needs a reference answer; a record without
one is not scored (no failure counted)."""

from __future__ import annotations

from typing import Any

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure
from ragpulse.scorer.metrics.reference import reference_of, statements_of, support


def context_recall(judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]:
    reference = reference_of(rec)
    if not any(c.strip() for c in rec.contexts):
        raise MetricFailure("no_contexts", "context recall needs at least one non-empty context")
    statements = statements_of(judge, rec, reference, usage)
    attributed = support(judge, rec.question, rec.contexts, statements, usage)
    detail = {"reference_statements": [{"statement": s, "attributed": round(v, 3)}
                                       for s, v in zip(statements, attributed, strict=True)]}
    return sum(attributed) / len(attributed), detail
