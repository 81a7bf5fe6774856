"""Scoring one record: run each configured metric over the judge, keep value or failure reason.

Shared by the streaming worker and the batch `ragpulse score` command, so both score the same way.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.base import Judge, JudgeError, RecordText, Usage
from ragpulse.scorer.metrics import METRICS, Metric, MetricFailure
from ragpulse.scorer.metrics.answer_correctness import answer_correctness
from ragpulse.scorer.metrics.answer_relevancy import answer_relevancy
from ragpulse.scorer.metrics.aspect_critique import aspect_functions
from ragpulse.scorer.metrics.base import NotApplicable
from ragpulse.scorer.metrics.selfcheck import SampleSource, selfcheck
from ragpulse.scorer.selfcheck_config import SelfCheckConfig

log = logging.getLogger(__name__)

# Judge reasons that mean "do not score this record at all" rather than "this metric failed".
SKIP_REASONS = frozenset({"budget_exhausted"})
# Judge reasons that mean "the judge is down, try this record again later" (its circuit breaker
# stayed open past its wait): the record waits, it is neither scored nor failed.
PAUSE_REASONS = frozenset({"circuit_open"})


class JudgeUnavailable(Exception):
    pass


class RecordSkipped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class MetricOutcome:
    value: float | None
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value}
        if self.error is not None:
            out["error"] = self.error
        if self.detail:
            out["detail"] = self.detail
        out["usage"] = {
            "calls": self.usage.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": round(self.usage.cost_usd, 8),
        }
        out["seconds"] = round(self.seconds, 4)
        return out


def metric_functions(config: ScorerConfig, names: list[str] | None = None, aspects: bool = True) -> dict[str, Metric]:
    """The metrics by name (default: scorer.metrics) with their settings, then, with `aspects`, one
    outcome per aspect-critique criterion (aspect_critique.py)."""
    out: dict[str, Metric] = {}
    for name in config.metrics if names is None else names:
        if name == "answer_relevancy":
            out[name] = functools.partial(answer_relevancy, n=config.answer_relevancy_questions)
        elif name == "answer_correctness":
            out[name] = functools.partial(answer_correctness, weights=tuple(config.answer_correctness_weights))
        elif name == "selfcheck":
            out[name] = functools.partial(selfcheck, source=_sample_generator(config.selfcheck),
                                          min_samples=config.selfcheck.min_samples)
        else:
            out[name] = METRICS[name]
    return out | (aspect_functions(config.aspects, config.aspect_strictness) if aspects else {})


def _sample_generator(config: SelfCheckConfig) -> SampleSource | None:
    if config.generator is None:
        return None
    # Imported here: without a generator, the openai SDK is never loaded.
    from ragpulse.scorer.judge.openai.generator import SampleGenerator

    return SampleGenerator(config.generator.endpoint(), config.generator.n)


def score_text(judge: Judge, metrics: dict[str, Metric], rec: RecordText) -> dict[str, MetricOutcome]:
    """Raises RecordSkipped when the judge refuses the whole record (its cost budget is spent)."""
    outcomes: dict[str, MetricOutcome] = {}
    for name, metric in metrics.items():
        usage = Usage()
        started = time.perf_counter()
        try:
            value, detail = metric(judge, rec, usage)
            if not isinstance(value, float | int) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise MetricFailure("invalid_value", f"{name} computed {value!r}")
            outcome = MetricOutcome(float(value), None, detail, usage)
        except JudgeError as e:
            if e.reason in SKIP_REASONS:
                raise RecordSkipped(e.reason) from e
            if e.reason in PAUSE_REASONS:
                raise JudgeUnavailable(e.reason) from e
            log.debug("judge failed on %s: %s", name, e)
            outcome = MetricOutcome(None, e.reason, usage=usage)
        except NotApplicable:
            continue  # e.g. a reference-based metric on a record without a reference: no outcome
        except MetricFailure as e:
            outcome = MetricOutcome(None, e.reason, usage=usage)
        outcome.seconds = time.perf_counter() - started
        outcomes[name] = outcome
    return outcomes
