"""Reading an OTLP/HTTP request body within receiver.max_request_bytes, whatever its framing.

A Content-Length of digits only (no sign, no second value) or `Transfer-Encoding: chunked`, as
exporters behind proxies send it. A body over the limit is refused as soon as its size is known
(from the header, or once the chunks pass the limit) without reading the rest. A body that stops
short of its length waits for the connection's read deadline (ragpulse.core.http_server). Every
error here leaves the framing unknown, so the caller must close the connection after answering.
"""

from __future__ import annotations

import re
from email.message import Message
from typing import BinaryIO

from ragpulse.collector.otlp_decode import OtlpDecodeError

_DIGITS = re.compile(r"[0-9]{1,19}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
# A chunk-size line with its extensions, and each trailer line; the standard library allows
# header lines of 64 KiB and 100 headers, the same here.
_MAX_LINE = 65536
_MAX_TRAILERS = 100


def read_body(rfile: BinaryIO, headers: Message, max_bytes: int) -> bytes:
    size = declared_length(headers, max_bytes)
    if size is None:
        return _read_chunked(rfile, max_bytes)
    body = rfile.read(size)
    if len(body) < size:
        raise _framing(f"the connection ended after {len(body)} of the body's {size} bytes")
    return body


def declared_length(headers: Message, max_bytes: int) -> int | None:
    """The body's Content-Length, or None when it comes chunked; what the headers alone show is
    wrong (framing, a length over the limit) is raised before any of the body is read."""
    transfer_encoding = headers.get("Transfer-Encoding")
    lengths = headers.get_all("Content-Length") or []
    if transfer_encoding is not None:
        if lengths:
            # Two framings disagree on where the body ends: the classic request-smuggling shape.
            raise _framing("both Transfer-Encoding and Content-Length; send one of them")
        if transfer_encoding.strip().lower() != "chunked":
            raise OtlpDecodeError(
                501, f"Transfer-Encoding {transfer_encoding!r} is not supported; send chunked or a Content-Length",
                "unsupported")
        return None
    if not lengths:
        raise OtlpDecodeError(411, "Content-Length or Transfer-Encoding: chunked is required", "framing")
    if len(lengths) > 1:
        raise _framing(f"{len(lengths)} Content-Length headers; send one")
    if not _DIGITS.fullmatch(lengths[0].strip()):
        raise _framing(f"Content-Length {lengths[0]!r} is not a non-negative whole number")
    size = int(lengths[0])
    if size > max_bytes:
        raise _too_large(f"body of {size} bytes", max_bytes)
    return size


def _read_chunked(rfile: BinaryIO, max_bytes: int) -> bytes:
    body = bytearray()
    while True:
        size_field = _line(rfile, "chunk size").split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size_field):
            raise _framing(f"chunk size {size_field[:32]!r} is not a hexadecimal number")
        size = int(size_field, 16)
        if size == 0:
            break
        if len(body) + size > max_bytes:
            raise _too_large(f"chunked body of more than {len(body) + size} bytes", max_bytes)
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise _framing("the connection ended inside a chunk")
        body += chunk
        if _line(rfile, "chunk end").strip():
            raise _framing("a chunk is longer than its size")
    for _ in range(_MAX_TRAILERS):
        if not _line(rfile, "trailer").strip():
            return bytes(body)
    raise _framing(f"more than {_MAX_TRAILERS} trailer lines")


def _line(rfile: BinaryIO, what: str) -> bytes:
    line = rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _framing(f"{what} line longer than {_MAX_LINE} bytes")
    if not line.endswith(b"\n"):
        raise _framing(f"the connection ended inside the chunked framing ({what})")
    return line


def _framing(message: str) -> OtlpDecodeError:
    return OtlpDecodeError(400, message, "framing")


def _too_large(what: str, max_bytes: int) -> OtlpDecodeError:
    return OtlpDecodeError(413, f"{what} exceeds receiver.max_request_bytes ({max_bytes} bytes)", "too_large")
