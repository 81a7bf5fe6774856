"""All configuration in one typed place: defaults, a YAML file, then RAGPULSE_* environment variables.

Environment variables name a key path with double underscores, e.g.
RAGPULSE_SAMPLING__DEFAULT_PROBABILITY=0.1 or RAGPULSE_SCORER__JUDGE=openai. Values are parsed as
YAML scalars, so lists and maps can be given inline (RAGPULSE_SCORER__METRICS='[faithfulness]').
Every value is checked at start; a bad one stops the process with a message naming the key.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragpulse.scorer.drift import DriftConfig
from ragpulse.scorer.judge.openai_config import OpenAIJudgeConfig

ENV_PREFIX = "RAGPULSE_"


class ConfigError(ValueError):
    pass


@dataclass
class ReceiverConfig:
    grpc_endpoint: str = "127.0.0.1:4317"
    http_endpoint: str = "127.0.0.1:4318"
    # A request body above this is refused with 413 before it is decoded.
    max_request_bytes: int = 16 * 1024 * 1024
    enable_grpc: bool = True
    enable_http: bool = True


# Span conventions the collector reads (DESIGN.md); all but native are assembled from a whole trace.
CONVENTIONS = ("native", "openinference", "openllmetry", "genai")


@dataclass
class AssemblyConfig:
    """Buffering of multi-span traces (OpenInference, OpenLLMetry, GenAI) until they are complete."""

    # After the root span arrives, spans still in other exporters' batches get this long.
    grace_s: float = 2.0
    # A trace whose root never arrives (lost, or still open) is assembled this long after its first span.
    timeout_s: float = 30.0
    # Beyond any of these, the oldest trace is assembled early (counted) to make room.
    max_traces: int = 10_000
    max_bytes: int = 64 * 1024 * 1024
    # Further spans of a longer trace are dropped (counted); its root is always kept.
    max_spans_per_trace: int = 1_000


@dataclass
class ExtractConfig:
    # Contexts beyond this many characters in total are cut (the record says `truncated`).
    max_context_chars: int = 64_000
    max_question_chars: int = 8_000
    max_answer_chars: int = 16_000
    conventions: list[str] = field(default_factory=lambda: list(CONVENTIONS))
    assembly: AssemblyConfig = field(default_factory=AssemblyConfig)


@dataclass
class SamplingConfig:
    default_probability: float = 1.0
    # service.name → probability; a service not listed gets default_probability.
    per_service: dict[str, float] = field(default_factory=dict)


@dataclass
class RedactionConfig:
    enabled: bool = False
    # Regular expressions; every match in question, contexts and answer becomes `replacement`.
    patterns: list[str] = field(default_factory=list)
    builtin: list[str] = field(default_factory=lambda: ["email", "credit_card", "phone"])
    replacement: str = "[REDACTED]"


@dataclass
class MemoryBusConfig:
    capacity: int = 10_000


@dataclass
class OtlpKafkaInputConfig:
    """Spans written to Kafka by the OpenTelemetry Collector's kafka exporter."""

    enabled: bool = False
    topic: str = "otlp_spans"
    encoding: str = "otlp_proto"
    group_id: str = "ragpulse-collector"


