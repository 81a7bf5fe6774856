"""The collector's Kafka publisher: records onto ragpulse.records, keyed by trace id.

Durability first: acks=all and an idempotent producer, so a retried batch is written once and an
acknowledged record survives the leader's loss. Compressed, because record text compresses well
and the collector's link is the narrow one. Bounded: the records handed to the producer and not
yet acknowledged are counted; at `buffer_records` the publisher raises BusFull so the OTLP
receiver answers "retry later" and the app's exporter keeps the spans — the collector never holds
an unbounded backlog while Kafka is away, and never drops a record without counting it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from kafka import KafkaProducer
from kafka import errors as kafka_errors

from ragpulse.collector.truncate import RecordTooLarge, truncate_record
from ragpulse.core.bus import BusFull, KeyedRecord
from ragpulse.core.wire import Record
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.producer import (
    RECORD_FRAMING_BYTES,
    KafkaProducerMetrics,
    TopicSender,
    failure_reason,
    producer_config,
)

log = logging.getLogger(__name__)


class KafkaRecordPublisher:
    """RecordPublisher onto the records topic (collector side)."""

    def __init__(self, kafka: KafkaConfig, metrics: KafkaProducerMetrics, retry_after_s: float = 1.0) -> None:
        self._topic = kafka.records_topic
        self._max_value_bytes = kafka.max_message_bytes - RECORD_FRAMING_BYTES
        self._limit = kafka.buffer_records
        self._retry_after_s = retry_after_s
        self._metrics = metrics
        self._pending = 0
        self._lock = threading.Lock()
        self._producer = KafkaProducer(**producer_config(kafka, "collector"))
        self._sender = TopicSender(self._producer, self._topic)
        metrics.buffered.labels(topic=self._topic).set_function(lambda: self._pending)
        self._delivered = metrics.delivered.labels(topic=self._topic)
        # Fetch the topic's metadata now: a missing topic or unreachable broker shows at start,
        # and no OTLP request later waits on a first metadata lookup.
        self._producer.partitions_for(self._topic)

    def publish_batch(self, records: Sequence[KeyedRecord]) -> list[int]:
        """All or nothing against `buffer_records`: the room is reserved for the whole batch before
        anything is sent. The one exception is a send that fails midway (the producer found no
        metadata or buffer memory within max_block_ms): the records before it are on their way,
        the client retries all of them, and the scorers' dedupe window skips the second copies.
        Returns the indices of records too large for a message even when cut (RecordTooLarge)."""
        with self._lock:
            if self._pending and self._pending + len(records) > self._limit:
                self._metrics.refused.labels(reason="buffer_full").inc(len(records))
                raise BusFull(self._retry_after_s)
            self._pending += len(records)
        too_large: list[int] = []
        fitted: list[KeyedRecord] = []
        for index, (key, value) in enumerate(records):
            try:
                fitted.append((key, self._fit(value)))
            except RecordTooLarge:
                too_large.append(index)
        self._settle(len(too_large))
        sent = 0
        try:
            for future in self._sender.send(fitted):
                future.add_callback(self._on_delivered)
                future.add_errback(self._on_failed)
                sent += 1
        except kafka_errors.KafkaTimeoutError:
            self._settle(len(fitted) - sent)
            self._metrics.refused.labels(reason="unavailable").inc(len(fitted) - sent)
            raise BusFull(self._retry_after_s) from None
        except Exception as e:
            self._settle(len(fitted) - sent)
            self._metrics.delivery_failures.labels(topic=self._topic, reason=failure_reason(e)).inc()
            raise
        return too_large

    def publish(self, key: bytes, value: bytes) -> None:
        """One record; raises RecordTooLarge for a record too large even when cut."""
        if self.publish_batch([(key, value)]):
            raise RecordTooLarge(f"record of {len(value)} bytes cannot be cut below {self._max_value_bytes} bytes")

    def _fit(self, value: bytes) -> bytes:
        return self._truncate(value) if len(value) > self._max_value_bytes else value

    def _truncate(self, value: bytes) -> bytes:
        record = truncate_record(Record.from_json(value), self._max_value_bytes)
        self._metrics.records_truncated.labels(service=record.service).inc()
        return record.to_json()

    def _settle(self, records: int = 1) -> None:
        with self._lock:
            self._pending -= records

    def _on_delivered(self, _metadata: Any) -> None:
        self._settle()
        self._delivered.inc()

    def _on_failed(self, error: BaseException) -> None:
        self._settle()
        reason = failure_reason(error)
        self._metrics.delivery_failures.labels(topic=self._topic, reason=reason).inc()
        log.error("record not delivered to %s (%s): %s", self._topic, reason, error)

    def pending(self) -> int:
        return self._pending

    def flush(self, timeout_s: float) -> bool:
        """Wait until every record handed over so far is acknowledged or failed."""
        try:
            self._producer.flush(timeout=timeout_s)
        except kafka_errors.KafkaTimeoutError:
            return False
        return True

    def close(self, timeout_s: float = 30.0) -> None:
        self._producer.close(timeout=timeout_s)
