"""The configuration as a whole: the components' sections composed, and the typed loader.

Each section's dataclass and its `validate(where)` live beside its component; this module only
puts them together and reads defaults, a YAML file, then RAGPULSE_* environment variables
(ragpulse/config_env.py: how a name maps to a key and how its value is read). Every value is checked
at start; an unknown key or a bad value stops the process with a message naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragpulse.collector.extract.config import ExtractConfig
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.redact import RedactionConfig
from ragpulse.collector.sampling import SamplingConfig
from ragpulse.config_env import env_settings, key_paths, unwrap_optional
from ragpulse.core.bus import MemoryBusConfig
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.settings import ConfigError, key, require_one_of
from ragpulse.kafka.config import KafkaConfig
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.estimate.drift import DriftConfig
from ragpulse.scorer.export.config import ExportConfig
from ragpulse.scorer.web.page import PageConfig

LOG_LEVELS = ("debug", "info", "warning", "error")
_INT64 = 2**63
# Durations reach threading waits, socket timeouts and Kafka's int32 millisecond fields, which
# raise OverflowError far from the setting (threading.TIMEOUT_MAX is about 292 years; Kafka's
# fields stop at 2**31 - 1 ms): bounded here, at load, with the key named.
_MAX_DURATION_S = 366 * 24 * 3600
_MAX_DURATION_MS = 2**31 - 1

__all__ = ["Config", "ConfigError", "load_config"]


@dataclass
class BusConfig:
    # memory (one process: `ragpulse up`) or kafka (collectors and scorers apart).
    kind: str = "memory"
    memory: MemoryBusConfig = field(default_factory=MemoryBusConfig)
    kafka: KafkaConfig = field(default_factory=KafkaConfig)

    def validate(self, where: str) -> None:
        require_one_of(key(where, "kind"), self.kind, ("memory", "kafka"))


@dataclass
class Config:
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    redaction: RedactionConfig = field(default_factory=RedactionConfig)
    bus: BusConfig = field(default_factory=BusConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    prometheus: PrometheusConfig = field(default_factory=PrometheusConfig)
    # The live page: served beside /metrics, on its own address, or not at all.
    page: PageConfig = field(default_factory=PageConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    # Where scores go besides /metrics and the live page.
    export: ExportConfig = field(default_factory=ExportConfig)
    # debug, info, warning or error; question, context and answer text is never logged at info.
    log_level: str = "info"

    def validate(self, where: str) -> None:
        require_one_of(key(where, "log_level"), self.log_level.lower(), LOG_LEVELS)


def load_config(path: str | Path | None = None, environ: dict[str, str] | None = None) -> Config:
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
        except (yaml.YAMLError, ValueError) as e:  # ValueError: a number too long for Python to read
            raise ConfigError(f"config file {path} is not valid YAML: {e}") from e
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data = loaded or {}
    for path, value in env_settings(Config, os.environ if environ is None else environ):
        _set_path(data, path, value)
    config = _build(Config, data, "")
    validate(config)
    return config


def _set_path(data: dict[str, Any], keys: list[str], value: Any) -> None:
    node = data
    for i, part in enumerate(keys[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(keys[:i + 1])} is a section, not {child!r}")
        node = child
    node[keys[-1]] = value


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known, key=str)
    if unknown:
        raise ConfigError("; ".join(_unknown_key(key(where, str(k)), known) for k in unknown))
    kwargs = {name: _coerce(hints[name], value, key(where, name)) for name, value in data.items()}
    missing = [
        f.name for f in dataclasses.fields(cls)
        if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where or 'config'}: missing required key{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(key(where, k) for k in missing)}")
    return cls(**kwargs)


def _unknown_key(path: str, known: set[str]) -> str:
    close = difflib.get_close_matches(path, list(key_paths(Config)), n=1)
    if close:
        return f"unknown key {path}; did you mean {close[0]}?"
    return f"unknown key {path}; known keys here: {', '.join(sorted(known))}"


def validate(section: Any, where: str = "") -> None:
    """Every section's own validate(), parents before children, defaults included."""
    section.validate(where)
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if dataclasses.is_dataclass(value):
            validate(value, key(where, f.name))


def _coerce(hint: Any, value: Any, where: str) -> Any:
    hint, optional = unwrap_optional(hint)
    if value is None and optional:
        return None
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, where)
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return [_coerce(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return tuple(_coerce(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        key_t, val_t = typing.get_args(hint)
        if not isinstance(value, dict):
            raise ConfigError(f"{where} must be a mapping, got {value!r}")
        return {_coerce(key_t, k, where): _coerce(val_t, v, f"{where}.{k}") for k, v in value.items()}
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            # Beyond 64 bits a count cannot reach the C code (queues, sockets) that uses it.
            if -_INT64 <= value < _INT64:
                return _duration_in_range(where, value)
            raise ConfigError(f"{where} must fit in 64 bits, got {value!r}")
        raise ConfigError(f"{where} must be a whole number, got {value!r}")
    if hint is float:
        # Compared, not converted: an int too large for a float must not raise here.
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= sys.float_info.max:
            return _duration_in_range(where, float(value))
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    if hint is str:
        if isinstance(value, str):
            return value
        # YAML reads an unquoted 0123 as the number 83: turning it back into text would change it.
        raise ConfigError(f"{where} must be a string (quote it in YAML to keep it as written), got {value!r}")
    raise ConfigError(f"{where}: unsupported setting type {hint!r}")


def _duration_in_range(where: str, value: Any) -> Any:
    """Keys named *_s and *_ms are durations; a value past what their users accept is an error."""
    if where.endswith("_ms") and value > _MAX_DURATION_MS:
        raise ConfigError(f"{where} must be at most {_MAX_DURATION_MS} ms (about 24 days), got {value!r}")
    if where.endswith("_s") and value > _MAX_DURATION_S:
        raise ConfigError(f"{where} must be at most {_MAX_DURATION_S} s (366 days), got {value!r}")
    return value
