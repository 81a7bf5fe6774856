"""The scoring worker: take records off the bus, score them, hand them to the observers (the
Prometheus export, drift, history), publish the scores, then commit.

Every delivery ends in exactly one of: scored, skipped by a named rule, or dead-lettered with its
reason — and a counter says which. A delivery is committed only after that, so a crash means a
redelivery, never a loss.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.bus import Delivery, RecordConsumer
from ragpulse.core.labels import LabelBounds
from ragpulse.core.wire import Record, RecordError, scores_message
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.estimate.cascade import Cascade
from ragpulse.scorer.estimate.pacing import BudgetPacer
from ragpulse.scorer.export.sinks import DeadLetterSink, ScoreSink
from ragpulse.scorer.judge.base import Judge
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.observer import CascadeVerdict, ScoredRecord, ScoreObserver
from ragpulse.scorer.record_text import record_text
from ragpulse.scorer.score import JudgeUnavailable, MetricOutcome, RecordSkipped, metric_functions, score_text

log = logging.getLogger(__name__)

# How long a record waits before asking a judge that was down again.
JUDGE_UNAVAILABLE_WAIT_S = 5.0


class RecordDeduper(Protocol):
    def seen(self, record_id: str) -> bool:
        """True if this id was already scored (a redelivery); records it otherwise."""
        ...


class WorkerMetrics:
    """What became of each delivery, and the queue behind it; the scores themselves are the
    observers' to export (scorer/export/prometheus.py)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.records_consumed = catalog.counter(registry, "ragpulse_scorer_records_consumed_total")
        self.records_skipped = catalog.counter(registry, "ragpulse_scorer_records_skipped_total")
        self.records_dead_lettered = catalog.counter(registry, "ragpulse_records_dead_lettered_total")
        self.judge_unavailable_waits = catalog.counter(registry, "ragpulse_judge_unavailable_waits_total")
        self.queue_depth = catalog.gauge(registry, "ragpulse_queue_depth")


