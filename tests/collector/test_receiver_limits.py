"""The OTLP receivers' hard limits, over real sockets: request size in every framing, read and idle
timeouts, the connection cap, JSON depth, and undecodable gRPC messages. Raw sockets play the
malformed or hostile clients; real OTel exporters and HTTP clients the well-behaved ones."""

from __future__ import annotations

import gzip
import http.client
import json
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import requests
from google.rpc.status_pb2 import Status
from otel_app import RagApp
from otlp_requests import add_rag_span, rag_request
from prometheus_client import CollectorRegistry

from ragpulse.app import CollectorParts, build_collector
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.endpoints import parse_endpoint

MAX_BYTES = 64 * 1024
LIMITS = ReceiverConfig(
    grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", max_request_bytes=MAX_BYTES, max_json_depth=32,
    max_connections=4, read_timeout_s=1.0, idle_timeout_s=1.0,
)
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@dataclass
class Receivers:
    parts: CollectorParts
    bus: InProcessBus
    registry: CollectorRegistry

    @property
    def http(self) -> str:
        return self.parts.endpoint("http")

    @property
    def grpc(self) -> str:
        return self.parts.endpoint("grpc")

    def refused(self, reason: str, transport: str = "http") -> float:
        labels = {"transport": transport, "reason": reason}
        return self.registry.get_sample_value("ragpulse_otlp_requests_refused_total", labels) or 0.0

    def assert_still_serving(self) -> None:
        """A real exporter's request still goes through, and only it reaches the bus."""
        before = self.bus.depth()
        app = RagApp("after", "http", self.http)
        app.answer("How high is Everest?", ["Everest is 8,849 metres high."], "8,849 metres.")
        app.close()
        assert self.bus.depth() == before + 1


def start_receivers(config: ReceiverConfig) -> Receivers:
    bus, registry = InProcessBus(1000), CollectorRegistry()
    parts = build_collector(Config(receiver=config), bus, registry)
    for receiver in parts.receivers:
        receiver.start()
    return Receivers(parts, bus, registry)


@pytest.fixture
def receivers() -> Iterator[Receivers]:
    r = start_receivers(LIMITS)
    yield r
    for receiver in r.parts.receivers:
        receiver.stop()


def connect(endpoint: str) -> socket.socket:
    return socket.create_connection(parse_endpoint(endpoint, "test"), timeout=10)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, dict(response.getheaders()), response.read()


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def post_raw(endpoint: str, head: str, body: bytes = b"") -> tuple[int, str, bool]:
    """Send a request with hand-written headers; the status, the Status message, and whether the
    server closed the connection afterwards."""
    with connect(endpoint) as sock:
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode("latin-1") + body)
        code, headers, payload = read_response(sock)
        return code, status_message(headers, payload), closed_by_server(sock)


def status_message(headers: dict[str, str], payload: bytes) -> str:
    """The google.rpc.Status message of an error answer, in the answer's encoding."""
    if headers["Content-Type"] == "application/x-protobuf":
        return Status.FromString(payload).message
    return json.loads(payload)["message"]


def one_span_body() -> bytes:
    request, scope = rag_request("raw")
    add_rag_span(scope, b"\x07" * 16, b"\x08" * 8)
    return request.SerializeToString()


@pytest.mark.parametrize("length", ["-1", "abc", "+12", "1_0", " ", "99999999999999999999"])
def test_invalid_content_length_is_400_and_closes(receivers: Receivers, length: str) -> None:
    code, message, closed = post_raw(receivers.http, f"Content-Type: application/json\r\nContent-Length: {length}\r\n")
    assert code == 400 and "Content-Length" in message and closed
    assert receivers.refused("framing") == 1
    receivers.assert_still_serving()


def test_two_content_lengths_or_both_framings_are_400(receivers: Receivers) -> None:
    code, message, closed = post_raw(
        receivers.http, "Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n", b"{}")
    assert (code, closed) == (400, True) and "Content-Length headers" in message
    code, message, closed = post_raw(
        receivers.http, "Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n",
        b"2\r\n{}\r\n0\r\n\r\n")
    assert (code, closed) == (400, True) and "both Transfer-Encoding and Content-Length" in message
    code, message, _ = post_raw(receivers.http, "Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n")
    assert code == 501 and "Transfer-Encoding" in message


