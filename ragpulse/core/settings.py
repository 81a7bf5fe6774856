"""The one validation style of every configuration section.

A section is a dataclass beside its component with a `validate(where)` method that raises
ConfigError naming the key (`where` is the section's dotted path, e.g. "bus.kafka"); the loader in
ragpulse/config.py calls it for every section it builds. These helpers keep the messages alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class ConfigError(ValueError):
    """A setting a user must change; the message names the key and says what is expected."""


def key(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def require(ok: bool, where: str, expected: str, value: Any) -> None:
    if not ok:
        raise ConfigError(f"{where} must be {expected}, got {value!r}")


def require_at_least(where: str, value: float, low: float) -> None:
    require(value >= low, where, f"at least {low:g}", value)


def require_probability(where: str, value: float) -> None:
    require(0.0 <= value <= 1.0, where, "between 0 and 1", value)


def require_one_of(where: str, value: Any, choices: Iterable[Any]) -> None:
    choices = tuple(choices)
    require(value in choices, where, "one of " + ", ".join(str(c) for c in choices), value)
