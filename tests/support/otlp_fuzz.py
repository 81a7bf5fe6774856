"""A mutation fuzzer for the OTLP receivers: cases grown from the bodies real exporters send, sent
over real sockets, and the properties every answer must have.

Seeds are what the OpenTelemetry SDK's own encoder (`encode_spans`, the one OTLPSpanExporter uses)
makes of real spans, native and multi-span conventions, every attribute type; OTLP/JSON is the
same requests in the spec's JSON mapping (hex ids). A case mutates one seed: its bytes, its
protobuf fields (values of the wrong size or range, nesting, repetition), its JSON tree (types,
nesting, numbers, escapes), its encoding and compression, and for HTTP its headers and framing.
Every mutator takes a `random.Random`: the test drives it from hypothesis, bench/fuzz.py from a
seeded generator, so a finding is replayed from its seed.

Properties (`check_http`, `check_grpc`): an HTTP request gets a whole HTTP answer before the
connection closes, never a 5xx except 501 for an unknown method or Transfer-Encoding (RFC 9110 and
9112 ask for it), and 200 when the case is a seed only written differently (JSON escapes and
spacing, gzip members, deflate, chunk boundaries, parameters and case of the media type);
a gRPC call gets OK, INVALID_ARGUMENT or RESOURCE_EXHAUSTED, never INTERNAL or UNKNOWN; neither
takes longer than the case's timeout.
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import random
import socket
import zlib
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
EXPORT_LOGS = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = {"traceId", "spanId", "parentSpanId"}


class _Keep(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Any) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def seed_requests() -> list[ExportTraceServiceRequest]:
    """What real exporters send: spans made by the SDK, encoded by the SDK's encoder."""
    requests = []
    for service, build in (("support-bot", _native), ("社内ヘルプデスク", _openinference), ("genai", _genai)):
        keep = _Keep()
        provider = TracerProvider(resource=Resource.create({"service.name": service, "deployment.env": "prod",
                                                            "host.cpus": 2, "sampled": True}))
        provider.add_span_processor(SimpleSpanProcessor(keep))
        build(provider.get_tracer("fuzz.seed", "1.0"))
        provider.shutdown()
        requests.append(encode_spans(keep.spans))
    return requests


def seed_log_requests() -> list[Message]:
    """GenAI events as the SDK's logs API writes them, in a span, encoded by the SDK's encoder."""
    keep = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=Resource.create({"service.name": "genai-events"}))
    logs.add_log_record_processor(SimpleLogRecordProcessor(keep))
    logger = logs.get_logger("fuzz.seed")
    tracer = TracerProvider().get_tracer("fuzz.seed")
    with tracer.start_as_current_span("chat"):
        logger.emit(event_name="gen_ai.user.message", body={"content": "保証期間は？"})
        logger.emit(event_name="gen_ai.choice", attributes={"gen_ai.system": "openai"},
                    body={"index": 0, "message": {"role": "assistant", "content": "2年間です。"}})
        logger.emit(body="GET /answer 200")
    logs.shutdown()
    return [encode_logs(keep.get_finished_logs())]


def _native(tracer: Any) -> None:
    with tracer.start_as_current_span("rag", kind=SpanKind.SERVER) as span:
        span.set_attribute("rag.question", "How long is the warranty?")
        span.set_attribute("rag.contexts", ["The warranty lasts two years.", "Shipping is free in Japan."])
        span.set_attribute("rag.answer", "Two years, and shipping is free.")
        span.set_attribute("rag.route", "/faq")
        span.set_attribute("rag.feedback", 1)
        span.set_attribute("rag.scores", [0.5, 1.0])
        span.set_attribute("rag.flags", [True, False])
        span.add_event("retrieved", {"k": 2, "ids": [1, 2]})
        span.set_status(Status(StatusCode.OK))


def _openinference(tracer: Any) -> None:
    with tracer.start_as_current_span("chain") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "保証期間はどのくらいですか？")
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("retrieval.documents.0.document.content", "保証期間は2年間です。")
            retriever.set_attribute("retrieval.documents.1.document.content", "送料は無料です。")
        with tracer.start_as_current_span("llm", links=[Link(root.get_span_context(), {"why": "x"})]) as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.output_messages.0.message.content", "2年間です。")
        root.set_attribute("output.value", "2年間です。")


