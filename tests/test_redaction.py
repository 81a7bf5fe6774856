"""Redaction happens in the collector, before a record is put on the bus."""

from __future__ import annotations

from otlp_requests import add_rag_span, rag_request
from prometheus_client import CollectorRegistry

from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.redact import RedactionConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record


def test_emails_and_custom_patterns_are_redacted_before_the_bus() -> None:
    config = Config(redaction=RedactionConfig(enabled=True, patterns=[r"ACCT-\d+"], replacement="<x>"))
    bus = InProcessBus(10)
    pipeline = CollectorPipeline(
        config.extract, config.sampling, config.redaction, bus, CollectorMetrics(CollectorRegistry()))
    request, scope = rag_request()
    add_rag_span(scope, b"\x11" * 16, b"\x22" * 8, question="Why is ACCT-123 locked? mail me at jo@example.com",
                 contexts=("Account ACCT-123 of jo@example.com was locked.",), answer="ACCT-123 is locked.")
    pipeline.consume_export_request(request, "test")
    (delivery,) = bus.poll(1, 0.1)
    record = Record.from_json(delivery.value)
    assert record.question == "Why is <x> locked? mail me at <x>"
    assert record.contexts == ["Account <x> of <x> was locked."]
    assert b"example.com" not in delivery.value and b"ACCT-123" not in delivery.value
