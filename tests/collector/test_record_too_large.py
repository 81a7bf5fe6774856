"""A record that cannot fit a bus message even cut (its span metadata alone is over the limit) is
dropped by a named rule, so received = sampled + dropped still holds, and the rest of its OTLP
request goes through."""

from __future__ import annotations

from otlp_requests import add_rag_span, rag_request
from ports import loopback_receivers
from prometheus_client import CollectorRegistry

from ragpulse.app import build_collector
from ragpulse.collector.truncate import RecordTooLarge, truncate_record
from ragpulse.config import Config
from ragpulse.core.wire import Record
from ragpulse.kafka.producer import RECORD_FRAMING_BYTES

# The smallest bus.kafka.max_message_bytes the config accepts, less the framing, as the Kafka
# publisher applies it.
LIMIT = 16_384 - RECORD_FRAMING_BYTES


class TruncatingPublisher:
    """The Kafka publisher's size rule without a broker."""

    def __init__(self) -> None:
        self.sent: list[Record] = []

    def publish_batch(self, records: list[tuple[bytes, bytes]]) -> list[int]:
        too_large = []
        for index, (_, value) in enumerate(records):
            try:
                self.sent.append(truncate_record(Record.from_json(value), LIMIT))
            except RecordTooLarge:
                too_large.append(index)
        return too_large


def test_a_record_whose_metadata_exceeds_the_message_limit_is_dropped_and_counted():
    registry = CollectorRegistry()
    publisher = TruncatingPublisher()
    parts = build_collector(loopback_receivers(Config()), publisher, registry)
    request, scope = rag_request()
    add_rag_span(scope, b"\x01" * 16, b"\x02" * 8, answer="a" * 40_000)
    route = scope.spans[0].attributes.add()
    route.key, route.value.string_value = "rag.route", "/" + "r" * LIMIT
    add_rag_span(scope, b"\x03" * 16, b"\x04" * 8, answer="a" * 40_000)

    parts.pipeline.consume_export_request(request, "test")

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"service": "svc", **labels})

    assert value("ragpulse_records_received_total") == 2
    assert value("ragpulse_records_dropped_total", reason="too_large") == 1
    assert value("ragpulse_records_sampled_total") == 1
    (sent,) = publisher.sent
    assert sent.span_id == "04" * 8 and sent.truncated
