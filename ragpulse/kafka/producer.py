"""What every ragpulse Kafka producer shares (records, scores, dead letters): durable settings,
the trace-id partitioner, delivery-failure reasons and the producer metric families. The
collector's producer is librdkafka (collector/kafka_publisher.py) and takes the partitioner and
the metric families from here; the settings and reasons are kafka-python's, the scorer's."""

from __future__ import annotations

import random
from typing import Any

from kafka import codec as kafka_codec
from kafka import errors as kafka_errors
from kafka.partitioner import Partitioner, murmur2
from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import connection_config

# Room for the key and the Kafka record framing within max_message_bytes.
RECORD_FRAMING_BYTES = 256

_CODECS = {"gzip": kafka_codec.has_gzip, "snappy": kafka_codec.has_snappy,
           "lz4": kafka_codec.has_lz4, "zstd": kafka_codec.has_zstd}
_CODEC_PACKAGES = {"snappy": "python-snappy", "lz4": "lz4", "zstd": "zstandard"}


class KafkaProducerMetrics:
    """Families shared by every ragpulse producer (records, scores, dead letters), by topic."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.delivered = catalog.counter(registry, "ragpulse_kafka_messages_delivered_total")
        self.delivery_failures = catalog.counter(registry, "ragpulse_kafka_delivery_failures_total")
        self.refused = catalog.counter(registry, "ragpulse_kafka_publish_refused_total")
        self.records_truncated = catalog.counter(registry, "ragpulse_kafka_records_truncated_total")
        self.buffered = catalog.gauge(registry, "ragpulse_kafka_producer_buffered")


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
        return self.choose(topic, cluster.partitions_for_topic(topic), serialized_key)

    def choose(self, topic: str, partitions: set[int] | None, serialized_key: bytes | None) -> int:
        """The partition among the topic's `partitions` (as ClusterMetadata lists them)."""
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
