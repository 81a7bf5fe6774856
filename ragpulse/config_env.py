"""RAGPULSE_* environment variables: the key path each one names, and its value read by the key's type.

A name is RAGPULSE_ and the key path in capitals with `__` between its parts:
RAGPULSE_BUS__MEMORY__CAPACITY is bus.memory.capacity. A value is read by the type of its key, not
as YAML: a string key takes the text unchanged (a password 0123 stays "0123", never the octal 83),
numbers and booleans are parsed strictly, and only lists, mappings and sections take a YAML flow or
JSON value ([faithfulness], {chatty: 0.01}).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from ragpulse.core.settings import ConfigError, key

PREFIX = "RAGPULSE_"
SEPARATOR = "__"

# RAGPULSE_* variables that are not settings: the project's own scripts and tests read them. Every
# other RAGPULSE_* name must be a setting, so a misspelt one stops the start instead of being
# ignored; tests/test_config.py checks that this list covers every such name in the repository.
NOT_SETTINGS = frozenset({
    "RAGPULSE_ARTIFACTS",  # tests: where the live page's screenshot is saved
    "RAGPULSE_JAEGER_HOME",  # deploy/jaeger: the tracing backend's binary
    "RAGPULSE_KAFKA_HOME",  # deploy/kafka: the broker's jar cache
    "RAGPULSE_LLM_BASE_URL",  # tests: an OpenAI-compatible server already running
    "RAGPULSE_LLM_VENV",  # deploy/llm: the LLM server's virtual environment
    "RAGPULSE_OTELCOL_HOME",  # bench: the peer OpenTelemetry Collector's binary
    "RAGPULSE_RAGAS_VENV",  # bench: the Ragas reference environment
    "RAGPULSE_REQUIRE_LLM",  # tests: fail instead of skipping when the LLM server is missing
    "RAGPULSE_SKIP_INSTALL",  # tests/run.sh: run the tests without installing anything
    "RAGPULSE_TEST_WORKERS",  # tests/run.sh: how many xdist workers run the tests
    "RAGPULSE_TRAIN_PYTHON",  # tests/train/test_smoke.py: the training environment's interpreter
})

_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
# At most 100 digits: far beyond any bound, and short enough for int() to read.
_INT = re.compile(r"[+-]?[0-9]{1,100}")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def env_name(path: str) -> str:
    return PREFIX + path.upper().replace(".", SEPARATOR)


def key_paths(section: type, where: str = "") -> Iterator[str]:
    """Every key path of a section tree, sections included: what a name or a file key may be."""
    for name, hint in fields(section).items():
        path = key(where, name)
        yield path
        if is_section(unwrap_optional(hint)[0]):
            yield from key_paths(unwrap_optional(hint)[0], path)


def fields(section: type) -> dict[str, Any]:
    hints = typing.get_type_hints(section)
    return {f.name: hints[f.name] for f in dataclasses.fields(section)}


def env_settings(root: type, environ: Mapping[str, str]) -> list[tuple[list[str], Any]]:
    """(key path, value) of every RAGPULSE_* setting in `environ`, shorter paths first so that a
    key set on its own wins over the same key inside a whole section's value."""
    settings = []
    for name in sorted(environ):
        if name.startswith(PREFIX) and name not in NOT_SETTINGS:
            path, hint = _resolve(root, name)
            settings.append((path, _parse(hint, environ[name], f"{'.'.join(path)} ({name})")))
    return settings


def _resolve(root: type, name: str) -> tuple[list[str], Any]:
    path = name[len(PREFIX):].lower().split(SEPARATOR)
    hint: Any = root
    for part in path:
        section = unwrap_optional(hint)[0]
        known = fields(section) if is_section(section) else {}
        if part not in known:
            raise ConfigError(_unknown(name, root))
        hint = known[part]
    return path, hint


def _unknown(name: str, root: type) -> str:
    names = {env_name(p): p for p in key_paths(root)} | {n: "" for n in NOT_SETTINGS}
    # Compared without the prefix every name shares, which would make any two names look alike.
    suffixes = {n[len(PREFIX):]: n for n in names}
    close = difflib.get_close_matches(name[len(PREFIX):].upper(), list(suffixes), n=1)
    if close:
        nearest = suffixes[close[0]]
        return f"unknown setting {name}; did you mean {nearest}{f' ({names[nearest]})' if names[nearest] else ''}?"
    return (f"unknown setting {name}: a RAGPULSE_ variable names a key path in capitals with {SEPARATOR} "
            f"between its parts, e.g. {env_name('scorer.metrics')}")


def _parse(hint: Any, raw: str, where: str) -> Any:
    hint, optional = unwrap_optional(hint)
    if optional and raw == "":
        return None
    if hint is str:
        return raw
    if hint is bool:
        if raw.lower() in _BOOLS:
            return _BOOLS[raw.lower()]
        raise ConfigError(f"{where} must be true or false (or yes/no, 1/0), got {raw!r}")
    if hint is int:
        if _INT.fullmatch(raw):
            return int(raw)
        raise ConfigError(f"{where} must be a whole number, got {raw!r}")
    if hint is float:
        if _FLOAT.fullmatch(raw):
            return float(raw)
        raise ConfigError(f"{where} must be a number, got {raw!r}")
    try:
        return yaml.safe_load(raw)
    except (yaml.YAMLError, ValueError) as e:  # ValueError: a number too long for Python to read
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{where} must be a YAML flow or JSON value such as [a, b] or {{a: 1}}, "
                          f"got {raw!r}: {problem}") from e


def unwrap_optional(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (types.UnionType, typing.Union) and type(None) in typing.get_args(hint):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return inner, True
    return hint, False


def is_section(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)