class Worker:
    def __init__(
        self,
        consumer: RecordConsumer,
        judge: Judge,
        config: ScorerConfig,
        metrics: WorkerMetrics,
        scores: ScoreSink,
        dead_letters: DeadLetterSink,
        observers: list[ScoreObserver],
        labels: LabelBounds,
        deduper: RecordDeduper | None = None,
        pacer: BudgetPacer | None = None,
        cascade: Cascade | None = None,
    ) -> None:
        self._consumer = consumer
        self._judge = judge
        self._config = config
        self._metric_fns: dict[str, Metric] = metric_functions(config)
        self._metrics = metrics
        self._scores = scores
        self._dead_letters = dead_letters
        self._observers = observers
        self._labels = labels
        self._deduper = deduper
        self._pacer = pacer
        self._cascade = cascade
        self._stop = threading.Event()
        self._concurrency = config.records_in_flight()
        self._pool = ThreadPoolExecutor(max_workers=self._concurrency, thread_name_prefix="score")
        # Bounds work taken off the bus and not yet finished, so a stop loses nothing uncommitted.
        self._slots = threading.BoundedSemaphore(self._concurrency * 2)
        self._thread = threading.Thread(target=self._run, name="scorer-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop polling, finish what was taken, then return."""
        self._stop.set()
        self._thread.join(timeout_s)
        self._pool.shutdown(wait=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._metrics.queue_depth.set(self._consumer.depth())
            deliveries = self._consumer.poll(max_records=self._concurrency, timeout_s=0.2)
            for delivery in deliveries:
                if self._concurrency == 1:
                    # Nothing to overlap: score on the poll thread rather than hand each record
                    # to a pool thread and back.
                    self._handle_guarded(delivery)
                    continue
                self._slots.acquire()
                self._pool.submit(self._handle_in_slot, delivery)

    def _handle_in_slot(self, delivery: Delivery) -> None:
        try:
            self._handle_guarded(delivery)
        finally:
            self._slots.release()

    def _handle_guarded(self, delivery: Delivery) -> None:
        try:
            self.handle(delivery)
        except Exception:  # the last line of defence: a bug must not kill the pool thread silently
            log.exception("unexpected error while handling a delivery")
            self._dead_letter(delivery, "internal_error", "see the scorer's log", self._config.max_attempts)
        finally:
            self._consumer.commit(delivery)

    def handle(self, delivery: Delivery) -> None:
        self._metrics.records_consumed.inc()
        if delivery.abandoned >= self._config.max_attempts:
            # Checked before parsing: the parse itself may be what kills the process.
            self._dead_letter(delivery, "scorer_crashed",
                              f"{delivery.abandoned} scorers stopped without finishing this record "
                              "(a crash, an OOM kill or an eviction while scoring it)", delivery.abandoned)
            return
        try:
            record = Record.from_json(delivery.value)
        except RecordError as e:
            self._dead_letter(delivery, e.reason, e.detail, 1)
            return
        if self._deduper is not None and self._deduper.seen(record.id):
            self._metrics.records_skipped.labels(reason="duplicate").inc()
            return
        if self._pacer is not None:
            paced, reason = self._pacer.admit(record)
            if paced is None:
                self._metrics.records_skipped.labels(reason=reason).inc()
                return
            record = paced
        text = record_text(record)
        started = time.perf_counter()
        attempt = 0
        judge, verdict = self._judge, None
        while True:
            try:
                if self._cascade is not None:
                    outcomes, judge, verdict = self._cascade.score(record, text)
                else:
                    outcomes = score_text(self._judge, self._metric_fns, text)
                break
            except RecordSkipped as e:
                self._metrics.records_skipped.labels(reason=e.reason).inc()
                return
            except JudgeUnavailable:
                # Scoring pauses while the judge is down: the record waits rather than fail.
                self._metrics.judge_unavailable_waits.inc()
                if self._stop.wait(JUDGE_UNAVAILABLE_WAIT_S):
                    self._dead_letter(delivery, "judge_unavailable", "the judge was down at shutdown", attempt + 1)
                    return
            except Exception as e:
                # Unexpected faults may be transient (a judge hiccup the judge did not classify):
                # retry, then dead-letter with the reason rather than block the stream.
                attempt += 1
                log.warning("scoring record %s failed (attempt %d): %s", record.id, attempt, type(e).__name__)
                if attempt >= self._config.max_attempts:
                    self._dead_letter(delivery, "scoring_error", f"{type(e).__name__}: {e}", attempt)
                    return
        elapsed = time.perf_counter() - started
        if self._pacer is not None:
            self._pacer.scored(sum(o.usage.cost_usd for o in outcomes.values()))
        # Observers first: once a record's scores message is out, its scores are on /metrics too.
        scored = ScoredRecord(self._bounded(record), outcomes, elapsed, judge.name, verdict, judge.model)
        for observer in self._observers:
            observer.on_scores(scored)
        self._scores.publish(record.id, self._message(record, outcomes, elapsed, judge, verdict))

    def _bounded(self, record: Record) -> Record:
        """The record with its span values as labels may carry them: bounded once, here, so every
        observer exports the same service, route and model."""
        service, route, model = self._labels(record.service, record.route, record.model)
        return dataclasses.replace(record, service=service, route=route, model=model)

    def _dead_letter(self, delivery: Delivery, reason: str, detail: str, attempts: int) -> None:
        self._dead_letters.publish(delivery.value, reason, detail, attempts)
        self._metrics.records_dead_lettered.labels(reason=reason).inc()

    def _message(self, record: Record, outcomes: dict[str, MetricOutcome], elapsed: float,
                 judge: Judge, verdict: CascadeVerdict | None) -> dict[str, Any]:
        total = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
        for o in outcomes.values():
            total["calls"] += o.usage.calls
            total["prompt_tokens"] += o.usage.prompt_tokens
            total["completion_tokens"] += o.usage.completion_tokens
            total["cost_usd"] += o.usage.cost_usd
        offline = None
        if verdict is not None and verdict.offline_outcomes and self._cascade is not None:
            # The expensive judge was asked: its verdicts are shown, the offline judge's go beside
            # them, so a metric the expensive judge failed on still has a score to look at.
            by = self._cascade.offline_judge
            offline = {"judge": {"name": by.name, "model": by.model},
                       "metrics": {name: {**o.to_dict(), "judge": by.name}
                                   for name, o in verdict.offline_outcomes.items()}}
        return scores_message(
            record,
            {name: {**o.to_dict(), "judge": judge.name} for name, o in outcomes.items()},
            {"name": judge.name, "model": judge.model},
            total,
            elapsed,
            offline,
        )
