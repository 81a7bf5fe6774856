"""The judge interface: the primitive questions every metric is built from.

A judge never computes a metric. Metrics (the metrics package) are written once over this interface;
the `local` and `openai` judges each answer the same primitive questions their own way.
A judge that cannot answer raises JudgeError with a short stable reason; it never returns a
made-up value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np


class JudgeError(Exception):
    """The judge could not answer. `reason` is a short label for counters (timeout, rate_limited,
    malformed_output, http_5xx, ...); the message carries the detail for logs at debug level."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass
class Usage:
    """What answering cost, accumulated per metric of one record."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.seconds += other.seconds
        self.cost_usd += other.cost_usd


@dataclass(frozen=True)
class GeneratedQuestions:
    questions: list[str]
    noncommittal: bool


@dataclass(frozen=True)
class Verdict:
    """How far the contexts support one statement, in [0, 1], and the context sentence the judge
    matched it to, so that a person can see why (None when the judge does not say)."""

    support: float
    evidence: str | None = None


@dataclass
class RecordText:
    """The text of one record as the judge sees it, with per-record memo space so that work
    shared by several metrics (embedding each context sentence) is done once per record."""

    question: str
    contexts: list[str]
    answer: str
    memo: dict[str, object] = field(default_factory=dict)
    # The reference (ground-truth) answer where the row or span gives one (rag.reference).
    reference: str | None = None
    # Other answers sampled for the same question (rag.samples), for SelfCheck consistency.
    samples: list[str] | None = None


class Judge(Protocol):
    name: str
    model: str

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        """Split the answer into self-contained claims (may be empty for a non-claim answer)."""
        ...

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> Sequence[float | Verdict]:
        """For each statement, the degree in [0, 1] to which the contexts support it: a Verdict
        with its evidence, or a bare number where the judge names none."""
        ...

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        """Up to n questions the answer would answer, and whether the answer is noncommittal."""
        ...

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        """For each context sentence, the degree in [0, 1] to which it is needed to answer."""
        ...

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        """L2-normalised embeddings, one row per text."""
        ...

    def useful_contexts(self, rec: RecordText, usage: Usage) -> list[float]:
        """For each retrieved context, in rank order, the degree in [0, 1] to which it was useful
        in arriving at the answer given (context precision without a reference)."""
        ...

    def critique(self, rec: RecordText, criterion: str, samples: int, usage: Usage) -> list[bool]:
        """`samples` independent yes/no verdicts on whether the answer meets the criterion (a
        question in words, any language). A judge that cannot judge it raises JudgeError
        (unsupported_by_judge)."""
        ...