def test_content_length_over_the_limit_is_413_before_the_body(receivers: Receivers) -> None:
    code, message, closed = post_raw(
        receivers.http, f"Content-Type: application/x-protobuf\r\nContent-Length: {MAX_BYTES + 1}\r\n")
    assert code == 413 and "receiver.max_request_bytes" in message and closed
    assert receivers.refused("too_large") == 1


def test_body_shorter_than_its_content_length_times_out_and_closes(receivers: Receivers) -> None:
    code, message, closed = post_raw(
        receivers.http, "Content-Type: application/x-protobuf\r\nContent-Length: 100\r\n", b"\x0a\x00" * 5)
    assert code == 408 and "receiver.read_timeout_s" in message and closed
    assert receivers.refused("read_timeout") == 1
    assert receivers.bus.depth() == 0
    receivers.assert_still_serving()


def test_a_body_sent_a_byte_at_a_time_is_cut_off_at_the_read_timeout(receivers: Receivers) -> None:
    """Each byte arrives well within the read timeout; the request as a whole does not."""
    body = one_span_body()
    with connect(receivers.http) as sock:
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode())
        for byte in body:
            if select.select([sock], [], [], 0.2)[0]:
                break  # the server answered: stop sending, read the answer
            sock.sendall(bytes([byte]))
        code, _, _ = read_response(sock)
        assert code == 408 and closed_by_server(sock)
    assert receivers.bus.depth() == 0


def test_slow_headers_are_cut_off_too(receivers: Receivers) -> None:
    with connect(receivers.http) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\n")
        closed = False
        for _ in range(100):
            if select.select([sock], [], [], 0.2)[0]:
                closed = closed_by_server(sock)
                break
            sock.sendall(b"X")
        assert closed


def test_idle_keep_alive_connection_is_closed(receivers: Receivers) -> None:
    with connect(receivers.http) as sock:
        body = one_span_body()
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        code, headers, _ = read_response(sock)
        assert code == 200 and "close" not in headers.get("Connection", "")
        # Kept alive for the next request, then closed once idle for receiver.idle_timeout_s.
        assert closed_by_server(sock)


def test_chunked_body_is_accepted(receivers: Receivers) -> None:
    body = one_span_body()
    chunks = iter([body[:10], body[10:20], body[20:]])  # a generator body: requests sends it chunked
    response = requests.post(f"http://{receivers.http}/v1/traces", data=chunks,
                             headers={"Content-Type": "application/x-protobuf"}, timeout=10)
    assert response.status_code == 200
    assert receivers.bus.depth() == 1


def test_chunked_body_with_extensions_and_trailers_is_accepted(receivers: Receivers) -> None:
    body = one_span_body()
    framed = (f"{len(body):x};name=value\r\n".encode() + body + b"\r\n0\r\nX-Trailer: yes\r\n\r\n")
    code, _, closed = post_raw(receivers.http, "Content-Type: application/x-protobuf\r\n"
                               "Transfer-Encoding: chunked\r\nConnection: close\r\n", framed)
    assert code == 200 and closed
    assert receivers.bus.depth() == 1


def test_chunked_body_over_the_limit_is_413(receivers: Receivers) -> None:
    chunk = b"x" * 16 * 1024
    framed = b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(5)) + b"0\r\n\r\n"
    code, message, closed = post_raw(receivers.http, "Content-Type: application/x-protobuf\r\n"
                                     "Transfer-Encoding: chunked\r\n", framed)
    assert code == 413 and "receiver.max_request_bytes" in message and closed
    receivers.assert_still_serving()


def test_chunked_gzip_bomb_is_413_after_decompression(receivers: Receivers) -> None:
    bomb = gzip.compress(b"[" + b" " * (MAX_BYTES * 4) + b"]")
    assert len(bomb) < MAX_BYTES
    response = requests.post(f"http://{receivers.http}/v1/traces", data=iter([bomb]),
                             headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}, timeout=10)
    assert response.status_code == 413 and "decompressed" in response.json()["message"]


