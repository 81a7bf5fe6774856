"""Collector side against the real broker: topic setup, the record publisher, the OTLP Kafka input."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest
from google.protobuf import json_format
from kafka import KafkaProducer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client import CollectorRegistry

from ragpulse.collector.kafka_publisher import KafkaRecordPublisher
from ragpulse.collector.otlp_kafka_receiver import OtlpKafkaReceiver
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.core.wire import Record, Sampling
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.producer import KafkaProducerMetrics
from ragpulse.kafka.topics import TopicSetupError, TopicSpec, ensure_topics, ragpulse_topics


def make_record(i: int, context: str = "文脈です。") -> Record:
    return Record(trace_id=f"{i:032x}", span_id=f"{i:016x}", service="svc", question=f"質問 {i}?",
                  contexts=[context], answer=f"答え {i}.", time_unix_nano=i, sampling=Sampling(1.0, 1.0, "default"))


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_topics_are_created_once_with_the_configured_partitions(kafka_broker, kafka_config: KafkaConfig) -> None:
    specs = ragpulse_topics(kafka_config)
    assert sorted(ensure_topics(kafka_config, specs)) == sorted(s.name for s in specs)
    assert ensure_topics(kafka_config, specs) == []  # a second collector starting finds them
    consumer_view = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    assert len(consumer_view.partitions_for(kafka_config.records_topic)) == kafka_config.records_partitions
    consumer_view.close()


def test_a_refused_topic_stops_start_with_the_brokers_reason(kafka_broker, kafka_config: KafkaConfig) -> None:
    spec = TopicSpec(kafka_broker.topic("three.replicas"), 1, 3, "bus.kafka.records_partitions")
    with pytest.raises(TopicSetupError, match="bus.kafka.replication_factor.*InvalidReplicationFactor"):
        ensure_topics(kafka_config, [spec])


def test_an_unreachable_broker_is_a_clear_error(kafka_config: KafkaConfig) -> None:
    from kafka_broker import free_port

    cfg = dataclasses.replace(kafka_config, bootstrap_servers=f"127.0.0.1:{free_port()}")
    with pytest.raises(TopicSetupError, match="cannot reach Kafka"):
        ensure_topics(cfg, ragpulse_topics(cfg), timeout_s=3)


def test_records_are_published_keyed_by_trace_id_and_oversize_ones_truncated(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, max_message_bytes=20_000)
    ensure_topics(cfg, ragpulse_topics(cfg))
    registry = CollectorRegistry()
    publisher = KafkaRecordPublisher(cfg, KafkaProducerMetrics(registry))
    records = [make_record(i) for i in range(50)]
    big = make_record(99, context="長い文脈。" * 10_000)  # ~150 KB of context
    for r in [*records, big]:
        publisher.publish(r.trace_id.encode(), r.to_json())
    assert publisher.flush(30)
    publisher.close()

    got = kafka_broker.read(cfg.records_topic, 51)
    assert len(got) == 51
    by_id = {Record.from_json(m.value).id: m for m in got}
    assert set(by_id) == {r.id for r in [*records, big]}
    assert all(m.key == Record.from_json(m.value).trace_id.encode() for m in got)
    cut = Record.from_json(by_id[big.id].value)
    assert cut.truncated and len(by_id[big.id].value) <= 20_000 and big.contexts[0].startswith(cut.contexts[0])
    assert sample(registry, "ragpulse_kafka_records_truncated_total", service="svc") == 1
    assert sample(registry, "ragpulse_kafka_messages_delivered_total", topic=cfg.records_topic) == 51


def test_buffer_full_while_broker_is_down_then_everything_buffered_arrives(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, buffer_records=40)
    ensure_topics(cfg, ragpulse_topics(cfg))
    registry = CollectorRegistry()
    publisher = KafkaRecordPublisher(cfg, KafkaProducerMetrics(registry))
    kafka_broker.stop()
    try:
        accepted = []
        with pytest.raises(BusFull) as refused:
            for i in range(1000):
                r = make_record(i)
                publisher.publish(r.trace_id.encode(), r.to_json())
                accepted.append(r.id)
        assert len(accepted) == 40 and refused.value.retry_after_s > 0
        assert sample(registry, "ragpulse_kafka_publish_refused_total", reason="buffer_full") == 1
    finally:
        kafka_broker.start()
    assert publisher.flush(60), "the producer did not recover after the broker came back"
    publisher.close()
    got = kafka_broker.read(cfg.records_topic, 40)
    assert sorted(Record.from_json(m.value).id for m in got) == sorted(accepted)
    assert sample(registry, "ragpulse_kafka_delivery_failures_total", topic=cfg.records_topic, reason="timeout") == 0


def test_records_the_broker_never_takes_are_counted_as_timeouts_and_free_their_room(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    cfg = dataclasses.replace(kafka_config, delivery_timeout_ms=1000, buffer_records=10)
    ensure_topics(cfg, ragpulse_topics(cfg))
    registry = CollectorRegistry()
    publisher = KafkaRecordPublisher(cfg, KafkaProducerMetrics(registry))
    kafka_broker.stop()
    try:
        for i in range(10):
            r = make_record(i)
            publisher.publish(r.trace_id.encode(), r.to_json())
        assert publisher.flush(30)
        failed = sample(registry, "ragpulse_kafka_delivery_failures_total", topic=cfg.records_topic, reason="timeout")
        assert failed == 10 and publisher.pending() == 0
        assert sample(registry, "ragpulse_kafka_producer_buffered", topic=cfg.records_topic) == 0
        # The room is free again: ten more are taken, not refused (and time out like the first).
        for i in range(10, 20):
            r = make_record(i)
            publisher.publish(r.trace_id.encode(), r.to_json())
        assert publisher.flush(30) and publisher.pending() == 0
        publisher.close()
    finally:
        kafka_broker.start()
    assert sample(registry, "ragpulse_kafka_delivery_failures_total", topic=cfg.records_topic, reason="timeout") == 20
    assert sample(registry, "ragpulse_kafka_messages_delivered_total", topic=cfg.records_topic) == 0


def test_closing_while_the_broker_is_down_gives_up_the_records_counted(
        kafka_broker, kafka_config: KafkaConfig) -> None:
    ensure_topics(kafka_config, ragpulse_topics(kafka_config))
    registry = CollectorRegistry()
    publisher = KafkaRecordPublisher(kafka_config, KafkaProducerMetrics(registry))  # 300 s delivery timeout
    kafka_broker.stop()
    try:
        for i in range(5):
            r = make_record(i)
            publisher.publish(r.trace_id.encode(), r.to_json())
        # Without a limit of its own, librdkafka's close would wait for the broker for ever.
        publisher.close(timeout_s=1.0)
    finally:
        kafka_broker.start()
    failed = sample(registry, "ragpulse_kafka_delivery_failures_total", topic=kafka_config.records_topic,
                    reason="shutdown")
    assert failed == 5 and publisher.pending() == 0


def otlp_request(trace: int, spans: int = 2) -> ExportTraceServiceRequest:
    doc = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "otel-app"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": f"{trace:032x}", "spanId": f"{trace:08x}{s:08x}", "name": "rag",
            "attributes": [{"key": "rag.question", "value": {"stringValue": "q"}}],
        } for s in range(spans)]}],
    }]}
    return json_format.ParseDict(_b64_ids(doc), ExportTraceServiceRequest())


def _b64_ids(doc: dict) -> dict:
    import base64

    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return doc


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """OTLP/JSON as the OTel Collector writes it: camelCase, hex ids."""
    doc = json_format.MessageToDict(request)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                import base64

                for key in ("traceId", "spanId"):
                    span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(doc).encode()


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_otlp_kafka_input_hands_every_request_over_once_and_retries_on_push_back(
        kafka_broker, kafka_config: KafkaConfig, encoding: str) -> None:
    topic = kafka_broker.create_topic(kafka_broker.topic("otlp_spans"), partitions=2)
    cfg = dataclasses.replace(kafka_config, otlp_input=dataclasses.replace(
        kafka_config.otlp_input, topic=topic, encoding=encoding, group_id=kafka_broker.topic("otlp-in")))
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    sent = [otlp_request(t) for t in range(1, 21)]
    for i, request in enumerate(sent):
        value = request.SerializeToString() if encoding == "otlp_proto" else otlp_json(request)
        producer.send(topic, key=f"{i % 2}".encode(), value=value)
        if i == 10:
            producer.send(topic, key=b"0", value=b"\xff not otlp {")
    producer.flush()
    producer.close()

    handled: list[ExportTraceServiceRequest] = []
    pushed_back = threading.Event()

    def handle(request: ExportTraceServiceRequest) -> None:
        if len(handled) == 5 and not pushed_back.is_set():
            pushed_back.set()
            raise BusFull(0.2)
        handled.append(request)

    registry = CollectorRegistry()
    metrics = CollectorMetrics(registry)
    receiver = OtlpKafkaReceiver(cfg, handle, metrics)
    receiver.start()
    # Generous, as the loop ends once every request is in: one CI run saw nothing for 60 s, most
    # likely the repeated group join that poll_group (collector/kafka_connection.py) now avoids.
    started = time.monotonic()
    while len(handled) < len(sent) and time.monotonic() < started + 120:
        time.sleep(0.1)
    time.sleep(1.5)  # anything extra (a skipped retry, a duplicate) would show up now
    assignment = sorted(tp.partition for tp in receiver._consumer.assignment())
    receiver.stop()
    assert pushed_back.is_set(), (
        f"{len(handled)} of {len(sent)} requests handled in {time.monotonic() - started:.0f} s; "
        f"partitions assigned at the end: {assignment}")
    assert sorted(r.SerializeToString() for r in handled) == sorted(r.SerializeToString() for r in sent)
    assert sample(registry, "ragpulse_otlp_requests_total", transport="kafka", outcome="invalid") == 1
    assert sample(registry, "ragpulse_otlp_requests_total", transport="kafka", outcome="retry_later") == 1
