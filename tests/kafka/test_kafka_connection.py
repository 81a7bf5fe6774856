"""Both Kafka clients (kafka-python for the scorer, librdkafka for the collector's producer) reach a
secured cluster from the same bus.kafka settings; librdkafka itself checks the names it is given."""

from __future__ import annotations

import dataclasses

from confluent_kafka import Producer

from ragpulse.collector.kafka_publisher import producer_config
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.connection import connection_config, rdkafka_connection_config

SECURED = KafkaConfig(bootstrap_servers="b1:9093, b2:9093", security_protocol="SASL_SSL",
                      sasl_mechanism="SCRAM-SHA-512", sasl_username="svc", sasl_password="s3cret",
                      ssl_cafile="/etc/ca.pem", ssl_certfile="/etc/client.pem", ssl_keyfile="/etc/client.key")


def test_both_clients_get_the_same_brokers_login_and_certificates() -> None:
    python, rd = connection_config(SECURED, "x"), rdkafka_connection_config(SECURED, "x")
    assert python["bootstrap_servers"] == rd["bootstrap.servers"].split(",") == ["b1:9093", "b2:9093"]
    assert python["client_id"] == rd["client.id"] == "ragpulse-x"
    assert (python["sasl_mechanism"], python["sasl_plain_username"], python["sasl_plain_password"]) == (
        rd["sasl.mechanism"], rd["sasl.username"], rd["sasl.password"])
    assert (python["ssl_cafile"], python["ssl_certfile"], python["ssl_keyfile"]) == (
        rd["ssl.ca.location"], rd["ssl.certificate.location"], rd["ssl.key.location"])


def test_tls_without_a_ca_file_uses_the_systems_cas_in_both() -> None:
    tls = dataclasses.replace(SECURED, security_protocol="SSL", ssl_cafile="", ssl_certfile="", ssl_keyfile="")
    python, rd = connection_config(tls, "x"), rdkafka_connection_config(tls, "x")
    assert python["ssl_cafile"] is None and rd["ssl.ca.location"] == "probe"
    assert "ssl.certificate.location" not in rd and "sasl.username" not in rd


def test_librdkafka_takes_the_collectors_settings_for_every_protocol_and_codec() -> None:
    # Producer() rejects an unknown name or value at once, before any connection.
    for protocol in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            cfg = dataclasses.replace(SECURED, security_protocol=protocol, compression=codec, ssl_cafile="",
                                      ssl_certfile="", ssl_keyfile="")
            Producer(producer_config(cfg))
