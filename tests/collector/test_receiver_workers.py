"""receiver.workers without a broker: the setting's bounds, `ragpulse up` refusing it, and the
receivers' ports shared only when it is above 1 (a second collector on a taken port is an error,
not a silent split of the traffic)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.receiver_grpc import OtlpGrpcReceiver
from ragpulse.collector.receiver_http import OtlpHttpReceiver
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.collector.workers import RestartPolicy, metrics_endpoint
from ragpulse.config import ConfigError, load_config


@pytest.mark.parametrize("workers", [0, 65])
def test_workers_out_of_bounds_is_a_config_error(workers: int) -> None:
    with pytest.raises(ConfigError, match=r"receiver.workers .*between 1 and 64"):
        load_config(environ={"RAGPULSE_RECEIVER__WORKERS": str(workers)})


def test_up_refuses_more_than_one_worker(tmp_path: Path) -> None:
    config = tmp_path / "up.yaml"
    config.write_text("receiver: {workers: 2}\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "ragpulse.cli", "up", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "receiver.workers is 2, but `ragpulse up` is one process" in done.stderr
    assert "bus.kind: kafka" in done.stderr


def test_collector_on_the_memory_bus_refuses_workers(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ragpulse.cli", "collector", "--workers", "2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "`ragpulse collector` runs on Kafka" in done.stderr


def _receiver(kind: type, port: int, workers: int) -> OtlpGrpcReceiver | OtlpHttpReceiver:
    config = dataclasses.replace(ReceiverConfig(), workers=workers)
    return kind("127.0.0.1", port, None, CollectorMetrics(CollectorRegistry()), config)


@pytest.mark.parametrize("kind", [OtlpGrpcReceiver, OtlpHttpReceiver])
def test_a_taken_port_is_an_error_with_one_worker_and_shared_with_several(kind: type) -> None:
    first = _receiver(kind, 0, workers=1)
    with pytest.raises(OSError):
        _receiver(kind, first.port, workers=1)
    shared = _receiver(kind, 0, workers=2)
    second = _receiver(kind, shared.port, workers=2)
    assert second.port == shared.port
    for receiver in (first, shared, second):
        receiver.start()
        receiver.stop()


def test_restart_backoff_doubles_up_to_its_ceiling() -> None:
    policy = RestartPolicy(backoff_s=0.5, max_backoff_s=4.0)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_each_worker_serves_metrics_on_the_port_plus_its_index() -> None:
    assert metrics_endpoint("0.0.0.0:9464", 0) == "0.0.0.0:9464"
    assert metrics_endpoint("[::1]:9464", 3) == "[::1]:9467"
    assert metrics_endpoint("127.0.0.1:0", 2) == "127.0.0.1:0"
