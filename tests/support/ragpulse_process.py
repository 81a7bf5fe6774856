"""A real `ragpulse` subprocess (`up`, `collector` or `scorer`) for end-to-end tests.

It listens on port 0 everywhere and the addresses are read from its banner: ports picked free
beforehand can be taken by another socket before the process binds them (EADDRINUSE in CI).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

_names = itertools.count()
_RECEIVERS = re.compile(r"OTLP gRPC ([^\s,]+), OTLP HTTP ([^\s,]+)")


class RagpulseProcess:
    def __init__(
        self,
        tmp: Path,
        settings: dict[str, Any] | None = None,
        demo: bool = False,
        command: str = "up",
        wait: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.command = command
        # Known once the banner is printed (wait_ready).
        self.grpc = self.http = self.metrics = ""
        config: dict[str, Any] = {
            "receiver": {"grpc_endpoint": "127.0.0.1:0", "http_endpoint": "127.0.0.1:0"},
            "prometheus": {"endpoint": "127.0.0.1:0"},
        }
        for section, values in (settings or {}).items():
            if isinstance(values, dict):
                config.setdefault(section, {}).update(values)
            else:
                config[section] = values
        name = f"{command}-{os.getpid()}-{next(_names)}"
        self.config_path = tmp / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        self.log_path = tmp / f"{name}.log"
        args = [sys.executable, "-m", "ragpulse.cli", command, "--config", str(self.config_path)]
        if demo:
            args += ["--demo", "--demo-interval", "0.2"]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - kept open for the process's life
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **(env or {})})
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout_s: float = 60.0) -> RagpulseProcess:
        """Ready once the banner ("... ready in N s") is printed and /metrics answers."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ragpulse {self.command} exited with {self.proc.returncode}: {self.log()}")
            banner = next((line for line in self.log().splitlines() if "ready in" in line), None)
            if banner is None:
                time.sleep(0.1)
                continue
            self._read_addresses(banner)
            try:
                self.scrape_text()
                return self
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"ragpulse {self.command} not ready within {timeout_s} s: {self.log()}")

    def _read_addresses(self, banner: str) -> None:
        metrics = re.search(r" http://([^/\s]+)/", banner)
        receivers = _RECEIVERS.search(banner)
        if metrics is None or (receivers is None and self.command != "scorer"):  # a scorer has no receivers
            raise AssertionError(f"addresses missing from the banner: {banner!r}")
        self.metrics = metrics.group(1)
        if receivers is not None:
            self.grpc, self.http = receivers.groups()

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
        """Sum of the samples of `name` whose labels include `labels` (0 once the process is gone)."""
        if self.proc.poll() is not None:
            return 0.0
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

    def wait_drained(self, timeout_s: float = 120.0) -> None:
        """Until every record the collector passed on has been scored, skipped or dead-lettered:
        on a loaded machine the scorer may lag the apps by many seconds."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            sampled = self.value("ragpulse_records_sampled_total")
            ended = (self.value("ragpulse_records_scored_total") + self.value("ragpulse_scorer_records_skipped_total")
                     + self.value("ragpulse_records_dead_lettered_total"))
            if sampled > 0 and ended >= sampled:
                return
            time.sleep(0.2)
        raise AssertionError(f"{sampled - ended} records still unscored after {timeout_s} s; log: {self.log()}")

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
