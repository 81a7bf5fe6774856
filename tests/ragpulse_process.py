"""A real `ragpulse up` subprocess on free loopback ports, for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RagpulseProcess:
    def __init__(self, tmp: Path, settings: dict[str, Any] | None = None, demo: bool = False) -> None:
        self.grpc = f"127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.metrics = f"127.0.0.1:{free_port()}"
        config: dict[str, Any] = {
            "receiver": {"grpc_endpoint": self.grpc, "http_endpoint": self.http},
            "prometheus": {"endpoint": self.metrics},
        }
        for section, values in (settings or {}).items():
            if isinstance(values, dict):
                config.setdefault(section, {}).update(values)
            else:
                config[section] = values
        self.config_path = tmp / f"ragpulse-{self.metrics.rsplit(':', 1)[1]}.yaml"
        self.config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        self.log_path = tmp / f"ragpulse-{self.metrics.rsplit(':', 1)[1]}.log"
        args = [sys.executable, "-m", "ragpulse.cli", "up", "--config", str(self.config_path)]
        if demo:
            args += ["--demo", "--demo-interval", "0.2"]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - kept open for the process's life
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=os.environ.copy())
        self.wait_ready()

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ragpulse exited with {self.proc.returncode}: {self.log()}")
            try:
                self.scrape_text()
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"ragpulse did not serve /metrics within {timeout_s} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def scrape_text(self) -> str:
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as r:
            return r.read().decode("utf-8")

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        out = {}
        for family in text_string_to_metric_families(self.scrape_text()):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def value(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels`."""
        want = set(labels.items())
        return sum(v for (n, ls), v in self.samples().items() if n == name and want <= set(ls))

    def wait_for(self, name: str, at_least: float, timeout_s: float = 60.0, **labels: str) -> float:
        deadline = time.monotonic() + timeout_s
        value = 0.0
        while time.monotonic() < deadline:
            value = self.value(name, **labels)
            if value >= at_least:
                return value
            time.sleep(0.2)
        raise AssertionError(f"{name}{labels} stayed at {value} < {at_least} for {timeout_s} s; log: {self.log()}")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 40.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode
