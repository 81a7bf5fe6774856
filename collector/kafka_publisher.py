"""The collector's Kafka publisher: records onto ragpulse.records, keyed by trace id.

Durability first: acks=all and an idempotent producer, so a retried batch is written once and an
acknowledged record survives the leader's loss. Compressed, because record text compresses well
and the collector's link is the narrow one. Bounded: the records handed to the producer and not
yet acknowledged are counted; at `buffer_records` the publisher raises BusFull so the OTLP
receiver answers "retry later" and the app's exporter keeps the spans — the collector never holds
an unbounded backlog while Kafka is away, and never drops a record without counting it.

The producer is librdkafka (confluent-kafka), not kafka-python like the scorer's clients: the
collector sends one message per RAG span, and kafka-python's per-message work in Python (its
accumulator, a future per record and its completion in the network thread) was ~19 us of the
collector's ~55 us per RAG span; librdkafka's is ~6 us, most of it our delivery callback
(bench/RESULTS.md, "The collector's producer in C").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from ragpulse.collector.truncate import RecordTooLarge, truncate_record
from ragpulse.core.bus import BusFull, KeyedRecord
from ragpulse.core.wire import Record
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import rdkafka_connection_config
from ragpulse.kafka.producer import RECORD_FRAMING_BYTES, KafkaProducerMetrics, TraceIdPartitioner
from ragpulse.kafka.topics import TopicSetupError, unreachable

log = logging.getLogger(__name__)

# The records' bytes the producer may hold besides their number (buffer_records): kafka-python's
# default buffer, which bounded the collector before; 20,000 typical RAG records (~2.7 KB) fit.
QUEUE_KBYTES = 64 * 1024
# How often the delivery thread serves callbacks, and how often it re-reads the topic's partitions
# (kafka-python's metadata.max.age: partitions added to the topic are used within this).
POLL_S = 0.1
PARTITIONS_REFRESH_S = 300.0
START_TIMEOUT_S = 30.0

_REASONS = {
    KafkaError._MSG_TIMED_OUT: "timeout",
    KafkaError._TIMED_OUT: "timeout",
    KafkaError.REQUEST_TIMED_OUT: "timeout",
    KafkaError.MSG_SIZE_TOO_LARGE: "message_too_large",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "authorization",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "authorization",
    KafkaError.SASL_AUTHENTICATION_FAILED: "authorization",
    KafkaError._AUTHENTICATION: "authorization",
    KafkaError.UNKNOWN_TOPIC_OR_PART: "unknown_topic",
    KafkaError._UNKNOWN_TOPIC: "unknown_topic",
    KafkaError._UNKNOWN_PARTITION: "unknown_topic",
    KafkaError._TRANSPORT: "connection",
    KafkaError._ALL_BROKERS_DOWN: "connection",
    KafkaError._RESOLVE: "connection",
    KafkaError._PURGE_QUEUE: "shutdown",
    KafkaError._PURGE_INFLIGHT: "shutdown",
}


def failure_reason(error: KafkaError) -> str:
    """The bounded label of a librdkafka error, in the words of ragpulse.kafka.producer.failure_reason."""
    return _REASONS.get(error.code(), "kafka_error")


def producer_config(kafka: KafkaConfig) -> dict[str, Any]:
    return {
        **rdkafka_connection_config(kafka, "collector"),
        "acks": "all",
        "enable.idempotence": True,
        "compression.type": kafka.compression,
        "linger.ms": kafka.linger_ms,
        # Our own limit (max_message_bytes, applied by truncation) must be the one that bites.
        "message.max.bytes": kafka.max_message_bytes + RECORD_FRAMING_BYTES,
        "message.timeout.ms": kafka.delivery_timeout_ms,
        # buffer_records is ours (all or nothing per request); librdkafka's count must never bite
        # first, its bytes only where records are huge.
        "queue.buffering.max.messages": 2 * kafka.buffer_records + 100_000,
        "queue.buffering.max.kbytes": QUEUE_KBYTES,
        # After a broker restart reconnect within seconds, not librdkafka's 10 s backoff ceiling.
        "reconnect.backoff.max.ms": 2000,
    }


class KafkaRecordPublisher:
    """RecordPublisher onto the records topic (collector side)."""

    def __init__(self, kafka: KafkaConfig, metrics: KafkaProducerMetrics, retry_after_s: float = 1.0) -> None:
        self._kafka = kafka
        self._topic = kafka.records_topic
        self._max_value_bytes = kafka.max_message_bytes - RECORD_FRAMING_BYTES
        self._limit = kafka.buffer_records
        self._retry_after_s = retry_after_s
        self._metrics = metrics
        self._pending = 0
        self._lock = threading.Lock()
        self._partitioner = TraceIdPartitioner()
        self._producer = Producer({
            **producer_config(kafka),
            "on_delivery": self._on_delivery,
            # Connection trouble (which librdkafka retries by itself) is logged here, not printed.
            "logger": logging.getLogger("ragpulse.kafka.librdkafka"),
        })
        metrics.buffered.labels(topic=self._topic).set_function(lambda: self._pending)
        self._delivered = metrics.delivered.labels(topic=self._topic)
        # Read the topic's partitions now: a missing topic or unreachable broker shows at start,
        # and every record's partition is chosen without a lookup.
        self._partitions = self._read_partitions(START_TIMEOUT_S)
        self._closed = threading.Event()
        # Held while the delivery thread polls: flush() waits on it for a callback that thread has
        # taken off librdkafka's queue but not yet finished.
        self._serving = threading.Lock()
        self._deliveries = threading.Thread(target=self._serve, name="kafka-deliveries", daemon=True)
        self._deliveries.start()

    def publish_batch(self, records: Sequence[KeyedRecord]) -> list[int]:
        """All or nothing against `buffer_records`: the room is reserved for the whole batch before
        anything is sent. The one exception is a send that fails midway (librdkafka's queue is full
        of bytes, QUEUE_KBYTES): the records before it are on their way, the client retries all of
        them, and the scorers' dedupe window skips the second copies.
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
        topic, partitions, choose = self._topic, self._partitions, self._partitioner.choose
        produce = self._producer.produce
        sent = 0
        try:
            for key, value in fitted:
                produce(topic, value, key, choose(topic, partitions, key))
                sent += 1
        except BufferError:
            self._settle(len(fitted) - sent)
            self._metrics.refused.labels(reason="buffer_full").inc(len(fitted) - sent)
            raise BusFull(self._retry_after_s) from None
        except KafkaException as e:
            self._settle(len(fitted) - sent)
            self._metrics.delivery_failures.labels(topic=self._topic, reason=failure_reason(e.args[0])).inc()
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

    def _on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        self._settle()
        if error is None:
            self._delivered.inc()
            return
        reason = failure_reason(error)
        self._metrics.delivery_failures.labels(topic=self._topic, reason=reason).inc()
        log.error("record not delivered to %s (%s): %s", self._topic, reason, error.str())

    def _read_partitions(self, timeout_s: float) -> set[int]:
        try:
            topic = self._producer.list_topics(self._topic, timeout=timeout_s).topics.get(self._topic)
        except KafkaException as e:
            raise unreachable(self._kafka, e.args[0].str()) from e
        if topic is None or topic.error is not None or not topic.partitions:
            why = topic.error.str() if topic is not None and topic.error is not None else "no partitions"
            raise TopicSetupError(f"cannot publish to Kafka topic {self._topic!r} (bus.kafka.records_topic): {why}")
        return set(topic.partitions)

    def _serve(self) -> None:
        """Delivery callbacks run here (librdkafka hands them over in poll), and the partitions are
        re-read now and then."""
        refresh_at = time.monotonic() + PARTITIONS_REFRESH_S
        while not self._closed.is_set():
            with self._serving:
                self._producer.poll(POLL_S)
            if time.monotonic() >= refresh_at:
                refresh_at = time.monotonic() + PARTITIONS_REFRESH_S
                try:
                    self._partitions = self._read_partitions(10.0)
                except TopicSetupError as e:
                    log.warning("keeping the partitions of %s known before: %s", self._topic, e)

    def pending(self) -> int:
        return self._pending

    def flush(self, timeout_s: float) -> bool:
        """Wait until every record handed over so far is acknowledged or failed."""
        if self._producer.flush(timeout_s) != 0:
            return False
        with self._serving:
            return True

    def close(self, timeout_s: float = 30.0) -> None:
        """Wait up to `timeout_s` for the broker's acknowledgements, then give up what it has not
        taken, each record counted (reason `shutdown`): librdkafka's own close waits for every
        message without a limit, which would hang a collector stopping while Kafka is away."""
        drained = self.flush(timeout_s)
        self._closed.set()
        self._deliveries.join()
        if not drained:
            self._producer.purge()
            self._producer.poll(0)  # the purged records' reports, to count them
        self._producer.close()
