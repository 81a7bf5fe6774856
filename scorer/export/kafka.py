"""The scorer's Kafka outputs: one message per scored record on ragpulse.scores, dead letters on
ragpulse.dlq. One idempotent acks=all producer serves both.

publish() hands the message to the producer and returns; the consumer calls flush() before it
commits offsets, so an offset is committed only once the scores (or the dead letter) of every
record before it are acknowledged by the broker — at-least-once without a round trip per record.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka import KafkaProducer
from kafka import errors as kafka_errors

from ragpulse.core.wire import dead_letter_envelope, wire_json
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.producer import (
    RECORD_FRAMING_BYTES,
    KafkaProducerMetrics,
    failure_reason,
    producer_config,
)
from ragpulse.scorer.export.sinks import DeadLetterSink, ScoreSink

log = logging.getLogger(__name__)


class KafkaSinks:
    def __init__(self, kafka: KafkaConfig, metrics: KafkaProducerMetrics) -> None:
        self._metrics = metrics
        self.max_value_bytes = kafka.max_message_bytes - RECORD_FRAMING_BYTES
        # Every commit flushes this producer first, so lingering up to the commit interval delays
        # no commit, and larger batches cut the producer's CPU per record (bench/kafka_throughput.py).
        linger_ms = max(kafka.linger_ms, kafka.commit_interval_ms)
        self._producer = KafkaProducer(**producer_config(kafka, "scorer", linger_ms))
        self._failed = False
        self._scores_topic = kafka.scores_topic
        self._dlq_topic = kafka.dlq_topic
        for topic in (kafka.scores_topic, kafka.dlq_topic):
            self._producer.partitions_for(topic)  # fail at start on a missing topic

    def score_sink(self, also: ScoreSink | None = None) -> KafkaScoreSink:
        """The ScoreSink for the worker; `also` (the live page's recent list) gets a copy."""
        return KafkaScoreSink(self, self._scores_topic, also)

    def dead_letter_sink(self, also: DeadLetterSink | None = None) -> KafkaDeadLetterSink:
        return KafkaDeadLetterSink(self, self._dlq_topic, also)

    def send(self, topic: str, key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]) -> None:
        future = self._producer.send(topic, key=key, value=value, headers=headers)
        delivered = self._metrics.delivered.labels(topic=topic)
        future.add_callback(lambda _m: delivered.inc())
        future.add_errback(self._on_failed, topic)

    def _on_failed(self, error: BaseException, topic: str) -> None:
        # Remembered until the next flush, which then reports failure so no offset is committed
        # past a record whose output was lost: the record comes back and is written again.
        self._failed = True
        reason = failure_reason(error)
        self._metrics.delivery_failures.labels(topic=topic, reason=reason).inc()
        log.error("message to %s not delivered (%s): %s", topic, reason, error)

    def flush(self, timeout_s: float) -> bool:
        """True when everything sent so far is acknowledged; False on timeout or a failed send."""
        try:
            self._producer.flush(timeout=timeout_s)
        except kafka_errors.KafkaTimeoutError:
            return False
        failed, self._failed = self._failed, False
        return not failed

    def close(self, timeout_s: float = 30.0) -> None:
        self._producer.close(timeout=timeout_s)


class KafkaScoreSink:
    """ScoreSink: key = record id, so all score messages of one record share a partition."""

    def __init__(self, sinks: KafkaSinks, topic: str, also: ScoreSink | None) -> None:
        self._sinks = sinks
        self._topic = topic
        self._also = also

    def publish(self, record_id: str, scores: dict[str, Any]) -> None:
        self._sinks.send(self._topic, record_id.encode("utf-8"), wire_json(scores), [])
        if self._also is not None:
            self._also.publish(record_id, scores)

    def close(self) -> None:
        """The shared producer is closed by KafkaSinks.close."""


class KafkaDeadLetterSink:
    """DeadLetterSink: the envelope of wire.dead_letter_envelope, the reason also as a header so
    a consumer can filter without parsing."""

    def __init__(self, sinks: KafkaSinks, topic: str, also: DeadLetterSink | None) -> None:
        self._sinks = sinks
        self._topic = topic
        self._also = also

    def publish(self, payload: bytes, reason: str, detail: str, attempts: int) -> None:
        envelope = dead_letter_envelope(payload, reason, detail, attempts)
        value = wire_json(envelope)
        while len(value) > self._sinks.max_value_bytes:
            # A record near the size limit grows when quoted inside the envelope; a dead letter
            # that keeps the reason and most of the payload beats one the broker refuses.
            envelope["payload"] = envelope["payload"][: len(envelope["payload"]) * 9 // 10]
            envelope["payload_truncated"] = True
            value = wire_json(envelope)
        self._sinks.send(self._topic, None, value, [("reason", reason.encode("utf-8"))])
        if self._also is not None:
            self._also.publish(payload, reason, detail, attempts)

    def close(self) -> None:
        """The shared producer is closed by KafkaSinks.close."""
