"""What the worker hands to its observers (the Prometheus exporter, drift, history) per scored record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ragpulse.core.wire import Record
from ragpulse.scorer.score import MetricOutcome


@dataclass
class ScoredRecord:
    # Its service, route and model labels are already bounded by the worker's LabelGuards (the
    # prometheus section), so no observer bounds them again.
    record: Record
    outcomes: dict[str, MetricOutcome]
    # Wall time to score the record, all metrics.
    seconds: float
    # The metrics that have a score (a failed metric has none, never a 0 or NaN).
    values: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        self.values = {name: o.value for name, o in self.outcomes.items() if o.value is not None}


class ScoreObserver(Protocol):
    def on_scores(self, scored: ScoredRecord) -> None:
        """Called once per scored record, before its offset may be committed; must be thread-safe."""
        ...
