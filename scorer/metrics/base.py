"""What a metric is: a function of (judge, record text, usage) to a value in [0, 1] plus detail."""

from __future__ import annotations

import math
from typing import Any, Protocol

from ragpulse.scorer.judge.base import Judge, RecordText, Usage


class MetricFailure(Exception):
    """The metric is undefined for this record (no statements, no contexts, ...). Counted by
    `reason`; never turned into a score."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class NotApplicable(Exception):  # noqa: N818 - a signal, not an error
    """The metric does not apply to this record (a reference-based metric, no reference): no
    outcome at all, neither a score nor a counted failure."""


class Metric(Protocol):
    def __call__(self, judge: Judge, rec: RecordText, usage: Usage) -> tuple[float, dict[str, Any]]: ...


def checked_unit(value: float, what: str) -> float:
    """A judge answer outside [0, 1] or NaN is a judge fault, not a score."""
    if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise MetricFailure("invalid_judge_output", f"{what} gave {value!r}, expected a number in [0, 1]")
    return float(value)
