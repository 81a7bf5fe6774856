"""Failed TLS handshakes are counted by reason (ragpulse_tls_handshake_failures_total) on the
OTLP/HTTP receiver and the scorer's /metrics server, with real TLS clients (the ssl module, the OTel
SDK's HTTP exporter) and certificates made by tests/support/certs.py."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator

import pytest
from certs import Certs, make_certs
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client import CollectorRegistry
from test_receiver_auth_tls import exporter_ca_is_not_overridden, http_exporter, spans, start  # noqa: F401
from test_receiver_limits import Receivers

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.tls import TlsConfig
from ragpulse.scorer.export.http_server import ScorerHttp
from ragpulse.scorer.web.page import PageConfig

FAMILY = "ragpulse_tls_handshake_failures_total"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def mtls_receivers(certs: Certs) -> Iterator[Receivers]:
    r = start(tls=TlsConfig(str(certs.server_cert), str(certs.server_key), str(certs.ca)), read_timeout_s=0.5)
    yield r
    for receiver in r.parts.receivers:
        receiver.stop()


def failures(registry: CollectorRegistry, server: str) -> dict[str, float]:
    return {sample.labels["reason"]: sample.value for metric in registry.collect() if metric.name == FAMILY[:-6]
            for sample in metric.samples
            if sample.name == FAMILY and sample.labels["server"] == server and sample.value}


def wait_for(registry: CollectorRegistry, server: str, expected: dict[str, float]) -> None:
    """The server counts on its connection thread, after the client has seen the refusal."""
    deadline = time.monotonic() + 10
    while failures(registry, server) != expected and time.monotonic() < deadline:
        time.sleep(0.02)
    assert failures(registry, server) == expected


def tls_client(endpoint: str, ca: str, cert: tuple[str, str] | None = None) -> None:
    """A real TLS client's handshake and one request; the refusal may show at either."""
    context = ssl.create_default_context(cafile=ca)
    if cert is not None:
        context.load_cert_chain(*cert)
    with socket.create_connection(parse_endpoint(endpoint, "test"), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                tls.recv(100)
        except (ssl.SSLError, ConnectionError):
            pass


def raw_client(endpoint: str, data: bytes) -> None:
    with socket.create_connection(parse_endpoint(endpoint, "test"), timeout=10) as sock:
        sock.sendall(data)
        try:
            assert not sock.recv(100).startswith(b"HTTP/")
        except ConnectionError:
            pass


def test_each_kind_of_failed_handshake_on_the_receiver_is_counted_by_reason(
        mtls_receivers: Receivers, certs: Certs) -> None:
    r, ca = mtls_receivers, str(certs.ca)
    assert failures(r.registry, "otlp_http") == {}
    tls_client(r.http, ca)  # no client certificate
    tls_client(r.http, ca, (str(certs.other_client_cert), str(certs.other_client_key)))  # signed by another CA
    tls_client(r.http, str(certs.other_ca), (str(certs.client_cert), str(certs.client_key)))  # distrusts us
    raw_client(r.http, b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
    raw_client(r.http, b"\x00garbage, not a TLS record" * 4)
    raw_client(r.http, b"\x16\x03\x01")  # a TLS record begun, then nothing until the read timeout
    wait_for(r.registry, "otlp_http", {
        "no_client_certificate": 1, "client_certificate_rejected": 1, "server_certificate_rejected": 1,
        "not_tls": 2, "timeout": 1})
    # A good client is not counted, and still gets through.
    exporter = http_exporter(r, certs, None)
    assert exporter.export(spans()) == SpanExportResult.SUCCESS
    exporter.shutdown()
    assert sum(failures(r.registry, "otlp_http").values()) == 6


def test_failed_handshakes_on_metrics_and_the_page_are_counted_under_their_server(certs: Certs) -> None:
    registry = CollectorRegistry()
    prometheus = PrometheusConfig(endpoint="127.0.0.1:0",
                                  tls=TlsConfig(str(certs.server_cert), str(certs.server_key), str(certs.ca)))
    http = ScorerHttp(prometheus, PageConfig(endpoint="127.0.0.1:0"), registry,
                      lambda target: (200, "text/plain", b"page\n"))
    http.start()
    try:
        assert http.page is not None
        tls_client(http.metrics.endpoint, str(certs.ca))
        raw_client(http.page.endpoint, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        wait_for(registry, "metrics", {"no_client_certificate": 1})
        wait_for(registry, "page", {"not_tls": 1})
    finally:
        http.stop()
