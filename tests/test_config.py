"""Configuration is validated at start with messages that name the key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragpulse.config import Config, ConfigError, load_config
from ragpulse.config_env import NOT_SETTINGS, env_name, fields, is_section, key_paths, unwrap_optional

REPO = Path(__file__).resolve().parents[1]
# The openai section exists only when set; these two make it valid apart from the key under test.
OPENAI = {"RAGPULSE_SCORER__OPENAI__MODEL": "m", "RAGPULSE_SCORER__OPENAI__BASE_URL": "http://127.0.0.1:1/v1"}


def test_defaults_bind_to_loopback() -> None:
    config = load_config(environ={})
    for endpoint in (config.receiver.grpc_endpoint, config.receiver.http_endpoint, config.prometheus.endpoint):
        assert endpoint.startswith("127.0.0.1:")


def test_file_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("sampling:\n  default_probability: 0.2\n  per_service: {chatty: 0.01}\n")
    config = load_config(path, environ={"RAGPULSE_SAMPLING__DEFAULT_PROBABILITY": "0.5", "RAGPULSE_KAFKA_HOME": "x"})
    assert config.sampling.default_probability == 0.5
    assert config.sampling.per_service == {"chatty": 0.01}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sampling:\n  default_probabilty: 0.2\n",
         "unknown key sampling.default_probabilty; did you mean sampling.default_probability?"),
        ("bus:\n  memroy: {capacity: 5}\n", "unknown key bus.memroy; did you mean bus.memory?"),
        ("bus:\n  kafka:\n    sasl_password: 0123\n", "bus.kafka.sasl_password must be a string (quote it"),
        ("drift:\n  k: .inf\n", "drift.k must be a finite number"),
        ("bus:\n  memory:\n    capacity: 100000000000000000000\n", "bus.memory.capacity must fit in 64 bits"),
        ("sampling:\n  default_probability: 1.5\n", "sampling.default_probability must be between 0 and 1"),
        ("receiver:\n  http_endpoint: localhost\n", "receiver.http_endpoint must look like HOST:PORT"),
        ("scorer:\n  metrics: [faithfulness, bleu]\n", "unknown metric 'bleu'"),
        ("scorer:\n  concurrency: many\n", "scorer.concurrency must be a whole number"),
        ("bus:\n  kind: rabbit\n", "bus.kind must be"),
        ("scorer:\n  bad_event_threshold: {aspect:harmfulness: 0.5}\n",
         "scorer.bad_event_threshold: unknown metric 'aspect:harmfulness'"),
        ("- a list\n", "must hold a mapping"),
        ("redaction:\n  patterns: ['(unclosed']\n", "redaction.patterns[0] is not a valid regular expression"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path, environ={})


def test_cli_reports_config_error_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("prometheus:\n  endpoint: nowhere\n")
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "up", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "configuration error: prometheus.endpoint must look like HOST:PORT" in result.stderr


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("RAGPULSE_BUS_MEMORY_CAPACITY", "did you mean RAGPULSE_BUS__MEMORY__CAPACITY (bus.memory.capacity)?"),
        ("RAGPULSE_SCORER__METRIX", "did you mean RAGPULSE_SCORER__METRICS (scorer.metrics)?"),
        ("RAGPULSE_SAMPLING__PER_SERVICE__CHATTY", "did you mean RAGPULSE_SAMPLING__PER_SERVICE"),
        ("RAGPULSE_KAFKA_HOM", "did you mean RAGPULSE_KAFKA_HOME?"),
        ("RAGPULSE_OTHER", "a RAGPULSE_ variable names a key path"),
    ],
)
def test_unknown_environment_names_are_errors_naming_the_nearest(name: str, nearest: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"unknown setting {name}") + ".*" + re.escape(nearest)):
        load_config(environ={name: "5"})


def test_every_RAGPULSE_name_in_the_repository_is_a_setting_or_listed_as_not_one() -> None:
    settings = {env_name(p) for p in key_paths(Config)}
    used: set[str] = set()
    for folder in ("tests", "deploy", "bench", ".ci", "docs", "README.md"):
        for path in [REPO / folder, *(REPO / folder).rglob("*")]:
            if path.is_file() and path.name != "test_config.py" and path.suffix not in (".jsonl", ".png"):
                used |= set(re.findall(r"RAGPULSE_[A-Z0-9_]*[A-Z0-9]", path.read_text(errors="replace")))
    assert used - settings - NOT_SETTINGS == set()
    assert NOT_SETTINGS - used == set(), "a name no script reads any more"


@pytest.mark.parametrize("value", ["0123", "0x1F", "true", "null", "[a]", " spaced ", ""])
def test_a_string_takes_the_environment_value_unchanged(value: str) -> None:
    config = load_config(environ={"RAGPULSE_BUS__KAFKA__SASL_PASSWORD": value})
    assert config.bus.kafka.sasl_password == value


@pytest.mark.parametrize(
    ("name", "raw", "read"),
    [
        ("RAGPULSE_BUS__MEMORY__CAPACITY", "+42", lambda c: c.bus.memory.capacity == 42),
        ("RAGPULSE_DRIFT__K", "1e-1", lambda c: c.drift.k == 0.1),
        ("RAGPULSE_RECEIVER__ENABLE_GRPC", "no", lambda c: c.receiver.enable_grpc is False),
        ("RAGPULSE_RECEIVER__ENABLE_GRPC", "TRUE", lambda c: c.receiver.enable_grpc is True),
        ("RAGPULSE_RECEIVER__ENABLE_GRPC", "0", lambda c: c.receiver.enable_grpc is False),
        ("RAGPULSE_SCORER__METRICS", "[faithfulness]", lambda c: c.scorer.metrics == ["faithfulness"]),
        ("RAGPULSE_SCORER__METRICS", '["faithfulness"]', lambda c: c.scorer.metrics == ["faithfulness"]),
        ("RAGPULSE_SAMPLING__PER_SERVICE", "{chatty: 0.01}", lambda c: c.sampling.per_service == {"chatty": 0.01}),
        ("RAGPULSE_SCORER__OPENAI__SEED", "", lambda c: c.scorer.openai.seed is None),
    ],
)
def test_environment_values_are_read_by_the_type_of_their_key(name: str, raw: str, read) -> None:
    assert read(load_config(environ={**OPENAI, name: raw}))


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("RAGPULSE_BUS__MEMORY__CAPACITY", "0x1F", "(RAGPULSE_BUS__MEMORY__CAPACITY) must be a whole"),
        ("RAGPULSE_BUS__MEMORY__CAPACITY", "1e3", "(RAGPULSE_BUS__MEMORY__CAPACITY) must be a whole"),
        ("RAGPULSE_DRIFT__K", "nan", "drift.k (RAGPULSE_DRIFT__K) must be a number"),
        ("RAGPULSE_DRIFT__K", "1e999", "drift.k must be a finite number"),
        ("RAGPULSE_RECEIVER__ENABLE_GRPC", "maybe", "(RAGPULSE_RECEIVER__ENABLE_GRPC) must be true"),
        ("RAGPULSE_SCORER__METRICS", "[faith", "scorer.metrics (RAGPULSE_SCORER__METRICS) must be a YAML flow or JSON"),
        ("RAGPULSE_SCORER__METRICS", "faithfulness", "scorer.metrics must be a list"),
        ("RAGPULSE_SCORER__METRICS", "[0123]", "scorer.metrics[0] must be a string"),
        ("RAGPULSE_BUS__KAFKA", "{lingr_ms: 5}", "unknown key bus.kafka.lingr_ms; did you mean bus.kafka.linger_ms?"),
        ("RAGPULSE_RECEIVER__MAX_REQUEST_BYTES", "3000000000", "receiver.max_request_bytes must be below 2 GiB"),
        ("RAGPULSE_RECEIVER__IDLE_TIMEOUT_S", "1e12", "receiver.idle_timeout_s must be at most"),
        ("RAGPULSE_BUS__KAFKA__REPLICATION_FACTOR", "40000", "bus.kafka.replication_factor must be at most 32767"),
    ],
)
def test_bad_environment_values_name_the_key(name: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(environ={name: raw})


def numeric_keys(section: type = Config, where: str = "") -> list[str]:
    found = []
    for name, hint in fields(section).items():
        path = f"{where}{name}"
        inner = unwrap_optional(hint)[0]
        if inner in (int, float):
            found.append(path)
        elif is_section(inner):
            found += numeric_keys(inner, path + ".")
    return found


# Any whole number is a seed.
ANY_SIGN = {"scorer.openai.seed"}
# Checked together with another key, which the message names: 0 < backoff_base_s <= backoff_max_s.
NAMED_WITH = {"scorer.openai.backoff_max_s": "scorer.openai.backoff_base_s"}


# Optional sections that need a key set before their numbers are read.
GENERATOR = {"RAGPULSE_SCORER__SELFCHECK__GENERATOR__MODEL": "m"}


@pytest.mark.parametrize("path", sorted(set(numeric_keys()) - ANY_SIGN))
def test_every_number_has_a_lower_bound(path: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(NAMED_WITH.get(path, path))):
        load_config(environ={**OPENAI, **GENERATOR, env_name(path): "-1"})


@pytest.mark.parametrize("path", sorted(k for k in numeric_keys() if k.endswith(("_s", "_ms"))))
def test_every_duration_has_an_upper_bound(path: str) -> None:
    # 9e9 s is past threading.TIMEOUT_MAX: a wait on it raises OverflowError at use, not at start.
    huge = "9000000000" if path.endswith("_s") else str(2**31)
    with pytest.raises(ConfigError, match=re.escape(f"{path} must be at most")):
        load_config(environ={**OPENAI, **GENERATOR, env_name(path): huge})


def test_the_walk_sees_every_section() -> None:
    keys = numeric_keys()
    for path in ("receiver.max_request_bytes", "extract.assembly.grace_s", "bus.memory.capacity",
                 "bus.kafka.linger_ms", "scorer.openai.timeout_s", "prometheus.label_cap", "drift.h"):
        assert path in keys


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("RAGPULSE_BUS_MEMORY_CAPACITY=5", "RAGPULSE_BUS__MEMORY__CAPACITY"),
        ("RAGPULSE_EXTRACT__MAX_ANSWER_CHARS=-1", "extract.max_answer_chars"),
        ("RAGPULSE_RECEIVER__MAX_REQUEST_BYTES=3000000000", "receiver.max_request_bytes"),
        ("RAGPULSE_REDACTION__BUILTIN=[ssn]", "redaction.builtin"),
        ("RAGPULSE_SCORER__METRICS=[faith", "scorer.metrics"),
        ("RAGPULSE_BUS__MEMORY__CAPACITY=" + "9" * 5000, "bus.memory.capacity"),
        ("RAGPULSE_RECEIVER__ENABLE_GRPC=maybe", "receiver.enable_grpc"),
    ],
)
def test_cli_exits_2_with_a_message_for_every_bad_value(setting: str, key: str) -> None:
    name, value = setting.split("=", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")} | {name: value}
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "up"], capture_output=True, text=True, timeout=60, env=env
    )
    assert (result.returncode, "Traceback" in result.stderr) == (2, False), result.stderr
    assert "configuration error: " in result.stderr and key in result.stderr


def test_cli_exits_2_for_a_config_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"\xff\xfe\x00binary")
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "up", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, "Traceback" in result.stderr) == (2, False), result.stderr
    assert str(path) in result.stderr
