"""A real Apache Kafka broker (KRaft, one node) for tests, started by deploy/kafka/broker.sh.

Session-scoped: starting a JVM broker takes 10-25 s, so the whole run shares one and each test
isolates itself with its own topic names (`broker.topic("name")`) and consumer group ids.

The jars come from deploy/kafka/fetch.sh. Without them the Kafka tests are skipped locally, but
when the environment variable CI is set they FAIL: a CI run that silently skipped every Kafka test
would look green while testing nothing.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.consumer.fetcher import ConsumerRecord
from ports import free_port  # noqa: F401 - other test modules import it from here

REPO = Path(__file__).resolve().parents[2]
BROKER_SH = REPO / "deploy" / "kafka" / "broker.sh"


def kafka_home() -> Path:
    return Path(os.environ.get("RAGPULSE_KAFKA_HOME", REPO / ".cache" / "kafka"))



class KafkaBroker:
    """Handle on the running broker: its address, and stop/start for the fault tests. A restart
    keeps the data dir, so topics, records and committed offsets survive it."""

    # A second listener that takes SASL/PLAIN logins (bus.kafka.security_protocol tests).
    SASL_USER = "ragpulse"
    SASL_PASSWORD = "test-only-secret"

    def __init__(self, datadir: Path) -> None:
        self.datadir = datadir
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.sasl_bootstrap = f"127.0.0.1:{free_port()}"

    def _run(self, *args: str) -> None:
        env = {**os.environ, "KAFKA_SASL_PORT": self.sasl_bootstrap.rsplit(":", 1)[1],
               "KAFKA_SASL_USERS": f"{self.SASL_USER}:{self.SASL_PASSWORD}"}
        proc = subprocess.run([str(BROKER_SH), *args], capture_output=True, text=True, timeout=180, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"broker.sh {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")

    def start(self) -> None:
        self._run("start", str(self.port), str(self.datadir))
        # broker.sh knows the broker logged "started" and took a TCP connection; a metadata
        # round trip proves it answers Kafka requests before any test relies on it.
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)
        try:
            admin.list_topics()
        finally:
            admin.close()

    def stop(self) -> None:
        self._run("stop", str(self.datadir))

    def topic(self, name: str) -> str:
        """A topic name unique to this call, so tests sharing the broker never see each other's
        records (the broker does not auto-create topics: create it, or let the code under test)."""
        return f"{name}.{uuid.uuid4().hex[:8]}"

    def create_topic(self, name: str, partitions: int = 1) -> str:
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}},
                                wait_for_metadata=True)
        finally:
            admin.close()
        return name

    def read(self, topic: str, count: int, timeout_s: float = 30.0) -> list[ConsumerRecord]:
        """Messages of `topic` from the beginning: returns once `count` were read, or what was
        there at the timeout (so a test can show what is missing or extra)."""
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=int(timeout_s * 1000))
        try:
            partitions = consumer.partitions_for_topic(topic) or set()
            consumer.assign([TopicPartition(topic, p) for p in partitions])
            out: list[ConsumerRecord] = []
            for message in consumer:
                out.append(message)
                if len(out) >= count:
                    break
            return out
        finally:
            consumer.close()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    libs = kafka_home() / "libs"
    if not any(libs.glob("kafka_2.13-*.jar")):
        message = f"no Kafka jars in {libs}: run deploy/kafka/fetch.sh"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: Kafka tests must run, not skip)", pytrace=False)
        pytest.skip(message)
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
