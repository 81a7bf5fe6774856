"""Redaction before a record leaves the pod: configured patterns become a fixed replacement."""

from __future__ import annotations

import re

from ragpulse.collector.extract.triple import Triple
from ragpulse.config import RedactionConfig

BUILTIN_PATTERNS = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    "credit_card": r"\b(?:\d[ -]?){13,16}\b",
    "phone": r"(?<!\w)\+?\d{1,3}[ -]?\(?\d{2,4}\)?[ -]?\d{3,4}[ -]?\d{3,4}(?!\w)",
}


class Redactor:
    def __init__(self, config: RedactionConfig) -> None:
        unknown = [b for b in config.builtin if b not in BUILTIN_PATTERNS]
        if unknown:
            raise ValueError(f"redaction.builtin: unknown {unknown}; known: {sorted(BUILTIN_PATTERNS)}")
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