@dataclass
class KafkaConfig:
    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "ragpulse"
    records_topic: str = "ragpulse.records"
    records_partitions: int = 6
    scores_topic: str = "ragpulse.scores"
    scores_partitions: int = 3
    dlq_topic: str = "ragpulse.dlq"
    dlq_partitions: int = 1
    # For all three topics; 1 suits a single development broker, use 3 on a real cluster.
    replication_factor: int = 1
    # Create missing topics with the admin client on start (existing ones are left as they are).
    create_topics: bool = True
    group_id: str = "ragpulse-scorer"
    # gzip needs no extra package; lz4, zstd and snappy need python-lz4, zstandard, python-snappy.
    compression: str = "lz4"
    # Largest record value sent; a bigger record is truncated (contexts first), never dropped.
    # Keep it at or below the broker's message.max.bytes (default 1048588).
    max_message_bytes: int = 1_000_000
    # Batching window: fewer, larger batches cost the producer far less CPU than the latency
    # (tens of ms before a record is scored) is worth.
    linger_ms: int = 20
    # Records handed to the producer and not yet acknowledged; beyond this the collector answers
    # OTLP with "retry later" (HTTP 503 / gRPC UNAVAILABLE) instead of growing without bound.
    buffer_records: int = 20_000
    # How long an unacknowledged record is retried before it counts as a delivery failure.
    delivery_timeout_ms: int = 300_000
    # Scorer: how often finished offsets are committed, and how many record ids are remembered
    # to skip redeliveries (at-least-once) without counting them twice.
    commit_interval_ms: int = 500
    dedupe_window: int = 100_000
    # On a rebalance, how long in-flight records of revoked partitions may finish before they are
    # released to the next owner.
    rebalance_timeout_s: float = 20.0
    # A scorer that stops heartbeating (crashed, SIGKILL) loses its partitions after this long.
    session_timeout_ms: int = 45_000
    # Kafka takes a scorer out of its group when its polls are further apart than this. Records
    # fetched earlier wait while the consumer keeps polling with its partitions paused, but one
    # record's scoring is one wait: raise it above the slowest a judge may take (retries included).
    max_poll_interval_ms: int = 300_000
    # Connection security for managed clusters: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    security_protocol: str = "PLAINTEXT"
    # SASL (the SASL_* protocols): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Set the password from the
    # environment (RAGPULSE_BUS__KAFKA__SASL_PASSWORD), not in a file under version control.
    sasl_mechanism: str = "PLAIN"
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    # TLS (SSL, SASL_SSL): the CA that signed the brokers' certificates (empty: the system's CAs),
    # and a client certificate and key for mutual TLS.
    ssl_cafile: str = ""
    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    otlp_input: OtlpKafkaInputConfig = field(default_factory=OtlpKafkaInputConfig)


@dataclass
class BusConfig:
    kind: str = "memory"
    memory: MemoryBusConfig = field(default_factory=MemoryBusConfig)
    kafka: KafkaConfig = field(default_factory=KafkaConfig)


@dataclass
class ScorerConfig:
    judge: str = "local"
    # Settings of the `openai` judge (scorer/judge/openai_judge.py); required when judge is openai.
    openai: OpenAIJudgeConfig | None = None
    metrics: list[str] = field(
        default_factory=lambda: ["faithfulness", "answer_relevancy", "context_relevancy"]
    )
    answer_relevancy_questions: int = 3
    # Records scored at the same time; with the local judge the CPU is the limit.
    concurrency: int = 1
    # Window (records per service and metric) of the rolling-mean gauge.
    rolling_window: int = 200
    # A score below this counts as a bad event for the error-budget alerts.
    bad_event_threshold: dict[str, float] = field(
        default_factory=lambda: {"faithfulness": 0.5, "answer_relevancy": 0.5, "context_relevancy": 0.2}
    )
    # Attempts at one record (unexpected errors) before it goes to the dead-letter sink.
    max_attempts: int = 3
    recent_scores: int = 500


@dataclass
class PrometheusConfig:
    endpoint: str = "127.0.0.1:9464"
    route_label: bool = False
    # Allowed label values for service / route; empty means first `label_cap` values seen.
    service_allow_list: list[str] = field(default_factory=list)
    route_allow_list: list[str] = field(default_factory=list)
    label_cap: int = 50


@dataclass
class Config:
    # The drift detector's settings live beside it (scorer/drift.py) and are read here.
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    redaction: RedactionConfig = field(default_factory=RedactionConfig)
    bus: BusConfig = field(default_factory=BusConfig)
    scorer: ScorerConfig = field(default_factory=ScorerConfig)
    prometheus: PrometheusConfig = field(default_factory=PrometheusConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    log_level: str = "info"


def load_config(path: str | Path | None = None, environ: dict[str, str] | None = None) -> Config:
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {path} is not valid YAML: {e}") from e
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data = loaded or {}
    env = os.environ if environ is None else environ
    for name, raw in env.items():
        # Only names with a section separator (plus the top-level keys) are settings, so other
        # RAGPULSE_* variables (test switches, ...) are not mistaken for unknown keys.
        if name.startswith(ENV_PREFIX) and ("__" in name or name in _TOP_LEVEL_ENV):
            keys = name[len(ENV_PREFIX):].lower().split("__")
            _set_path(data, keys, yaml.safe_load(raw) if raw != "" else "", source=name)
    config = _build(Config, data, "")
    validate(config)
    return config


_TOP_LEVEL_ENV = {ENV_PREFIX + "LOG_LEVEL"}


def _set_path(data: dict[str, Any], keys: list[str], value: Any, source: str) -> None:
    node = data
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {'.'.join(keys)} goes through {key!r}, which is not a section")
        node = child
    node[keys[-1]] = value


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(_key(where, k) for k in unknown)}; "
            f"known keys here: {', '.join(sorted(known))}"
        )
    kwargs = {name: _coerce(hints[name], value, _key(where, name)) for name, value in data.items()}
    missing = [
        f.name for f in dataclasses.fields(cls)
        if f.name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where or 'config'}: missing required key{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(_key(where, k) for k in missing)}")
    try:
        return cls(**kwargs)
    except ValueError as e:  # a section's own cross-field checks
        raise ConfigError(f"{where}: {e}" if where else str(e)) from e


