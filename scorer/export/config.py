"""Where scores go besides /metrics: the user's own tracing backend over OTLP. Section `export`."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field

from ragpulse.core.endpoints import otlp_http_url
from ragpulse.core.otlp_metrics_config import OtlpMetricsConfig
from ragpulse.core.settings import key, require, require_at_least, require_one_of


@dataclass
class OtlpExportConfig:
    # Your tracing backend's OTLP endpoint, where each scored record's evaluations are written
    # back onto its trace: http://HOST:4317 for grpc, http://HOST:4318 (or the full .../v1/traces
    # URL) for http; https:// for TLS. Empty: off.
    endpoint: str = ""
    # grpc or http (OTLP protobuf over HTTP).
    protocol: str = "grpc"
    # Headers sent with every export, e.g. {authorization: "Bearer ..."} for a hosted backend.
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds one export may take, retries included, before it counts as failed.
    timeout_s: float = 10.0
    # Scored records waiting for export; when the backend is slower than scoring, a new record's
    # evaluations are dropped and counted (ragpulse_evaluation_spans_total{outcome="queue_full"}).
    max_queue: int = 2048
    # service.name of the evaluation spans: the evaluation is ragpulse's work, not the app's.
    service_name: str = "ragpulse"

    def validate(self, where: str) -> None:
        require_one_of(key(where, "protocol"), self.protocol, ("grpc", "http"))
        require(self.timeout_s > 0, key(where, "timeout_s"), "above 0", self.timeout_s)
        require_at_least(key(where, "max_queue"), self.max_queue, 1)
        require(bool(self.service_name), key(where, "service_name"), "a name", self.service_name)
        if self.endpoint:
            url = urllib.parse.urlsplit(self.endpoint)
            require(url.scheme in ("http", "https") and bool(url.hostname), key(where, "endpoint"),
                    "an http:// or https:// URL", self.endpoint)

    @property
    def enabled(self) -> bool:
        return bool(self.endpoint)

    def traces_url(self) -> str:
        """The endpoint as the exporter takes it: over http a bare address gets OTLP's /v1/traces
        path (as OTEL_EXPORTER_OTLP_ENDPOINT does), a URL with a path is used as written."""
        return otlp_http_url(self.endpoint, "/v1/traces") if self.protocol == "http" else self.endpoint


@dataclass
class ExportConfig:
    # Evaluations written back to the evaluated span in your tracing backend (off by default).
    otlp: OtlpExportConfig = field(default_factory=OtlpExportConfig)
    # The process's metrics (every /metrics family, and gen_ai.evaluation.score) sent over OTLP to
    # an OpenTelemetry Collector or backend (off by default; docs/backends.md).
    otlp_metrics: OtlpMetricsConfig = field(default_factory=OtlpMetricsConfig)

    def validate(self, where: str) -> None:
        """Nothing of its own: `otlp` and `otlp_metrics` validate themselves."""
