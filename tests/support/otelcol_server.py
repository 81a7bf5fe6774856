"""A real OpenTelemetry Collector (Apache-2.0; built by deploy/otelcol/build.sh from
deploy/otelcol/manifest.yaml) on 127.0.0.1, between ragpulse and a backend: its OTLP receiver takes
ragpulse's metrics, its otlp_http exporter forwards them to an OTLP receiver inside the test (which
keeps every request it decodes), and its prometheus exporter serves them for a scrape.

A missing binary skips the test on a developer machine but FAILS it when CI is set, so CI can never
pass by skipping.
"""

from __future__ import annotations

import gzip
import http.server
import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from ports import free_port
from server_process import die_with_parent, stop_process, wait_ready


def otelcol_binary() -> Path:
    home = os.environ.get("RAGPULSE_OTELCOL_HOME") or Path.home() / ".cache" / "ragpulse" / "otelcol"
    binary = Path(home) / "otelcol-ragpulse" / "bin" / "otelcol-ragpulse"
    if not binary.is_file():
        message = f"{binary} not found: run deploy/otelcol/build.sh"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: the Collector tests must run, not skip)", pytrace=False)
        pytest.skip(message)
    return binary


class OtlpMetricsSink:
    """The backend behind the Collector: an OTLP/HTTP metrics receiver that keeps what arrives."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self._lock = threading.Lock()
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportMetricsServiceRequest()
                request.ParseFromString(body)
                with sink._lock:
                    sink.requests.append(request)
                reply = ExportMetricsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def metrics(self) -> list[tuple[Any, Any]]:
        """Every (resource_metrics, metric) received so far."""
        with self._lock:
            return [(rm, m) for r in self.requests for rm in r.resource_metrics
                    for sm in rm.scope_metrics for m in sm.metrics]

    def wait_for(self, found: Callable[[list[tuple[Any, Any]]], bool],
                 timeout_s: float = 30.0) -> list[tuple[Any, Any]]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            metrics = self.metrics()
            if found(metrics):
                return metrics
            time.sleep(0.2)
        raise AssertionError(f"not received within {timeout_s} s; names: {sorted({m.name for _, m in self.metrics()})}")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _config(grpc_port: int, http_port: int, prometheus_port: int, sink_url: str) -> dict[str, Any]:
    return {
        "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"127.0.0.1:{grpc_port}"},
                                             "http": {"endpoint": f"127.0.0.1:{http_port}"}}}},
        "exporters": {
            "otlp_http": {"endpoint": sink_url, "compression": "none",
                         "retry_on_failure": {"enabled": False}, "sending_queue": {"enabled": False}},
            # Resource attributes as labels: each ragpulse process (service.instance.id) stays apart.
            "prometheus": {"endpoint": f"127.0.0.1:{prometheus_port}",
                           "resource_to_telemetry_conversion": {"enabled": False}},
        },
        "service": {
            "pipelines": {"metrics": {"receivers": ["otlp"], "exporters": ["otlp_http", "prometheus"]}},
            # The Collector's own metrics would listen on a fixed port (8888): two runs would clash.
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "info"}},
        },
    }


class OtelcolServer:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.sink = OtlpMetricsSink()
        self.grpc_port, self.http_port, self.prometheus_port = free_port(), free_port(), free_port()
        self.otlp_grpc = f"http://127.0.0.1:{self.grpc_port}"
        self.otlp_http = f"http://127.0.0.1:{self.http_port}"
        self.prometheus_url = f"http://127.0.0.1:{self.prometheus_port}/metrics"
        self.config_path = workdir / "otelcol.yaml"
        self.config_path.write_text(yaml.safe_dump(_config(self.grpc_port, self.http_port, self.prometheus_port,
                                                           self.sink.url)), encoding="utf-8")
        self.log_path = workdir / "otelcol.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> OtelcolServer:
        binary = otelcol_binary()
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process in stop()
        self._proc = subprocess.Popen([str(binary), f"--config={self.config_path}"], stdout=self._log,
                                      stderr=subprocess.STDOUT, cwd=self.workdir, preexec_fn=die_with_parent)
        wait_ready(self._proc, "otelcol", lambda: self.scrape() is not None, self.log_path, timeout_s)
        return self

    def scrape(self) -> str | None:
        try:
            with urllib.request.urlopen(self.prometheus_url, timeout=5) as r:
                return r.read().decode()
        except OSError:
            return None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._log.close()
        self.sink.stop()


@pytest.fixture
def otelcol(tmp_path: Path):
    workdir = tmp_path / "otelcol"
    workdir.mkdir()
    server = OtelcolServer(workdir).start()
    yield server
    server.stop()
