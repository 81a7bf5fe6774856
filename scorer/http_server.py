"""The scorer's HTTP server: /metrics for Prometheus, /healthz, and the live page's paths."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger(__name__)

# A page handler answers (status, content type, body) for a path, or None when it has none.
PageHandler = Callable[[str], "tuple[int, str, bytes] | None"]


class ScorerHttpServer:
    def __init__(self, host: str, port: int, registry: CollectorRegistry, page: PageHandler | None = None) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler_class(registry, page))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics-http", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_class(registry: CollectorRegistry, page: PageHandler | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "ragpulse"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            log.debug("http %s - " + format, self.address_string(), *args)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept"))
                self._send(200, content_type, encoder(registry))
            elif path == "/healthz":
                self._send(200, "text/plain; charset=utf-8", b"ok\n")
            else:
                answer = page(path) if page is not None else None
                if answer is None:
                    self._send(404, "text/plain; charset=utf-8", b"not found; try /metrics\n")
                else:
                    self._send(*answer)

        def _send(self, code: int, content_type: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

    return Handler
