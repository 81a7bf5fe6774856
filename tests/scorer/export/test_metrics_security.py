"""/metrics and the live page: bearer and basic authentication, the Host check against DNS
rebinding, security headers, TLS, and the page beside /metrics, on its own address, or off. Real
servers on real sockets, with the real live page over an empty scorer."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from certs import make_certs
from prometheus_client import CollectorRegistry, Counter
from prometheus_server import PrometheusServer, prometheus_binary

from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.http_guard import AuthConfig
from ragpulse.core.tls import TlsConfig
from ragpulse.scorer.export.http_server import ScorerHttp
from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
from ragpulse.scorer.web.history import History
from ragpulse.scorer.web.page import LivePage, PageConfig

TOKEN = "scrape-token"
USER, PASSWORD = "ops", "correct horse"


@contextmanager
def serving(prometheus: PrometheusConfig, page_config: PageConfig | None = None) -> Iterator[ScorerHttp]:
    registry = CollectorRegistry()
    Counter("ragpulse_test_total", "A counter, so /metrics has a family", registry=registry).inc()
    page = LivePage(History(registry, {"faithfulness": 0.5}), RecentScores(), RecentDeadLetters(), None, registry)
    http = ScorerHttp(prometheus, page_config or PageConfig(), registry, page.handle)
    http.start()
    try:
        yield http
    finally:
        http.stop()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_every_answer_carries_the_security_headers() -> None:
    with serving(PrometheusConfig(endpoint="127.0.0.1:0")) as http:
        for path in ("/", "/static/app.js", "/api/summary", "/metrics", "/healthz", "/nope"):
            response = requests.get(f"http://{http.endpoint}{path}", timeout=10)
            csp = response.headers["Content-Security-Policy"]
            assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp, path
            assert "unsafe-inline" not in csp
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert response.headers["X-Frame-Options"] == "DENY"


def test_host_names_are_checked_against_dns_rebinding() -> None:
    with serving(PrometheusConfig(endpoint="127.0.0.1:0")) as http:
        port = http.endpoint.rsplit(":", 1)[1]
        for host, expected in (("attacker.example", 421), (f"attacker.example:{port}", 421), ("localhost.evil", 421),
                               (f"localhost:{port}", 200), (f"127.0.0.1:{port}", 200), ("10.0.0.7:9464", 200),
                               ("[::1]", 200)):
            for path in ("/", "/api/summary", "/metrics"):
                response = requests.get(f"http://{http.endpoint}{path}", headers={"Host": host}, timeout=10)
                assert response.status_code == expected, (host, path)
    with serving(PrometheusConfig(endpoint="127.0.0.1:0", allowed_hosts=["ragpulse.example.com"])) as http:
        ok = requests.get(f"http://{http.endpoint}/", headers={"Host": "ragpulse.example.com"}, timeout=10)
        assert ok.status_code == 200
        assert requests.get(f"http://{http.endpoint}/", headers={"Host": "localhost"}, timeout=10).status_code == 421


def test_bearer_and_basic_authentication() -> None:
    auth = AuthConfig(bearer_tokens=[TOKEN], basic_users={USER: PASSWORD})
    with serving(PrometheusConfig(endpoint="127.0.0.1:0", auth=auth)) as http:
        base = f"http://{http.endpoint}"
        for path in ("/metrics", "/", "/api/summary", "/static/app.js"):
            refused = requests.get(base + path, timeout=10)
            assert refused.status_code == 401, path
            # A browser sees the Basic challenge and asks for a user and password.
            assert 'Basic realm="ragpulse"' in refused.headers["WWW-Authenticate"]
            assert 'Bearer realm="ragpulse"' in refused.headers["WWW-Authenticate"]
            assert b"ragpulse_test_total" not in refused.content and b"<html" not in refused.content
            for wrong in (f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer", basic(USER, "wrong"),
                          basic("root", PASSWORD), "Basic !!!", f"Token {TOKEN}"):
                assert requests.get(base + path, headers={"Authorization": wrong}, timeout=10).status_code == 401
            for right in (f"Bearer {TOKEN}", f"bearer  {TOKEN}", basic(USER, PASSWORD)):
                assert requests.get(base + path, headers={"Authorization": right}, timeout=10).status_code == 200
        scraped = requests.get(f"{base}/metrics", auth=(USER, PASSWORD), timeout=10)
        assert "ragpulse_test_total 1.0" in scraped.text
        # Probes carry no credentials.
        assert requests.get(f"{base}/healthz", timeout=10).status_code == 200


def test_the_page_on_its_own_loopback_address_or_off() -> None:
    config = PrometheusConfig(endpoint="127.0.0.1:0")
    with serving(config, PageConfig(endpoint="127.0.0.1:0")) as http:
        assert http.page is not None and http.page.endpoint != http.endpoint
        metrics, page = f"http://{http.endpoint}", f"http://{http.page.endpoint}"
        assert requests.get(f"{metrics}/metrics", timeout=10).status_code == 200
        for path in ("/", "/api/summary", "/static/app.js"):
            assert requests.get(metrics + path, timeout=10).status_code == 404
            assert requests.get(page + path, timeout=10).status_code == 200
        assert requests.get(f"{page}/metrics", timeout=10).status_code == 404
        assert http.describe() == f"metrics {metrics}/metrics, live page {page}/"
    with serving(config, PageConfig(enabled=False)) as http:
        base = f"http://{http.endpoint}"
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 200
        assert [requests.get(base + p, timeout=10).status_code for p in ("/", "/api/summary")] == [404, 404]
        assert http.describe() == f"metrics {base}/metrics (live page off)"


def test_tls_on_metrics_and_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    certs = make_certs(tmp_path / "certs")
    tls = TlsConfig(str(certs.server_cert), str(certs.server_key))
    with serving(PrometheusConfig(endpoint="127.0.0.1:0", tls=tls, auth=AuthConfig(bearer_tokens=[TOKEN]))) as http:
        url = f"https://{http.endpoint}/metrics"
        response = requests.get(url, verify=str(certs.ca), headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert response.status_code == 200 and "ragpulse_test_total" in response.text
        assert http.describe().startswith("metrics and live page https://")
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(url, verify=str(certs.other_ca), timeout=10)
        # Plain HTTP to the TLS port gets no answer in plain text, and the port keeps serving.
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(f"http://{http.endpoint}/metrics", timeout=10)
        assert requests.get(url, verify=str(certs.ca), headers={"Authorization": f"Bearer {TOKEN}"},
                            timeout=10).status_code == 200


@pytest.mark.prometheus
def test_a_real_prometheus_scrapes_over_tls_with_a_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Prometheus's own `scheme: https`, `tls_config` and `authorization`: up with the token, down
    (401) without it or with another."""
    prometheus_binary()
    certs = make_certs(tmp_path / "certs")
    tls = TlsConfig(str(certs.server_cert), str(certs.server_key))
    with serving(PrometheusConfig(endpoint="127.0.0.1:0", tls=tls, auth=AuthConfig(bearer_tokens=[TOKEN]))) as http:
        jobs = [{"job_name": name, "scheme": "https", "tls_config": {"ca_file": str(certs.ca)},
                 "static_configs": [{"targets": [http.endpoint]}], **extra}
                for name, extra in (("ragpulse", {"authorization": {"credentials": TOKEN}}),
                                    ("wrong", {"authorization": {"credentials": "not-it"}}), ("none", {}))]
        (tmp_path / "prometheus").mkdir()
        prometheus = PrometheusServer(tmp_path / "prometheus", [], extra_config={"scrape_configs": jobs}).start()
        try:
            prometheus.wait_for_target_up()
            assert prometheus.query("ragpulse_test_total")[0]["value"][1] == "1"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(prometheus.query('up{job=~"wrong|none"} == 0')) < 2:
                time.sleep(0.5)
            assert len(prometheus.query('up{job=~"wrong|none"} == 0')) == 2
            errors = {t["labels"]["job"]: t["lastError"] for t in prometheus.api("targets")["activeTargets"]}
            assert "401" in errors["wrong"] and "401" in errors["none"]
        finally:
            prometheus.stop()
