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
import random
import threading
from typing import Any

from kafka import KafkaProducer
from kafka import codec as kafka_codec
from kafka import errors as kafka_errors
from kafka.partitioner import Partitioner, murmur2
from prometheus_client import CollectorRegistry, Counter, Gauge

from ragpulse.collector.bus import BusFull
from ragpulse.collector.kafka_connection import connection_config
from ragpulse.collector.record import Record
from ragpulse.collector.truncate import truncate_record
from ragpulse.config import KafkaConfig

log = logging.getLogger(__name__)

# Room for the key and the Kafka record framing within max_message_bytes.
RECORD_FRAMING_BYTES = 256

_CODECS = {"gzip": kafka_codec.has_gzip, "snappy": kafka_codec.has_snappy,
           "lz4": kafka_codec.has_lz4, "zstd": kafka_codec.has_zstd}
_CODEC_PACKAGES = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}


class KafkaProducerMetrics:
    """Families shared by every ragpulse producer (records, scores, dead letters), by topic."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.delivered = Counter(
            "ragpulse_kafka_messages_delivered",
            "Messages the Kafka broker acknowledged (acks=all), by topic.",
            ["topic"],
            registry=registry,
        )
        self.delivery_failures = Counter(
            "ragpulse_kafka_delivery_failures",
            "Messages that could not be delivered after the producer's retries, by topic and reason "
            "(timeout, message_too_large, authorization, unknown_topic, ...).",
            ["topic", "reason"],
            registry=registry,
        )
        self.refused = Counter(
            "ragpulse_kafka_publish_refused",
            "Records the publisher refused with retry-later (the OTLP client retries), by reason "
            "(buffer_full: too many unacknowledged records; unavailable: no broker metadata).",
            ["reason"],
            registry=registry,
        )
        self.records_truncated = Counter(
            "ragpulse_kafka_records_truncated",
            "Records cut to fit bus.kafka.max_message_bytes (contexts first; the record says truncated).",
            ["service"],
            registry=registry,
        )
        self.buffered = Gauge(
            "ragpulse_kafka_producer_buffered",
            "Messages handed to the producer and not yet acknowledged or failed, by topic.",
            ["topic"],
            registry=registry,
        )


def failure_reason(error: BaseException) -> str:
    """A short, bounded label for a delivery failure."""
    if isinstance(error, kafka_errors.KafkaTimeoutError | kafka_errors.RequestTimedOutError):
        return "timeout"
    if isinstance(error, kafka_errors.MessageSizeTooLargeError):
        return "message_too_large"
    if isinstance(error, kafka_errors.AuthorizationError | kafka_errors.AuthenticationFailedError):
        return "authorization"
    if isinstance(error, kafka_errors.UnknownTopicOrPartitionError):
        return "unknown_topic"
    if isinstance(error, kafka_errors.KafkaConnectionError):
        return "connection"
    if isinstance(error, kafka_errors.KafkaError):
        return "kafka_error"
    return "other"


class TraceIdPartitioner(Partitioner):
    """Partition by the key's last 8 hex digits: record keys are trace ids (random by W3C Trace
    Context) and score keys record ids that end in hex too, so every ragpulse producer puts a
    trace in the same partition. kafka-python's default partitioner runs murmur2 in pure Python
    and sorts the partition list on every send: a tenth of the collector's CPU per span. Keys that
    are not hex (none of ours) fall back to murmur2, as the Java client would hash them."""

    def __init__(self) -> None:
        self._sorted: dict[str, tuple[frozenset[int], list[int]]] = {}

    def partition(self, topic, key, serialized_key, value, serialized_value, cluster):  # noqa: ANN001, ANN201 - kafka-python's signature
        partitions = cluster.partitions_for_topic(topic)
        if not partitions:
            raise ValueError(f"Topic {topic} not found in ClusterMetadata")
        cached = self._sorted.get(topic)
        if cached is None or cached[0] != partitions:
            cached = self._sorted[topic] = (frozenset(partitions), sorted(partitions))
        ordered = cached[1]
        if serialized_key is None:
            return random.choice(ordered)
        try:
            index = int(serialized_key[-8:], 16)
        except ValueError:
            index = murmur2(serialized_key) & 0x7FFFFFFF
        return ordered[index % len(ordered)]


def producer_config(kafka: KafkaConfig, client_suffix: str, linger_ms: int | None = None) -> dict[str, Any]:
    """Producer settings every ragpulse producer shares; `linger_ms` overrides bus.kafka.linger_ms."""
    compression = None if kafka.compression == "none" else kafka.compression
    if compression is not None and not _CODECS[compression]():
        raise ValueError(
            f"bus.kafka.compression is {compression!r} but the Python package "
            f"{_CODEC_PACKAGES[compression]!r} is not installed; install it or use gzip"
        )
    return {
        **connection_config(kafka, client_suffix),
        "acks": "all",
        "enable_idempotence": True,
        "compression_type": compression,
        "linger_ms": kafka.linger_ms if linger_ms is None else linger_ms,
        "partitioner": TraceIdPartitioner(),
        # Large batches: per-request overhead, not bytes, limits a Python producer's throughput.
        "batch_size": 512 * 1024,
        # Our own limit (max_message_bytes, applied by truncation) must be the one that bites.
        "max_request_size": kafka.max_message_bytes + RECORD_FRAMING_BYTES,
        "delivery_timeout_ms": kafka.delivery_timeout_ms,
        # Only a send to a topic without metadata blocks (topics are looked up at start).
        "max_block_ms": 5000,
        # After a broker restart reconnect within seconds, not the default 30 s backoff ceiling.
        "reconnect_backoff_max_ms": 2000,
    }


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
        metrics.buffered.labels(topic=self._topic).set_function(lambda: self._pending)
        self._delivered = metrics.delivered.labels(topic=self._topic)
        # Fetch the topic's metadata now: a missing topic or unreachable broker shows at start,
        # and no OTLP request later waits on a first metadata lookup.
        self._producer.partitions_for(self._topic)

    def publish(self, key: bytes, value: bytes) -> None:
        if len(value) > self._max_value_bytes:
            value = self._truncate(value)
        with self._lock:
            if self._pending >= self._limit:
                self._metrics.refused.labels(reason="buffer_full").inc()
                raise BusFull(self._retry_after_s)
            self._pending += 1
        try:
            future = self._producer.send(self._topic, key=key, value=value)
        except kafka_errors.KafkaTimeoutError:
            self._settle()
            self._metrics.refused.labels(reason="unavailable").inc()
            raise BusFull(self._retry_after_s) from None
        except Exception as e:
            self._settle()
            self._metrics.delivery_failures.labels(topic=self._topic, reason=failure_reason(e)).inc()
            raise
        future.add_callback(self._on_delivered)
        future.add_errback(self._on_failed)

    def _truncate(self, value: bytes) -> bytes:
        record = truncate_record(Record.from_json(value), self._max_value_bytes)
        self._metrics.records_truncated.labels(service=record.service).inc()
        return record.to_json()

    def _settle(self) -> None:
        with self._lock:
            self._pending -= 1

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
