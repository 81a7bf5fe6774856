"""The OTLP logs path (POST /v1/logs, the gRPC LogsService) over real sockets: OTLP/JSON log records
with hex ids, the receivers' checks (credentials, malformed bodies) applied as on traces, and log
records that are not GenAI events ignored. The real SDK log exporters are in test_conventions.py."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import grpc
import pytest
import requests
from prometheus_client import CollectorRegistry
from test_conventions import ANSWER, DOCS, GRACE_S, QUESTION, Collector, _collector, _later

from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.receiver_grpc import OtlpGrpcReceiver
from ragpulse.collector.receiver_http import OtlpHttpReceiver
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.http_guard import AuthConfig

TOKEN = "logs-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def receivers() -> Iterator[tuple[Collector, str, str]]:
    c = _collector()
    config = ReceiverConfig(auth=AuthConfig(bearer_tokens=[TOKEN]))
    http = OtlpHttpReceiver("127.0.0.1", 0, c.pipeline, CollectorMetrics(CollectorRegistry()), config)
    grpc_receiver = OtlpGrpcReceiver("127.0.0.1", 0, c.pipeline, CollectorMetrics(CollectorRegistry()), config)
    http.start()
    grpc_receiver.start()
    yield c, f"http://127.0.0.1:{http.port}", grpc_receiver.endpoint
    http.stop()
    grpc_receiver.stop()


def _text(value: str) -> dict[str, str]:
    return {"stringValue": value}


def _attrs(**values: str) -> list[dict[str, object]]:
    return [{"key": k.replace("__", "."), "value": _text(v)} for k, v in values.items()]


def test_genai_log_events_as_otlp_json(receivers: tuple[Collector, str, str]) -> None:
    c, http, _ = receivers
    trace_id, agent, retrieval, chat = os.urandom(16).hex(), *(os.urandom(8).hex() for _ in range(3))
    resource = {"attributes": _attrs(service__name="json-app")}
    logs = {"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.user.message", "traceId": trace_id, "spanId": chat,
         "body": {"kvlistValue": {"values": [{"key": "content", "value": _text(QUESTION)}]}}},
        # Older Events API: the name as an attribute.
        {"traceId": trace_id, "spanId": chat, "attributes": _attrs(event__name="gen_ai.choice"),
         "body": {"kvlistValue": {"values": [{"key": "message", "value": {"kvlistValue": {"values": [
             {"key": "role", "value": _text("assistant")}, {"key": "content", "value": _text(ANSWER)}]}}}]}}},
        # Not GenAI events: ignored.
        {"traceId": trace_id, "spanId": chat, "body": _text("GET /answer 200")},
        {"eventName": "gen_ai.user.message", "body": _text("no span to join")},
    ]}]}]}
    answer = requests.post(f"{http}/v1/logs", json=logs, headers=AUTH, timeout=10)
    assert answer.status_code == 200 and answer.json() == {}

    def span(span_id: str, parent: str, start: int, **attrs: str) -> dict[str, object]:
        return {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent, "name": span_id,
                "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 10), "attributes": _attrs(**attrs)}

    spans = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [
        span(retrieval, agent, 100, gen_ai__operation__name="retrieval",
             gen_ai__retrieval__documents=json.dumps([{"id": "a", "score": 0.9, "content": DOCS[0]}])),
        span(chat, agent, 200, gen_ai__operation__name="chat"),
        span(agent, "", 50, gen_ai__operation__name="invoke_agent"),
    ]}]}]}
    assert requests.post(f"{http}/v1/traces", json=spans, headers=AUTH, timeout=10).status_code == 200
    c.pipeline.tick(_later(GRACE_S))
    (record,) = c.records()
    assert (record.question, record.contexts, record.answer, record.span_id) == (QUESTION, [DOCS[0]], ANSWER, chat)
    assert c.value("ragpulse_assembly_pending_traces") == 0


def test_logs_are_checked_as_traces_are(receivers: tuple[Collector, str, str]) -> None:
    c, http, grpc_endpoint = receivers
    assert requests.post(f"{http}/v1/logs", data=b"", timeout=10).status_code == 401
    refused = requests.post(f"{http}/v1/logs", data=b"\xff\xff", headers={
        **AUTH, "Content-Type": "application/x-protobuf"}, timeout=10)
    assert refused.status_code == 400 and b"ExportLogsServiceRequest" in refused.content
    assert requests.post(f"{http}/v1/metrics", data=b"", headers=AUTH, timeout=10).status_code == 404
    with grpc.insecure_channel(grpc_endpoint) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
        with pytest.raises(grpc.RpcError) as err:
            export(b"", timeout=10)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            export(b"\xff\xff", timeout=10, metadata=(("authorization", f"Bearer {TOKEN}"),))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert export(b"", timeout=10, metadata=(("authorization", f"Bearer {TOKEN}"),)) == b""
    assert c.value("ragpulse_assembly_pending_traces") == 0