@pytest.mark.parametrize("framed", [b"zz\r\nab\r\n0\r\n\r\n", b"2\r\nabc\r\n0\r\n\r\n", b"-1\r\n"])
def test_broken_chunked_framing_is_400(receivers: Receivers, framed: bytes) -> None:
    code, message, closed = post_raw(receivers.http, "Content-Type: application/x-protobuf\r\n"
                                     "Transfer-Encoding: chunked\r\n", framed)
    assert code == 400 and "chunk" in message and closed
    assert receivers.refused("framing") == 1


def test_unknown_path_with_a_body_closes_rather_than_read_the_body_as_a_request(receivers: Receivers) -> None:
    with connect(receivers.http) as sock:
        smuggled = b"GET /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        sock.sendall(f"POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(smuggled)}\r\n\r\n".encode()
                     + smuggled)
        code, _, _ = read_response(sock)
        assert code == 404 and closed_by_server(sock)


@pytest.mark.slow
def test_connections_beyond_the_cap_get_503_at_once() -> None:
    # Idle connections must outlive the test's steps: a long idle timeout here.
    r = start_receivers(ReceiverConfig(grpc_endpoint="127.0.0.1:0", http_endpoint="127.0.0.1:0", max_connections=2,
                                       idle_timeout_s=60))
    threads_before = threading.active_count()
    idle = [connect(r.http) for _ in range(2)]
    try:
        refused = [connect(r.http) for _ in range(20)]
        for sock in refused:
            code, headers, body = read_response(sock)
            assert code == 503 and headers["Retry-After"] == "1" and b"too many connections" in body
            sock.close()
        # One thread per admitted connection, none for the refused ones.
        assert threading.active_count() <= threads_before + 2
        assert r.refused("connections") == 20
        labels = {"transport": "http", "outcome": "retry_later"}
        assert r.registry.get_sample_value("ragpulse_otlp_requests_total", labels) == 20
        idle.pop().close()
        deadline = time.monotonic() + 10
        while threading.active_count() > threads_before + 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # the server's thread notices the close
        r.assert_still_serving()
    finally:
        for sock in idle:
            sock.close()
        # Stopping does not wait out the idle connections' 60 s.
        for receiver in r.parts.receivers:
            receiver.stop()


def test_deeply_nested_json_is_400_naming_the_limit(receivers: Receivers) -> None:
    for body in (b"[" * 1000 + b"]" * 1000, b'{"a":' * 10_000 + b"1" + b"}" * 10_000):
        code, _, payload = _post(receivers, body, {"Content-Type": "application/json"})
        assert code == 400 and "receiver.max_json_depth (32)" in json.loads(payload)["message"]
    assert receivers.refused("json_depth") == 2
    receivers.assert_still_serving()


@pytest.mark.parametrize("escaped", ["\\ud800", "\\udfff", "a\\ud83d"])
def test_lone_surrogate_is_400_with_an_answer_that_encodes(receivers: Receivers, escaped: str) -> None:
    for place in ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"%s"}]}]}]}',
                  '{"resourceSpans":"%s"}', '{"%s":1}'):
        code, _, payload = _post(receivers, (place % escaped).encode(), {"Content-Type": "application/json"})
        assert code == 400 and "lone surrogate" in json.loads(payload)["message"]
    receivers.assert_still_serving()


