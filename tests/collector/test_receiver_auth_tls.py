"""Bearer tokens, TLS and mutual TLS on both OTLP receivers, and the Host check on OTLP/HTTP, with the
real OTel SDK exporters over real sockets and certificates made here (tests/support/certs.py)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from certs import Certs, make_certs
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from test_receiver_limits import EXPORT, Receivers, one_span_body, start_receivers

from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.config import ConfigError, load_config
from ragpulse.core.http_guard import AuthConfig
from ragpulse.core.tls import TlsConfig

TOKENS = ["first-token", "second-token"]


@pytest.fixture(autouse=True)
def exporter_ca_is_not_overridden(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests lets REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE override a session's CA, which is how the
    HTTP exporter passes its certificate_file: with either set, the exporter trusts only those."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def spans() -> list[ReadableSpan]:
    """One native RAG span, made by the SDK."""
    kept: list[ReadableSpan] = []

    class Keep(SpanExporter):
        def export(self, batch: Any) -> SpanExportResult:
            kept.extend(batch)
            return SpanExportResult.SUCCESS

    provider = TracerProvider(resource=Resource.create({"service.name": "secure-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(Keep()))
    with provider.get_tracer("test").start_as_current_span("rag") as span:
        span.set_attribute("rag.question", "How long is the warranty?")
        span.set_attribute("rag.contexts", ["The warranty lasts two years."])
        span.set_attribute("rag.answer", "Two years.")
    provider.shutdown()
    return kept


def start(**settings: Any) -> Receivers:
    return start_receivers(ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", **settings))


@pytest.fixture
def tls_receivers(certs: Certs) -> Iterator[Receivers]:
    r = start(auth=AuthConfig(bearer_tokens=TOKENS),
              tls=TlsConfig(str(certs.server_cert), str(certs.server_key), str(certs.ca)))
    yield r
    for receiver in r.parts.receivers:
        receiver.stop()


def http_exporter(r: Receivers, certs: Certs, token: str | None, client: bool = True) -> HttpExporter:
    return HttpExporter(
        endpoint=f"https://{r.http}/v1/traces", certificate_file=str(certs.ca),
        client_certificate_file=str(certs.client_cert) if client else None,
        client_key_file=str(certs.client_key) if client else None,
        headers={"authorization": f"Bearer {token}"} if token else None, timeout=5)


def grpc_exporter(r: Receivers, certs: Certs, token: str | None) -> GrpcExporter:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.ca.read_bytes(), private_key=certs.client_key.read_bytes(),
        certificate_chain=certs.client_cert.read_bytes())
    return GrpcExporter(endpoint=r.grpc, insecure=False, credentials=credentials,
                        headers=(("authorization", f"Bearer {token}"),) if token else None, timeout=5)


def test_exporters_with_a_token_and_a_client_certificate_get_through(tls_receivers: Receivers, certs: Certs) -> None:
    for i, exporter in enumerate((http_exporter(tls_receivers, certs, TOKENS[0]),
                                  grpc_exporter(tls_receivers, certs, TOKENS[1]))):
        assert exporter.export(spans()) == SpanExportResult.SUCCESS
        exporter.shutdown()
        assert tls_receivers.bus.depth() == i + 1
    assert tls_receivers.refused("unauthenticated") == tls_receivers.refused("unauthenticated", "grpc") == 0


@pytest.mark.parametrize("token", ["wrong-token", None, "first-token-and-more", "first-toke"])
def test_a_wrong_or_missing_token_is_401_and_unauthenticated_and_counted(
        tls_receivers: Receivers, certs: Certs, token: str | None) -> None:
    for exporter in (http_exporter(tls_receivers, certs, token), grpc_exporter(tls_receivers, certs, token)):
        assert exporter.export(spans()) == SpanExportResult.FAILURE
        exporter.shutdown()
    assert tls_receivers.bus.depth() == 0
    assert tls_receivers.refused("unauthenticated") == 1
    assert tls_receivers.refused("unauthenticated", "grpc") == 1
    # What the exporters saw: 401 with a challenge, and UNAUTHENTICATED.
    response = requests.post(f"https://{tls_receivers.http}/v1/traces", data=one_span_body(),
                             headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {token}"},
                             verify=str(certs.ca), cert=(str(certs.client_cert), str(certs.client_key)), timeout=10)
    assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
    credentials = grpc.ssl_channel_credentials(certs.ca.read_bytes(), certs.client_key.read_bytes(),
                                               certs.client_cert.read_bytes())
    with grpc.secure_channel(tls_receivers.grpc, credentials) as channel:
        with pytest.raises(grpc.RpcError) as err:
            channel.unary_unary(EXPORT)(one_span_body(), timeout=10, metadata=(("authorization", f"Bearer {token}"),))
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_client_without_a_trusted_certificate_is_refused_in_the_handshake(
        tls_receivers: Receivers, certs: Certs) -> None:
    for cert in (None, (str(certs.other_client_cert), str(certs.other_client_key))):
        with pytest.raises(requests.exceptions.SSLError):
            requests.post(f"https://{tls_receivers.http}/v1/traces", data=one_span_body(), verify=str(certs.ca),
                          cert=cert, headers={"Authorization": f"Bearer {TOKENS[0]}"}, timeout=10)
        credentials = grpc.ssl_channel_credentials(
            certs.ca.read_bytes(), *((certs.other_client_key.read_bytes(), certs.other_client_cert.read_bytes())
                                     if cert else (None, None)))
        with grpc.secure_channel(tls_receivers.grpc, credentials) as channel:
            with pytest.raises(grpc.RpcError) as err:
                channel.unary_unary(EXPORT)(one_span_body(), timeout=10,
                                            metadata=(("authorization", f"Bearer {TOKENS[0]}"),))
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert tls_receivers.bus.depth() == 0


def test_plain_text_to_a_tls_port_is_closed_and_the_port_keeps_serving(tls_receivers: Receivers,
                                                                       certs: Certs) -> None:
    host, port = tls_receivers.http.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
        try:
            reply = sock.recv(100)
        except ConnectionResetError:
            reply = b""
        assert not reply.startswith(b"HTTP/")  # a TLS alert or nothing: never a plain-text answer
    exporter = http_exporter(tls_receivers, certs, TOKENS[0])
    assert exporter.export(spans()) == SpanExportResult.SUCCESS
    exporter.shutdown()


def test_tls_without_client_ca_takes_any_client(certs: Certs) -> None:
    r = start(tls=TlsConfig(str(certs.server_cert), str(certs.server_key)))
    try:
        exporter = http_exporter(r, certs, None, client=False)
        assert exporter.export(spans()) == SpanExportResult.SUCCESS
        exporter.shutdown()
        # Verified by the client against the test CA: the server presented the configured certificate.
        context = ssl.create_default_context(cafile=str(certs.ca))
        host, port = r.http.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()


def test_host_header_names_are_checked_on_otlp_http() -> None:
    r = start()
    try:
        url = f"http://{r.http}/v1/traces"
        headers = {"Content-Type": "application/x-protobuf"}
        _, port = r.http.rsplit(":", 1)
        for host, expected in (("evil.example", 421), (f"evil.example:{port}", 421), ("127.0.0.1.nip.io", 421),
                               (f"localhost:{port}", 200), ("LOCALHOST.", 200), ("10.1.2.3", 200), ("[::1]:80", 200)):
            response = requests.post(url, data=one_span_body(), headers={**headers, "Host": host}, timeout=10)
            assert response.status_code == expected, host
        assert r.refused("host") == 3
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()


def test_allowed_hosts_replace_the_default_names() -> None:
    r = start(allowed_hosts=["collector.internal"])
    try:
        url = f"http://{r.http}/v1/traces"
        for host, expected in (("collector.internal:4318", 200), ("localhost", 421), ("127.0.0.1", 200)):
            response = requests.post(url, data=one_span_body(), timeout=10,
                                     headers={"Content-Type": "application/x-protobuf", "Host": host})
            assert response.status_code == expected, host
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()


def test_tls_and_auth_settings_are_validated(tmp_path: Path, certs: Certs) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"tls": {"cert_file": str(certs.server_cert)}}, "receiver.tls.cert_file and receiver.tls.key_file"),
        ({"tls": {"cert_file": str(tmp_path / "nope.pem"), "key_file": str(certs.server_key)}},
         "receiver.tls.cert_file: no file"),
        ({"tls": {"cert_file": str(certs.server_cert), "key_file": str(certs.client_key)}}, "receiver.tls"),
        ({"tls": {"client_ca_file": str(certs.ca)}}, "receiver.tls.client_ca_file needs"),
        ({"auth": {"bearer_tokens": ["has space"]}}, "receiver.auth.bearer_tokens[0]"),
        ({"auth": {"bearer_tokens": [""]}}, "receiver.auth.bearer_tokens[0]"),
        ({"allowed_hosts": ["http://x"]}, "receiver.allowed_hosts"),
    ]
    for settings, message in bad:
        path = tmp_path / "config.yaml"
        import yaml

        path.write_text(yaml.safe_dump({"receiver": settings}), encoding="utf-8")
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            load_config(path, environ={})


def test_a_client_that_never_finishes_the_handshake_is_closed_at_the_read_timeout(certs: Certs) -> None:
    r = start(tls=TlsConfig(str(certs.server_cert), str(certs.server_key)), read_timeout_s=0.5)
    try:
        host, port = r.http.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"\x16\x03\x01")  # the start of a TLS record, then nothing
            try:
                assert sock.recv(100) == b""  # closed by the server, long before this socket's 10 s
            except ConnectionResetError:
                pass
        exporter = http_exporter(r, certs, None, client=False)
        assert exporter.export(spans()) == SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()


def test_beyond_the_connection_cap_a_tls_connection_is_closed_and_counted(certs: Certs) -> None:
    """Under TLS a plain 503 would be noise to the client and a TLS answer needs a handshake on
    the accepting thread: the connection is closed at once, counted, and the exporter retries."""
    r = start(tls=TlsConfig(str(certs.server_cert), str(certs.server_key)), max_connections=1, idle_timeout_s=30)
    try:
        host, port = r.http.rsplit(":", 1)
        context = ssl.create_default_context(cafile=str(certs.ca))
        held = context.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname=host)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(socket.create_connection((host, int(port)), timeout=10),
                                     server_hostname=host) as refused:
                refused.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
                if not refused.recv(100):
                    raise ConnectionError("closed")
        assert r.refused("connections") == 1
        held.close()
        exporter = http_exporter(r, certs, None, client=False)
        assert exporter.export(spans()) == SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()