def _genai(tracer: Any) -> None:
    with tracer.start_as_current_span("chat") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.input.messages", json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Who wrote it?"}]}]))
        span.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Ada wrote it."}]}]))
        span.set_status(Status(StatusCode.ERROR, "partial"))


def to_otlp_json(request: Message) -> Any:
    """The OTLP/JSON mapping: protobuf's JSON mapping with trace and span ids in hex."""
    doc = json_format.MessageToDict(request)
    _ids_to_hex(doc)
    return doc


def _ids_to_hex(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _ids_to_hex(value)
    elif isinstance(node, list):
        for item in node:
            _ids_to_hex(item)


@dataclass
class Case:
    transport: str  # "http" or "grpc"
    body: bytes
    # HTTP: header lines as sent (names and values may be mutated too); gRPC: metadata.
    headers: list[tuple[str, str]] = field(default_factory=list)
    path: str = "/v1/traces"
    method: str = "POST"
    chunks: list[bytes] | None = None  # HTTP: sent with Transfer-Encoding: chunked, these chunks
    grpc_compression: bool = False
    # What a real exporter could send, differently written (encoding, compression, framing): 200.
    must_accept: bool = False

    def describe(self) -> str:
        return (f"{self.transport} {self.method} {self.path} headers={self.headers!r} "
                f"body[{len(self.body)}]={self.body[:200]!r}{'...' if len(self.body) > 200 else ''}")


# ---- byte mutations ----------------------------------------------------------------------------

_INTERESTING = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff\x0f", b"\xc0\x80", b"\xed\xa0\x80",
                b"\"", b"\\", b"{", b"[", b"]", b"}", b"\\u0000", b"\\ud800", b"1e999", b"-0", b"\r\n"]


def mutate_bytes(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        op = rng.randrange(8)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:  # flip a bit
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[at:at] = rng.choice(_INTERESTING)
        elif op == 2 and out:  # delete a run
            del out[at:at + rng.randrange(1, 64)]
        elif op == 3:  # truncate
            del out[at:]
        elif op == 4 and out:  # duplicate a run
            start = rng.randrange(len(out))
            out[at:at] = out[start:start + rng.randrange(1, 256)]
        elif op == 5 and others:  # splice another seed in
            other = rng.choice(others)
            start = rng.randrange(len(other) + 1)
            out[at:] = other[start:]
        elif op == 6:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op == 7 and out:  # a byte set to a boundary value
            out[rng.randrange(len(out))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
    return bytes(out)


# ---- protobuf field mutations ------------------------------------------------------------------

_TEXT = ["", "x" * 100_000, "\x00", "\u202e", "😀" * 50, "a\udc80b", "<script>alert(1)</script>", "toString",
         "__proto__", "🏳️‍🌈", "\ufeff", "9" * 400, "rag.question", "\n" * 1000]


def _descendants(message: Message) -> list[Message]:
    found = [message]
    for fd, value in message.ListFields():
        if fd.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        items = list(value) if _repeated(fd) else [value]
        for item in items:
            if isinstance(item, Message):
                found += _descendants(item)
    return found


def _repeated(fd: FieldDescriptor) -> bool:
    return fd.is_repeated


def _random_scalar(rng: random.Random, fd: FieldDescriptor) -> Any:
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        text = rng.choice(_TEXT)
        # A lone surrogate cannot be set on a protobuf string; its UTF-8 bytes come in as byte mutations.
        return text.encode("utf-8", "replace").decode("utf-8")
    if t == FieldDescriptor.TYPE_BYTES:
        return bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 7, 8, 15, 16, 17, 32, 1000))))
    if t == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FieldDescriptor.TYPE_DOUBLE:
        return rng.choice((0.0, -0.0, 1e308, -1e308, float("inf"), float("-inf"), float("nan"), 5e-324))
    if t == FieldDescriptor.TYPE_ENUM:
        return rng.choice((0, 1, 2, 3, 4, 5, 99, 2**31 - 1, -1))
    signed = t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT32,
                   FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_SFIXED64)
    bits = 32 if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32,
                       FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32) else 64
    if signed:
        return rng.choice((0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))))
    return rng.choice((0, 1, 2**bits - 1, 2 ** (bits - 1)))


