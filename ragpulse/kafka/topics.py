"""Creating ragpulse's Kafka topics on start, when they are missing.

Two collectors (or a collector and a scorer) may start at once: "already exists" is success. A
broker that refuses (no permission, too few brokers for the replication factor, a policy) stops
the process with the broker's own reason and the setting to change, instead of a producer that
fails later, record by record.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kafka import errors as kafka_errors
from kafka.admin import KafkaAdminClient

from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import connection_config

log = logging.getLogger(__name__)


class TopicSetupError(RuntimeError):
    pass


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    # The config key that sets the partitions, for the error message.
    setting: str


def ragpulse_topics(kafka: KafkaConfig) -> list[TopicSpec]:
    rf = kafka.replication_factor
    return [
        TopicSpec(kafka.records_topic, kafka.records_partitions, rf, "bus.kafka.records_partitions"),
        TopicSpec(kafka.scores_topic, kafka.scores_partitions, rf, "bus.kafka.scores_partitions"),
        TopicSpec(kafka.dlq_topic, kafka.dlq_partitions, rf, "bus.kafka.dlq_partitions"),
    ]


def unreachable(kafka: KafkaConfig, why: str) -> TopicSetupError:
    """The start-up error of a client that cannot reach the brokers, naming the settings to check."""
    # A refused SASL login looks the same from a client (both kafka-python and librdkafka retry it
    # until their timeout).
    login = ""
    if kafka.security_protocol.startswith("SASL_"):
        login = (", or it refused the SASL login (bus.kafka.sasl_username, bus.kafka.sasl_password, "
                 f"bus.kafka.sasl_mechanism {kafka.sasl_mechanism})")
    return TopicSetupError(
        f"cannot reach Kafka at {kafka.bootstrap_servers} (bus.kafka.bootstrap_servers){login}: {why}")


def ensure_topics(kafka: KafkaConfig, specs: list[TopicSpec], timeout_s: float = 30.0) -> list[str]:
    """Create the topics in `specs` that do not exist; returns the names created."""
    try:
        admin = KafkaAdminClient(**connection_config(kafka, "admin"), request_timeout_ms=int(timeout_s * 1000),
                                 bootstrap_timeout_ms=int(timeout_s * 1000))
    except kafka_errors.KafkaError as e:  # kafka-python 3: KafkaTimeoutError "Unable to bootstrap"
        raise unreachable(kafka, str(e)) from e
    try:
        existing = set(admin.list_topics())
        missing = [s for s in specs if s.name not in existing]
        for spec in specs:
            if spec.name in existing:
                _check_partitions(admin, spec)
        if not missing:
            return []
        response = admin.create_topics(
            {s.name: {"num_partitions": s.partitions, "replication_factor": s.replication_factor}
             for s in missing},
            timeout_ms=int(timeout_s * 1000),
            raise_errors=False,
        )
        created: list[str] = []
        by_name = {s.name: s for s in missing}
        for topic in response["topics"]:
            error = kafka_errors.for_code(topic["error_code"])
            if error is kafka_errors.NoError:
                created.append(topic["name"])
            elif error is not kafka_errors.TopicAlreadyExistsError:
                spec = by_name[topic["name"]]
                raise TopicSetupError(
                    f"Kafka refused to create topic {spec.name!r} ({spec.partitions} partitions "
                    f"[{spec.setting}], replication factor {spec.replication_factor} "
                    f"[bus.kafka.replication_factor]): {error.__name__}: "
                    f"{(topic.get('error_message') or error.description).rstrip('.')}. Create it yourself, or "
                    f"grant this client CREATE on the cluster, or change the settings."
                )
        admin.wait_for_topics([s.name for s in missing], timeout_ms=int(timeout_s * 1000))
        log.info("created Kafka topics %s", ", ".join(created) or "(none: created concurrently)")
        return created
    except kafka_errors.KafkaError as e:
        raise TopicSetupError(f"topic setup on {kafka.bootstrap_servers} failed: {type(e).__name__}: {e}") from e
    finally:
        admin.close()


def _check_partitions(admin: KafkaAdminClient, spec: TopicSpec) -> None:
    # An existing topic is used as it is (repartitioning would move keys between partitions);
    # say so when it differs from the config, since fewer partitions cap the scorer group.
    (described,) = admin.describe_topics([spec.name])
    have = len(described.get("partitions") or [])
    if have != spec.partitions:
        log.warning("topic %s exists with %d partitions; %s asks for %d (not changed)",
                    spec.name, have, spec.setting, spec.partitions)
