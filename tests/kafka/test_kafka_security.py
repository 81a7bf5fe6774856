"""A secured cluster: `ragpulse collector` and `ragpulse scorer` log in with SASL/PLAIN on the real
broker's SASL listener, the password from the environment as docs/configuring.md says; a refused login
stops the process at start with an error that names the setting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from otel_app import RagApp
from processes import kafka_process, total, wait_until

from ragpulse.kafka.config import KafkaConfig


def secured(broker, cfg: KafkaConfig) -> dict[str, Any]:
    return {"bus": {"kind": "kafka", "kafka": {
        "bootstrap_servers": broker.sasl_bootstrap, "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN", "sasl_username": broker.SASL_USER,
        "records_topic": cfg.records_topic, "scores_topic": cfg.scores_topic, "dlq_topic": cfg.dlq_topic,
        "group_id": cfg.group_id, "records_partitions": 2, "commit_interval_ms": 200,
    }}}


def test_collector_and_scorer_work_over_sasl_plain(kafka_broker, kafka_config: KafkaConfig, tmp_path: Path) -> None:
    settings = secured(kafka_broker, kafka_config)
    env = {"RAGPULSE_BUS__KAFKA__SASL_PASSWORD": kafka_broker.SASL_PASSWORD}
    collector = kafka_process(tmp_path, "collector", settings, env)
    scorer = kafka_process(tmp_path, "scorer", settings, env)
    try:
        collector.wait_ready()
        scorer.wait_ready()
        app = RagApp("secured-app", "http", collector.http)
        sent = [app.answer(f"What is the capital of France? ({i})", ["Paris is the capital of France."],
                           "The capital of France is Paris.") for i in range(5)]
        app.close()
        wait_until(lambda: total([scorer], "ragpulse_records_scored_total") >= 5, 60, "5 scored records")
        # The topics the processes created and wrote over SASL hold every record and its scores
        # (read back over the broker's plaintext listener).
        scored = [json.loads(m.value)["trace_id"] for m in kafka_broker.read(kafka_config.scores_topic, 5)]
        assert sorted(scored) == sorted(sent)
    finally:
        collector.stop()
        scorer.stop()


def test_a_refused_sasl_login_stops_the_collector_at_start(kafka_broker, kafka_config: KafkaConfig,
                                                           tmp_path: Path) -> None:
    settings = secured(kafka_broker, kafka_config)
    settings["bus"]["kafka"]["sasl_password"] = "not-the-password"
    config = tmp_path / "collector.yaml"
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "ragpulse.cli", "collector", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "bus.kafka.sasl_username" in proc.stderr and "not-the-password" not in proc.stderr + proc.stdout


def test_sasl_without_credentials_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "collector.yaml"
    config.write_text(yaml.safe_dump({"bus": {"kind": "kafka", "kafka": {"security_protocol": "SASL_SSL"}}}),
                      encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "ragpulse.cli", "collector", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "bus.kafka.sasl_username and bus.kafka.sasl_password" in proc.stderr
