"""The scoring worker: take records off the bus, score them, export, publish, then commit.

Every delivery ends in exactly one of: scored, skipped by a named rule, or dead-lettered with its
reason — and a counter says which. A delivery is committed only after that, so a crash means a
redelivery, never a loss.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from ragpulse.core.bus import Delivery, RecordConsumer
from ragpulse.core.labels import LabelGuard
from ragpulse.core.wire import Record, RecordError, scores_message
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.export_prometheus import ScorerMetrics
from ragpulse.scorer.judge.base import Judge, RecordText
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.pacing import BudgetPacer
from ragpulse.scorer.score import JudgeUnavailable, MetricOutcome, RecordSkipped, metric_functions, score_text
from ragpulse.scorer.sinks import DeadLetterSink, ScoreSink

log = logging.getLogger(__name__)

# How long a record waits before asking a judge that was down again.
JUDGE_UNAVAILABLE_WAIT_S = 5.0


class ScoreObserver(Protocol):
    def on_scores(self, record: Record, values: dict[str, float], detail: dict[str, Any]) -> None: ...


class RecordDeduper(Protocol):
    def seen(self, record_id: str) -> bool:
        """True if this id was already scored (a redelivery); records it otherwise."""
        ...


class RollingMeans:
    """Sampling-weighted mean of the last `window` scores per (service, metric), kept as running
    sums so an update costs the same whatever the window."""

    def __init__(self, window: int) -> None:
        self._window = window
        self._values: dict[tuple[str, str], collections.deque[tuple[float, float]]] = {}
        self._sums: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def add(self, key: tuple[str, str], value: float, weight: float) -> float:
        with self._lock:
            values = self._values.setdefault(key, collections.deque())
            sums = self._sums.setdefault(key, [0.0, 0.0])
            values.append((value, weight))
            sums[0] += value * weight
            sums[1] += weight
            if len(values) > self._window:
                old_value, old_weight = values.popleft()
                sums[0] -= old_value * old_weight
                sums[1] -= old_weight
            return min(1.0, max(0.0, sums[0] / sums[1]))


class Worker:
    def __init__(
        self,
        consumer: RecordConsumer,
        judge: Judge,
        config: ScorerConfig,
        metrics: ScorerMetrics,
        scores: ScoreSink,
        dead_letters: DeadLetterSink,
        observers: list[ScoreObserver],
        service_label: LabelGuard,
        route_label: LabelGuard,
        deduper: RecordDeduper | None = None,
        pacer: BudgetPacer | None = None,
    ) -> None:
        self._consumer = consumer
        self._judge = judge
        self._config = config
        self._metric_fns: dict[str, Metric] = metric_functions(config.metrics, config.answer_relevancy_questions)
        self._metrics = metrics
        self._scores = scores
        self._dead_letters = dead_letters
        self._observers = observers
        self._service_label = service_label
        self._route_label = route_label
        self._deduper = deduper
        self._pacer = pacer
        self._rolling = RollingMeans(config.rolling_window)
        self._score_cache: dict[tuple[str, str, str], _ScoreChildren] = {}
        self._judge_cache: dict[str, _JudgeChildren] = {}
        self._scored_cache: dict[str, Any] = {}
        judge_name = judge.name
        # Touched on every record, zero included: the cost panel shows 0 for a free judge, not "no data".
        self._prompt_tokens = metrics.judge_tokens.labels(judge=judge_name, kind="prompt")
        self._completion_tokens = metrics.judge_tokens.labels(judge=judge_name, kind="completion")
        self._cost = metrics.judge_cost.labels(judge=judge_name)
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="score")
        # Bounds work taken off the bus and not yet finished, so a stop loses nothing uncommitted.
        self._slots = threading.BoundedSemaphore(config.concurrency * 2)
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
            deliveries = self._consumer.poll(max_records=self._config.concurrency, timeout_s=0.2)
            for delivery in deliveries:
                if self._config.concurrency == 1:
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
        text = RecordText(question=record.question, contexts=record.contexts, answer=record.answer)
        started = time.perf_counter()
        attempt = 0
        while True:
            try:
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
        self._export(record, outcomes, elapsed)
        self._scores.publish(record.id, self._message(record, outcomes, elapsed))
        values = {name: o.value for name, o in outcomes.items() if o.value is not None}
        detail = {name: o.detail for name, o in outcomes.items()}
        # Observers export labels too: they see the same bounded service and route as our families.
        bounded = dataclasses.replace(
            record, service=self._service_label(record.service), route=self._route_label(record.route)
        )
        for observer in self._observers:
            observer.on_scores(bounded, values, detail)

    def _dead_letter(self, delivery: Delivery, reason: str, detail: str, attempts: int) -> None:
        self._dead_letters.publish(delivery.value, reason, detail, attempts)
        self._metrics.records_dead_lettered.labels(reason=reason).inc()

    def _message(self, record: Record, outcomes: dict[str, MetricOutcome], elapsed: float) -> dict[str, Any]:
        total = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
        for o in outcomes.values():
            total["calls"] += o.usage.calls
            total["prompt_tokens"] += o.usage.prompt_tokens
            total["completion_tokens"] += o.usage.completion_tokens
            total["cost_usd"] += o.usage.cost_usd
        return scores_message(
            record,
            {name: o.to_dict() for name, o in outcomes.items()},
            {"name": self._judge.name, "model": self._judge.model},
            total,
            elapsed,
        )

    def _score_children(self, service: str, route: str, metric: str) -> _ScoreChildren:
        """The labelled children of one (service, route, metric), looked up once: labels() takes a
        lock and builds a tuple per call, and the label sets are bounded by the LabelGuards.
        Created on the first score only, so a metric that always fails has no series (no 0/0)."""
        key = (service, route, metric)
        children = self._score_cache.get(key)
        if children is None:
            m = self._metrics
            score_labels = {"service": service, "route": route} if m.with_route else {"service": service}
            children = self._score_cache[key] = _ScoreChildren(
                score=m.score[metric].labels(**score_labels),
                weighted_sum=m.weighted_sum.labels(service=service, metric=metric),
                weight=m.weight.labels(service=service, metric=metric),
                bad_weight=m.bad_weight.labels(service=service, metric=metric),
                rolling_mean=m.rolling_mean.labels(service=service, metric=metric),
            )
        return children

    def _judge_children(self, metric: str) -> _JudgeChildren:
        children = self._judge_cache.get(metric)
        if children is None:
            m, judge = self._metrics, self._judge.name
            children = self._judge_cache[metric] = _JudgeChildren(
                ok=m.judge_requests.labels(judge=judge, outcome="ok"),
                latency=m.judge_latency.labels(judge=judge, metric=metric),
                calls=m.judge_calls.labels(judge=judge, metric=metric),
            )
        return children

    def _export(self, record: Record, outcomes: dict[str, MetricOutcome], elapsed: float) -> None:
        m = self._metrics
        service = self._service_label(record.service)
        route = self._route_label(record.route) if m.with_route else ""
        weight = record.sampling.adjusted_count
        prompt_tokens = completion_tokens = 0
        cost = 0.0
        for name, o in outcomes.items():
            judge_children = self._judge_children(name)
            judge_children.latency.observe(o.seconds)
            judge_children.calls.inc(o.usage.calls)
            prompt_tokens += o.usage.prompt_tokens
            completion_tokens += o.usage.completion_tokens
            cost += o.usage.cost_usd
            if o.value is None:
                m.judge_requests.labels(judge=self._judge.name, outcome=o.error or "unknown").inc()
                m.metric_failures.labels(metric=name, reason=o.error or "unknown").inc()
                continue
            judge_children.ok.inc()
            children = self._score_children(service, route, name)
            children.score.observe(o.value)
            children.weighted_sum.inc(weight * o.value)
            children.weight.inc(weight)
            if o.value < self._config.bad_event_threshold.get(name, 0.0):
                children.bad_weight.inc(weight)
            children.rolling_mean.set(self._rolling.add((service, name), o.value, weight))
        self._prompt_tokens.inc(prompt_tokens)
        self._completion_tokens.inc(completion_tokens)
        self._cost.inc(cost)
        scored = self._scored_cache.get(service)
        if scored is None:
            scored = self._scored_cache[service] = m.records_scored.labels(service=service)
        scored.inc()
        m.scoring_latency.observe(elapsed)


@dataclass(frozen=True)
class _JudgeChildren:
    ok: Any
    latency: Any
    calls: Any


@dataclass(frozen=True)
class _ScoreChildren:
    score: Any
    weighted_sum: Any
    weight: Any
    bad_weight: Any
    rolling_mean: Any
