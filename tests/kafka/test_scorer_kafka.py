"""Scorer side against the real broker: commits, lag, rebalance, the score and DLQ sinks."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata
from prometheus_client import CollectorRegistry

from ragpulse.core.bus import Delivery
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.producer import KafkaProducerMetrics
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics
from ragpulse.scorer.consume.crash_guard import CommitNote
from ragpulse.scorer.consume.kafka import KafkaConsumerMetrics, KafkaRecordConsumer
from ragpulse.scorer.export.kafka import KafkaSinks
from ragpulse.scorer.export.sinks import RecentScores


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, value=f"r{i}".encode(), partition=i % partitions)
    producer.flush()
    producer.close()


def measured_lag(consumer: KafkaRecordConsumer, expected: int, timeout_s: float = 10.0) -> int:
    """The consumer's lag once it reads `expected`, or its last reading after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer.poll(max_records=1, timeout_s=0.1)
        consumer._next_lag = 0  # measure now rather than once a second
        lag = consumer.depth()
        if lag == expected or time.monotonic() > deadline:
            return lag


def poll_until(consumer: KafkaRecordConsumer, count: int, timeout_s: float = 30.0) -> list[Delivery]:
    out: list[Delivery] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        out.extend(consumer.poll(max_records=100, timeout_s=0.2))
    return out


def group_offsets(bootstrap: str, group: str) -> dict[int, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: o.offset for tp, o in offsets.items()}


def test_commits_stop_at_the_lowest_unfinished_record_and_it_is_redelivered(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=2)
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, 20, partitions=2)

    consumer = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry()))
    deliveries = poll_until(consumer, 20)
    assert len(deliveries) == 20
    assert consumer.depth() == 20  # nothing finished: all of it is lag
    stuck = next(d for d in deliveries if d.token.partition.partition == 0 and d.token.offset == 4)
    for d in deliveries:
        if d is not stuck:
            consumer.commit(d)
    time.sleep(0.2)
    consumer.poll(max_records=1, timeout_s=0.1)  # commits run on the poll thread
    assert group_offsets(kafka_broker.bootstrap, cfg.group_id) == {0: 4, 1: 10}
    consumer.close()

    again = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry()))
    redelivered = poll_until(again, 6, timeout_s=20)
    assert sorted(d.value for d in redelivered) == sorted(f"r{i}".encode() for i in range(8, 20, 2))
    again.close()


def test_rebalance_lets_in_flight_records_finish_and_commits_them_before_handing_over(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=2, rebalance_timeout_s=20)
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, 40, partitions=2)

    first = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry()))
    in_flight = poll_until(first, 40)
    assert len(in_flight) == 40

    def finish_later() -> None:  # a slow judge: the records finish during the rebalance
        time.sleep(2)
        for d in in_flight:
            first.commit(d)

    threading.Thread(target=finish_later, daemon=True).start()
    second = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry()))
    stop = threading.Event()
    first_more: list[Delivery] = []

    def keep_polling() -> None:  # the first scorer keeps running, as its worker would
        while not stop.is_set():
            first_more.extend(first.poll(max_records=100, timeout_s=0.2))

    poller = threading.Thread(target=keep_polling)
    poller.start()
    second_got = poll_until(second, 1, timeout_s=15)
    stop.set()
    poller.join()
    # Everything was finished and committed by the first owner: nothing comes again.
    assert second_got == [] and first_more == []
    assert sum(group_offsets(kafka_broker.bootstrap, cfg.group_id).values()) == 40
    assert second._consumer.assignment()  # the second scorer did take partitions
    first.close()
    second.close()


def test_scores_and_dead_letters_are_acknowledged_before_flush_returns(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    ensure_topics(kafka_config, ragpulse_topics(kafka_config))
    registry = CollectorRegistry()
    sinks = KafkaSinks(kafka_config, KafkaProducerMetrics(registry))
    recent = RecentScores()
    sinks.score_sink(also=recent).publish("t1-s1", {"record_id": "t1-s1", "metrics": {"faithfulness": {"value": 0.5}}})
    sinks.dead_letter_sink().publish(b"\xffbroken", "invalid_json", "not UTF-8", 1)
    assert sinks.flush(10)
    sinks.close()
    assert [s["record_id"] for s in recent.snapshot()] == ["t1-s1"]  # the live page's copy

    (score,) = kafka_broker.read(kafka_config.scores_topic, 1)
    assert score.key == b"t1-s1" and json.loads(score.value)["metrics"]["faithfulness"]["value"] == 0.5
    (dead,) = kafka_broker.read(kafka_config.dlq_topic, 1)
    envelope = json.loads(dead.value)
    assert envelope["reason"] == "invalid_json" and envelope["payload"] == "ff62726f6b656e"
    assert envelope["payload_encoding"] == "hex" and ("reason", b"invalid_json") in dead.headers
    assert registry.get_sample_value("ragpulse_kafka_messages_delivered_total",
                                     {"topic": kafka_config.dlq_topic}) == 1


def consumer_with_records(kafka_broker, cfg: KafkaConfig, count: int) -> tuple[KafkaRecordConsumer, CollectorRegistry]:
    """A scorer consumer on new topics holding `count` records spread over every partition."""
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, count, partitions=cfg.records_partitions)
    registry = CollectorRegistry()
    return KafkaRecordConsumer(cfg, KafkaConsumerMetrics(registry)), registry