def mutate_message(rng: random.Random, request: Message) -> Message:
    out = type(request)()
    out.CopyFrom(request)
    for _ in range(rng.choice((1, 1, 2, 4))):
        target = rng.choice(_descendants(out))
        fields = target.DESCRIPTOR.fields
        fd = rng.choice(fields)
        op = rng.randrange(5)
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if op == 0:
                target.ClearField(fd.name)
            elif _repeated(fd):
                items = getattr(target, fd.name)
                if len(items) and op in (1, 2):  # repeat an element, many times sometimes
                    for _ in range(rng.choice((1, 2, 100))):
                        items.add().CopyFrom(items[rng.randrange(len(items))])
                else:
                    items.add()
            elif fd.message_type.name == "AnyValue":
                getattr(target, fd.name).CopyFrom(_nested_value(rng, rng.choice((1, 5, 30, 90))))
            else:
                getattr(target, fd.name).SetInParent()
        elif _repeated(fd):
            getattr(target, fd.name).append(_random_scalar(rng, fd))
        else:
            setattr(target, fd.name, _random_scalar(rng, fd))
    return out


def _nested_value(rng: random.Random, depth: int) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    value = AnyValue(string_value=rng.choice(_TEXT[:4]))
    for _ in range(depth):
        outer = AnyValue()
        if rng.random() < 0.5:
            outer.array_value.values.add().CopyFrom(value)
        else:
            kv = outer.kvlist_value.values.add()
            kv.key = rng.choice(("rag.question", "k", ""))
            kv.value.CopyFrom(value)
        value = outer
    return value


# ---- JSON tree mutations -----------------------------------------------------------------------

_JSON_VALUES: list[Any] = [None, True, 0, -1, 2**64, 1.5, "", "zz", "0" * 33, [], {}, [[[]]], {"a": {}},
                           "\u0000", "😀", "x" * 10_000, {"stringValue": 5}, {"arrayValue": {"values": "x"}},
                           {"kvlistValue": {"values": [{"key": 1}]}}, "AAAA", "AAAAAAAAAAAAAAAAAAAAAA=="]


def _json_value(rng: random.Random) -> Any:
    """A fresh copy: the tree is changed in place afterwards."""
    return json.loads(json.dumps(rng.choice(_JSON_VALUES)))


def _json_nodes(node: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if len(path) > 100:  # deep enough to pass receiver.max_json_depth; the fuzzer's own recursion stops here
        return found
    if isinstance(node, dict):
        for key, value in node.items():
            found += _json_nodes(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _json_nodes(value, (*path, i))
    return found


def mutate_json(rng: random.Random, doc: Any) -> bytes:
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.choice((1, 1, 2, 4))):
        paths = _json_nodes(doc)
        path = rng.choice(paths)
        if not path:
            doc = _json_value(rng) if rng.random() < 0.5 else doc
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        op = rng.randrange(6)
        if op == 0:
            del parent[last]
        elif op == 1:  # nest it deeper
            value = parent[last]
            for _ in range(rng.choice((1, 10, 40, 80))):
                value = rng.choice(([value], {"arrayValue": {"values": [value]}}, {"v": value}))
            parent[last] = value
        elif op == 2 and isinstance(parent, dict):  # a key of the right name, a value of the wrong type
            parent[rng.choice(("traceId", "spanId", "stringValue", "intValue", "doubleValue", "boolValue",
                               "bytesValue", "kind", "startTimeUnixNano", "resourceSpans", "values",
                               "droppedAttributesCount", "__proto__"))] = _json_value(rng)
        elif op == 3 and isinstance(parent, list):
            parent.extend([parent[last]] * rng.choice((1, 2, 50)))
        else:
            parent[last] = _json_value(rng)
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, separators=rng.choice(((",", ":"), (", ", ": "))))
    raw = text.encode("utf-8")
    if rng.random() < 0.2:
        raw = rng.choice((b"\xef\xbb\xbf" + raw, raw + b" garbage", text.encode("utf-16"), raw.replace(b"1", b"1e999"),
                          raw.replace(b"0", b"NaN", 1), raw.replace(b'"', b"'", 2)))
    return raw


# ---- cases --------------------------------------------------------------------------------------

_CONTENT_TYPES = [PROTOBUF, JSON, "application/json; charset=utf-8", "Application/X-Protobuf", "text/plain", "",
                  "application/x-protobuf;", "multipart/form-data; boundary=x", "application/json\x00"]


