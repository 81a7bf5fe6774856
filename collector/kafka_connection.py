"""Where and how every ragpulse Kafka client connects: brokers, client id, TLS and SASL.

One place, so the collector's producer, the scorer's consumer and producer, the admin client and
the OTel-Collector input all reach a secured cluster (Confluent Cloud, MSK, Aiven, ...) the same way.
"""

from __future__ import annotations

from typing import Any

from ragpulse.config import KafkaConfig


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
