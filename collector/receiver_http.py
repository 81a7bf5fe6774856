"""OTLP/HTTP receiver: POST /v1/traces with protobuf or JSON bodies, optionally gzip-compressed; and
POST /v1/logs, where only the GenAI events among the log records are read (collector/otlp_logs.py).

Responses follow the OTLP spec: 200 with an ExportTraceServiceResponse (partial success when
spans were refused) in the request's encoding, 4xx with a google.rpc.Status that says what is
wrong (and which receiver.* limit, when one was hit), 503 with Retry-After when the bus pushes back
so the exporter retries. The Host header and credentials are checked first, before the body is read
(ragpulse.core.http_guard: 421, 401). TLS and the connection limits (count, read and idle timeouts)
are the HTTP server's (ragpulse.core.http_server); body framing and size are collector/http_body.py's.
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragpulse.collector.http_body import declared_length, read_body
from ragpulse.collector.otlp_decode import JSON, PROTOBUF, OtlpDecodeError, decode_request, decompress, media_type
from ragpulse.collector.otlp_logs import decode_logs_request
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.core.http_guard import RequestGuard
from ragpulse.core.http_server import BackgroundHTTPServer
from ragpulse.core.settings import key
from ragpulse.core.tls import server_contexts

log = logging.getLogger(__name__)
TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
TRANSPORT = "http"


class OtlpHttpReceiver(BackgroundHTTPServer):
    protocol = "http"

    def __init__(
        self, host: str, port: int, pipeline: CollectorPipeline, metrics: CollectorMetrics, config: ReceiverConfig
    ) -> None:
        super().__init__(
            host, port, _handler_class(pipeline, metrics, config, config.guard(host)), "otlp-http",
            limits=config.connection_limits(), on_refused=lambda: _count_refusal(metrics, "connections"),
            tls=server_contexts(config.tls, key("receiver", "tls"), metrics.http_tls.reloaded)
            if config.tls.enabled else None,
            reuse_port=config.workers > 1, on_handshake_failure=metrics.http_tls.handshake_failed,
        )


def _count_refusal(metrics: CollectorMetrics, reason: str) -> None:
    outcome = "retry_later" if reason in ("bus_full", "connections") else "invalid"
    metrics.requests.labels(transport=TRANSPORT, outcome=outcome).inc()
    metrics.refused.labels(transport=TRANSPORT, reason=reason).inc()


def _handler_class(
    pipeline: CollectorPipeline, metrics: CollectorMetrics, config: ReceiverConfig, guard: RequestGuard
) -> type[BaseHTTPRequestHandler]:
    max_bytes = config.max_request_bytes

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "ragpulse-otlp"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            log.debug("otlp-http %s - " + format, self.address_string(), *args)

        def handle_expect_100(self) -> bool:
            # The standard library answers "100 Continue" to any request: a client that waits for
            # it would then send a body that is refused unread. Refuse what the headers show first.
            if self.command == "POST" and not self._acceptable_before_body(self._answer_type()):
                return False
            return super().handle_expect_100()

        def _answer_type(self) -> str:
            return PROTOBUF if media_type(self.headers.get("Content-Type")) == PROTOBUF else JSON

        def _acceptable_before_body(self, answer_type: str) -> bool:
            """Refusals the headers alone decide (credentials, Host, path, framing and size): answered
            without reading the body, which leaves the connection to close."""
            refusal = guard.check(self.headers.get("Host"), self.headers.get("Authorization"))
            if refusal is not None:
                self.close_connection = True
                _count_refusal(metrics, refusal.reason)
                self._reply_status(refusal.status, refusal.message, answer_type, dict(refusal.headers))
                return False
            if self.path.split("?", 1)[0] not in (TRACES_PATH, LOGS_PATH):
                self.close_connection = True
                self._reply_status(
                    404, f"unknown path {self.path!r}; traces go to {TRACES_PATH}, logs to {LOGS_PATH}", answer_type)
                return False
            try:
                declared_length(self.headers, max_bytes)
            except OtlpDecodeError as e:
                self.close_connection = True
                self._refuse(e, answer_type)
                return False
            return True

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            answer_type = self._answer_type()
            if not self._acceptable_before_body(answer_type):
                return
            path = self.path.split("?", 1)[0]
            try:
                body = read_body(self.rfile, self.headers, max_bytes)
            except OtlpDecodeError as e:
                # Where this body ends is unknown (or it is too large to read): no keep-alive.
                self.close_connection = True
                self._refuse(e, answer_type)
                return
            except TimeoutError:
                self.close_connection = True
                self._refuse(OtlpDecodeError(
                    408, f"the request did not arrive within receiver.read_timeout_s ({config.read_timeout_s:g} s)",
                    "read_timeout"), answer_type)
                return
            try:
                data = decompress(body, self.headers.get("Content-Encoding"), max_bytes)
                response: Message
                if path == LOGS_PATH:
                    pipeline.consume_logs_request(
                        decode_logs_request(data, self.headers.get("Content-Type"), config.max_json_depth))
                    response = ExportLogsServiceResponse()
                else:
                    request = decode_request(data, self.headers.get("Content-Type"), config.max_json_depth)
                    result = pipeline.consume_export_request(request, TRANSPORT)
                    response = ExportTraceServiceResponse()
                    if result.rejected_spans:
                        response.partial_success.rejected_spans = result.rejected_spans
                        response.partial_success.error_message = result.error_message
            except OtlpDecodeError as e:
                self._refuse(e, answer_type)
                return
            except BusFull as e:
                _count_refusal(metrics, "bus_full")
                self._reply_status(
                    503, "ragpulse is busy; retry later", answer_type,
                    {"Retry-After": str(max(1, round(e.retry_after_s)))},
                )
                return
            except Exception:
                # A bug must still answer, and with a status exporters do not retry: the same body
                # would fail the same way.
                log.exception("OTLP/HTTP request failed")
                self._refuse(OtlpDecodeError(500, "internal error; see ragpulse's log", "internal"), answer_type)
                return
            metrics.requests.labels(transport=TRANSPORT, outcome="ok").inc()
            self._reply(200, response, answer_type)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self.close_connection = True  # a body, if any, is not read
            self._reply_status(405, f"use POST {TRACES_PATH}", JSON, {"Allow": "POST"})

        # Every other method HTTP defines is known and not allowed here (405), not unimplemented
        # (the standard library's 501, which is for a method it has never heard of).
        do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_TRACE = do_CONNECT = do_GET  # noqa: N815

        def _refuse(self, error: OtlpDecodeError, answer_type: str) -> None:
            _count_refusal(metrics, error.reason)
            self._reply_status(error.status, error.message, answer_type)

        def _reply_status(
            self, code: int, message: str, answer_type: str, headers: dict[str, str] | None = None
        ) -> None:
            # gRPC status codes for the body: 3 INVALID_ARGUMENT, 14 UNAVAILABLE, 5 NOT_FOUND, 16 UNAUTHENTICATED.
            grpc_code = {503: 14, 404: 5, 401: 16}.get(code, 3)
            # The message may quote the client's text: whatever it holds, the answer must encode.
            safe = message.encode("utf-8", "backslashreplace").decode("utf-8")
            self._reply(code, Status(code=grpc_code, message=safe), answer_type, headers)

        def _reply(
            self, code: int, message: Message, answer_type: str, headers: dict[str, str] | None = None
        ) -> None:
            if answer_type == PROTOBUF:
                payload = message.SerializeToString()
            else:
                payload = json_format.MessageToJson(message, indent=None).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", answer_type)
            self.send_header("Content-Length", str(len(payload)))
            if self.close_connection:
                self.send_header("Connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            # An empty ExportTraceServiceResponse, the usual answer, encodes to no bytes: no write.
            if payload and self.command != "HEAD":
                self.wfile.write(payload)

    return Handler
