"""Aspect critique (Ragas): a yes/no verdict on the answer against a criterion written in words,
sampled `strictness` times, the majority deciding. A record's outcome per criterion is 1 (yes) or 0
(no); exported as the share of yes per criterion. A judge that cannot judge a criterion, or a
verdict that is neither yes nor no, is a counted failure, never a made-up verdict.

Each criterion is its own outcome, named ASPECT_PREFIX + its name, beside the metrics.
"""

from __future__ import annotations

import functools
from typing import Any

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metric_defaults import definition
from ragpulse.scorer.metrics.base import Metric, MetricFailure

ASPECT_PREFIX = "aspect:"

def aspect_functions(aspects: dict[str, str], strictness: int) -> dict[str, Metric]:
    return {f"{ASPECT_PREFIX}{name}": functools.partial(aspect_verdict, criterion=definition(name, text),
                                                        strictness=strictness)
            for name, text in aspects.items()}


def aspect_verdict(
    judge: Judge, rec: RecordText, usage: Usage, criterion: str, strictness: int
) -> tuple[float, dict[str, Any]]:
    if not rec.answer.strip():
        raise MetricFailure("empty_answer", "aspect critique judges an answer")
    votes = judge.critique(rec, criterion, strictness, usage)
    if len(votes) != strictness or not all(isinstance(v, bool) for v in votes):
        raise MetricFailure("invalid_judge_output", f"{votes!r} for {strictness} samples")
    yes = sum(votes)
    return (1.0 if 2 * yes > strictness else 0.0), {"yes_votes": yes, "samples": strictness}
