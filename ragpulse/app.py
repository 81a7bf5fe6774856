"""Wiring: builds the collector and scorer stages from the configuration and runs them.

`ragpulse up` = collector + in-process bus + scorer + /metrics in one process. The same parts make
the separate `ragpulse collector` and `ragpulse scorer` processes of the Kafka deployment.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, disable_created_metrics

from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.receiver_grpc import OtlpGrpcReceiver
from ragpulse.collector.receiver_http import OtlpHttpReceiver
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus, RecordConsumer, RecordPublisher
from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.labels import LabelBounds
from ragpulse.core.otlp_metrics import OtlpMetricsExport, start_otlp_metrics
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.consume.dedupe import RecentRecordIds
from ragpulse.scorer.estimate.cascade import Cascade
from ragpulse.scorer.estimate.drift import DriftDetectorBank
from ragpulse.scorer.estimate.estimates import EstimateBank
from ragpulse.scorer.estimate.pacing import BudgetPacer
from ragpulse.scorer.export.http_server import PageHandler, ScorerHttp
from ragpulse.scorer.export.prometheus import JudgeEndpointCollector, PrometheusScoreExporter
from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
from ragpulse.scorer.judge.base import Judge
from ragpulse.scorer.judge.budget import Budget
from ragpulse.scorer.judge.factory import build_judge
from ragpulse.scorer.observer import ScoreObserver
from ragpulse.scorer.score import metric_functions
from ragpulse.scorer.web.history import History
from ragpulse.scorer.web.page import LivePage
from ragpulse.scorer.web.record_texts import RecentRecordTexts
from ragpulse.scorer.worker import RecordDeduper, Worker, WorkerMetrics

if TYPE_CHECKING:  # kafka-python loads ~100 protocol schemas at import; `ragpulse up` needs none
    from ragpulse.scorer.export.kafka import KafkaSinks

log = logging.getLogger(__name__)

# `_created` series double the exposition for no dashboard or alert of ours.
disable_created_metrics()


@dataclass
class CollectorParts:
    pipeline: CollectorPipeline
    receivers: list[OtlpGrpcReceiver | OtlpHttpReceiver]
    metrics: CollectorMetrics

    def endpoint(self, protocol: str) -> str:
        """Where the "grpc" or "http" receiver listens as bound (a configured port 0 shows the
        port the system chose), or "off"."""
        return next((r.endpoint for r in self.receivers if r.protocol == protocol), "off")


@dataclass
class ScorerParts:
    worker: Worker
    judge: Judge
    scores: RecentScores
    dead_letters: RecentDeadLetters
    observers: list[ScoreObserver] = field(default_factory=list)
    page: PageHandler | None = None


def build_collector(
    config: Config, publisher: RecordPublisher, registry: CollectorRegistry, labels: LabelBounds | None = None
) -> CollectorParts:
    """`labels`: the process's bounds on span values as labels, when the scorer shares them."""
    labels = labels or config.prometheus.label_bounds()
    labels.register(registry)
    metrics = CollectorMetrics(registry, service_label=labels.service)
    pipeline = CollectorPipeline(config.extract, config.sampling, config.redaction, publisher, metrics)
    receivers: list[OtlpGrpcReceiver | OtlpHttpReceiver] = []
    if config.receiver.enable_grpc:
        host, port = parse_endpoint(config.receiver.grpc_endpoint, "receiver.grpc_endpoint")
        receivers.append(OtlpGrpcReceiver(host, port, pipeline, metrics, config.receiver))
    if config.receiver.enable_http:
        host, port = parse_endpoint(config.receiver.http_endpoint, "receiver.http_endpoint")
        receivers.append(OtlpHttpReceiver(host, port, pipeline, metrics, config.receiver))
    return CollectorParts(pipeline, receivers, metrics)


