"""Where the process's metrics go over OTLP, besides /metrics. Section `export.otlp_metrics`, read by
every process that serves /metrics (`ragpulse up`, the Kafka collector and scorers).

Kept apart from ragpulse/core/otlp_metrics.py so that reading the configuration never imports the
OpenTelemetry SDK.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from ragpulse.core.endpoints import otlp_http_url
from ragpulse.core.settings import key, require, require_one_of

PROTOCOLS = ("grpc", "http/protobuf")
TEMPORALITIES = ("cumulative", "delta")


@dataclass
class OtlpMetricsConfig:
    # The OTLP endpoint of your OpenTelemetry Collector or backend: http://HOST:4317 for grpc,
    # http://HOST:4318 (or the full .../v1/metrics URL) for http/protobuf; https:// for TLS.
    # Empty: off (the default; /metrics is served either way).
    endpoint: str = ""
    # grpc or http/protobuf (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL's values).
    protocol: str = "grpc"
    # Headers sent with every export, e.g. {authorization: "Bearer ..."} or a vendor's API-key header.
    headers: dict[str, str] = field(default_factory=dict)
    # With https: the CA bundle (PEM) that signs the endpoint's certificate; empty: the system's roots.
    ca_file: str = ""
    # With https, for mutual TLS: ragpulse's client certificate (PEM); set together with key_file.
    cert_file: str = ""
    # The client certificate's private key (PEM).
    key_file: str = ""
    # Seconds between exports: each carries every family of the process's /metrics at that moment.
    interval_s: float = 30.0
    # Seconds one export may take before it counts as failed; scoring never waits for it.
    timeout_s: float = 10.0
    # cumulative (Prometheus-like backends, the Collector's prometheus exporter) or delta (Datadog,
    # Dynatrace, and others that prefer it): counters and histograms since the last export.
    temporality: str = "cumulative"
    # service.name of the exported resource: the metrics describe ragpulse, not the app.
    service_name: str = "ragpulse"

    def validate(self, where: str) -> None:
        require_one_of(key(where, "protocol"), self.protocol, PROTOCOLS)
        require_one_of(key(where, "temporality"), self.temporality, TEMPORALITIES)
        require(self.interval_s >= 1, key(where, "interval_s"), "at least 1 (seconds)", self.interval_s)
        require(0 < self.timeout_s <= self.interval_s, key(where, "timeout_s"),
                "above 0 and at most interval_s (one export at a time)", self.timeout_s)
        require(bool(self.service_name), key(where, "service_name"), "a name", self.service_name)
        require(bool(self.cert_file) == bool(self.key_file), key(where, "cert_file"),
                "set together with key_file (mutual TLS needs both)", self.cert_file)
        if self.endpoint:
            url = urllib.parse.urlsplit(self.endpoint)
            require(url.scheme in ("http", "https") and bool(url.hostname), key(where, "endpoint"),
                    "an http:// or https:// URL", self.endpoint)
            require(url.scheme == "https" or not (self.ca_file or self.cert_file), key(where, "ca_file"),
                    "used only with an https:// endpoint", self.ca_file or self.cert_file)

    @property
    def enabled(self) -> bool:
        return bool(self.endpoint)

    @property
    def secure(self) -> bool:
        return urllib.parse.urlsplit(self.endpoint).scheme == "https"

    def metrics_url(self) -> str:
        return otlp_http_url(self.endpoint, "/v1/metrics") if self.protocol == "http/protobuf" else self.endpoint
