"""Bad OTLP input gets a clear 4xx or a counted drop, and ragpulse keeps serving."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request

import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from otel_app import RagApp
from ragpulse_process import RagpulseProcess

pytestmark = pytest.mark.slow

CONTEXTS = ["Mount Everest is 8,849 metres high. It lies on the border of Nepal and China."]


def post(proc: RagpulseProcess, body: bytes, content_type: str, **headers: str) -> tuple[int, bytes, dict]:
    request = urllib.request.Request(
        f"http://{proc.http}/v1/traces", data=body, headers={"Content-Type": content_type, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def span_json(attrs: list[dict], trace_id: str = "5b8efff798038103d269b633813fc60c") -> bytes:
    return json.dumps({
        "resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "badapp"}}]},
            "scopeSpans": [{"spans": [{
                "traceId": trace_id, "spanId": "eee19b7ec3c1b174", "name": "rag", "kind": 1,
                "startTimeUnixNano": "1544712660000000000", "endTimeUnixNano": "1544712661000000000",
                "attributes": attrs,
            }]}],
        }]
    }).encode()


def s(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def arr(key: str, values: list[str]) -> dict:
    return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in values]}}}


def assert_still_serving(proc: RagpulseProcess) -> None:
    app = RagApp("after-bad-input", "http", proc.http)
    app.answer("How high is Everest?", CONTEXTS, "Everest is 8,849 metres high.")
    app.close()
    proc.wait_for("ragpulse_records_scored_total", 1, service="after-bad-input")


def test_malformed_protobuf_is_400_with_reason(ragpulse_up: RagpulseProcess) -> None:
    code, body, _ = post(ragpulse_up, b"\x0a\xff\xff\xff\xff\x0f garbage", "application/x-protobuf")
    assert code == 400
    status = Status.FromString(body)
    assert "not a valid ExportTraceServiceRequest" in status.message
    assert ragpulse_up.value("ragpulse_otlp_requests_total", outcome="invalid") == 1
    assert_still_serving(ragpulse_up)


def test_wrong_content_type_is_415(ragpulse_up: RagpulseProcess) -> None:
    code, body, _ = post(ragpulse_up, b"hello", "text/plain")
    assert code == 415
    assert "unsupported Content-Type" in json.loads(body)["message"]


def test_invalid_json_and_bad_gzip_are_400(ragpulse_up: RagpulseProcess) -> None:
    code, body, _ = post(ragpulse_up, b"{not json", "application/json")
    assert code == 400 and "not valid JSON" in json.loads(body)["message"]
    code, body, _ = post(ragpulse_up, b"not gzip at all", "application/json", **{"Content-Encoding": "gzip"})
    assert code == 400 and "gzip" in json.loads(body)["message"]


def test_gzip_json_body_is_accepted(ragpulse_up: RagpulseProcess) -> None:
    body = gzip.compress(span_json([s("rag.question", "How high is Everest?"), arr("rag.contexts", CONTEXTS),
                                    s("rag.answer", "Everest is 8,849 metres high.")]))
    code, payload, _ = post(ragpulse_up, body, "application/json", **{"Content-Encoding": "gzip"})
    assert code == 200, payload
    assert json.loads(payload) == {}
    ragpulse_up.wait_for("ragpulse_records_scored_total", 1, service="badapp")


def test_invalid_utf8_is_400(ragpulse_up: RagpulseProcess) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "rag"
    kv = span.attributes.add()
    kv.key, kv.value.string_value = "rag.question", "placeholder-question"
    raw = request.SerializeToString().replace(b"placeholder-question", b"bad \xff\xfe utf8 here!")
    code, body, _ = post(ragpulse_up, raw, "application/x-protobuf")
    assert code == 400
    assert "ExportTraceServiceRequest" in Status.FromString(body).message
    assert_still_serving(ragpulse_up)


def test_empty_answer_and_non_list_contexts_are_counted_partial_success(ragpulse_up: RagpulseProcess) -> None:
    code, body, _ = post(ragpulse_up, span_json([s("rag.question", "Q?"), arr("rag.contexts", CONTEXTS),
                                                 s("rag.answer", "  ")]), "application/json")
    assert code == 200
    partial = json.loads(body)["partialSuccess"]
    assert partial["rejectedSpans"] == "1" and "rag.answer must be a non-empty string" in partial["errorMessage"]
    code, body, _ = post(ragpulse_up, span_json([s("rag.question", "Q?"), s("rag.contexts", "just one string"),
                                                 s("rag.answer", "A.")]), "application/json")
    assert code == 200
    assert "rag.contexts must be" in json.loads(body)["partialSuccess"]["errorMessage"]
    assert ragpulse_up.value("ragpulse_records_dropped_total", reason="empty_answer") == 1
    assert ragpulse_up.value("ragpulse_records_dropped_total", reason="contexts_not_list") == 1
    assert_still_serving(ragpulse_up)


def test_protobuf_response_for_protobuf_request(ragpulse_up: RagpulseProcess) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "plain span without rag attributes"
    code, body, headers = post(ragpulse_up, request.SerializeToString(), "application/x-protobuf")
    assert code == 200 and headers["Content-Type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(body).HasField("partial_success")
    assert ragpulse_up.value("ragpulse_spans_without_rag_triple_total") == 1


def test_five_megabyte_attribute_is_truncated_and_scored(ragpulse_up: RagpulseProcess) -> None:
    app = RagApp("huge", "http", ragpulse_up.http)
    huge = CONTEXTS[0] + " " + "Filler text about mountains. " * (5 * 1024 * 1024 // 29)
    assert len(huge) > 5_000_000
    app.answer("How high is Everest?", [huge], "Everest is 8,849 metres high.")
    app.close()
    ragpulse_up.wait_for("ragpulse_records_scored_total", 1, service="huge")
    assert ragpulse_up.value("ragpulse_records_truncated_total", service="huge") == 1


def test_empty_request_is_ok_and_unknown_path_is_404(ragpulse_up: RagpulseProcess) -> None:
    code, _, _ = post(ragpulse_up, b"{}", "application/json")
    assert code == 200
    request = urllib.request.Request(f"http://{ragpulse_up.http}/v1/metrics", data=b"{}",
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=5)
        raise AssertionError("expected 404")
    except urllib.error.HTTPError as e:
        assert e.code == 404