def _key(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _coerce(hint: Any, value: Any, where: str) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        if value is None and type(None) in typing.get_args(hint):
            return None
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
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
            return value
        raise ConfigError(f"{where} must be a whole number, got {value!r}")
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{where} must be a number, got {value!r}")
    if hint is str:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{where} must be a string, got {value!r}")
    raise ConfigError(f"{where}: unsupported setting type {hint!r}")


def parse_endpoint(value: str, where: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{where} must look like HOST:PORT (e.g. 127.0.0.1:4318), got {value!r}")
    return host.strip("[]"), int(port)


def format_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _probability(value: float, where: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where} must be between 0 and 1, got {value}")


def validate(config: Config) -> None:
    parse_endpoint(config.receiver.grpc_endpoint, "receiver.grpc_endpoint")
    parse_endpoint(config.receiver.http_endpoint, "receiver.http_endpoint")
    parse_endpoint(config.prometheus.endpoint, "prometheus.endpoint")
    _probability(config.sampling.default_probability, "sampling.default_probability")
    for service, p in config.sampling.per_service.items():
        _probability(p, f"sampling.per_service.{service}")
    from ragpulse.scorer.metrics import METRICS

    for name in config.scorer.metrics:
        if name not in METRICS:
            raise ConfigError(f"scorer.metrics: unknown metric {name!r}; known: {', '.join(METRICS)}")
    for name, threshold in config.scorer.bad_event_threshold.items():
        _probability(threshold, f"scorer.bad_event_threshold.{name}")
    if config.scorer.judge not in ("local", "openai"):
        raise ConfigError(f"scorer.judge must be 'local' or 'openai', got {config.scorer.judge!r}")
    if config.scorer.judge == "openai" and config.scorer.openai is None:
        raise ConfigError("scorer.judge is openai: set scorer.openai.model (and base_url for a non-OpenAI endpoint)")
    if config.bus.kind not in ("memory", "kafka"):
        raise ConfigError(f"bus.kind must be 'memory' or 'kafka', got {config.bus.kind!r}")
    _validate_kafka(config.bus.kafka)
    for where, value, low in (
        ("bus.memory.capacity", config.bus.memory.capacity, 1),
        ("scorer.concurrency", config.scorer.concurrency, 1),
        ("scorer.answer_relevancy_questions", config.scorer.answer_relevancy_questions, 1),
        ("scorer.rolling_window", config.scorer.rolling_window, 1),
        ("scorer.max_attempts", config.scorer.max_attempts, 1),
        ("receiver.max_request_bytes", config.receiver.max_request_bytes, 1024),
        ("extract.max_context_chars", config.extract.max_context_chars, 100),
        ("prometheus.label_cap", config.prometheus.label_cap, 1),
    ):
        if value < low:
            raise ConfigError(f"{where} must be at least {low}, got {value}")
    _validate_extract(config.extract)
    if config.log_level.lower() not in ("debug", "info", "warning", "error"):
        raise ConfigError(f"log_level must be debug, info, warning or error, got {config.log_level!r}")
    for i, pattern in enumerate(config.redaction.patterns):
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"redaction.patterns[{i}] is not a valid regular expression: {e}") from e


def _validate_extract(extract: ExtractConfig) -> None:
    for name in extract.conventions:
        if name not in CONVENTIONS:
            raise ConfigError(f"extract.conventions: unknown convention {name!r}; known: {', '.join(CONVENTIONS)}")
    assembly = extract.assembly
    if assembly.grace_s < 0:
        raise ConfigError(f"extract.assembly.grace_s must be at least 0, got {assembly.grace_s}")
    if assembly.timeout_s <= 0 or assembly.timeout_s < assembly.grace_s:
        raise ConfigError(
            f"extract.assembly.timeout_s must be above 0 and at least grace_s ({assembly.grace_s}), "
            f"got {assembly.timeout_s}"
        )
    for where, value in (
        ("extract.assembly.max_traces", assembly.max_traces),
        ("extract.assembly.max_bytes", assembly.max_bytes),
        ("extract.assembly.max_spans_per_trace", assembly.max_spans_per_trace),
    ):
        if value < 1:
            raise ConfigError(f"{where} must be at least 1, got {value}")


def _validate_kafka_security(kafka: KafkaConfig) -> None:
    protocols = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
    if kafka.security_protocol not in protocols:
        raise ConfigError(
            f"bus.kafka.security_protocol must be one of {', '.join(protocols)}, got {kafka.security_protocol!r}"
        )
    if kafka.security_protocol.startswith("SASL_"):
        mechanisms = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
        if kafka.sasl_mechanism not in mechanisms:
            raise ConfigError(
                f"bus.kafka.sasl_mechanism must be one of {', '.join(mechanisms)}, got {kafka.sasl_mechanism!r}"
            )
        if not kafka.sasl_username or not kafka.sasl_password:
            raise ConfigError(
                f"bus.kafka.security_protocol is {kafka.security_protocol}: set bus.kafka.sasl_username and "
                "bus.kafka.sasl_password (RAGPULSE_BUS__KAFKA__SASL_PASSWORD)"
            )
    if kafka.security_protocol.endswith("SSL"):
        for key in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            path = getattr(kafka, key)
            if path and not Path(path).is_file():
                raise ConfigError(f"bus.kafka.{key}: no such file {path!r}")
        if bool(kafka.ssl_certfile) != bool(kafka.ssl_keyfile):
            raise ConfigError("bus.kafka.ssl_certfile and bus.kafka.ssl_keyfile go together (mutual TLS)")


def _validate_kafka(kafka: KafkaConfig) -> None:
    for server in kafka.bootstrap_servers.split(","):
        parse_endpoint(server.strip(), "bus.kafka.bootstrap_servers")
    if kafka.compression not in ("none", "gzip", "snappy", "lz4", "zstd"):
        raise ConfigError(f"bus.kafka.compression must be none, gzip, snappy, lz4 or zstd, got {kafka.compression!r}")
    _validate_kafka_security(kafka)
    if kafka.otlp_input.encoding not in ("otlp_proto", "otlp_json"):
        raise ConfigError(
            f"bus.kafka.otlp_input.encoding must be otlp_proto or otlp_json, got {kafka.otlp_input.encoding!r}"
        )
    for where, value, low in (
        ("bus.kafka.records_partitions", kafka.records_partitions, 1),
        ("bus.kafka.scores_partitions", kafka.scores_partitions, 1),
        ("bus.kafka.dlq_partitions", kafka.dlq_partitions, 1),
        ("bus.kafka.replication_factor", kafka.replication_factor, 1),
        # Room for a record's metadata, question and answer after its contexts are cut.
        ("bus.kafka.max_message_bytes", kafka.max_message_bytes, 16_384),
        ("bus.kafka.buffer_records", kafka.buffer_records, 1),
        ("bus.kafka.commit_interval_ms", kafka.commit_interval_ms, 10),
        ("bus.kafka.dedupe_window", kafka.dedupe_window, 1),
        ("bus.kafka.delivery_timeout_ms", kafka.delivery_timeout_ms, 1000),
        # The broker's group.min.session.timeout.ms default.
        ("bus.kafka.session_timeout_ms", kafka.session_timeout_ms, 6000),
        ("bus.kafka.max_poll_interval_ms", kafka.max_poll_interval_ms, 1000),
    ):
        if value < low:
            raise ConfigError(f"{where} must be at least {low}, got {value}")
