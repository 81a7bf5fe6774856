"""Renewed certificates are served without a restart (tls.reload_interval_s): the files are replaced
as cert-manager or a Kubernetes secret update does, and a new connection to the OTLP/HTTP and gRPC
receivers sees the new certificate; files that do not load keep the old one, counted and logged.
Real TLS clients (the ssl module, grpc) and certificates made by tests/support/certs.py."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from certs import Certs, make_certs
from prometheus_client import CollectorRegistry
from test_receiver_auth_tls import start
from test_receiver_limits import EXPORT, Receivers, one_span_body

from ragpulse.config import ConfigError
from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.tls import TlsConfig
from ragpulse.scorer.export.http_server import ScorerHttp
from ragpulse.scorer.web.page import PageConfig

INTERVAL_S = 0.2


@pytest.fixture
def files(tmp_path: Path) -> tuple[Certs, Certs, TlsConfig]:
    """The certificates at start, their renewal (another CA, another key), and the configured paths."""
    old, new = make_certs(tmp_path / "old"), make_certs(tmp_path / "new")
    live = tmp_path / "live"
    live.mkdir()
    for source, name in ((old.server_cert, "tls.crt"), (old.server_key, "tls.key")):
        shutil.copy(source, live / name)
    return old, new, TlsConfig(str(live / "tls.crt"), str(live / "tls.key"), reload_interval_s=INTERVAL_S)


@pytest.fixture
def receivers(files: tuple[Certs, Certs, TlsConfig]) -> Iterator[Receivers]:
    r = start(tls=files[2])
    yield r
    for receiver in r.parts.receivers:
        receiver.stop()


def replace(path: str, content: bytes) -> None:
    """Write beside and rename over, as a renewal does: a reader never sees half a file."""
    temporary = f"{path}.new"
    Path(temporary).write_bytes(content)
    os.replace(temporary, path)


def renew(config: TlsConfig, certs: Certs) -> None:
    replace(config.key_file, certs.server_key.read_bytes())
    replace(config.cert_file, certs.server_cert.read_bytes())
    time.sleep(INTERVAL_S * 2)


def served_certificate(endpoint: str) -> bytes:
    """The certificate a new TLS connection is shown (DER), whoever signed it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(parse_endpoint(endpoint, "test"), timeout=10) as raw, \
            context.wrap_socket(raw) as tls:
        certificate = tls.getpeercert(binary_form=True)
    assert certificate is not None
    return certificate


def der(path: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(path.read_text(encoding="ascii"))


def grpc_trusts(endpoint: str, ca: Path) -> bool:
    """Whether a new gRPC connection that trusts only `ca` gets its call through."""
    credentials = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    # A channel of its own: grpc would otherwise reuse a connection made before the renewal.
    with grpc.secure_channel(endpoint, credentials, options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
        try:
            channel.unary_unary(EXPORT)(one_span_body(), timeout=5)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, e
            return False
    return True


def reloads(r: Receivers, server: str, outcome: str) -> float:
    return r.registry.get_sample_value("ragpulse_tls_reloads_total", {"server": server, "outcome": outcome}) or 0.0


def test_renewed_files_are_served_to_new_connections_on_http_and_grpc(
        receivers: Receivers, files: tuple[Certs, Certs, TlsConfig]) -> None:
    old, new, config = files
    assert served_certificate(receivers.http) == der(old.server_cert)
    assert grpc_trusts(receivers.grpc, old.ca) and not grpc_trusts(receivers.grpc, new.ca)
    renew(config, new)
    assert served_certificate(receivers.http) == der(new.server_cert)
    assert grpc_trusts(receivers.grpc, new.ca) and not grpc_trusts(receivers.grpc, old.ca)
    assert reloads(receivers, "otlp_http", "ok") == reloads(receivers, "otlp_grpc", "ok") == 1
    assert reloads(receivers, "otlp_http", "failed") == reloads(receivers, "otlp_grpc", "failed") == 0


def test_files_that_do_not_load_keep_the_certificate_in_use(
        receivers: Receivers, files: tuple[Certs, Certs, TlsConfig], caplog: pytest.LogCaptureFixture) -> None:
    old, new, config = files
    with caplog.at_level(logging.WARNING, logger="ragpulse.core.tls"):
        replace(config.cert_file, new.server_cert.read_bytes())  # the new certificate with the old key
        time.sleep(INTERVAL_S * 2)
        assert served_certificate(receivers.http) == der(old.server_cert)
        assert grpc_trusts(receivers.grpc, old.ca)
    assert reloads(receivers, "otlp_http", "failed") == reloads(receivers, "otlp_grpc", "failed") == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and all("keeping the certificate in use" in w for w in warnings)
    assert not any("PRIVATE KEY" in w for w in warnings)
    # Its key arrives: the pair loads.
    renew(config, new)
    assert served_certificate(receivers.http) == der(new.server_cert)
    assert grpc_trusts(receivers.grpc, new.ca)


def test_without_reload_interval_the_files_are_read_at_start_only(files: tuple[Certs, Certs, TlsConfig]) -> None:
    old, new, config = files
    config.reload_interval_s = 0
    r = start(tls=config)
    try:
        renew(config, new)
        assert served_certificate(r.http) == der(old.server_cert)
        assert grpc_trusts(r.grpc, old.ca)
    finally:
        for receiver in r.parts.receivers:
            receiver.stop()


@pytest.mark.parametrize("interval", [-1.0, float("nan"), float("inf")])
def test_reload_interval_is_validated(files: tuple[Certs, Certs, TlsConfig], interval: float) -> None:
    config = files[2]
    config.reload_interval_s = interval
    with pytest.raises(ConfigError, match=r"receiver\.tls\.reload_interval_s"):
        config.validate("receiver.tls")


def test_metrics_server_serves_renewed_files_too(files: tuple[Certs, Certs, TlsConfig]) -> None:
    old, new, config = files
    registry = CollectorRegistry()
    http = ScorerHttp(PrometheusConfig(endpoint="127.0.0.1:0", tls=config), PageConfig(enabled=False), registry, None)
    http.start()
    try:
        assert served_certificate(http.endpoint) == der(old.server_cert)
        renew(config, new)
        assert served_certificate(http.endpoint) == der(new.server_cert)
        assert registry.get_sample_value("ragpulse_tls_reloads_total", {"server": "metrics", "outcome": "ok"}) == 1
    finally:
        http.stop()
