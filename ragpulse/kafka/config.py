"""Settings of every Kafka client ragpulse runs: brokers, topics, producer and consumer timing,
security. Section `bus.kafka`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.settings import ConfigError, key, require, require_at_least, require_one_of

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass
class OtlpKafkaInputConfig:
    """Spans written to Kafka by the OpenTelemetry Collector's kafka exporter."""

    # `ragpulse collector` reads spans from this topic too.
    enabled: bool = False
    topic: str = "otlp_spans"  # the kafka exporter's default topic
    # otlp_proto or otlp_json, as the exporter writes them.
    encoding: str = "otlp_proto"
    # The collectors' consumer group.
    group_id: str = "ragpulse-collector"

    def validate(self, where: str) -> None:
        require_one_of(key(where, "encoding"), self.encoding, ("otlp_proto", "otlp_json"))


@dataclass
class KafkaConfig:
    # Brokers, comma-separated host:port.
    bootstrap_servers: str = "127.0.0.1:9092"
    # How the brokers' logs and quotas name ragpulse's clients.
    client_id: str = "ragpulse"
    # Records from the collectors to the scorers (key: trace id).
    records_topic: str = "ragpulse.records"
    # Partitions of a topic ragpulse creates (create_topics); the most scorers that share the work.
    records_partitions: int = 6
    # One scores message per scored record.
    scores_topic: str = "ragpulse.scores"
    scores_partitions: int = 3  # when ragpulse creates the topic
    # Records that failed for good, with the reason.
    dlq_topic: str = "ragpulse.dlq"
    dlq_partitions: int = 1  # when ragpulse creates the topic
    # For all three topics; 1 suits a single development broker, use 3 on a real cluster.
    replication_factor: int = 1
    # Create missing topics with the admin client on start (existing ones are left as they are).
    create_topics: bool = True
    # The scorers' consumer group.
    group_id: str = "ragpulse-scorer"
    # gzip needs no extra package; lz4, zstd and snappy need python-lz4, zstandard, python-snappy.
    compression: str = "lz4"
    # Largest record value sent; a bigger record is truncated (contexts first), never dropped.
    # Keep it at or below the broker's message.max.bytes (default 1048588).
    max_message_bytes: int = 1_000_000
    # Batching window: fewer, larger batches cost the producer far less CPU than the latency
    # (tens of ms before a record is scored) is worth.
    linger_ms: int = 20
    # Records handed to the producer and not yet acknowledged; beyond this the collector answers
    # OTLP with "retry later" (HTTP 503 / gRPC UNAVAILABLE) instead of growing without bound.
    buffer_records: int = 20_000
    # How long an unacknowledged record is retried before it counts as a delivery failure.
    delivery_timeout_ms: int = 300_000
    # Scorer: how often finished offsets are committed, and how many record ids are remembered
    # to skip redeliveries (at-least-once) without counting them twice.
    commit_interval_ms: int = 500
    dedupe_window: int = 100_000  # the record ids remembered
    # On a rebalance, how long in-flight records of revoked partitions may finish before they are
    # released to the next owner.
    rebalance_timeout_s: float = 20.0
    # A scorer that stops heartbeating (crashed, SIGKILL) loses its partitions after this long.
    session_timeout_ms: int = 45_000
    # Kafka takes a scorer out of its group when its polls are further apart than this. Records
    # fetched earlier wait while the consumer keeps polling with its partitions paused, but one
    # record's scoring is one wait: raise it above the slowest a judge may take (retries included).
    max_poll_interval_ms: int = 300_000
    # Connection security for managed clusters: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    security_protocol: str = "PLAINTEXT"
    # SASL (the SASL_* protocols): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Set the password from the
    # environment (RAGPULSE_BUS__KAFKA__SASL_PASSWORD), not in a file under version control.
    sasl_mechanism: str = "PLAIN"
    sasl_username: str = ""  # the SASL login
    sasl_password: str = field(default="", repr=False)  # its password
    # TLS (SSL, SASL_SSL): the CA that signed the brokers' certificates (empty: the system's CAs),
    # and a client certificate and key for mutual TLS.
    ssl_cafile: str = ""
    ssl_certfile: str = ""  # mutual TLS: the client certificate
    ssl_keyfile: str = ""  # and its key
    otlp_input: OtlpKafkaInputConfig = field(default_factory=OtlpKafkaInputConfig)

    def validate(self, where: str) -> None:
        for server in self.bootstrap_servers.split(","):
            parse_endpoint(server.strip(), key(where, "bootstrap_servers"))
        require_one_of(key(where, "compression"), self.compression, COMPRESSIONS)
        self._validate_security(where)
        for name, low in (
            ("records_partitions", 1),
            ("scores_partitions", 1),
            ("dlq_partitions", 1),
            ("replication_factor", 1),
            # Room for a record's metadata, question and answer after its contexts are cut.
            ("max_message_bytes", 16_384),
            ("buffer_records", 1),
            ("commit_interval_ms", 10),
            ("dedupe_window", 1),
            ("delivery_timeout_ms", 1000),
            # The broker's group.min.session.timeout.ms default.
            ("session_timeout_ms", 6000),
            ("max_poll_interval_ms", 1000),
            ("linger_ms", 0),
            ("rebalance_timeout_s", 0),
        ):
            require_at_least(key(where, name), getattr(self, name), low)
        # Kafka's protocol and client settings hold these as 32-bit integers (the replication factor
        # as 16-bit): a larger value would fail later, at the broker or in a wait. A fetch request
        # also needs room for framing beyond the largest record.
        for name, high in (
            ("records_partitions", 2**31 - 1),
            ("scores_partitions", 2**31 - 1),
            ("dlq_partitions", 2**31 - 1),
            ("replication_factor", 2**15 - 1),
            ("max_message_bytes", 2**30),
            ("commit_interval_ms", 2**31 - 1),
            ("delivery_timeout_ms", 2**31 - 1),
            ("session_timeout_ms", 2**31 - 1),
            ("max_poll_interval_ms", 2**31 - 1),
            ("linger_ms", 2**31 - 1),
        ):
            require(getattr(self, name) <= high, key(where, name), f"at most {high}", getattr(self, name))

    def _validate_security(self, where: str) -> None:
        require_one_of(key(where, "security_protocol"), self.security_protocol, PROTOCOLS)
        if self.security_protocol.startswith("SASL_"):
            require_one_of(key(where, "sasl_mechanism"), self.sasl_mechanism, SASL_MECHANISMS)
            if not self.sasl_username or not self.sasl_password:
                raise ConfigError(
                    f"{key(where, 'security_protocol')} is {self.security_protocol}: set "
                    f"{key(where, 'sasl_username')} and {key(where, 'sasl_password')} "
                    "(RAGPULSE_BUS__KAFKA__SASL_PASSWORD)"
                )
        if self.security_protocol.endswith("SSL"):
            for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
                path = getattr(self, name)
                if path and not Path(path).is_file():
                    raise ConfigError(f"{key(where, name)}: no such file {path!r}")
            if bool(self.ssl_certfile) != bool(self.ssl_keyfile):
                raise ConfigError(
                    f"{key(where, 'ssl_certfile')} and {key(where, 'ssl_keyfile')} go together (mutual TLS)"
                )
