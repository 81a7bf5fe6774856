"""What the worker hands to its observers (the Prometheus exporter, drift, history) per scored record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ragpulse.core.wire import Record
from ragpulse.scorer.score import MetricOutcome


@dataclass(frozen=True)
class CascadeVerdict:
    """What the judge cascade (scorer/estimate/cascade.py) knows of a record, for the estimates."""

    # The offline judge's scores (failed metrics absent).
    offline: dict[str, float]
    # The probability that the expensive judge was asked (0 when its budget was spent).
    inclusion: float
    # The expensive judge's scores when it was asked (failed metrics absent), else None.
    judged: dict[str, float] | None
    # The offline judge's outcomes, details and failures included: shown beside the expensive
    # judge's when it was asked.
    offline_outcomes: dict[str, MetricOutcome] = field(default_factory=dict)
    # Per selection metric, the squared residual the allocation expects of this record's verdict
    # (the residual model's half of the estimates' variance).
    residual: dict[str, float] = field(default_factory=dict)


@dataclass
class ScoredRecord:
    # Its service, route and model labels are already bounded by the worker's LabelGuards (the
    # prometheus section), so no observer bounds them again.
    record: Record
    outcomes: dict[str, MetricOutcome]
    # Wall time to score the record, all metrics.
    seconds: float
    # The judge whose outcomes these are: with the cascade on, the offline one unless the expensive one
    # was asked.
    judge: str
    # Set when the judge cascade is on; `outcomes` are then the expensive judge's where it was asked.
    cascade: CascadeVerdict | None = None
    # That judge's model (the LLM's name, or the offline model's id and hash); empty where unknown.
    judge_model: str = ""
    # The metrics that have a score (a failed metric has none, never a 0 or NaN).
    values: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.values = {name: o.value for name, o in self.outcomes.items() if o.value is not None}


class ScoreObserver(Protocol):
    def on_scores(self, scored: ScoredRecord) -> None:
        """Called once per scored record, before its offset may be committed; must be thread-safe."""
        ...
