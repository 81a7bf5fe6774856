"""The scorer's HTTP server: /metrics for Prometheus, /healthz, and the live page's paths.

Every answer but /healthz's passes the Host check and, when prometheus.auth is set, authentication
(ragpulse.core.http_guard); every answer carries the page's Content-Security-Policy and
nosniff. The live page is served beside /metrics, on its own address (page.endpoint), or not at all
(page.enabled): it shows record text, /metrics only numbers and label values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.http_guard import RequestGuard
from ragpulse.core.http_server import BackgroundHTTPServer
from ragpulse.core.tls import server_contexts
from ragpulse.core.tls_telemetry import TlsCounts
from ragpulse.scorer.web.page import CONTENT_SECURITY_POLICY, PageConfig

log = logging.getLogger(__name__)

# A page handler answers (status, content type, body) for a request target (path and query), or
# None when it has no such path.
PageHandler = Callable[[str], "tuple[int, str, bytes] | None"]
TEXT = "text/plain; charset=utf-8"


class ScorerHttpServer(BackgroundHTTPServer):
    """`registry` None: no /metrics here (the live page on its own address)."""

    def __init__(
        self, host: str, port: int, registry: CollectorRegistry | None, page: PageHandler | None = None,
        security: PrometheusConfig | None = None, counts: TlsCounts | None = None,
    ) -> None:
        """`counts`: where its TLS handshake failures and reloads are counted (None: nowhere)."""
        security = security or PrometheusConfig()
        self.scheme = "https" if security.tls.enabled else "http"
        on_reload = counts.reloaded if counts is not None else lambda ok: None
        tls = server_contexts(security.tls, "prometheus.tls", on_reload) if security.tls.enabled else None
        super().__init__(host, port, _handler_class(registry, page, security.guard(host)), "metrics-http", tls=tls,
                         on_handshake_failure=counts.handshake_failed if counts is not None else lambda reason: None)


class ScorerHttp:
    """/metrics on prometheus.endpoint; the live page there too, on page.endpoint, or nowhere."""

    def __init__(
        self, prometheus: PrometheusConfig, page_config: PageConfig, registry: CollectorRegistry,
        page: PageHandler | None,
    ) -> None:
        page = page if page_config.enabled else None
        host, port = parse_endpoint(prometheus.endpoint, "prometheus.endpoint")
        self.metrics = ScorerHttpServer(host, port, registry, None if page_config.endpoint else page, prometheus,
                                        TlsCounts(registry, "metrics"))
        self.page: ScorerHttpServer | None = None
        if page is not None and page_config.endpoint:
            host, port = parse_endpoint(page_config.endpoint, "page.endpoint")
            self.page = ScorerHttpServer(host, port, None, page, prometheus, TlsCounts(registry, "page"))
        self._has_page = page is not None

    @property
    def endpoint(self) -> str:
        return self.metrics.endpoint

    def describe(self) -> str:
        """Where /metrics and the live page are, for the start-up line."""
        metrics = f"{self.metrics.scheme}://{self.metrics.endpoint}"
        if not self._has_page:
            return f"metrics {metrics}/metrics (live page off)"
        if self.page is None:
            return f"metrics and live page {metrics}/"
        return f"metrics {metrics}/metrics, live page {self.page.scheme}://{self.page.endpoint}/"

    def start(self) -> None:
        self.metrics.start()
        if self.page is not None:
            self.page.start()

    def stop(self) -> None:
        if self.page is not None:
            self.page.stop()
        self.metrics.stop()


def _handler_class(
    registry: CollectorRegistry | None, page: PageHandler | None, guard: RequestGuard
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "ragpulse"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            log.debug("http %s - " + format, self.address_string(), *args)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            path = self.path.split("?", 1)[0]
            # The kubelet's probes carry no credentials, and "ok" tells nobody anything.
            refusal = guard.check(self.headers.get("Host"), self.headers.get("Authorization"),
                                  authenticate=path != "/healthz")
            if refusal is not None:
                self._send(refusal.status, TEXT, f"{refusal.message}\n".encode(), dict(refusal.headers))
            elif path == "/metrics" and registry is not None:
                # OpenMetrics when the scraper asks for it (Prometheus does): only that format
                # carries the score histograms' trace-id exemplars; plain text otherwise.
                encoder, content_type = choose_encoder(self.headers.get("Accept"))
                self._send(200, content_type, encoder(registry), {"Vary": "Accept"})
            elif path == "/healthz":
                self._send(200, TEXT, b"ok\n")
            else:
                answer = page(self.path) if page is not None else None  # the page reads the query
                if answer is None:
                    hint = b"not found; try /metrics\n" if registry is not None else b"not found; try /\n"
                    self._send(404, TEXT, hint)
                else:
                    self._send(*answer)

        def _send(self, code: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            # Vary: the body depends on that request header; WWW-Authenticate: the challenge.
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")  # frame-ancestors for browsers before CSP 2
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(body)

    return Handler
