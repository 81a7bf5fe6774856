"""`ragpulse collector --workers 2` on the real broker: two collector processes on one pair of OTLP
ports (SO_REUSEPORT) under a parent that restarts a killed one and gives up on one that keeps
crashing. Spans come from apps instrumented with the real OpenTelemetry SDK, one connection each,
so the kernel spreads them over both workers."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
import urllib.request
from pathlib import Path

from otel_app import RagApp
from processes import kafka_bus, kafka_process, wait_until
from prometheus_client.parser import text_string_to_metric_families
from ragpulse_process import RagpulseProcess

from ragpulse.kafka.config import KafkaConfig

WORKER_LINE = re.compile(r"^worker (\d+) \(pid (\d+)\): .* http://([^/\s]+)/metrics", re.MULTILINE)
PARENT_READY = "all ready in"
APPS = 16  # connections: all of them on one worker by chance has odds of 2 in 65,536


def start_workers(tmp: Path, cfg: KafkaConfig, **receiver: object) -> RagpulseProcess:
    settings = {"bus": kafka_bus(cfg, 4), "receiver": {"workers": 2, **receiver}}
    collector = kafka_process(tmp, "collector", settings)
    wait_until(lambda: PARENT_READY in collector.log() or collector.proc.poll() is not None, 90,
               "both workers to start")
    assert collector.proc.poll() is None, collector.log()
    return collector


def workers(collector: RagpulseProcess) -> dict[int, tuple[int, str]]:
    """Worker index → (pid, /metrics address), the latest start of each."""
    return {int(i): (int(pid), metrics) for i, pid, metrics in WORKER_LINE.findall(collector.log())}


def receivers(collector: RagpulseProcess) -> tuple[str, str]:
    banner = next(line for line in collector.log().splitlines() if PARENT_READY in line)
    found = re.search(r"OTLP gRPC ([^\s,]+), OTLP HTTP ([^\s,]+)", banner)
    assert found is not None, banner
    return found.group(1), found.group(2)


def spans_received(metrics: str) -> float:
    """A worker's ragpulse_spans_received_total, all transports."""
    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5) as response:
        text = response.read().decode("utf-8")
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == "ragpulse_spans_received_total")


def send(apps: list[RagApp], per_app: int, tag: str) -> list[str]:
    return [app.answer(f"question {tag} {a}-{i}", ["context one", "context two"], f"answer {a}-{i}")
            for i in range(per_app) for a, app in enumerate(apps)]


def record_trace_ids(kafka_broker, cfg: KafkaConfig, expected: int) -> list[str]:
    """Every record on the topic, duplicates kept, once it holds `expected` (or after 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        found = [json.loads(m.value)["trace_id"] for m in kafka_broker.read(cfg.records_topic, 10**9, timeout_s=2)]
        if len(found) >= expected or time.monotonic() > deadline:
            return found


def stop(collector: RagpulseProcess, apps: list[RagApp]) -> None:
    """The apps' exporters closed, then the collector: SIGTERM, and a clean exit of every worker."""
    for app in apps:
        app.close()
    assert collector.stop() == 0, collector.log()


def test_spans_sent_to_the_shared_ports_reach_kafka_once_across_two_workers(
        kafka_broker, kafka_config: KafkaConfig, tmp_path: Path) -> None:
    collector = start_workers(tmp_path, kafka_config)
    apps: list[RagApp] = []
    try:
        grpc, http = receivers(collector)
        apps = [RagApp(f"svc-{a % 3}", "http", http) for a in range(APPS)] + \
               [RagApp("svc-grpc", "grpc", grpc) for _ in range(4)]
        sent = send(apps, 5, "shared")
        found = record_trace_ids(kafka_broker, kafka_config, len(sent))
        assert sorted(found) == sorted(sent)  # every span once: none lost, none doubled
        per_worker = [spans_received(metrics) for _, metrics in workers(collector).values()]
        assert len(per_worker) == 2 and all(n > 0 for n in per_worker), per_worker
        assert sum(per_worker) == len(sent)
    finally:
        stop(collector, apps)
    assert "stopped: {'drained': True, 'unacknowledged': 0}" in collector.log()


def test_a_killed_worker_is_restarted_and_the_ports_keep_taking_spans(
        kafka_broker, kafka_config: KafkaConfig, tmp_path: Path) -> None:
    collector = start_workers(tmp_path, kafka_config)
    apps: list[RagApp] = []
    try:
        _, http = receivers(collector)
        killed, _ = workers(collector)[0]
        os.kill(killed, signal.SIGKILL)
        wait_until(lambda: workers(collector)[0][0] != killed, 30, "worker 0 to be started again")
        assert "worker 0 (exit status -9) restarts in" in collector.log()
        wait_until(lambda: spans_received_or_none(workers(collector)[0][1]) is not None, 30,
                   "the new worker 0 to serve /metrics")
        apps = [RagApp("svc", "http", http) for _ in range(APPS)]
        sent = send(apps, 3, "after-restart")
        found = record_trace_ids(kafka_broker, kafka_config, len(sent))
        assert sorted(found) == sorted(sent)
        assert spans_received(workers(collector)[0][1]) > 0  # the new worker 0 takes connections
    finally:
        stop(collector, apps)


def spans_received_or_none(metrics: str) -> float | None:
    try:
        return spans_received(metrics)
    except OSError:
        return None


def test_a_worker_that_keeps_crashing_stops_the_collector_with_an_error(
        kafka_broker, kafka_config: KafkaConfig, tmp_path: Path) -> None:
    # Worker 1 serves /metrics on prometheus.endpoint's port + 1, which another socket holds: it
    # exits at every start.
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    base = held.getsockname()[1] - 1
    settings = {"bus": kafka_bus(kafka_config, 4), "receiver": {"workers": 2},
                "prometheus": {"endpoint": f"127.0.0.1:{base}"}}
    collector = kafka_process(tmp_path, "collector", settings)
    try:
        assert collector.proc.wait(120) == 1, collector.log()
    finally:
        held.close()
        collector.stop()
    log = collector.log()
    assert re.search(r"worker \d exited 5 times within 60 s \(last exit status 1\); stopping", log), log
    assert PARENT_READY not in log
    pids = [int(pid) for pid in re.findall(r"worker \d started \(pid (\d+)\)", log)]
    assert len(pids) >= 6, log  # both workers, and the restarts
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()], log  # none left behind