def build_scorer(
    config: Config,
    consumer: RecordConsumer,
    registry: CollectorRegistry,
    judge: Judge | None = None,
    outputs: KafkaSinks | None = None,
    deduper: RecordDeduper | None = None,
    labels: LabelBounds | None = None,
) -> ScorerParts:
    """`outputs`: the Kafka scores and DLQ topics, written besides the live page's recent lists;
    `labels`: the process's bounds on span values as labels, when the collector shares them."""
    labels = labels or config.prometheus.label_bounds()
    labels.register(registry)
    judge = judge or build_judge(config.scorer)
    registry.register(JudgeEndpointCollector(judge))
    scores = RecentScores(config.scorer.recent_scores)
    dead_letters = RecentDeadLetters()
    exporter = PrometheusScoreExporter(registry, judge.name, config.scorer.rolling_window,
                                       config.scorer.bad_event_threshold, with_route=config.prometheus.route_label)
    cascade = _cascade(config.scorer, judge, registry)
    drift = DriftDetectorBank(config.drift, registry)
    history = History(registry, config.scorer.bad_event_threshold)
    texts = RecentRecordTexts(config.page.text_records, config.page.text_bytes)
    observers: list[ScoreObserver] = [exporter, drift, history, texts]
    if cascade is not None:
        observers.append(EstimateBank(config.scorer.cascade.estimate_half_life_s,
                                      config.scorer.cascade.confidence, registry))
    if config.export.otlp.enabled:
        # Imported only when on: the OTel SDK's tracing half adds ~0.4 s to every start.
        from ragpulse.scorer.export.otlp import OtlpEvaluationExporter

        observers.append(OtlpEvaluationExporter(config.export.otlp, registry, config.scorer.bad_event_threshold))
    worker = Worker(
        consumer=consumer,
        judge=judge,
        config=config.scorer,
        metrics=WorkerMetrics(registry),
        scores=scores if outputs is None else outputs.score_sink(also=scores),
        dead_letters=dead_letters if outputs is None else outputs.dead_letter_sink(also=dead_letters),
        observers=observers,
        # The one bound on span values as labels: observers get records already bounded.
        labels=labels,
        deduper=deduper,
        # With the cascade on, the pacer's share is spread over the records by the cascade.
        pacer=None if cascade is not None else _pacer(judge),
        cascade=cascade,
    )
    page = LivePage(history, scores, dead_letters, drift, registry, texts, config.page.trace_url,
                    low_threshold=config.scorer.bad_event_threshold.get("faithfulness", 0.5))
    return ScorerParts(worker, judge, scores, dead_letters, observers, page.handle)


def _pacer(judge: Judge) -> BudgetPacer | None:
    """A pacer when the judge spends money under a budget it asks to spread (scorer.openai.budget_*)."""
    budget = getattr(judge, "budget", None)
    return BudgetPacer(budget) if isinstance(budget, Budget) and budget.paced else None


def _cascade(config: ScorerConfig, judge: Judge, registry: CollectorRegistry) -> Cascade | None:
    """The offline judge on every record, `judge` on a share (scorer.cascade; docs/estimates.md)."""
    if not config.cascade.enabled:
        return None
    from ragpulse.scorer.judge.factory import build_offline_judge

    metrics = metric_functions(config, aspects=False)  # the offline judge judges no aspect
    return Cascade(config.cascade, build_offline_judge(), judge, metrics, registry, _pacer(judge))


class OneProcess:
    """Everything of `ragpulse up`: start() brings it up, stop() drains in-flight records first."""

    def __init__(self, config: Config, judge: Judge | None = None) -> None:
        self.config = config
        self.registry = CollectorRegistry()
        self.bus = InProcessBus(config.bus.memory.capacity)
        labels = config.prometheus.label_bounds()
        self.collector = build_collector(config, self.bus, self.registry, labels)
        # An exporter that gave up waiting for an answer that did come sends the record again.
        self.scorer = build_scorer(config, self.bus, self.registry, judge, labels=labels,
                                   deduper=RecentRecordIds(config.bus.memory.dedupe_window))
        self.http = ScorerHttp(config.prometheus, config.page, self.registry, self.scorer.page)
        self.otlp_metrics: OtlpMetricsExport | None = None
        self._stopped = threading.Event()

    def start(self) -> None:
        self.scorer.worker.start()
        self.http.start()
        self.otlp_metrics = start_otlp_metrics(self.config.export.otlp_metrics, self.registry, "up")
        self.collector.pipeline.start()
        for receiver in self.collector.receivers:
            receiver.start()

    def stop(self, drain_timeout_s: float = 30.0) -> dict[str, Any]:
        """Stop taking spans, score what was accepted, then stop serving /metrics."""
        if self._stopped.is_set():
            return {}
        self._stopped.set()
        for receiver in self.collector.receivers:
            receiver.stop()
        # Traces still waiting for their root or grace period become records before the drain.
        self.collector.pipeline.stop()
        drained = self.bus.drained(drain_timeout_s)
        self.scorer.worker.stop()
        if self.otlp_metrics is not None:
            self.otlp_metrics.stop()
        self.http.stop()
        return {"drained": drained, "left_in_queue": self.bus.depth()}
