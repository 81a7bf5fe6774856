"""A threaded HTTP server that runs in the background: the base of the OTLP/HTTP receiver and the
scorer's /metrics server."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ragpulse.core.endpoints import format_endpoint


class BackgroundHTTPServer:
    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._host = host
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        """HOST:PORT as bound: a configured port 0 shows the port the system chose."""
        return format_endpoint(self._host, self.port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
