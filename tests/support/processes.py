"""`ragpulse collector` and `ragpulse scorer` as real subprocesses on a test broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ragpulse_process import RagpulseProcess

from ragpulse.kafka.config import KafkaConfig


def kafka_bus(cfg: KafkaConfig, partitions: int) -> dict[str, Any]:
    """The `bus` settings of a process on the test broker: its topics and group, with timings short
    enough for a test (commits every 200 ms, a dead member noticed in 6 s)."""
    return {"kind": "kafka", "kafka": {
        "bootstrap_servers": cfg.bootstrap_servers, "records_topic": cfg.records_topic,
        "scores_topic": cfg.scores_topic, "dlq_topic": cfg.dlq_topic, "group_id": cfg.group_id,
        "records_partitions": partitions, "commit_interval_ms": 200, "session_timeout_ms": 6000,
        "rebalance_timeout_s": 10.0,
    }}


def kafka_process(tmp: Path, command: str, settings: dict[str, Any],
                  env: dict[str, str] | None = None) -> RagpulseProcess:
    """`ragpulse collector` or `ragpulse scorer`, started; call wait_ready() before use."""
    return RagpulseProcess(tmp, settings, command=command, wait=False, env=env)


def total(processes: list[RagpulseProcess], name: str, **labels: str) -> float:
    return sum(p.value(name, **labels) for p in processes)


def wait_until(check: Any, timeout_s: float, what: str, interval_s: float = 0.3) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
