"""A real Jaeger v2 (Apache-2.0; built by deploy/jaeger/build.sh) on 127.0.0.1: the user's tracing
backend, where the scorer writes its evaluations back.

In-memory storage, OTLP gRPC and HTTP receivers and the query API on free loopback ports, no
telemetry port of its own. A missing binary skips the test on a developer machine but FAILS it
when CI is set, so CI can never pass by skipping.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_port
from server_process import die_with_parent, stop_process, wait_ready


def jaeger_binary() -> Path:
    home = os.environ.get("RAGPULSE_JAEGER_HOME") or Path.home() / ".cache" / "ragpulse" / "jaeger"
    binary = Path(home) / "bin" / "jaeger"
    if not binary.is_file():
        message = f"{binary} not found: run deploy/jaeger/build.sh"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: the tracing-backend tests must run, not skip)", pytrace=False)
        pytest.skip(message)
    return binary


def _config(grpc_port: int, http_port: int, query_port: int) -> dict[str, Any]:
    return {
        "service": {
            "extensions": ["jaeger_storage", "jaeger_query"],
            "pipelines": {"traces": {"receivers": ["otlp"], "processors": ["batch"],
                                     "exporters": ["jaeger_storage_exporter"]}},
            # The collector's own metrics would listen on a fixed port (8888): two runs would clash.
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "info"}},
        },
        "extensions": {
            "jaeger_query": {
                "storage": {"traces": "memstore"},
                "http": {"endpoint": f"127.0.0.1:{query_port}"},
                "grpc": {"endpoint": f"127.0.0.1:{free_port()}"},
            },
            "jaeger_storage": {"backends": {"memstore": {"memory": {"max_traces": 10000}}}},
        },
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{grpc_port}"},
                                             "http": {"endpoint": f"127.0.0.1:{http_port}"}}}},
        "processors": {"batch": {"timeout": "200ms"}},
        "exporters": {"jaeger_storage_exporter": {"trace_storage": "memstore"}},
    }


class JaegerServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.grpc_port, self.http_port, self.query_port = free_port(), free_port(), free_port()
        self.otlp_grpc = f"http://127.0.0.1:{self.grpc_port}"
        self.otlp_http = f"http://127.0.0.1:{self.http_port}"
        self.query_url = f"http://127.0.0.1:{self.query_port}"
        self.config_path = workdir / "jaeger.yaml"
        self.config_path.write_text(yaml.safe_dump(_config(self.grpc_port, self.http_port, self.query_port)),
                                    encoding="utf-8")
        self.log_path = workdir / "jaeger.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> JaegerServer:
        binary = jaeger_binary()
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process in stop()
        self._proc = subprocess.Popen([str(binary), "--config", str(self.config_path)],
                                      stdout=self._log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                      preexec_fn=die_with_parent)
        wait_ready(self._proc, "jaeger", lambda: self.api("services") is not None, self.log_path, timeout_s)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self._proc is None:
            return
        stop_process(self._proc)
        self._log.close()

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.query_url}/api/{path}", timeout=5) as r:
            return json.load(r)

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """The trace as Jaeger's query API returns it (spans, processes), or None while unknown."""
        try:
            data = self.api(f"traces/{trace_id}")["data"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        return data[0] if data else None

    def wait_for_spans(self, trace_id: str, count: int, timeout_s: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        found = None
        while time.monotonic() < deadline:
            found = self.trace(trace_id)
            if found is not None and len(found["spans"]) >= count:
                return found
            time.sleep(0.3)
        raise AssertionError(f"trace {trace_id} has not {count} spans within {timeout_s} s: {found}")


@pytest.fixture
def jaeger(tmp_path: Path):
    workdir = tmp_path / "jaeger"
    workdir.mkdir()
    server = JaegerServer(workdir).start()
    yield server
    server.stop()
