"""A real Alertmanager (Debian's `prometheus-alertmanager`) on 127.0.0.1, clustering off, and a
webhook receiver that records what it is sent.

`alertmanager_config_for_test` copies the shipped deploy/prometheus/alertmanager.yml with every
receiver's webhook pointed at the test's receiver (the path names the receiver) and the waits cut
to a second, routes and inhibitions untouched. A missing binary skips the test on a developer
machine but FAILS it when CI is set.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_port
from prometheus_server import REPO, _require
from server_process import die_with_parent, http_ok, stop_process, wait_ready

SHIPPED_CONFIG = REPO / "deploy" / "prometheus" / "alertmanager.yml"


def alertmanager_binary() -> str:
    return _require("prometheus-alertmanager", "prometheus-alertmanager")


def amtool_binary() -> str:
    return _require("amtool", "prometheus-alertmanager")


def _routes(route: dict[str, Any]) -> list[dict[str, Any]]:
    return [route] + [r for child in route.get("routes", []) for r in _routes(child)]


def alertmanager_config_for_test(dest: Path, webhook_base: str) -> Path:
    config = yaml.safe_load(SHIPPED_CONFIG.read_text(encoding="utf-8"))
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = f"{webhook_base}/{receiver['name']}"
    for route in _routes(config["route"]):
        for key in ("group_wait", "group_interval"):
            if key in route:
                route[key] = "1s"
    path = dest / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


class WebhookReceiver:
    """Alertmanager's webhook payloads as received: (receiver from the path, the JSON body)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    owner.received.append((self.path.strip("/"), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def notifications(self) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            return list(self.received)

    def wait_for(self, match, timeout_s: float, what: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """The first (receiver, payload, alert) for which match(receiver, payload, alert) holds."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for receiver, payload in self.notifications():
                for alert in payload["alerts"]:
                    if match(receiver, payload, alert):
                        return receiver, payload, alert
            time.sleep(0.5)
        seen = [(r, p["status"], [a["labels"].get("alertname") for a in p["alerts"]]) for r, p in self.notifications()]
        raise AssertionError(f"no notification: {what} within {timeout_s} s; received {seen}")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class AlertmanagerServer:
    def __init__(self, workdir: Path, config_path: Path) -> None:
        self.workdir = workdir
        self.config_path = config_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "alertmanager.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> AlertmanagerServer:
        binary = alertmanager_binary()
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed with the process in stop()
        self._proc = subprocess.Popen(
            [binary, f"--config.file={self.config_path}", f"--web.listen-address=127.0.0.1:{self.port}",
             "--cluster.listen-address=", f"--storage.path={self.workdir / 'data'}"],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=self.workdir, preexec_fn=die_with_parent,
        )
        wait_ready(self._proc, "alertmanager", lambda: http_ok(f"{self.url}/-/ready"), self.log_path, timeout_s)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        """The alerts Alertmanager holds (API v2), with their status: active, or inhibited and by what."""
        query = urllib.parse.urlencode([("filter", f'{k}="{v}"') for k, v in filters.items()])
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts?{query}", timeout=5) as r:
            return json.load(r)

    def stop(self) -> None:
        if self._proc is None:
            return
        stop_process(self._proc)
        self._log.close()


def route_of(labels: dict[str, str]) -> list[str]:
    """The receivers the shipped config routes `labels` to, as `amtool config routes test` says."""
    out = subprocess.run([amtool_binary(), "config", "routes", "test", f"--config.file={SHIPPED_CONFIG}",
                          *(f"{k}={v}" for k, v in labels.items())], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.split()


@pytest.fixture
def webhook_receiver():
    receiver = WebhookReceiver()
    yield receiver
    receiver.stop()
