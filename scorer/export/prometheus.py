"""The Prometheus export of scores: a worker observer, beside drift and history.

Each scored record becomes its score histograms (with the record's trace id as exemplar), the
sampling-weighted counters behind the dashboards' means and error budget, the rolling mean, its
metric failures and the judge's usage.
The families are declared in ragpulse/core/telemetry_catalog.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric

from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.metric_names import METRIC_NAMES
from ragpulse.scorer.metrics.aspect_critique import ASPECT_PREFIX
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.weighted import WeightedWindow


class PrometheusScoreExporter:
    def __init__(
        self,
        registry: CollectorRegistry,
        judge: str,
        rolling_window: int,
        bad_event_threshold: dict[str, float],
        with_route: bool = False,
    ) -> None:
        self._rolling_window = rolling_window
        self._bad_threshold = dict(bad_event_threshold)
        self._with_route = with_route
        self._score = {
            name: catalog.histogram(registry, f"ragpulse_{name}_score", with_optional_labels=with_route)
            for name in METRIC_NAMES
        }
        self._weighted_sum = catalog.counter(registry, "ragpulse_score_weighted_sum_total")
        self._weight = catalog.counter(registry, "ragpulse_score_weight_total")
        self._bad_weight = catalog.counter(registry, "ragpulse_score_below_threshold_weight_total")
        self._rolling_mean = catalog.gauge(registry, "ragpulse_score_rolling_mean")
        self._records_scored = catalog.counter(registry, "ragpulse_records_scored_total")
        self._metric_failures = catalog.counter(registry, "ragpulse_metric_failures_total")
        self._aspect_verdicts = catalog.counter(registry, "ragpulse_aspect_verdicts_total")
        self._judge_calls = catalog.counter(registry, "ragpulse_judge_calls_total")
        self._judge_requests = catalog.counter(registry, "ragpulse_judge_requests_total")
        self._judge_latency = catalog.histogram(registry, "ragpulse_judge_latency_seconds")
        self._scoring_latency = catalog.histogram(registry, "ragpulse_record_scoring_seconds")
        self._tokens = catalog.counter(registry, "ragpulse_judge_tokens_total")
        self._cost = catalog.counter(registry, "ragpulse_judge_cost_usd_total")
        self._usage_cache: dict[str, _UsageChildren] = {}
        # Created now and touched on every record, zero included: the cost panel shows 0 for a
        # free judge, not "no data".
        self._usage_children(judge)
        # labels() takes a lock and builds a tuple per call: children are looked up once per label
        # set, which the worker's LabelGuards bound.
        self._score_cache: dict[tuple[str, str, str], _ScoreChildren] = {}
        self._judge_cache: dict[tuple[str, str], _JudgeChildren] = {}
        self._scored_cache: dict[str, Any] = {}
        # Per (service, metric), like the gauge: every route of a service feeds one window.
        self._windows: dict[tuple[str, str], WeightedWindow] = {}
        self._rolling_lock = threading.Lock()

    def on_scores(self, scored: ScoredRecord) -> None:
        record = scored.record
        route = record.route if self._with_route else ""
        weight = record.sampling.adjusted_count
        # The record's trace as an exemplar on each score (OpenMetrics, when the scraper asks for
        # it): a dashboard goes from a bad bucket to the trace of an answer that fell in it.
        exemplar = {"trace_id": record.trace_id, "span_id": record.span_id}
        prompt_tokens = completion_tokens = 0
        cost = 0.0
        for name, o in scored.outcomes.items():
            judge_children = self._judge_children(scored.judge, name)
            judge_children.latency.observe(o.seconds)
            judge_children.calls.inc(o.usage.calls)
            prompt_tokens += o.usage.prompt_tokens
            completion_tokens += o.usage.completion_tokens
            cost += o.usage.cost_usd
            if o.value is None:
                reason = o.error or "unknown"
                self._judge_requests.labels(judge=scored.judge, outcome=reason).inc()
                self._metric_failures.labels(metric=name, reason=reason).inc()
                continue
            judge_children.ok.inc()
            if name.startswith(ASPECT_PREFIX):
                # A verdict, not a score: no histogram, no threshold, no rolling mean.
                self._aspect_verdicts.labels(service=record.service, aspect=name.removeprefix(ASPECT_PREFIX),
                                             verdict="yes" if o.value >= 0.5 else "no").inc()
                continue
            children = self._score_children(record.service, route, name)
            children.score.observe(o.value, exemplar)
            children.weighted_sum.inc(weight * o.value)
            children.weight.inc(weight)
            if o.value < self._bad_threshold.get(name, 0.0):
                children.bad_weight.inc(weight)
            with self._rolling_lock:
                children.window.add(o.value, weight)
                # Clamped: the running sums' rounding may step just outside [0, 1].
                children.rolling_mean.set(min(1.0, max(0.0, children.window.sums.mean)))
        usage = self._usage_children(scored.judge)
        usage.prompt_tokens.inc(prompt_tokens)
        usage.completion_tokens.inc(completion_tokens)
        usage.cost.inc(cost)
        counter = self._scored_cache.get(record.service)
        if counter is None:
            counter = self._scored_cache[record.service] = self._records_scored.labels(service=record.service)
        counter.inc()
        self._scoring_latency.observe(scored.seconds)

    def _score_children(self, service: str, route: str, metric: str) -> _ScoreChildren:
        """Created on the first score only, so a metric that always fails has no series (no 0/0)."""
        key = (service, route, metric)
        children = self._score_cache.get(key)
        if children is None:
            score_labels = {"service": service, "route": route} if self._with_route else {"service": service}
            children = self._score_cache[key] = _ScoreChildren(
                score=self._score[metric].labels(**score_labels),
                weighted_sum=self._weighted_sum.labels(service=service, metric=metric),
                weight=self._weight.labels(service=service, metric=metric),
                bad_weight=self._bad_weight.labels(service=service, metric=metric),
                rolling_mean=self._rolling_mean.labels(service=service, metric=metric),
                window=self._windows.setdefault((service, metric), WeightedWindow(self._rolling_window)),
            )
        return children

    def _judge_children(self, judge: str, metric: str) -> _JudgeChildren:
        children = self._judge_cache.get((judge, metric))
        if children is None:
            children = self._judge_cache[(judge, metric)] = _JudgeChildren(
                ok=self._judge_requests.labels(judge=judge, outcome="ok"),
                latency=self._judge_latency.labels(judge=judge, metric=metric),
                calls=self._judge_calls.labels(judge=judge, metric=metric),
            )
        return children

    def _usage_children(self, judge: str) -> _UsageChildren:
        children = self._usage_cache.get(judge)
        if children is None:
            children = self._usage_cache[judge] = _UsageChildren(
                prompt_tokens=self._tokens.labels(judge=judge, kind="prompt"),
                completion_tokens=self._tokens.labels(judge=judge, kind="completion"),
                cost=self._cost.labels(judge=judge),
            )
        return children


@dataclass(frozen=True)
class _UsageChildren:
    prompt_tokens: Any
    completion_tokens: Any
    cost: Any


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
    # The last scorer.rolling_window scores of the service and metric, behind rolling_mean.
    window: WeightedWindow


class JudgeEndpointCollector:
    """Exports, at scrape time, the request and failure counts a judge keeps about its endpoint
    (`requests` and `failures` counters by outcome: ok, cache_hit, rate_limited, timeout, ...) and
    what it learned of the endpoint's capacity (`concurrency`: the limit, requests in flight, the
    latency baseline).
    Judges without an endpoint (the local one) have none and export nothing."""

    def __init__(self, judge: object) -> None:
        self._judge = judge

    def collect(self) -> Iterator[Metric]:
        name = str(getattr(self._judge, "name", "unknown"))
        for attr, family in (
            ("requests", "ragpulse_judge_endpoint_requests_total"),
            ("failures", "ragpulse_judge_endpoint_failures_total"),
        ):
            counts = getattr(self._judge, attr, None)
            if counts is None:
                continue
            metric = catalog.family(family)
            for key, value in dict(counts).items():
                metric.add_metric([name, key], value)
            yield metric
        concurrency = getattr(self._judge, "concurrency", None)
        if concurrency is None:
            return
        state = concurrency.state()
        for family, value in (
            ("ragpulse_judge_endpoint_concurrency_limit", state.limit),
            ("ragpulse_judge_endpoint_in_flight", state.in_flight),
            ("ragpulse_judge_endpoint_latency_baseline_seconds", state.baseline_s),
        ):
            metric = catalog.family(family)
            if value is not None:
                metric.add_metric([name], value)
            yield metric