class Seeds:
    """Trace export requests, or log export requests (POST /v1/logs, the LogsService)."""

    def __init__(self, logs: bool = False) -> None:
        self.requests = seed_log_requests() if logs else seed_requests()
        self.protobuf = [r.SerializeToString() for r in self.requests]
        self.json = [to_otlp_json(r) for r in self.requests]
        self.json_bytes = [json.dumps(d).encode() for d in self.json]
        self.path = "/v1/logs" if logs else "/v1/traces"
        self.grpc_method = EXPORT_LOGS if logs else EXPORT


def make_body(rng: random.Random, seeds: Seeds, as_json: bool) -> tuple[bytes, bool]:
    """A body, and whether it is a seed as an exporter could send it (it must then be accepted)."""
    i = rng.randrange(len(seeds.requests))
    layer = rng.randrange(4)  # 0: as sent, 1: fields, 2: bytes, 3: fields then bytes
    if as_json:
        if layer == 0:  # the same document written another way: escapes, spacing, indentation
            text = json.dumps(seeds.json[i], ensure_ascii=rng.random() < 0.5, indent=rng.choice((None, 0, 2)))
            return text.encode(), True
        body = mutate_json(rng, seeds.json[i]) if layer in (1, 3) else seeds.json_bytes[i]
        others = seeds.json_bytes
    else:
        message = mutate_message(rng, seeds.requests[i]) if layer in (1, 3) else seeds.requests[i]
        body = message.SerializeToString()
        others = seeds.protobuf
    return (mutate_bytes(rng, body, others) if layer >= 2 else body), layer == 0


