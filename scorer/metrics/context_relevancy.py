"""Context relevancy = |context sentences needed to answer the question| / |context sentences|
(Ragas §3). With a judge that answers degrees, a sentence counts by that degree."""

from __future__ import annotations

from typing import Any

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure, checked_unit
from ragpulse.scorer.sentences import context_sentences


def context_relevancy(judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]:
    sentences = context_sentences(rec.contexts)
    if not sentences:
        raise MetricFailure("no_contexts", "context relevancy needs at least one context sentence")
    needed = judge.relevant_sentences(rec, sentences, usage)
    if len(needed) != len(sentences):
        raise MetricFailure("invalid_judge_output", f"{len(needed)} verdicts for {len(sentences)} sentences")
    needed = [checked_unit(v, "sentence relevance") for v in needed]
    return sum(needed) / len(sentences), {"sentences": len(sentences), "needed": round(sum(needed), 3)}
