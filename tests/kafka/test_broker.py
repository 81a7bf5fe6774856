"""The broker that deploy/kafka/broker.sh starts takes a produce/consume round trip."""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def test_produce_consume_round_trip(kafka_broker) -> None:
    topic = kafka_broker.create_topic(kafka_broker.topic("roundtrip"), partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all", enable_idempotence=True)
    sent = {f"k{i}".encode(): f"値{i}".encode() for i in range(20)}
    for key, value in sent.items():
        producer.send(topic, key=key, value=value)
    producer.flush(timeout=30)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    got = {}
    for message in consumer:
        got[message.key] = message.value
        if len(got) == len(sent):
            break
    consumer.close()
    assert got == sent
