"""Redaction before a record leaves the pod: configured patterns become a fixed replacement."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragpulse.collector.extract.triple import Triple
from ragpulse.core.settings import ConfigError, key

BUILTIN_PATTERNS = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    "credit_card": r"\b(?:\d[ -]?){13,16}\b",
    "phone": r"(?<!\w)\+?\d{1,3}[ -]?\(?\d{2,4}\)?[ -]?\d{3,4}[ -]?\d{3,4}(?!\w)",
}


@dataclass
class RedactionConfig:
    # Redact question, contexts and answer in the collector, before a record reaches the bus.
    enabled: bool = False
    # Regular expressions; every match in question, contexts and answer becomes `replacement`.
    patterns: list[str] = field(default_factory=list)
    # Built-in patterns: email, credit_card, phone.
    builtin: list[str] = field(default_factory=lambda: ["email", "credit_card", "phone"])
    # What every match becomes.
    replacement: str = "[REDACTED]"

    def validate(self, where: str) -> None:
        unknown = [b for b in self.builtin if b not in BUILTIN_PATTERNS]
        if unknown:
            raise ConfigError(f"{key(where, 'builtin')}: unknown {unknown}; known: {sorted(BUILTIN_PATTERNS)}")
        for i, pattern in enumerate(self.patterns):
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"{key(where, 'patterns')}[{i}] is not a valid regular expression: {e}") from e


class Redactor:
    def __init__(self, config: RedactionConfig) -> None:
        patterns = [BUILTIN_PATTERNS[b] for b in config.builtin] + list(config.patterns)
        self._regex = re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None
        self._replacement = config.replacement

    def __call__(self, triple: Triple) -> Triple:
        if self._regex is None:
            return triple
        def sub(text: str) -> str:
            # A function, not a template, so backslashes in the replacement stay literal.
            return self._regex.sub(lambda _m: self._replacement, text)  # type: ignore[union-attr]

        triple.question = sub(triple.question)
        triple.answer = sub(triple.answer)
        triple.contexts = [sub(c) for c in triple.contexts]
        return triple