def compress(rng: random.Random, body: bytes) -> tuple[bytes, str | None, bool]:
    """A Content-Encoding and the body in it, sometimes one that does not match; and whether the
    body comes out whole."""
    choice = rng.randrange(8)
    if choice < 3:
        return body, None, True
    if choice == 3:  # gzip members one after another (RFC 1952)
        cut = rng.randrange(len(body) + 1)
        return gzip.compress(body[:cut], mtime=0) + gzip.compress(body[cut:], mtime=0), "gzip", True
    if choice == 4:
        return gzip.compress(body, mtime=0), rng.choice(("gzip", "GZIP", " gzip ")), True
    if choice == 5:
        return zlib.compress(body), "deflate", True
    if choice == 6:  # a broken or mismatched stream
        squeezed = gzip.compress(body, mtime=0)
        return rng.choice((squeezed[: len(squeezed) // 2], squeezed[:-4], body, gzip.compress(squeezed))), rng.choice(
            ("gzip", "deflate", "br", "gzip, gzip", "x-gzip")), False
    if rng.random() < 0.1:  # a bomb: small on the wire, over receiver.max_request_bytes inflated
        return gzip.compress(body + bytes(2 * 1024 * 1024), mtime=0), "gzip", False
    return body, "identity", True


def http_case(rng: random.Random, seeds: Seeds) -> Case:
    as_json = rng.random() < 0.5
    body, intact = make_body(rng, seeds, as_json)
    body, encoding, whole = compress(rng, body)
    content_type = (JSON if as_json else PROTOBUF) if rng.random() < 0.85 else rng.choice(_CONTENT_TYPES)
    fine_type = content_type in ((JSON, "application/json; charset=utf-8") if as_json else
                                 (PROTOBUF, "Application/X-Protobuf", "application/x-protobuf;"))
    headers = [("Host", "127.0.0.1")]
    if content_type:
        headers.append(("Content-Type", content_type))
    if encoding is not None:
        headers.append(("Content-Encoding", encoding))
    case = Case("http", body, headers, path=seeds.path)
    framing = rng.randrange(10)
    if framing < 6:
        case.headers.append(("Content-Length", str(len(body))))
    elif framing < 8:
        cuts = sorted(rng.randrange(len(body) + 1) for _ in range(rng.randrange(4)))
        case.chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        case.headers.append(("Transfer-Encoding", "chunked"))
    elif framing == 8:  # a Content-Length that lies, or is not a number
        case.headers.append(("Content-Length", rng.choice(
            (str(max(0, len(body) - rng.randrange(1, 10))), str(len(body) + 1), "-1", "0x10", "", "1e3", str(2**64),
             f"{len(body)},1"))))
    else:  # header-level damage
        name = rng.choice(("Content-Length", "Transfer-Encoding", "Content-Encoding", "Content-Type", "Expect",
                           "Connection", "X-\u00e9", "Content-Length ", ""))
        case.headers.append(("Content-Length", str(len(body))))
        case.headers.append((name, rng.choice(("chunked", "100-continue", "close", "gzip", "1", "\u00ff",
                                               "x" * 70_000))))
    if rng.random() < 0.05:
        case.path = rng.choice((seeds.path + "?x=1", "/v1/metrics", "//v1/traces", "/v1/traces/../x", "*",
                                "/" + "a" * 70_000))
    if rng.random() < 0.05:
        case.method = rng.choice(("GET", "PUT", "OPTIONS", "HEAD", "DELETE", "BREW"))
    case.must_accept = (intact and whole and fine_type and framing < 8 and case.method == "POST"
                        and case.path in (seeds.path, seeds.path + "?x=1"))
    return case


def grpc_case(rng: random.Random, seeds: Seeds) -> Case:
    body, intact = make_body(rng, seeds, as_json=False)
    return Case("grpc", body, path=seeds.grpc_method, grpc_compression=rng.random() < 0.3, must_accept=intact)


# ---- running a case and its properties -----------------------------------------------------------


@dataclass
class Outcome:
    status: int | str | None  # HTTP status, gRPC code name, or None: no answer
    error: str = ""


def http_wire(case: Case) -> bytes:
    head = f"{case.method} {case.path} HTTP/1.1\r\n" + "".join(f"{n}: {v}\r\n" for n, v in case.headers)
    # Each case on its own connection: a reply must come whether or not the server keeps it open.
    head += "Connection: close\r\n\r\n"
    if case.chunks is None:
        return head.encode("utf-8", "surrogateescape") + case.body
    framed = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in case.chunks if c) + b"0\r\n\r\n"
    return head.encode("utf-8", "surrogateescape") + framed


def run_http(address: tuple[str, int], case: Case, timeout_s: float) -> Outcome:
    try:
        with socket.create_connection(address, timeout=timeout_s) as sock:
            try:
                sock.sendall(http_wire(case))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered early and closed (a refused header); read its answer
            response = http.client.HTTPResponse(sock, method=case.method)
            try:
                response.begin()
                response.read()
            except TimeoutError:
                return Outcome(None, "no answer within the case's timeout (hang)")
            except (http.client.HTTPException, ConnectionError) as e:
                return Outcome(None, f"the connection closed without a whole answer: {e!r}")
            return Outcome(response.status)
    except OSError as e:
        return Outcome(None, f"connect failed: {e!r}")


def check_http(case: Case, outcome: Outcome) -> str | None:
    if outcome.status is None:
        return outcome.error
    assert isinstance(outcome.status, int)
    if case.must_accept and outcome.status != 200:
        return f"HTTP {outcome.status} for a request an exporter could send"
    if outcome.status >= 500:
        # 501 is what RFC 9110 and 9112 ask for a method or a transfer coding the server does not know.
        unknown_coding = any(n == "Transfer-Encoding" and v.strip().lower() != "chunked" for n, v in case.headers)
        unknown = unknown_coding or case.method not in _HTTP_METHODS
        if not (outcome.status == 501 and unknown):
            return f"HTTP {outcome.status}"
    return None


_HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
_GRPC_OK = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}


def run_grpc(channel: grpc.Channel, case: Case, timeout_s: float) -> Outcome:
    try:
        channel.unary_unary(case.path)(case.body, timeout=timeout_s,
               compression=grpc.Compression.Gzip if case.grpc_compression else grpc.Compression.NoCompression)
        return Outcome(grpc.StatusCode.OK.name)
    except grpc.RpcError as e:
        return Outcome(e.code().name, e.details() or "")


def check_grpc(case: Case, outcome: Outcome) -> str | None:
    if case.must_accept and outcome.status != grpc.StatusCode.OK.name:
        return f"gRPC {outcome.status} for a request an exporter could send: {outcome.error}"
    if outcome.status not in {c.name for c in _GRPC_OK}:
        return f"gRPC {outcome.status}: {outcome.error}"
    return None


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")
