"""Decoding OTLP/HTTP export bodies (protobuf or JSON, optionally gzip) into protobuf messages: trace
export requests, and log export requests (collector/otlp_logs.py) through the same code.

Errors carry the HTTP status the OTLP spec asks for and a message that says what is wrong.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import zlib
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# receiver.max_json_depth's default, for callers without a receiver section (the Kafka input).
DEFAULT_MAX_JSON_DEPTH = 64
_Request = TypeVar("_Request", bound=Message)


class OtlpDecodeError(Exception):
    """`reason` labels ragpulse_otlp_requests_refused_total: malformed, unsupported, too_large,
    json_depth, framing, read_timeout, internal (and, refused before decoding, unauthenticated and
    host)."""

    def __init__(self, status: int, message: str, reason: str = "malformed") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpDecodeError(415, f"unsupported Content-Encoding {encoding!r}; use gzip or none", "unsupported")
    out = bytearray()
    rest = body
    # A gzip body may be several members one after another (RFC 1952; Go's exporters and gzip -c
    # a b write them): each is inflated in turn. A stream that stops short is refused, not taken
    # for the whole body: a cut protobuf can still parse, with spans silently missing.
    while True:
        # Bounded inflation so a small compressed bomb cannot exhaust memory.
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        try:
            out += inflater.decompress(rest, max_bytes + 1 - len(out))
        except zlib.error as e:
            raise OtlpDecodeError(400, f"body is not valid {encoding}: {e}") from e
        if len(out) > max_bytes or inflater.unconsumed_tail:
            raise OtlpDecodeError(
                413, f"decompressed body exceeds receiver.max_request_bytes ({max_bytes} bytes)", "too_large")
        if not inflater.eof:
            raise OtlpDecodeError(400, f"body is not valid {encoding}: the compressed stream ends early")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)
        if encoding != "gzip":
            raise OtlpDecodeError(400, f"body is not valid {encoding}: {len(rest)} bytes after the stream's end")


def decode_request(
    body: bytes, content_type: str | None, max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
) -> ExportTraceServiceRequest:
    return decode_into(ExportTraceServiceRequest(), body, content_type, max_json_depth)


def decode_into(request: _Request, body: bytes, content_type: str | None, max_json_depth: int) -> _Request:
    """`body` parsed into the empty `request` (any OTLP export request) by its content type."""
    kind = media_type(content_type)
    if kind == PROTOBUF:
        return parse_protobuf(request, body)
    if kind == JSON:
        return parse_json(request, body, max_json_depth)
    raise OtlpDecodeError(
        415, f"unsupported Content-Type {content_type!r}; send {PROTOBUF} or {JSON}", "unsupported"
    )


def decode_protobuf(body: bytes) -> ExportTraceServiceRequest:
    return parse_protobuf(ExportTraceServiceRequest(), body)


def parse_protobuf(request: _Request, body: bytes) -> _Request:
    """Protobuf nesting is bounded by the parser itself (100 levels): deeper is a DecodeError."""
    try:
        request.ParseFromString(body)
    except DecodeError as e:
        raise OtlpDecodeError(400, f"body is not a valid {request.DESCRIPTOR.name} protobuf: {e}") from e
    return request


def decode_json(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> ExportTraceServiceRequest:
    return parse_json(ExportTraceServiceRequest(), body, max_depth)


def parse_json(request: _Request, body: bytes, max_depth: int) -> _Request:
    try:
        # Strict: json.loads on bytes would let UTF-8-encoded surrogates through.
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise OtlpDecodeError(400, f"JSON body is not valid UTF-8: {e}") from e
    depth = json_depth(text)
    if depth > max_depth:
        raise OtlpDecodeError(
            400, f"JSON body is nested {depth} levels deep, more than receiver.max_json_depth ({max_depth})",
            "json_depth")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise OtlpDecodeError(400, f"body is not valid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise OtlpDecodeError(400, f"JSON body must be an object (an OTLP {request.DESCRIPTOR.name})")
    try:
        _prepare_for_protobuf(doc)
        return json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as e:
        raise OtlpDecodeError(400, f"JSON body is not a valid OTLP {request.DESCRIPTOR.name}: {e}") from e


# JSON strings, whose brackets do not nest (unrolled and possessive: no backtracking).
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in a JSON text, counted without recursion, in C
    loops (about 10 ms per MB, half of json.loads). Malformed text gets some number; json.loads
    rejects it afterwards."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _prepare_for_protobuf(node: Any) -> None:
    """OTLP/JSON writes trace and span ids as hex, protobuf's JSON mapping expects base64; and a
    lone surrogate (a "\\ud800" escape without its pair) is refused here, with a message that
    stays encodable, rather than inside protobuf, which fails on it in unhelpful ways."""
    if isinstance(node, dict):
        for key, value in node.items():
            _check_unicode(key)
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError as e:
                    raise ValueError(f"{key} {ascii(value)} is not hex") from e
            else:
                _prepare_for_protobuf(value)
    elif isinstance(node, list):
        for item in node:
            _prepare_for_protobuf(item)
    else:
        _check_unicode(node)


def _check_unicode(value: Any) -> None:
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise OtlpDecodeError(
                400, f"JSON string {ascii(value[max(0, e.start - 20):e.end + 20])} holds a lone surrogate "
                f"(\\u{ord(value[e.start]):04x} without its pair): not valid Unicode") from e
