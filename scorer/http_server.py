"""The scorer's HTTP server: /metrics for Prometheus, /healthz, and the live page's paths."""

from __future__ import annotations

import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ragpulse.core.http_server import BackgroundHTTPServer

log = logging.getLogger(__name__)

# A page handler answers (status, content type, body) for a path, or None when it has none.
PageHandler = Callable[[str], "tuple[int, str, bytes] | None"]


class ScorerHttpServer(BackgroundHTTPServer):
    def __init__(self, host: str, port: int, registry: CollectorRegistry, page: PageHandler | None = None) -> None:
        super().__init__(host, port, _handler_class(registry, page), "metrics-http")


def _handler_class(registry: CollectorRegistry, page: PageHandler | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "ragpulse"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            log.debug("http %s - " + format, self.address_string(), *args)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                # OpenMetrics when the scraper asks for it (Prometheus does): only that format
                # carries the score histograms' trace-id exemplars; plain text otherwise.
                encoder, content_type = choose_encoder(self.headers.get("Accept"))
                self._send(200, content_type, encoder(registry), vary="Accept")
            elif path == "/healthz":
                self._send(200, "text/plain; charset=utf-8", b"ok\n")
            else:
                answer = page(path) if page is not None else None
                if answer is None:
                    self._send(404, "text/plain; charset=utf-8", b"not found; try /metrics\n")
                else:
                    self._send(*answer)

        def _send(self, code: int, content_type: str, body: bytes, vary: str | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            if vary is not None:  # the body depends on this request header
                self.send_header("Vary", vary)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

    return Handler
