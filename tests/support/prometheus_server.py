"""A real Prometheus (Debian's `prometheus` package) on 127.0.0.1 for the live tests.

Use `prometheus_binary()` / `promtool_binary()` to locate the tools: a missing binary skips the test
on a developer machine but FAILS it in CI (env CI set), so CI can never pass by skipping.
`PrometheusServer` runs one instance with its own temp dir, config and free port.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import free_port
from server_process import die_with_parent, http_ok, stop_process, wait_ready

REPO = Path(__file__).resolve().parents[2]
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



class PrometheusServer:
    def __init__(self, workdir: Path, targets: list[str], rule_files: list[Path] | None = None,
                 scrape_interval: str = "1s", evaluation_interval: str = "1s",
                 flags: tuple[str, ...] = (), extra_config: dict[str, Any] | None = None) -> None:
        """`flags`: more command-line flags (--enable-feature=...); `extra_config`: more top-level
        config sections (alerting, global.external_labels goes under "global")."""
        self.workdir = workdir
        self.flags = flags
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
            "rule_files": [str(p) for p in (rule_files or [])],
            "scrape_configs": [{"job_name": "ragpulse", "static_configs": [{"targets": targets}]}],
        }
        for section, value in (extra_config or {}).items():
            if isinstance(value, dict):
                config.setdefault(section, {}).update(value)
            else:
                config[section] = value
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
             "--web.enable-lifecycle", *self.flags],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir, preexec_fn=die_with_parent,
        )
        self._log = log
        wait_ready(self._proc, "prometheus", lambda: http_ok(f"{self.url}/-/ready"), self.log_path, timeout_s)
        return self

    def stop(self) -> None:
        stop_process(self._proc)
        if self._proc is not None:
            self._log.close()

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            # Prometheus explains a bad query in the body: show it, not just "400".
            raise AssertionError(f"{path} {params}: HTTP {e.code}: {e.read().decode(errors='replace')}") from e
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


# --- Rules for the live tests ------------------------------------------------------------------

_DURATION = re.compile(r"(\d+)([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _scaled(duration: str, factor: float) -> str:
    match = _DURATION.fullmatch(duration)
    assert match, duration
    return f"{max(1, round(int(match[1]) * _SECONDS[match[2]] * factor))}s"


def rules_for_test(dest: Path, time_factor: float = 1.0, interval: str = "1s") -> list[Path]:
    """Copies of the shipped rule files with every group evaluated each `interval` (the shipped 30s
    and 5m would make a live test wait minutes for a first evaluation) and, with time_factor < 1,
    every range window and `for:` duration scaled (1/60: a 1h window becomes 60s), so that a test
    run of a few minutes plays the alerts' hours. Expressions and thresholds stay as shipped."""
    out = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in doc["groups"]:
            group["interval"] = interval
            for rule in group["rules"]:
                if time_factor != 1.0:
                    rule["expr"] = re.sub(r"\[(\d+[smhd])\]", lambda m: f"[{_scaled(m[1], time_factor)}]",
                                          rule["expr"])
                    if "for" in rule:
                        rule["for"] = _scaled(rule["for"], time_factor)
        target = dest / path.name
        target.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
        out.append(target)
    return out


# --- RAG traffic for the live tests ------------------------------------------------------------
# (question, contexts, faithful answer copied from the contexts, unfaithful answer with facts the
# contexts do not hold), in English and Japanese.
CORPUS = [
    ("When was the Eiffel Tower completed?",
     ["The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 for the World's Fair.",
      "The tower is 330 metres tall and was designed by the company of Gustave Eiffel."],
     "The Eiffel Tower was completed in 1889 for the World's Fair. The tower is 330 metres tall.",
     "The Eiffel Tower was finished in 1925 by Napoleon in Lyon. It is made of bamboo and is 95 metres tall."),
    ("How do I reset my password?",
     ["To reset your password, open Settings, choose Security and click Reset password. A reset link is "
      "emailed to you and expires after 24 hours."],
     "Open Settings, choose Security and click Reset password. A reset link is emailed to you and expires "
     "after 24 hours.",
     "Call our support hotline at 555-0100 and a technician will visit your house. Passwords can only be "
     "reset on Tuesdays."),
    ("富士山の標高は？",
     ["富士山は日本で最も高い山で、標高は3776メートルです。山梨県と静岡県にまたがっています。"],
     "富士山の標高は3776メートルです。山梨県と静岡県にまたがっています。",
     "富士山の標高は5000メートルで、北海道にあります。毎年噴火しています。"),
]
# An answer with no claim at all: the faithfulness metric fails with no_statements (a counted
# failure, never a score), as with truncated model output in production.
NO_CLAIM_ANSWER = "..."


def send_answers(app: Any, n: int, faithful: bool, rate_per_s: float = 5.0, route: str = "/faq",
                 model: str = "gpt-x", start: int = 0) -> None:
    """Sends n RAG answers through a tests.otel_app.RagApp (real OTel SDK, OTLP), paced at rate_per_s."""
    for i in range(start, start + n):
        question, contexts, good, bad = CORPUS[i % len(CORPUS)]
        app.answer(f"{question} ({i})", contexts, good if faithful else bad,
                   **{"rag.route": route, "rag.model": model})
        time.sleep(1.0 / rate_per_s)
