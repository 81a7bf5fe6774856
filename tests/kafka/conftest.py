"""Kafka tests share one real broker (tests/support/kafka_broker.py). Tests here that only check
code or files run without it; the ones that use the broker are marked `broker`."""

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The fixture decides, not the folder: a test that reaches the broker through another fixture
    # (kafka_config) needs it as much as one that asks for it by name.
    for item in items:
        if "kafka_broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.broker)
