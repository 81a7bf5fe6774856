"""`ragpulse scorer` on the real broker keeps an LLM judge busy: the fault-injecting OpenAI-compatible
server answers after a delay, every request slot of openai.max_concurrency is in use at once, and
still every record is scored exactly once and committed in offset order (a committed offset never
passes a record whose scores are not on the scores topic)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distinct_records import distinct_records
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from processes import kafka_bus, kafka_process

from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics

PARTITIONS = 3
RECORDS = 90
MAX_CONCURRENCY = 8


@pytest.fixture
def slow_server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer() as server:
        server.latency_s = 0.2
        yield server


def produce(cfg: KafkaConfig) -> dict[tuple[int, int], str]:
    """The records, by (partition, offset)."""
    producer = KafkaProducer(bootstrap_servers=cfg.bootstrap_servers)
    sent = [(r.id, producer.send(cfg.records_topic, key=r.trace_id.encode(), value=r.to_json()))
            for r in distinct_records(RECORDS)]
    producer.flush()
    producer.close()
    return {(f.get().partition, f.get().offset): record_id for record_id, f in sent}


def committed(cfg: KafkaConfig) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=cfg.bootstrap_servers, group_id=cfg.group_id,
                             enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(cfg.records_topic, p)) or 0 for p in range(PARTITIONS)}
    finally:
        consumer.close()


def scored_ids(cfg: KafkaConfig) -> list[str]:
    """Every record id on the scores topic now, duplicates kept."""
    consumer = KafkaConsumer(bootstrap_servers=cfg.bootstrap_servers, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(cfg.scores_topic, p) for p in consumer.partitions_for_topic(cfg.scores_topic)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        out: list[str] = []
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            for messages in consumer.poll(timeout_ms=500).values():
                out.extend(json.loads(m.value)["record_id"] for m in messages)
        return out
    finally:
        consumer.close()


def test_many_records_in_flight_are_scored_once_and_committed_in_order(
        kafka_config: KafkaConfig, slow_server: FaultInjectingOpenAIServer, tmp_path: Path) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=PARTITIONS)
    ensure_topics(cfg, ragpulse_topics(cfg))
    by_offset = produce(cfg)
    scorer = kafka_process(tmp_path, "scorer", {
        "bus": kafka_bus(cfg, PARTITIONS),
        "scorer": {"judge": "openai", "openai": {"model": "tiny", "base_url": slow_server.base_url,
                                                 "api_key": "unused", "max_concurrency": MAX_CONCURRENCY}},
    })
    checks_mid_stream = 0
    try:
        scorer.wait_ready()
        deadline = time.monotonic() + 120
        while True:
            positions = committed(cfg)  # first the commits, then the scores they must cover
            scored = set(scored_ids(cfg))
            behind = [by_offset[(p, o)] for p, end in positions.items() for o in range(end)
                      if by_offset[(p, o)] not in scored]
            assert not behind, f"committed past unscored records {behind}"
            if sum(positions.values()) == RECORDS:
                break
            checks_mid_stream += 0 < sum(positions.values())
            assert time.monotonic() < deadline, f"committed {positions} of {RECORDS}: {scorer.log()[-3000:]}"
            time.sleep(0.05)
        ids = scored_ids(cfg)
        assert sorted(ids) == sorted(by_offset.values())  # each exactly once
        assert scorer.value("ragpulse_records_scored_total") == RECORDS
        assert scorer.value("ragpulse_records_dead_lettered_total") == 0
    finally:
        scorer.stop()
    assert checks_mid_stream > 0  # commits were checked while records were still in flight
    assert slow_server.max_in_flight == MAX_CONCURRENCY
