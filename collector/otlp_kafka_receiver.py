"""Receiver for spans that an OpenTelemetry Collector already writes to Kafka.

Teams that run the OTel Collector with its `kafka` exporter can point ragpulse at that topic
instead of adding a second OTLP destination. Each Kafka message is one ptrace.Traces batch in the
exporter's `encoding`: otlp_proto (the ExportTraceServiceRequest wire format) or otlp_json (OTLP
JSON, hex ids). Decoded requests go to `handle`, the collector pipeline.

Offsets are committed (after the records published so far are acknowledged, `before_commit`)
only past messages that were handled or counted as invalid: a bus that pushes back (BusFull)
makes the receiver seek back and retry the same message, never skip it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kafka import AsyncConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka import errors as kafka_errors
from kafka.structs import OffsetAndMetadata
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragpulse.collector.otlp_decode import JSON, PROTOBUF, OtlpDecodeError, decode_request
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import connection_config, poll_group, subscribe_known_topic

log = logging.getLogger(__name__)

TRANSPORT = "kafka"
_CONTENT_TYPES = {"otlp_proto": PROTOBUF, "otlp_json": JSON}


class _CommitOnRevoke(AsyncConsumerRebalanceListener):
    # Messages are handled one at a time on the poll thread, so at a revocation nothing is in
    # flight: commit what was handled so the next owner does not publish it again.
    def __init__(self, owner: OtlpKafkaReceiver) -> None:
        self._owner = owner

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        positions = {tp: p for tp, p in self._owner._handled.items() if tp in revoked}
        if positions and self._owner._flushed():
            try:
                await self._owner._consumer.commit_async(
                    {tp: OffsetAndMetadata(p, "", -1) for tp, p in positions.items()})
            except kafka_errors.KafkaError as e:
                log.warning("commit on revocation failed (%s); some spans may be published twice", e)
        for tp in revoked:
            self._owner._handled.pop(tp, None)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        log.info("OTLP Kafka input: assigned %s", sorted((tp.topic, tp.partition) for tp in assigned))


class OtlpKafkaReceiver:
    def __init__(
        self,
        kafka: KafkaConfig,
        handle: Callable[[ExportTraceServiceRequest], object],
        metrics: CollectorMetrics,
        before_commit: Callable[[float], bool] | None = None,
        commit_interval_s: float = 1.0,
    ) -> None:
        source = kafka.otlp_input
        self._topic = source.topic
        self._content_type = _CONTENT_TYPES[source.encoding]
        self._handle = handle
        self._metrics = metrics
        self._before_commit = before_commit
        self._commit_interval_s = commit_interval_s
        # Per partition, one past the last message handled (or counted invalid).
        self._handled: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._retry_after_s = 1.0
        self._stop = threading.Event()
        self._consumer = KafkaConsumer(
            **connection_config(kafka, "otlp-input"),
            group_id=source.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            allow_auto_create_topics=False,
            reconnect_backoff_max_ms=2000,
        )
        subscribe_known_topic(self._consumer, self._topic, _CommitOnRevoke(self))
        self._thread = threading.Thread(target=self._run, name="otlp-kafka-input", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _flushed(self) -> bool:
        return self._before_commit is None or self._before_commit(5.0)

    def _run(self) -> None:
        next_commit = 0.0
        try:
            while not self._stop.is_set():
                try:
                    batches = poll_group(self._consumer, timeout_ms=200, max_records=100)
                except kafka_errors.KafkaError as e:
                    # Evicted from the group, a rebalance, a broker restart: the input must live
                    # on (a dead thread would stop taking spans silently); the next poll rejoins.
                    log.warning("OTLP Kafka input: poll failed (%s: %s); retrying", type(e).__name__, e)
                    self._stop.wait(1.0)
                    continue
                for tp, messages in batches.items():
                    for message in messages:
                        if not self._one(tp, message.value or b"", message.offset):
                            # Push back from the bus: come back to this message, keep order.
                            self._consumer.seek(tp, message.offset)
                            self._stop.wait(self._retry_after_s)
                            break
                if time.monotonic() >= next_commit:
                    next_commit = time.monotonic() + self._commit_interval_s
                    self._commit()
        finally:
            self._commit()
            self._consumer.close(autocommit=False)

    def _one(self, tp: TopicPartition, value: bytes, offset: int) -> bool:
        """Handle one message; False when the bus pushed back and it must be retried."""
        try:
            request = decode_request(value, self._content_type)
        except OtlpDecodeError as e:
            self._metrics.requests.labels(transport=TRANSPORT, outcome="invalid").inc()
            log.warning("%s[%d]@%d is not OTLP %s: %s", tp.topic, tp.partition, offset, self._content_type, e)
        else:
            try:
                self._handle(request)
            except BusFull as e:
                self._metrics.requests.labels(transport=TRANSPORT, outcome="retry_later").inc()
                self._retry_after_s = e.retry_after_s
                return False
            self._metrics.requests.labels(transport=TRANSPORT, outcome="ok").inc()
        self._handled[tp] = offset + 1
        return True

    def _commit(self) -> None:
        positions = {tp: p for tp, p in self._handled.items() if self._committed.get(tp) != p}
        if not positions or not self._flushed():
            return
        try:
            self._consumer.commit({tp: OffsetAndMetadata(p, "", -1) for tp, p in positions.items()})
        except kafka_errors.KafkaError as e:
            log.warning("OTLP Kafka input: offset commit failed (%s); will retry", e)
            return
        self._committed.update(positions)

