"""Redaction before a record leaves the pod: built-in detectors put numbered placeholders where
personal data was ([EMAIL_1], [PHONE_2]), the operator's own patterns a fixed replacement.

A value gets the same placeholder everywhere in one record, question, contexts, answer and
attributes alike, so a judge still sees that the answer repeats what the context said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ragpulse.collector.extract.triple import Triple
from ragpulse.collector.pii_detectors import DETECTORS, Detector
from ragpulse.core.settings import ConfigError, key


@dataclass
class RedactionConfig:
    # Redact question, contexts, answer, route, model, the record's attributes and service.name in
    # the collector, before a record reaches the bus or a label reaches /metrics.
    enabled: bool = False
    # Your regular expressions; every match becomes `replacement`. They run as written: keep them
    # free of nested quantifiers, Python's re backtracks.
    patterns: list[str] = field(default_factory=list)
    # Built-in detectors, all on by default: email, credit_card (Luhn), my_number (check digit),
    # phone (Japan, North America, +CC), postal_code (〒 or an address cue), us_ssn, ipv4, ipv6,
    # iban (mod 97). A match becomes a numbered placeholder such as [EMAIL_1].
    builtin: list[str] = field(default_factory=lambda: list(DETECTORS))
    # What a match of `patterns` becomes.
    replacement: str = "[REDACTED]"

    def validate(self, where: str) -> None:
        unknown = [b for b in self.builtin if b not in DETECTORS]
        if unknown:
            raise ConfigError(f"{key(where, 'builtin')}: unknown {unknown}; known: {sorted(DETECTORS)}")
        for i, pattern in enumerate(self.patterns):
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(f"{key(where, 'patterns')}[{i}] is not a valid regular expression: {e}") from e


class _Placeholders:
    """The placeholders of one record: the n-th distinct value a detector finds is [LABEL_n]."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}

    def __call__(self, detector: Detector, value: str) -> str:
        seen = (detector.label, detector.key(value))
        if seen not in self._seen:
            n = self._count[detector.label] = self._count.get(detector.label, 0) + 1
            self._seen[seen] = f"[{detector.label}_{n}]"
        return self._seen[seen]


class Redactor:
    def __init__(self, config: RedactionConfig) -> None:
        self._detectors = [DETECTORS[name] for name in config.builtin]
        self._custom = re.compile("|".join(f"(?:{p})" for p in config.patterns)) if config.patterns else None
        self._replacement = config.replacement

    def __call__(self, triple: Triple) -> Triple:
        """Everything of a triple that travels on the record, with one numbering."""
        placeholders = _Placeholders()
        triple.question = self._text(triple.question, placeholders)
        triple.contexts = [self._text(c, placeholders) for c in triple.contexts]
        triple.answer = self._text(triple.answer, placeholders)
        triple.route = self._text(triple.route, placeholders)
        triple.model = self._text(triple.model, placeholders)
        triple.attributes = {k: self._value(v, placeholders) for k, v in triple.attributes.items()}
        return triple

    def label(self, value: str) -> str:
        """A value that labels metrics (service.name), numbered on its own so that it redacts the
        same way in every record."""
        return self._text(value, _Placeholders())

    def _value(self, value: Any, placeholders: _Placeholders) -> Any:
        if isinstance(value, str):
            return self._text(value, placeholders)
        if isinstance(value, list):
            return [self._value(v, placeholders) for v in value]
        return value

    def _text(self, text: str, placeholders: _Placeholders) -> str:
        # Every detector's spans, then the leftmost wins, the longer at the same start, the
        # detector listed first on a tie; spans overlapping a chosen one are dropped.
        if not text:
            return text
        found: list[tuple[int, int, int, Detector | None]] = []
        windows: dict[tuple[re.Pattern[str], int | None], list[tuple[int, int]]] = {}
        for order, detector in enumerate(self._detectors):
            hint = (detector.hint, detector.reach)
            if hint not in windows:
                windows[hint] = detector.windows(text)
            if windows[hint]:
                found.extend((start, -end, order, detector) for start, end in detector.spans(text, windows[hint]))
        if self._custom is not None:
            order = len(self._detectors)
            found.extend((m.start(), -m.end(), order, None) for m in self._custom.finditer(text) if m.end() > m.start())
        if not found:
            return text
        found.sort(key=lambda f: f[:3])
        out: list[str] = []
        pos = 0
        for start, neg_end, _, detector in found:
            if start < pos:
                continue
            end = -neg_end
            out.append(text[pos:start])
            out.append(self._replacement if detector is None else placeholders(detector, text[start:end]))
            pos = end
        out.append(text[pos:])
        return "".join(out)
