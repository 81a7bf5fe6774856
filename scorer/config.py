"""Settings of the scorer: judge, metrics, concurrency, scoring windows. Section `scorer`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragpulse.core.metric_names import DEFAULT_BAD_EVENT_THRESHOLDS, DEFAULT_METRICS, METRIC_NAMES
from ragpulse.core.settings import ConfigError, key, require_at_least, require_one_of, require_probability
from ragpulse.scorer.estimate.config import CascadeConfig
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
from ragpulse.scorer.metric_defaults import ANSWER_CORRECTNESS_WEIGHTS, BUILTIN_ASPECTS, definition
from ragpulse.scorer.selfcheck_config import SelfCheckConfig

# The offline judges (no API key): `local`, rules and static embeddings, and `learned`, the same
# with a cross-encoder's answers (docs/design/local-judge.md; not the default: bench/RESULTS.md).
OFFLINE_JUDGES = ("local", "learned")
JUDGES = (*OFFLINE_JUDGES, "openai")
ASPECT_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


@dataclass
class ScorerConfig:
    # local (offline, no API key), learned (offline, with a small cross-encoder; slower) or openai
    # (any OpenAI-compatible endpoint).
    judge: str = "local"
    # Settings of the `openai` judge; required when judge is openai.
    openai: OpenAIJudgeConfig | None = None
    # Metrics computed for every record. context_precision and the reference-based ones
    # (context_recall, answer_similarity, answer_correctness) are opt-in: more judge calls a record.
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    # Answer correctness = (factual F1 x first + similarity x second) / their sum (Ragas: 0.75, 0.25).
    answer_correctness_weights: list[float] = field(default_factory=lambda: list(ANSWER_CORRECTNESS_WEIGHTS))
    # Aspect critique: criteria each record's answer is judged by, yes or no, as name: definition
    # (a question in words, any language). An empty definition of harmfulness, maliciousness,
    # coherence, correctness or conciseness takes Ragas's. Exported as the share of yes per
    # criterion (ragpulse_aspect_verdicts_total). The local judge judges none of them
    # (unsupported_by_judge): it needs the openai judge.
    aspects: dict[str, str] = field(default_factory=dict)
    # Verdicts drawn per criterion and record, the majority deciding (odd: no ties).
    aspect_strictness: int = 1
    # Questions generated from each answer for answer relevancy (the paper's n).
    answer_relevancy_questions: int = 3
    # SelfCheck consistency (metric selfcheck): where its sampled answers come from.
    selfcheck: SelfCheckConfig = field(default_factory=SelfCheckConfig)
    # Records scored at the same time. Unset: 1 with the local judge (the CPU is the limit); with
    # the openai judge, openai.max_concurrency: a record waits on one request at a time, so fewer
    # records would leave request slots idle (twice as many were measured no faster).
    concurrency: int | None = None
    # Window (records per service and metric) of the rolling-mean gauge.
    rolling_window: int = 200
    # A score below this counts as a bad event for the error-budget alerts.
    bad_event_threshold: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BAD_EVENT_THRESHOLDS))
    # Attempts at one record before it goes to the dead-letter sink: attempts that raised an
    # unexpected error, and (Kafka) scorer processes that died while scoring it.
    max_attempts: int = 3
    # Scores messages kept in memory for the live page.
    recent_scores: int = 500
    # The offline judge scores every record, `judge` a share chosen by those scores; exported
    # estimates combine both (docs/estimates.md). Off by default.
    cascade: CascadeConfig = field(default_factory=CascadeConfig)

    def validate(self, where: str) -> None:
        for name in self.metrics:
            if name not in METRIC_NAMES:
                raise ConfigError(
                    f"{key(where, 'metrics')}: unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}")
        for name, text in self.aspects.items():
            if not ASPECT_NAME.fullmatch(name):
                raise ConfigError(f"{key(where, 'aspects')}: {name!r} must be lower-case letters, digits and _ "
                                  "(it becomes a label value)")
            if not definition(name, text):
                raise ConfigError(f"{key(where, f'aspects.{name}')}: give a definition (built-ins: "
                                  f"{', '.join(BUILTIN_ASPECTS)})")
        weights = self.answer_correctness_weights
        if len(weights) != 2 or any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ConfigError(f"{key(where, 'answer_correctness_weights')}: two weights >= 0, not both 0 "
                              f"(factual, similarity); got {weights}")
        if self.aspect_strictness < 1 or self.aspect_strictness % 2 == 0:
            raise ConfigError(f"{key(where, 'aspect_strictness')} must be an odd number >= 1, not "
                              f"{self.aspect_strictness}")
        for name, threshold in self.bad_event_threshold.items():
            # Aspect critiques are verdicts (yes/no shares, ragpulse_aspect_verdicts_total), and some
            # are bad when yes: a "below the threshold" rule would count the wrong side for them.
            if name not in METRIC_NAMES:
                raise ConfigError(f"{key(where, 'bad_event_threshold')}: unknown metric {name!r}; known: "
                                  f"{', '.join(METRIC_NAMES)} (aspect critiques take no threshold)")
            require_probability(key(where, f"bad_event_threshold.{name}"), threshold)
        require_one_of(key(where, "judge"), self.judge, JUDGES)
        if self.judge == "openai" and self.openai is None:
            raise ConfigError(
                f"{key(where, 'judge')} is openai: set {key(where, 'openai.model')} "
                "(and base_url for a non-OpenAI endpoint)"
            )
        if self.cascade.enabled:
            if self.judge in OFFLINE_JUDGES:
                raise ConfigError(f"{key(where, 'cascade.enabled')}: the {self.judge} judge already scores every "
                                  f"record; set {key(where, 'judge')} to the expensive judge (openai)")
            for name in self.cascade.selection_metrics:
                if name not in self.metrics:
                    raise ConfigError(f"{key(where, 'cascade.selection_metrics')}: {name!r} is not in "
                                      f"{key(where, 'metrics')}")
        if self.concurrency is not None:
            require_at_least(key(where, "concurrency"), self.concurrency, 1)
        for name in ("answer_relevancy_questions", "rolling_window", "max_attempts", "recent_scores"):
            require_at_least(key(where, name), getattr(self, name), 1)

    def records_in_flight(self) -> int:
        """scorer.concurrency, or the value derived from the judge when it is unset."""
        if self.concurrency is not None:
            return self.concurrency
        if self.judge == "openai" and self.openai is not None:
            return self.openai.max_concurrency
        return 1
