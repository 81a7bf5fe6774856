"""A threaded HTTP server that runs in the background: the base of the OTLP/HTTP receiver and the
scorer's /metrics server.

Bounded against numerous, slow and idle clients, whatever the handler: at most `max_connections`
connections at once (one thread each; beyond, a new connection is answered 503 from the accepting
thread and closed), a request must arrive whole within `read_timeout_s` of its first byte (each
write of the answer gets as long), and a keep-alive connection with no request for
`idle_timeout_s` is closed. Without these, one client could hold threads and memory forever: the
standard library's server reads with no timeout and starts a thread per connection.

With a TLS context the handshake runs on the connection's own thread, within `read_timeout_s`, so a
client that stalls it holds one slot for that long and never the accepting thread.
"""

from __future__ import annotations

import io
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragpulse.core import tls_telemetry
from ragpulse.core.endpoints import format_endpoint
from ragpulse.core.tls import Reloading

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 64
    read_timeout_s: float = 30.0
    idle_timeout_s: float = 60.0


class BackgroundHTTPServer:
    def __init__(
        self,
        host: str,
        port: int,
        handler: type[BaseHTTPRequestHandler],
        name: str,
        limits: ConnectionLimits = ConnectionLimits(),
        on_refused: Callable[[], None] = lambda: None,
        tls: Reloading[ssl.SSLContext] | None = None,
        reuse_port: bool = False,
        on_handshake_failure: Callable[[str], None] = lambda reason: None,
    ) -> None:
        """`on_refused` is called (on the accepting thread) for each connection refused at the cap;
        `reuse_port`: other processes may listen on the same port (SO_REUSEPORT), the kernel
        spreads the connections among them; `on_handshake_failure` gets the reason
        (ragpulse.core.tls_telemetry) of each failed TLS handshake."""
        self._host = host
        self._server = _BoundedServer((host, port), handler, limits, on_refused, tls, reuse_port,
                                      on_handshake_failure)
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
        """Stop accepting, end idle keep-alive connections now, and wait for requests in progress."""
        self._server.shutdown()
        self._server.close_idle()
        self._server.server_close()


class _Deadline:
    """When the read in progress must be done: the idle limit between requests, the read limit
    within one."""

    def __init__(self) -> None:
        self._at = 0.0

    def start(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self._at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the connection's read deadline passed")
        return left


class _DeadlineReader(io.RawIOBase):
    """The connection's read side: a per-recv socket timeout alone lets a client that sends one
    byte at a time hold the connection forever, so each recv waits only for what is left."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(self._deadline.remaining())
        return self._sock.recv_into(buffer)


class _TimedWriter(io.BufferedIOBase):
    """The connection's write side: a client that stops reading the answer does not hold the
    thread longer than `timeout_s` per write."""

    def __init__(self, sock: socket.socket, timeout_s: float) -> None:
        self._sock = sock
        self._timeout_s = timeout_s

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.settimeout(self._timeout_s)
        self._sock.sendall(data)
        return len(data)


class _BoundedHandler(BaseHTTPRequestHandler):
    """Mixed in before each server's own handler class: the limits apply to every handler."""

    server: _BoundedServer

    def setup(self) -> None:
        self.connection = self.request
        self._deadline = _Deadline()
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self._deadline))
        self.wfile = _TimedWriter(self.connection, self.server.limits.read_timeout_s)

    def handle_one_request(self) -> None:
        if not self._await_request():
            self.close_connection = True
            return
        self._deadline.start(self.server.limits.read_timeout_s)
        super().handle_one_request()

    def _await_request(self) -> bool:
        """Wait up to idle_timeout_s for the next request's first byte; False: close instead."""
        self._deadline.start(self.server.limits.idle_timeout_s)
        if not self.server.enter_idle(self.connection):
            return False
        try:
            return bool(self.rfile.peek(1))
        except OSError:  # the idle timeout, or the client went away
            return False
        finally:
            self.server.leave_idle(self.connection)


def _busy_response(max_connections: int) -> bytes:
    body = f"too many connections (the limit is {max_connections}); retry later\n".encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _BoundedServer(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog. The standard library's 5 overflows when a burst of exporters connects
    # at once, and with SYN cookies on the kernel then resets some of those connections after they
    # sent their request. Connections past max_connections are still answered 503 on accepting.
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: ConnectionLimits,
        on_refused: Callable[[], None],
        tls: Reloading[ssl.SSLContext] | None,
        reuse_port: bool,
        on_handshake_failure: Callable[[str], None],
    ) -> None:
        self.allow_reuse_port = reuse_port
        self._on_handshake_failure = on_handshake_failure
        self.limits = limits
        self._tls = tls
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._busy = _busy_response(limits.max_connections)
        self._on_refused = on_refused
        self._idle: set[socket.socket] = set()
        self._idle_lock = threading.Lock()
        self._closing = False
        bounded = type(handler.__name__, (_BoundedHandler, handler), {})
        super().__init__(address, bounded)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self._tls is not None:
                request = self._handshake(request, client_address)
                if request is None:
                    return
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _handshake(self, request: socket.socket, client_address: Any) -> ssl.SSLSocket | None:
        assert self._tls is not None
        try:
            request.settimeout(self.limits.read_timeout_s)
            wrapped = self._tls.get().wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            wrapped.do_handshake()
            return wrapped
        except (OSError, ValueError) as e:  # ssl.SSLError is an OSError; a timeout too
            log.debug("TLS handshake with %s failed: %s", client_address, e)
            self._on_handshake_failure(tls_telemetry.reason(e))
            self.shutdown_request(request)
            return None

    def _refuse(self, request: socket.socket) -> None:
        """Answer without waiting on the client: this is the accepting thread."""
        self._on_refused()
        if self._tls is not None:
            # An answer needs a handshake, which would make this thread wait on the client.
            self.shutdown_request(request)
            return
        try:
            request.setblocking(False)
            request.sendall(self._busy)
            # Take in what the client already sent: closing with unread data resets the
            # connection, and the client could lose the answer before reading it.
            request.recv(65536)
        except OSError:
            pass
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The standard library prints every error to stderr; a client that went away is no news.
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("connection from %s ended: %s", client_address, sys.exc_info()[1])
        else:
            log.exception("unexpected error serving %s", client_address)

    def enter_idle(self, connection: socket.socket) -> bool:
        with self._idle_lock:
            if self._closing:
                return False
            self._idle.add(connection)
            return True

    def leave_idle(self, connection: socket.socket) -> None:
        with self._idle_lock:
            self._idle.discard(connection)

    def close_idle(self) -> None:
        """For shutdown: idle keep-alive connections end now rather than at their idle timeout,
        so server_close() waits only for requests in progress."""
        with self._idle_lock:
            self._closing = True
            for connection in self._idle:
                try:
                    # The plain socket's shutdown, also under TLS: SSLSocket.shutdown would drop
                    # its TLS state under the thread that is reading from it.
                    socket.socket.shutdown(connection, socket.SHUT_RDWR)
                except OSError:
                    pass