def _post(receivers: Receivers, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    response = requests.post(f"http://{receivers.http}/v1/traces", data=body, headers=headers, timeout=10)
    return response.status_code, dict(response.headers), response.content


def test_grpc_undecodable_message_is_invalid_argument(receivers: Receivers) -> None:
    with grpc.insecure_channel(receivers.grpc) as channel:
        export = channel.unary_unary(EXPORT)  # raw bytes in and out
        with pytest.raises(grpc.RpcError) as err:
            export(b"\x0a\xff\xff\xff\xff\x0f garbage", timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid ExportTraceServiceRequest" in err.value.details()
        assert receivers.refused("malformed", "grpc") == 1
        labels = {"transport": "grpc", "outcome": "invalid"}
        assert receivers.registry.get_sample_value("ragpulse_otlp_requests_total", labels) == 1


def test_grpc_message_over_the_limit_is_refused_by_grpc(receivers: Receivers) -> None:
    with grpc.insecure_channel(receivers.grpc) as channel:
        export = channel.unary_unary(EXPORT)
        for payload, compression in ((bytes(MAX_BYTES + 1), None), (bytes(MAX_BYTES * 16), grpc.Compression.Gzip)):
            with pytest.raises(grpc.RpcError) as err:
                export(payload, timeout=10, compression=compression)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert receivers.bus.depth() == 0


def test_protobuf_nesting_beyond_the_parsers_limit_is_400(receivers: Receivers) -> None:
    # AnyValue.kvlist_value → KeyValueList.values → KeyValue.value → AnyValue ..., 200 levels deep.
    inner = b""
    for _ in range(200):
        key_value = b"\x12" + _varint(len(inner)) + inner  # KeyValue.value (field 2)
        kv_list = b"\x0a" + _varint(len(key_value)) + key_value  # KeyValueList.values (field 1)
        inner = b"\x32" + _varint(len(kv_list)) + kv_list  # AnyValue.kvlist_value (field 6)
    attribute = b"\x12" + _varint(len(inner)) + inner
    resource = b"\x0a" + _varint(len(attribute)) + attribute  # Resource.attributes
    resource_spans = b"\x0a" + _varint(len(resource)) + resource  # ResourceSpans.resource
    body = b"\x0a" + _varint(len(resource_spans)) + resource_spans
    code, _, payload = _post(receivers, body, {"Content-Type": "application/x-protobuf"})
    assert code == 400 and "ExportTraceServiceRequest" in Status.FromString(payload).message
    receivers.assert_still_serving()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_gzip_cut_short_is_400_not_a_silently_shorter_body(receivers: Receivers) -> None:
    """Half a gzip stream inflates to a prefix of the body, and a prefix of a protobuf body can
    parse: it must be refused, not taken with its spans missing."""
    squeezed = gzip.compress(one_span_body())
    for cut in (squeezed[: len(squeezed) - 8], squeezed[: len(squeezed) // 2]):
        code, _, payload = _post(receivers, cut, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
        assert code == 400 and "ends early" in Status.FromString(payload).message
    assert receivers.bus.depth() == 0


def test_gzip_members_one_after_another_are_one_body(receivers: Receivers) -> None:
    request, scope = rag_request("members")
    add_rag_span(scope, b"\x01" * 16, b"\x02" * 8)
    add_rag_span(scope, b"\x03" * 16, b"\x04" * 8)
    body = request.SerializeToString()
    half = len(body) // 2
    members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    code, _, _ = _post(receivers, members, {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert code == 200 and receivers.bus.depth() == 2


def expect_continue(sock: socket.socket, length: int) -> bytes:
    """Send headers with `Expect: 100-continue` and no body; the first interim or final answer's head."""
    sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                 f"Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n".encode("ascii"))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        chunk = sock.recv(1)
        assert chunk, f"closed after {head!r}"
        head += chunk
    return head


def test_expect_continue_over_the_limit_is_413_instead_of_100(receivers: Receivers) -> None:
    """The standard library answers 100 Continue to anything: the client would then send a body that
    is refused unread."""
    with connect(receivers.http) as sock:
        head = expect_continue(sock, MAX_BYTES + 1)
        assert head.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in head
        length = int(re.search(rb"Content-Length: (\d+)", head)[1])  # type: ignore[index]
        payload = b""
        while len(payload) < length:
            payload += sock.recv(length - len(payload))
        assert "receiver.max_request_bytes" in Status.FromString(payload).message
        assert closed_by_server(sock)
    assert receivers.refused("too_large") == 1
    receivers.assert_still_serving()


def test_expect_continue_within_the_limit_gets_100_and_is_processed(receivers: Receivers) -> None:
    body = one_span_body()
    with connect(receivers.http) as sock:
        assert expect_continue(sock, len(body)) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        code, _, _ = read_response(sock)
    assert code == 200 and receivers.bus.depth() == 1
