"""Adversarial texts for the PII detectors: long runs that make a backtracking pattern re-scan
(digits, separators, half-built values). The linearity test and bench/redaction.py share them."""

from __future__ import annotations

UNITS = (
    "1", "1111 ", "0-", "-", "０－", "1.", "+1 ", "(0", "a@a.a", "a", "a@", ".a", "@", "a:", "::", "AB12 ",
    "DE89 ", "〒1", "郵便番号", "090-1234-5678 ",
)


def repeated(unit: str, size: int) -> str:
    """`unit` repeated to exactly `size` characters."""
    return (unit * (size // len(unit) + 1))[:size]
