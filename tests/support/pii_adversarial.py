"""Adversarial texts for the PII detectors: long runs that make a backtracking pattern re-scan
(digits, separators, half-built values). The linearity test and bench/redaction.py share them."""

from __future__ import annotations

# Each repeated to the full size.
UNITS = (
    "1", "1111 ", "0-", "-", "０－", "1.", "+1 ", "(0", "a@a.a", "a", "a@", ".a", "@", "a:", "::", "AB12 ",
    "DE89 ", "〒1", "郵便番号", "090-1234-5678 ",
)
# One run the full size, then the character a detector's hint wants: the whole run is one candidate,
# and a pattern that tries it from every start takes quadratic time.
RUNS_THEN = (("a", "@"), ("a.", "@a"), ("1", "@"), ("a", ":1"), ("1", ":1"), ("A", "12"))


def repeated(unit: str, size: int) -> str:
    """`unit` repeated to exactly `size` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def adversarial(size: int) -> dict[str, str]:
    """Every adversarial text of `size` characters, by a name that says how it is built."""
    texts = {f"{unit!r} * n": repeated(unit, size) for unit in UNITS}
    texts.update({f"{unit!r} * n + {tail!r}": repeated(unit, size - len(tail)) + tail for unit, tail in RUNS_THEN})
    return texts
