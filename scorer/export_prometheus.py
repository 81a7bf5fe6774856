"""The scorer's Prometheus families, on an explicit registry.

Names follow Prometheus conventions: `_total` for counters, base units (`_seconds`), scores are
unitless ratios in [0, 1]. Label values that come from spans pass through a LabelGuard first.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric

METRIC_NAMES = ("faithfulness", "answer_relevancy", "context_relevancy")
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
JUDGE_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ScorerMetrics:
    def __init__(self, registry: CollectorRegistry, with_route: bool = False) -> None:
        self.with_route = with_route
        score_labels = ["service", "route"] if with_route else ["service"]
        self.score = {
            name: Histogram(
                f"ragpulse_{name}_score",
                f"{name.replace('_', ' ').capitalize()} of scored records (0..1), unweighted.",
                score_labels,
                buckets=SCORE_BUCKETS,
                registry=registry,
            )
            for name in METRIC_NAMES
        }
        self.weighted_sum = Counter(
            "ragpulse_score_weighted_sum",
            "Sum of adjusted count x score per metric: divide by ragpulse_score_weight_total for the "
            "sampling-weighted mean that stays right across services sampled at different rates.",
            ["service", "metric"],
            registry=registry,
        )
        self.weight = Counter(
            "ragpulse_score_weight",
            "Sum of the adjusted counts (1/sampling probability) of scored records per metric.",
            ["service", "metric"],
            registry=registry,
        )
        self.bad_weight = Counter(
            "ragpulse_score_below_threshold_weight",
            "Sum of the adjusted counts of records whose score fell below the metric's bad-event "
            "threshold (the error-budget's bad events).",
            ["service", "metric"],
            registry=registry,
        )
        self.rolling_mean = Gauge(
            "ragpulse_score_rolling_mean",
            "Sampling-weighted mean of the most recent scores (window in the config).",
            ["service", "metric"],
            registry=registry,
        )
        self.records_consumed = Counter(
            "ragpulse_scorer_records_consumed",
            "Records taken off the bus by this scorer.",
            registry=registry,
        )
        self.records_scored = Counter(
            "ragpulse_records_scored",
            "Records scored (at least one metric computed or failed by a counted reason).",
            ["service"],
            registry=registry,
        )
        self.records_skipped = Counter(
            "ragpulse_scorer_records_skipped",
            "Records the scorer did not score, by rule (duplicate delivery, judge budget spent).",
            ["reason"],
            registry=registry,
        )
        self.records_dead_lettered = Counter(
            "ragpulse_records_dead_lettered",
            "Records sent to the dead-letter sink, by reason.",
            ["reason"],
            registry=registry,
        )
        self.metric_failures = Counter(
            "ragpulse_metric_failures",
            "Metric computations that gave no score, by metric and reason. Never a score of 0.",
            ["metric", "reason"],
            registry=registry,
        )
        self.judge_calls = Counter(
            "ragpulse_judge_calls",
            "Calls made to the judge, by judge and metric.",
            ["judge", "metric"],
            registry=registry,
        )
        self.judge_requests = Counter(
            "ragpulse_judge_requests",
            "Metric computations sent to the judge, by outcome (ok or the failure reason).",
            ["judge", "outcome"],
            registry=registry,
        )
        self.judge_latency = Histogram(
            "ragpulse_judge_latency_seconds",
            "Time the judge spent on one metric of one record.",
            ["judge", "metric"],
            buckets=JUDGE_LATENCY_BUCKETS,
            registry=registry,
        )
        self.judge_tokens = Counter(
            "ragpulse_judge_tokens",
            "Tokens the judge used, by kind (prompt, completion).",
            ["judge", "kind"],
            registry=registry,
        )
        self.judge_cost = Counter(
            "ragpulse_judge_cost_usd",
            "Judge cost in US dollars from the configured price table.",
            ["judge"],
            registry=registry,
        )
        self.judge_unavailable_waits = Counter(
            "ragpulse_judge_unavailable_waits",
            "Times a record waited because the judge's endpoint was down (scoring paused, nothing dropped).",
            registry=registry,
        )
        self.queue_depth = Gauge(
            "ragpulse_queue_depth",
            "Records waiting to be scored (in-process queue depth, or Kafka consumer lag).",
            registry=registry,
        )
        self.scoring_latency = Histogram(
            "ragpulse_record_scoring_seconds",
            "Wall time to score one record, all metrics.",
            buckets=JUDGE_LATENCY_BUCKETS,
            registry=registry,
        )


class JudgeEndpointCollector:
    """Exports, at scrape time, the request and failure counts a judge keeps about its endpoint
    (`requests` and `failures` counters by outcome: ok, cache_hit, rate_limited, timeout, ...).
    Judges without an endpoint (the local one) have none and export nothing."""

    def __init__(self, judge: object) -> None:
        self._judge = judge

    def collect(self) -> Iterator[Metric]:
        name = str(getattr(self._judge, "name", "unknown"))
        for attr, family, help_text, label in (
            ("requests", "ragpulse_judge_endpoint_requests", "Requests to the judge's endpoint, by outcome.",
             "outcome"),
            ("failures", "ragpulse_judge_endpoint_failures", "Failed judge answers after retries, by reason.",
             "reason"),
        ):
            counts = getattr(self._judge, attr, None)
            if counts is None:
                continue
            metric = CounterMetricFamily(family, help_text, labels=["judge", label])
            for key, value in dict(counts).items():
                metric.add_metric([name, key], value)
            yield metric
