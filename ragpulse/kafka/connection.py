"""Where and how every ragpulse Kafka client connects: brokers, client id, TLS and SASL.

One place, so the collector's producer (librdkafka), the scorer's consumer and producer, the admin
client and the OTel-Collector input (kafka-python) all reach a secured cluster (Confluent Cloud,
MSK, Aiven, ...) the same way.
"""

from __future__ import annotations

from typing import Any

from kafka import AsyncConsumerRebalanceListener, ConsumerRebalanceListener, KafkaConsumer
from kafka.consumer.fetcher import ConsumerRecord
from kafka.structs import MemberState, TopicPartition

from ragpulse.kafka.config import KafkaConfig


def connection_config(kafka: KafkaConfig, client_suffix: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bootstrap_servers": [s.strip() for s in kafka.bootstrap_servers.split(",")],
        "client_id": f"{kafka.client_id}-{client_suffix}",
        "security_protocol": kafka.security_protocol,
    }
    if kafka.security_protocol.startswith("SASL_"):
        # kafka-python takes the SCRAM credentials under the PLAIN names too.
        out["sasl_mechanism"] = kafka.sasl_mechanism
        out["sasl_plain_username"] = kafka.sasl_username
        out["sasl_plain_password"] = kafka.sasl_password
    if kafka.security_protocol.endswith("SSL"):
        out["ssl_cafile"] = kafka.ssl_cafile or None  # None: the system's CAs
        out["ssl_certfile"] = kafka.ssl_certfile or None
        out["ssl_keyfile"] = kafka.ssl_keyfile or None
    return out


# connection_config's names in librdkafka's: a setting added there without its name here fails
# every collector at start (KeyError), not silently.
_RDKAFKA_NAMES = {
    "bootstrap_servers": "bootstrap.servers", "client_id": "client.id", "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism", "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password", "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
}


def rdkafka_connection_config(kafka: KafkaConfig, client_suffix: str) -> dict[str, Any]:
    """connection_config in librdkafka's names (confluent-kafka: the collector's producer)."""
    out: dict[str, Any] = {}
    for name, value in connection_config(kafka, client_suffix).items():
        if name == "bootstrap_servers":
            value = ",".join(value)
        elif name == "ssl_cafile" and value is None:
            value = "probe"  # the wheel's own OpenSSL does not know where this system keeps its CAs
        elif value is None:
            continue
        out[_RDKAFKA_NAMES[name]] = value
    return out


# The least a poll waits while this member (re)joins its group: see poll_group.
JOIN_POLL_MS = 2000


def poll_group(
    consumer: KafkaConsumer, timeout_ms: int, max_records: int
) -> dict[TopicPartition, list[ConsumerRecord]]:
    """KafkaConsumer.poll, waiting at least JOIN_POLL_MS while the member is not stable in its group.

    kafka-python 3.0.12 forgets a JoinGroup/SyncGroup round trip that completes between two polls
    and sends another: one more rebalance of the whole group each time, and where round trips
    outlast the poll (a loaded machine, a join that waits for a slow member) a run of them. Seen
    as generation 2 to 5 of a one-member group polled every few milliseconds; a long poll keeps
    the round trip inside it.
    """
    if consumer.group_metadata().state is not MemberState.STABLE:
        timeout_ms = max(timeout_ms, JOIN_POLL_MS)
    return consumer.poll(timeout_ms=timeout_ms, max_records=max_records)


def subscribe_known_topic(
    consumer: KafkaConsumer, topic: str, listener: ConsumerRebalanceListener | AsyncConsumerRebalanceListener
) -> None:
    """Subscribe to `topic` and load its partitions before the first poll joins the group.

    Both halves matter, in this order. A group leader that does not know the partitions assigns
    nothing, and kafka-python only notices at its next metadata refresh (minutes). And its
    coordinator snapshots the subscribed topics' partitions at each metadata update: loaded before
    subscribing, that snapshot stays empty, so the next update after the first join looks like a
    change and forces a needless rebalance of a group that has just formed.
    """
    consumer.subscribe([topic], listener=listener)
    if not consumer.partitions_for_topic(topic):
        consumer.close()
        raise RuntimeError(f"Kafka topic {topic!r} does not exist (or this client may not describe it)")
