"""OTLP log export requests: the GenAI events among their log records, for trace assembly.

Instrumentations that follow the GenAI conventions may send prompts and completions as log records
(collector/extract/genai_events.py) correlated with their span by trace and span id, on the same
OTLP endpoint as the spans (/v1/logs, the gRPC LogsService). Every other log record is ignored:
ragpulse is no log store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from ragpulse.collector.attributes import any_value, attributes
from ragpulse.collector.extract import genai_events
from ragpulse.collector.otlp_decode import decode_into, parse_protobuf


@dataclass(frozen=True)
class LogEvent:
    trace_id: bytes
    span_id: bytes
    service: str
    event: tuple[str, dict[str, Any]]
    size: int


def decode_logs_request(body: bytes, content_type: str | None, max_json_depth: int) -> ExportLogsServiceRequest:
    return decode_into(ExportLogsServiceRequest(), body, content_type, max_json_depth)


def decode_logs_protobuf(body: bytes) -> ExportLogsServiceRequest:
    return parse_protobuf(ExportLogsServiceRequest(), body)


def genai_log_events(request: ExportLogsServiceRequest) -> Iterator[LogEvent]:
    """The GenAI events of the request that name a span. The event name is the log record's
    `event_name` field, or its `event.name` attribute (how the Events API wrote it before the field
    existed)."""
    for resource_logs in request.resource_logs:
        resource = attributes(resource_logs.resource.attributes)
        service = str(resource.get("service.name") or "unknown_service")
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                if len(record.trace_id) != 16 or len(record.span_id) != 8:
                    continue
                attrs = attributes(record.attributes)
                name = record.event_name or str(attrs.get("event.name", ""))
                if name not in genai_events.NAMES:
                    continue
                if record.HasField("body"):
                    attrs[genai_events.BODY] = any_value(record.body)
                yield LogEvent(record.trace_id, record.span_id, service, (name, attrs), record.ByteSize())
