"""Decoding OTLP/HTTP trace export bodies (protobuf or JSON, optionally gzip) into protobuf messages.

Errors carry the HTTP status the OTLP spec asks for and a message that says what is wrong.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class OtlpDecodeError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpDecodeError(415, f"unsupported Content-Encoding {encoding!r}; use gzip or none")
    # Bounded inflation so a small compressed bomb cannot exhaust memory.
    inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as e:
        raise OtlpDecodeError(400, f"body is not valid {encoding}: {e}") from e
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise OtlpDecodeError(413, f"decompressed body exceeds the limit of {max_bytes} bytes")
    return out


def decode_request(body: bytes, content_type: str | None) -> ExportTraceServiceRequest:
    kind = media_type(content_type)
    if kind == PROTOBUF:
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as e:
            raise OtlpDecodeError(400, f"body is not a valid ExportTraceServiceRequest protobuf: {e}") from e
        return request
    if kind == JSON:
        return decode_json(body)
    raise OtlpDecodeError(
        415, f"unsupported Content-Type {content_type!r}; send {PROTOBUF} or {JSON}"
    )


def decode_json(body: bytes) -> ExportTraceServiceRequest:
    try:
        doc = json.loads(body)
    except UnicodeDecodeError as e:
        raise OtlpDecodeError(400, f"JSON body is not valid UTF-8: {e}") from e
    except json.JSONDecodeError as e:
        raise OtlpDecodeError(400, f"body is not valid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise OtlpDecodeError(400, "JSON body must be an object with a resourceSpans array")
    try:
        _hex_ids_to_base64(doc)
        return json_format.ParseDict(doc, ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as e:
        raise OtlpDecodeError(400, f"JSON body is not a valid OTLP ExportTraceServiceRequest: {e}") from e


_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _hex_ids_to_base64(node: Any) -> None:
    """OTLP/JSON writes trace and span ids as hex, protobuf's JSON mapping expects base64."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError as e:
                    raise ValueError(f"{key} {value!r} is not hex") from e
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)