def rebalance_events(registry: CollectorRegistry) -> dict[str, float]:
    return {e: registry.get_sample_value("ragpulse_kafka_rebalance_partitions_total", {"event": e}) or 0
            for e in ("assigned", "revoked", "lost")}


def test_a_new_scorer_joins_its_group_once_even_when_polled_in_short_slices(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    # kafka-python 3.0.12 drops a join that completes between two polls and joins again; with
    # polls shorter than the join's round trip a one-member group went through generations 1..5.
    consumer, registry = consumer_with_records(
        kafka_broker, dataclasses.replace(kafka_config, records_partitions=3), 6)
    try:
        got: list[Delivery] = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            got.extend(consumer.poll(max_records=10, timeout_s=0.002))
        settle = time.monotonic() + 3  # the first metadata refresh after the join lands in here
        while time.monotonic() < settle:
            consumer.poll(max_records=10, timeout_s=0.002)
        assert len(got) == 6
        assert consumer._consumer.group_metadata().generation_id == 1
        assert rebalance_events(registry) == {"assigned": 3, "revoked": 0, "lost": 0}
    finally:
        consumer.close()


def test_a_slow_judge_keeps_its_partitions_while_it_works_through_a_fetch(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    # 12 records fetched at once, 1.2 s each: 14 s between two fetches, past an 8 s poll
    # allowance; without the paused polls in between, kafka-python leaves the group at 8 s.
    consumer, registry = consumer_with_records(kafka_broker, dataclasses.replace(
        kafka_config, records_partitions=1, max_poll_interval_ms=8000, session_timeout_ms=6000), 12)
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 12 and time.monotonic() < deadline:
            for d in consumer.poll(max_records=1, timeout_s=0.2):
                time.sleep(1.2)  # the judge at work
                got.append(d.value)
                consumer.commit(d)
        assert got == [f"r{i}".encode() for i in range(12)]
        assert consumer._consumer.group_metadata().generation_id == 1
        assert rebalance_events(registry) == {"assigned": 1, "revoked": 0, "lost": 0}
    finally:
        consumer.close()


def test_lag_gauge_comes_from_the_high_watermark(kafka_broker, kafka_config: KafkaConfig) -> None:
    # A short rebalance timeout: should the group rebalance during the test (seen on a loaded
    # machine), the unfinished records are released at once and handed out again, and the lag
    # reads the same 10 instead of 0 for the whole default wait.
    cfg = dataclasses.replace(kafka_config, records_partitions=1, rebalance_timeout_s=1.0)
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, 12, partitions=1)
    registry = CollectorRegistry()
    consumer = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(registry))
    got = poll_until(consumer, 12)
    for d in got[:2]:
        consumer.commit(d)
    # 12 records in the log (high watermark 12), the oldest unfinished at offset 2: lag 10.
    assert measured_lag(consumer, 10, timeout_s=30) == 10
    assert registry.get_sample_value("ragpulse_kafka_consumer_lag",
                                     {"topic": cfg.records_topic, "partition": "0"}) == 10
    consumer.close()


def test_a_dead_letter_too_large_for_a_message_keeps_its_reason_and_a_cut_payload(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, max_message_bytes=20_000)
    ensure_topics(cfg, ragpulse_topics(cfg))
    sinks = KafkaSinks(cfg, KafkaProducerMetrics(CollectorRegistry()))
    record = json.dumps({"answer": '"quoted"' * 1900}).encode()  # fits a message, not once escaped
    assert len(record) < 20_000
    sinks.dead_letter_sink().publish(record, "scoring_error", "boom", 3)
    assert sinks.flush(10)
    sinks.close()
    (dead,) = kafka_broker.read(cfg.dlq_topic, 1)
    envelope = json.loads(dead.value)
    assert envelope["reason"] == "scoring_error" and envelope["payload_truncated"] is True
    assert record.decode().startswith(envelope["payload"]) and len(dead.value) <= 20_000


