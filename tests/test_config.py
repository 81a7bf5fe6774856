"""Configuration is validated at start with messages that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragpulse.config import ConfigError, load_config


def test_defaults_bind_to_loopback() -> None:
    config = load_config(environ={})
    for endpoint in (config.receiver.grpc_endpoint, config.receiver.http_endpoint, config.prometheus.endpoint):
        assert endpoint.startswith("127.0.0.1:")


def test_file_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("sampling:\n  default_probability: 0.2\n  per_service: {chatty: 0.01}\n")
    config = load_config(path, environ={"RAGPULSE_SAMPLING__DEFAULT_PROBABILITY": "0.5", "RAGPULSE_OTHER": "x"})
    assert config.sampling.default_probability == 0.5
    assert config.sampling.per_service == {"chatty": 0.01}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sampling:\n  default_probabilty: 0.2\n", "unknown key sampling.default_probabilty"),
        ("sampling:\n  default_probability: 1.5\n", "sampling.default_probability must be between 0 and 1"),
        ("receiver:\n  http_endpoint: localhost\n", "receiver.http_endpoint must look like HOST:PORT"),
        ("scorer:\n  metrics: [faithfulness, bleu]\n", "unknown metric 'bleu'"),
        ("scorer:\n  concurrency: many\n", "scorer.concurrency must be a whole number"),
        ("bus:\n  kind: rabbit\n", "bus.kind must be"),
        ("- a list\n", "must hold a mapping"),
        ("redaction:\n  patterns: ['(unclosed']\n", "redaction.patterns[0] is not a valid regular expression"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_config(path, environ={})


def test_cli_reports_config_error_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("prometheus:\n  endpoint: nowhere\n")
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "up", "--config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "configuration error: prometheus.endpoint must look like HOST:PORT" in result.stderr
