"""HOST:PORT settings: parsed once, printed as bound (IPv6 hosts in brackets); OTLP endpoint URLs."""

from __future__ import annotations

import urllib.parse

from ragpulse.core.settings import ConfigError


def parse_endpoint(value: str, where: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"{where} must look like HOST:PORT (e.g. 127.0.0.1:4318), got {value!r}")
    return host.strip("[]"), int(port)


def format_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def otlp_http_url(endpoint: str, signal_path: str) -> str:
    """An OTLP/HTTP endpoint as the exporters take it: a bare address gets the signal's path
    (/v1/traces, /v1/metrics; as OTEL_EXPORTER_OTLP_ENDPOINT does), a URL with a path is used as written."""
    url = urllib.parse.urlsplit(endpoint)
    if url.path in ("", "/"):
        return urllib.parse.urlunsplit(url._replace(path=signal_path))
    return endpoint