def test_a_partition_assigned_back_after_a_rebalance_restarts_at_its_commit(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    """kafka-python keeps the fetch position of a partition that comes back to the same member;
    records fetched before the rebalance and not yet handed out must still be delivered."""
    # Heartbeats every second (session 10 s), so the first member hears of the rebalance soon
    # enough: the 2,000 records must outlast the second member's join.
    cfg = dataclasses.replace(kafka_config, records_partitions=2, session_timeout_ms=10_000)
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, 2000, partitions=2)
    seen: dict[str, set[bytes]] = {"first": set(), "second": set()}
    first = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry()))
    second: list[KafkaRecordConsumer] = []
    stop = threading.Event()

    def drain(name: str, consumer: KafkaRecordConsumer) -> None:
        while not stop.is_set():
            for d in consumer.poll(max_records=5, timeout_s=0.2):
                seen[name].add(d.value)
                consumer.commit(d)
            time.sleep(0.04)  # a scorer, not a firehose: the second member joins mid-stream

    threads = [threading.Thread(target=drain, args=("first", first))]
    threads[0].start()
    while not seen["first"]:
        time.sleep(0.05)
    second.append(KafkaRecordConsumer(cfg, KafkaConsumerMetrics(CollectorRegistry())))
    threads.append(threading.Thread(target=drain, args=("second", second[0])))
    threads[1].start()
    deadline = time.monotonic() + 90
    while len(seen["first"] | seen["second"]) < 2000 and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    assert seen["second"], "the second member never got a partition"
    assert seen["first"] | seen["second"] == {f"r{i}".encode() for i in range(2000)}
    first.close()
    second[0].close()


def group_notes(bootstrap: str, group: str) -> dict[int, tuple[int, CommitNote | None]]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: (o.offset, CommitNote.decode(o.metadata)) for tp, o in offsets.items()}


def test_commits_carry_a_horizon_note_and_a_clean_close_clears_it(kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=1)
    ensure_topics(cfg, ragpulse_topics(cfg))
    registry = CollectorRegistry()
    consumer = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(registry))
    deadline = time.monotonic() + 30
    while not consumer._consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(max_records=1, timeout_s=0.2)
    produce(kafka_broker.bootstrap, cfg.records_topic, 100, partitions=1)

    def hand_overs() -> float:
        return registry.get_sample_value("ragpulse_kafka_rebalance_partitions_total", {"event": "revoked"}) or 0

    before = hand_overs()
    deliveries = poll_until(consumer, 100)
    assert len(deliveries) == 100 and all(d.abandoned == 0 for d in deliveries)
    offset, note = group_notes(kafka_broker.bootstrap, cfg.group_id)[0]
    if hand_overs() == before:
        # Nothing beyond the committed horizon was handed out.
        assert note is not None and note.abandoned == 0 and note.horizon >= max(d.token.offset for d in deliveries)
    else:  # a rebalance (back to this consumer) in between: a graceful hand-over leaves no note
        print("a rebalance happened during the test")
    for d in deliveries:
        consumer.commit(d)
    time.sleep(0.2)
    consumer.poll(max_records=1, timeout_s=0.1)
    assert group_notes(kafka_broker.bootstrap, cfg.group_id)[0][0] == 100
    consumer.close()
    assert group_notes(kafka_broker.bootstrap, cfg.group_id)[0] == (100, None)


def test_after_an_owner_died_its_records_go_out_one_at_a_time_up_to_its_horizon(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    # A rebalance in the middle is a graceful hand-over, which rightly ends the careful mode:
    # then the scenario runs again on a fresh topic and group.
    for attempt in range(3):
        cfg = dataclasses.replace(kafka_config, records_partitions=1,
                                  records_topic=kafka_broker.topic("ragpulse.records"),
                                  group_id=kafka_broker.topic("ragpulse-scorer"))
        if careful_after_a_dead_owner(kafka_broker, cfg):
            return
        print(f"attempt {attempt + 1}: a rebalance interrupted the scenario")
    raise AssertionError("a rebalance interrupted every attempt")


def careful_after_a_dead_owner(kafka_broker, cfg: KafkaConfig) -> bool:
    """False when a rebalance interrupted it."""
    ensure_topics(cfg, ragpulse_topics(cfg))
    produce(kafka_broker.bootstrap, cfg.records_topic, 30, partitions=1)
    # What a scorer that crashed once on offset 10, having handed out up to 15, left behind.
    dead = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, group_id=cfg.group_id, enable_auto_commit=False)
    tp = TopicPartition(cfg.records_topic, 0)
    dead.commit({tp: OffsetAndMetadata(10, CommitNote(1, 15).encode(), -1)})
    dead.close()

    registry = CollectorRegistry()
    consumer = KafkaRecordConsumer(cfg, KafkaConsumerMetrics(registry))
    try:
        for expected in range(10, 16):
            (d,) = poll_until(consumer, 1)
            if registry.get_sample_value("ragpulse_kafka_rebalance_partitions_total", {"event": "revoked"}):
                return False
            assert d.token.offset == expected and d.abandoned == (1 if expected == 10 else 0)
            # Committed before it went out: if it crashes this owner too, the next one knows.
            assert group_notes(kafka_broker.bootstrap, cfg.group_id)[0] == (
                expected, CommitNote(2 if expected == 10 else 1, 15))
            assert consumer.poll(max_records=100, timeout_s=0.2) == []  # nothing else while it runs
            consumer.commit(d)
        rest = poll_until(consumer, 14)
        assert [d.token.offset for d in rest] == list(range(16, 30))
        assert registry.get_sample_value("ragpulse_kafka_records_taken_alone_total") == 6
        return True
    finally:
        consumer.close()
