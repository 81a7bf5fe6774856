"""`ragpulse collector` and `ragpulse scorer` as real subprocesses on a test broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from kafka_broker import free_port
from prometheus_client.parser import text_string_to_metric_families


class KafkaProcess:
    def __init__(self, tmp: Path, command: str, settings: dict[str, Any]) -> None:
        self.command = command
        self.grpc = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        config = {"receiver": {"grpc_endpoint": self.grpc, "http_endpoint": self.http},
                  "prometheus": {"endpoint": self.metrics}, **settings}
        port = self.metrics.rsplit(":", 1)[1]
        self.config_path = tmp / f"{command}-{port}.yaml"
        self.config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        self.log_path = tmp / f"{command}-{port}.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - kept open for the process's life
        self.proc = subprocess.Popen([sys.executable, "-m", "ragpulse.cli", command, "--config", str(self.config_path)],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=os.environ.copy())

    def wait_ready(self, timeout_s: float = 60.0) -> KafkaProcess:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ragpulse {self.command} exited with {self.proc.returncode}: {self.log()}")
            if "ready in" not in self.log():  # printed once topics, clients and /metrics are up
                time.sleep(0.2)
                continue
            try:
                self.scrape_text()
                return self
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"ragpulse {self.command} not ready within {timeout_s} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def scrape_text(self) -> str:
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as r:
            return r.read().decode("utf-8")

    def value(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels` (0 once the process is gone)."""
        if self.proc.poll() is not None:
            return 0.0
        want = set(labels.items())
        return sum(s.value for family in text_string_to_metric_families(self.scrape_text())
                   for s in family.samples if s.name == name and want <= set(s.labels.items()))

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def total(processes: list[KafkaProcess], name: str, **labels: str) -> float:
    return sum(p.value(name, **labels) for p in processes)


def wait_until(check: Any, timeout_s: float, what: str, interval_s: float = 0.3) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
