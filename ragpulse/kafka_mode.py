"""The two processes of the Kafka deployment: `ragpulse collector` and `ragpulse scorer`.

Both are built from the same parts as `ragpulse up` (ragpulse.app); only the bus differs. Each
creates the ragpulse topics if they are missing (bus.kafka.create_topics) and serves its own
Prometheus /metrics on prometheus.endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from ragpulse.app import build_collector, build_scorer
from ragpulse.collector.kafka_publisher import KafkaRecordPublisher
from ragpulse.collector.otlp_kafka_receiver import OtlpKafkaReceiver
from ragpulse.config import Config, ConfigError
from ragpulse.core.otlp_metrics import OtlpMetricsExport, start_otlp_metrics
from ragpulse.kafka.producer import KafkaProducerMetrics
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics
from ragpulse.scorer.consume.dedupe import RecentRecordIds
from ragpulse.scorer.consume.kafka import KafkaConsumerMetrics, KafkaRecordConsumer
from ragpulse.scorer.export.http_server import ScorerHttp
from ragpulse.scorer.export.kafka import KafkaSinks
from ragpulse.scorer.judge.base import Judge
from ragpulse.scorer.judge.budget import Budget
from ragpulse.scorer.judge.factory import build_judge
from ragpulse.scorer.judge.openai.ratelimit import set_group_share

log = logging.getLogger(__name__)


def require_kafka(config: Config, command: str) -> None:
    # kafka-python logs every connection and rebalance step at INFO; keep ragpulse's INFO readable.
    if config.log_level.lower() != "debug":
        logging.getLogger("kafka").setLevel(logging.WARNING)
    if config.bus.kind != "kafka":
        raise ConfigError(
            f"`ragpulse {command}` runs on Kafka: set bus.kind: kafka (RAGPULSE_BUS__KIND=kafka) and "
            f"bus.kafka.bootstrap_servers; for everything in one process use `ragpulse up`"
        )
    if config.bus.kafka.create_topics:
        ensure_topics(config.bus.kafka, ragpulse_topics(config.bus.kafka))


class KafkaCollector:
    """OTLP gRPC/HTTP receivers (and optionally the OTel Collector's Kafka topic) → ragpulse.records."""

    def __init__(self, config: Config) -> None:
        require_kafka(config, "collector")
        kafka = config.bus.kafka
        self.registry = CollectorRegistry()
        self.publisher = KafkaRecordPublisher(kafka, KafkaProducerMetrics(self.registry))
        self.collector = build_collector(config, self.publisher, self.registry)
        self.otlp_input: OtlpKafkaReceiver | None = None
        if kafka.otlp_input.enabled:
            pipeline = self.collector.pipeline
            self.otlp_input = OtlpKafkaReceiver(
                kafka, lambda request: pipeline.consume_export_request(request, "kafka"),
                self.collector.metrics, before_commit=self.publisher.flush)
        self.http = ScorerHttp(config.prometheus, config.page, self.registry, None)
        self._otlp_metrics = config.export.otlp_metrics
        self.otlp_metrics: OtlpMetricsExport | None = None

    def start(self) -> None:
        self.http.start()
        self.otlp_metrics = start_otlp_metrics(self._otlp_metrics, self.registry, "collector")
        self.collector.pipeline.start()
        for receiver in self.collector.receivers:
            receiver.start()
        if self.otlp_input is not None:
            self.otlp_input.start()

    def stop(self, flush_timeout_s: float = 30.0) -> dict[str, Any]:
        """Stop taking spans, publish what was accepted, wait for the broker's acknowledgements."""
        for receiver in self.collector.receivers:
            receiver.stop()
        if self.otlp_input is not None:
            self.otlp_input.stop()
        self.collector.pipeline.stop()
        flushed = self.publisher.flush(flush_timeout_s)
        unacknowledged = self.publisher.pending()
        self.publisher.close(timeout_s=0.0)  # the flush above was the wait
        if self.otlp_metrics is not None:
            self.otlp_metrics.stop()
        self.http.stop()
        return {"drained": flushed, "unacknowledged": unacknowledged}


class KafkaScorer:
    """A member of the scorer group: ragpulse.records → judge → /metrics, ragpulse.scores, ragpulse.dlq."""

    def __init__(self, config: Config, judge: Judge | None = None) -> None:
        require_kafka(config, "scorer")
        kafka = config.bus.kafka
        self.registry = CollectorRegistry()
        self.sinks = KafkaSinks(kafka, KafkaProducerMetrics(self.registry))
        judge = judge or build_judge(config.scorer)
        self.consumer = KafkaRecordConsumer(kafka, KafkaConsumerMetrics(self.registry),
                                            before_commit=self.sinks.flush, on_share=_group_share(judge))
        self.scorer = build_scorer(config, self.consumer, self.registry, judge, outputs=self.sinks,
                                   deduper=RecentRecordIds(kafka.dedupe_window))
        self.http = ScorerHttp(config.prometheus, config.page, self.registry, self.scorer.page)
        self._otlp_metrics = config.export.otlp_metrics
        self.otlp_metrics: OtlpMetricsExport | None = None

    def start(self) -> None:
        self.http.start()
        self.otlp_metrics = start_otlp_metrics(self._otlp_metrics, self.registry, "scorer")
        self.scorer.worker.start()

    def stop(self) -> dict[str, Any]:
        """Finish the records taken, commit them, leave the group (partitions move at once)."""
        self.scorer.worker.stop()
        self.consumer.close()
        self.sinks.close()
        if self.otlp_metrics is not None:
            self.otlp_metrics.stop()
        self.http.stop()
        return {"drained": True}


def _group_share(judge: Judge) -> Callable[[float], None]:
    """What a member does with its share of the records topic's partitions: the judge's budget and
    the process's rate limits shrink to it, so the group together keeps to the configured ones
    (docs/design/kafka.md, "One budget for the group")."""
    budget = getattr(judge, "budget", None)

    def follow(share: float) -> None:
        if isinstance(budget, Budget):
            budget.set_share(share)
        set_group_share(share)

    return follow
