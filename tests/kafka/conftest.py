"""Kafka tests share one real broker (tests/kafka_broker.py; tests/ is on sys.path through
tests/conftest.py)."""

import dataclasses

import pytest
from kafka_broker import KafkaBroker, kafka_broker  # noqa: F401  (registers the fixture here)

from ragpulse.kafka.config import KafkaConfig


@pytest.fixture
def kafka_config(kafka_broker: KafkaBroker) -> KafkaConfig:  # noqa: F811
    """The default Kafka settings on the test broker, with topic and group names unique to the test."""
    return dataclasses.replace(
        KafkaConfig(),
        bootstrap_servers=kafka_broker.bootstrap,
        records_topic=kafka_broker.topic("ragpulse.records"),
        scores_topic=kafka_broker.topic("ragpulse.scores"),
        dlq_topic=kafka_broker.topic("ragpulse.dlq"),
        group_id=kafka_broker.topic("ragpulse-scorer"),
        records_partitions=3,
        commit_interval_ms=100,
    )
