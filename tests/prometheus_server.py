"""A real Prometheus (Debian's `prometheus` package) on 127.0.0.1 for the live tests.

Use `prometheus_binary()` / `promtool_binary()` to locate the tools: a missing binary skips the test
on a developer machine but FAILS it in CI (env CI set), so CI can never pass by skipping.
`PrometheusServer` runs one instance with its own temp dir, config and free port.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
RULES_DIR = REPO / "deploy" / "prometheus" / "rules"


def _require(binary: str, package: str) -> str:
    path = shutil.which(binary)
    if path is None:
        message = f"{binary} not found: apt-get install -y {package}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def prometheus_binary() -> str:
    return _require("prometheus", "prometheus")


def promtool_binary() -> str:
    return _require("promtool", "prometheus")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    def __init__(self, workdir: Path, targets: list[str], rule_files: list[Path] | None = None,
                 scrape_interval: str = "1s", evaluation_interval: str = "1s") -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
            "rule_files": [str(p) for p in (rule_files or [])],
            "scrape_configs": [{"job_name": "ragpulse", "static_configs": [{"targets": targets}]}],
        }
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log_path = workdir / "prometheus.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> PrometheusServer:
        binary = prometheus_binary()
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process in stop()
        self._proc = subprocess.Popen(
            [binary, f"--config.file={self.config_path}", f"--web.listen-address=127.0.0.1:{self.port}",
             f"--storage.tsdb.path={self.workdir / 'data'}", "--storage.tsdb.retention.time=1d",
             "--web.enable-lifecycle"],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
        )
        self._log = log
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready: {self.log_path.read_text(errors='replace')[-2000:]}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc is not None:
            self._log.close()

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self.api("query", query=expr)["result"]

    def query_range(self, expr: str, start: float, end: float, step: str) -> list[dict[str, Any]]:
        return self.api("query_range", query=expr, start=str(start), end=str(end), step=step)["result"]

    def alerts(self) -> list[dict[str, Any]]:
        return self.api("alerts")["alerts"]

    def wait_for_target_up(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.query('up{job="ragpulse"} == 1'):
                return
            time.sleep(0.5)
        raise AssertionError(f"ragpulse target never up: {self.api('targets')}")


@pytest.fixture
def prometheus_factory(tmp_path: Path):
    """Call with (targets, rule_files=..., ...) to get a started PrometheusServer; stopped after."""
    started: list[PrometheusServer] = []

    def make(targets: list[str], **kwargs: Any) -> PrometheusServer:
        workdir = tmp_path / f"prometheus-{len(started)}"
        workdir.mkdir()
        server = PrometheusServer(workdir, targets, **kwargs)
        started.append(server)
        return server.start()

    yield make
    for server in started:
        server.stop()
