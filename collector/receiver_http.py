"""OTLP/HTTP receiver: POST /v1/traces with protobuf or JSON bodies, optionally gzip-compressed.

Responses follow the OTLP spec: 200 with an ExportTraceServiceResponse (partial success when
spans were refused) in the request's encoding, 4xx with a google.rpc.Status that says what is
wrong, 503 with Retry-After when the bus pushes back so the exporter retries.
"""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragpulse.collector.otlp_decode import JSON, PROTOBUF, OtlpDecodeError, decode_request, decompress, media_type
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.core.http_server import BackgroundHTTPServer

log = logging.getLogger(__name__)
TRACES_PATH = "/v1/traces"


class OtlpHttpReceiver(BackgroundHTTPServer):
    protocol = "http"

    def __init__(
        self, host: str, port: int, pipeline: CollectorPipeline, metrics: CollectorMetrics, max_request_bytes: int
    ) -> None:
        super().__init__(host, port, _handler_class(pipeline, metrics, max_request_bytes), "otlp-http")


def _handler_class(
    pipeline: CollectorPipeline, metrics: CollectorMetrics, max_request_bytes: int
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "ragpulse-otlp"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            log.debug("otlp-http %s - " + format, self.address_string(), *args)

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            if self.path.split("?", 1)[0] != TRACES_PATH:
                self._reply_status(404, f"unknown path {self.path!r}; traces go to {TRACES_PATH}", JSON)
                return
            answer_type = PROTOBUF if media_type(self.headers.get("Content-Type")) == PROTOBUF else JSON
            try:
                body = self._body()
                request = decode_request(
                    decompress(body, self.headers.get("Content-Encoding"), max_request_bytes),
                    self.headers.get("Content-Type"),
                )
            except OtlpDecodeError as e:
                metrics.requests.labels(transport="http", outcome="invalid").inc()
                self._reply_status(e.status, e.message, answer_type)
                return
            try:
                result = pipeline.consume_export_request(request, "http")
            except BusFull as e:
                metrics.requests.labels(transport="http", outcome="retry_later").inc()
                self._reply_status(
                    503, "ragpulse is busy; retry later", answer_type,
                    {"Retry-After": str(max(1, round(e.retry_after_s)))},
                )
                return
            metrics.requests.labels(transport="http", outcome="ok").inc()
            response = ExportTraceServiceResponse()
            if result.rejected_spans:
                response.partial_success.rejected_spans = result.rejected_spans
                response.partial_success.error_message = result.error_message
            self._reply(200, response, answer_type)

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            self._reply_status(405, f"use POST {TRACES_PATH}", JSON, {"Allow": "POST"})

        def _body(self) -> bytes:
            length = self.headers.get("Content-Length")
            if length is None:
                raise OtlpDecodeError(411, "Content-Length is required")
            try:
                size = int(length)
            except ValueError:
                raise OtlpDecodeError(400, f"Content-Length {length!r} is not a number") from None
            if size > max_request_bytes:
                # Keep-alive is impossible without reading the body; close instead.
                self.close_connection = True
                raise OtlpDecodeError(413, f"body of {size} bytes exceeds the limit of {max_request_bytes} bytes")
            return self.rfile.read(size)

        def _reply_status(
            self, code: int, message: str, answer_type: str, headers: dict[str, str] | None = None
        ) -> None:
            # gRPC status codes for the body: 3 INVALID_ARGUMENT, 14 UNAVAILABLE, 5 NOT_FOUND.
            grpc_code = {503: 14, 404: 5}.get(code, 3)
            self._reply(code, Status(code=grpc_code, message=message), answer_type, headers)

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
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler
