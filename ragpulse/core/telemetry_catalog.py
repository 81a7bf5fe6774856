"""Every Prometheus family ragpulse exports, declared once: name, type, help, labels, component.

Code builds its families from here (counter(), gauge(), histogram(), family()), so a family that
is not declared cannot be built, and docs/metrics.md is generated from here (docs/generate.py), so
a declared family is documented. tests/core/test_telemetry_catalog.py checks that no module builds a
family any other way and that a real run registers exactly these.

Names follow Prometheus conventions: counters are declared by the name they are queried by
(`_total`), base units (`_seconds`), scores are unitless ratios in [0, 1]. Families with dashboards
or alert rules on them (grafana/, deploy/prometheus/) keep their names, labels and meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ragpulse.core.metric_names import METRIC_NAMES

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

COLLECTOR = "collector"
SCORER = "scorer"
DRIFT = "scorer: drift detector"
HISTORY = "scorer: history (segments, worst records)"
LABELS = "label bounds (collector and scorer: the prometheus section)"
CASCADE = "scorer: judge cascade and quality estimates (scorer.cascade)"
JUDGE_ENDPOINT = "scorer: judge endpoint"
EVALUATION_EXPORT = "scorer: evaluations written back to your tracing backend (export.otlp)"
KAFKA_PRODUCER = "Kafka producers (collector records; scorer scores and dead letters)"
KAFKA_CONSUMER = "Kafka consumer (scorer)"
OTLP_METRICS = "every process: its metrics sent over OTLP (export.otlp_metrics)"
TLS = "TLS on the HTTP servers (collector: OTLP/HTTP receiver; scorer: /metrics and the live page)"


@dataclass(frozen=True)
class FamilySpec:
    name: str  # as queried: counters end in _total
    kind: str  # counter, gauge or histogram
    help: str
    labels: tuple[str, ...]
    component: str
    # Labels present only when configured (route on the score histograms: prometheus.route_label).
    optional_labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


class UndeclaredFamily(LookupError):
    pass


_BY_SERVICE_METRIC = ("service", "metric")

FAMILIES: tuple[FamilySpec, ...] = (
    # --- collector/telemetry.py
    FamilySpec("ragpulse_otlp_requests_total", "counter",
               "OTLP export requests, by transport (grpc, http) and outcome (ok, invalid, retry_later).",
               ("transport", "outcome"), COLLECTOR),
    FamilySpec("ragpulse_otlp_requests_refused_total", "counter",
               "OTLP export requests refused (each also counted in ragpulse_otlp_requests_total as invalid "
               "or retry_later), by transport and reason: bus_full, connections (receiver.max_connections), "
               "too_large (receiver.max_request_bytes), json_depth (receiver.max_json_depth), read_timeout "
               "(receiver.read_timeout_s), framing (broken Content-Length or chunked framing), malformed "
               "(not valid protobuf, JSON, gzip or Unicode), unsupported (content type or encoding), "
               "unauthenticated (no or a wrong receiver.auth token), host (a Host name not in "
               "receiver.allowed_hosts), internal (a ragpulse bug: see its log).",
               ("transport", "reason"), COLLECTOR),
    # --- ragpulse/core/tls_telemetry.py (gRPC gives no hook for its handshakes: not counted there)
    FamilySpec("ragpulse_tls_handshake_failures_total", "counter",
               "TLS handshakes that failed on an HTTP server (otlp_http, metrics, page), by reason: not_tls "
               "(plain HTTP or other bytes), no_client_certificate and client_certificate_rejected (mutual "
               "TLS), server_certificate_rejected (the client's alert: it does not trust our certificate), "
               "timeout (receiver.read_timeout_s), closed (the client went away), protocol (anything else: "
               "versions, ciphers).",
               ("server", "reason"), TLS),
    FamilySpec("ragpulse_tls_reloads_total", "counter",
               "Certificate reloads after the TLS files changed (tls.reload_interval_s), by server (otlp_http, "
               "otlp_grpc, metrics, page) and outcome: ok, or failed (the files did not load; the certificate "
               "in use is kept and a warning logged).",
               ("server", "outcome"), TLS),
    FamilySpec("ragpulse_spans_received_total", "counter", "Spans received over OTLP.", ("transport",), COLLECTOR),
    FamilySpec("ragpulse_records_received_total", "counter",
               "RAG records extracted from spans (one per question/contexts/answer triple).", ("service",), COLLECTOR),
    FamilySpec("ragpulse_records_sampled_total", "counter",
               "RAG records kept by sampling and handed to the bus.", ("service",), COLLECTOR),
    FamilySpec("ragpulse_records_dropped_total", "counter",
               "RAG records not handed to the bus, by rule: sampled_out, bus_full, too_large (over the Kafka "
               "message limit even when cut), or why a span's RAG attributes were rejected (empty_answer, "
               "contexts_not_list, ...).",
               ("service", "reason"), COLLECTOR),
    FamilySpec("ragpulse_sampling_decisions_total", "counter",
               "Sampling decisions on RAG records, by service, rule (the sampling.policies entry that decided, "
               "service:<name> for sampling.per_service, default) and decision (kept, dropped).",
               ("service", "rule", "decision"), COLLECTOR),
    FamilySpec("ragpulse_sampling_upstream_total", "counter",
               "RAG records whose span carried an upstream sampler's OpenTelemetry tracestate (ot=th:...), by "
               "outcome: threshold (honoured: adjusted counts multiply), invalid (a malformed th or rv, ignored), "
               "inconsistent (the trace's randomness is below the threshold: upstream did not decide on it).",
               ("outcome",), COLLECTOR),
    FamilySpec("ragpulse_spans_without_rag_triple_total", "counter",
               "Spans (or assembled traces) that carried no question/contexts/answer triple: counted "
               "and dropped, never an error.", (), COLLECTOR),
    FamilySpec("ragpulse_records_truncated_total", "counter",
               "Records whose question, contexts or answer were cut to extract.max_question_chars, "
               "max_context_chars or max_answer_chars (the record says truncated).", ("service",), COLLECTOR),
    FamilySpec("ragpulse_trace_spans_total", "counter",
               "Spans of multi-span conventions, by outcome: buffered, sampled_out (trace dropped by "
               "sampling before buffering), late (trace already assembled), over_limit (trace at its span cap).",
               ("outcome",), COLLECTOR),
    FamilySpec("ragpulse_traces_assembled_total", "counter",
               "Buffered traces assembled, by trigger: root (root span plus grace), timeout, buffer_full "
               "(oldest assembled early to make room), shutdown.", ("trigger",), COLLECTOR),
    FamilySpec("ragpulse_assembly_pending_traces", "gauge", "Traces buffered for assembly.", (), COLLECTOR),
    FamilySpec("ragpulse_assembly_pending_bytes", "gauge",
               "Encoded size of the spans buffered for assembly.", (), COLLECTOR),
    # --- scorer/export/prometheus.py: the scores
    *(FamilySpec(f"ragpulse_{name}_score", "histogram",
                 f"{name.replace('_', ' ').capitalize()} of scored records (0..1), unweighted.",
                 ("service",), SCORER, optional_labels=("route",), buckets=SCORE_BUCKETS)
      for name in METRIC_NAMES),
    FamilySpec("ragpulse_score_weighted_sum_total", "counter",
               "Sum of adjusted count x score per metric: divide by ragpulse_score_weight_total for the "
               "sampling-weighted mean that stays right across services sampled at different rates.",
               _BY_SERVICE_METRIC, SCORER),
    FamilySpec("ragpulse_score_weight_total", "counter",
               "Sum of the adjusted counts (1/sampling probability) of scored records per metric.",
               _BY_SERVICE_METRIC, SCORER),
    FamilySpec("ragpulse_score_below_threshold_weight_total", "counter",
               "Sum of the adjusted counts of records whose score fell below the metric's bad-event "
               "threshold (the error-budget's bad events).", _BY_SERVICE_METRIC, SCORER),
    FamilySpec("ragpulse_score_rolling_mean", "gauge",
               "Sampling-weighted mean of the most recent scores (the last scorer.rolling_window).",
               _BY_SERVICE_METRIC, SCORER),
    FamilySpec("ragpulse_aspect_verdicts_total", "counter",
               "Aspect critique verdicts (scorer.aspects) by criterion and verdict (yes, no): the share of yes "
               "is yes / (yes + no). Failed verdicts count in ragpulse_metric_failures_total "
               "(metric aspect:<name>).", ("service", "aspect", "verdict"), SCORER),
    FamilySpec("ragpulse_records_scored_total", "counter",
               "Records scored (at least one metric computed or failed by a counted reason).", ("service",), SCORER),
    FamilySpec("ragpulse_metric_failures_total", "counter",
               "Metric computations that gave no score, by metric and reason. Never a score of 0.",
               ("metric", "reason"), SCORER),
    FamilySpec("ragpulse_judge_calls_total", "counter",
               "Calls made to the judge, by judge and metric.", ("judge", "metric"), SCORER),
    FamilySpec("ragpulse_judge_requests_total", "counter",
               "Metric computations sent to the judge, by outcome (ok or the failure reason). With the "
               "cascade on, each record counts under the judge whose scores it shows.",
               ("judge", "outcome"), SCORER),
    FamilySpec("ragpulse_judge_latency_seconds", "histogram",
               "Time the judge spent on one metric of one record.", ("judge", "metric"), SCORER,
               buckets=LATENCY_BUCKETS),
    FamilySpec("ragpulse_judge_tokens_total", "counter",
               "Tokens the judge used, by kind (prompt, completion).", ("judge", "kind"), SCORER),
    FamilySpec("ragpulse_judge_cost_usd_total", "counter",
               "Judge cost in US dollars from the configured price table.", ("judge",), SCORER),
    FamilySpec("ragpulse_record_scoring_seconds", "histogram",
               "Wall time to score one record, all metrics.", (), SCORER, buckets=LATENCY_BUCKETS),
    # --- scorer/worker.py: what became of each delivery
    FamilySpec("ragpulse_scorer_records_consumed_total", "counter",
               "Records taken off the bus by this scorer.", (), SCORER),
    FamilySpec("ragpulse_scorer_records_skipped_total", "counter",
               "Records the scorer did not score, by rule: duplicate (a redelivery), budget_paced, "
               "budget_exhausted (the judge's cost budget).",
               ("reason",), SCORER),
    FamilySpec("ragpulse_records_dead_lettered_total", "counter",
               "Records sent to the dead-letter sink, by reason: invalid_json, invalid_record, "
               "unsupported_version, scoring_error, judge_unavailable, scorer_crashed, internal_error.",
               ("reason",), SCORER),
    FamilySpec("ragpulse_judge_unavailable_waits_total", "counter",
               "Times a record waited because the judge's endpoint was down (scoring paused, nothing dropped).",
               (), SCORER),
    FamilySpec("ragpulse_queue_depth", "gauge",
               "Records waiting to be scored (in-process queue depth, or Kafka consumer lag).", (), SCORER),
    # --- scorer/estimate/drift.py (computed at scrape time)
    FamilySpec("ragpulse_score_drift_statistic", "gauge",
               "Two-sided CUSUM statistic of the score against its baseline, in baseline standard "
               "deviations (the larger of the downward and upward sums).", _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_drift_alarm", "gauge",
               "1 while the drift statistic is above ragpulse_score_drift_threshold, else 0.",
               _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_drift_direction", "gauge",
               "-1 while a downward drift alarm is raised, +1 for an upward one, 0 otherwise.",
               _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_baseline_mean", "gauge",
               "Sampling-weighted baseline mean the drift detector compares against.", _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_current_mean", "gauge",
               "Sampling-weighted mean of the detector's recent window of records.", _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_current_mean_lower", "gauge",
               "Lower bound of the confidence interval of ragpulse_score_current_mean.", _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_current_mean_upper", "gauge",
               "Upper bound of the confidence interval of ragpulse_score_current_mean.", _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_drift_samples", "gauge",
               "Records seen by the drift detector; it arms at ragpulse_score_drift_min_samples.",
               _BY_SERVICE_METRIC, DRIFT),
    FamilySpec("ragpulse_score_drift_threshold", "gauge",
               "CUSUM alarm threshold h (baseline standard deviations).", (), DRIFT),
    FamilySpec("ragpulse_score_drift_min_samples", "gauge", "Records a detector needs before it can alarm.", (), DRIFT),
    # --- scorer/estimate/cascade.py and estimates.py (estimates computed at scrape time; docs/estimates.md)
    FamilySpec("ragpulse_cascade_records_total", "counter",
               "Records through the judge cascade, by outcome: judged (the expensive judge was asked too), "
               "offline_only (not chosen: offline scores only), no_budget (the expensive judge's budget was "
               "spent: left out of the estimates).", ("outcome",), CASCADE),
    FamilySpec("ragpulse_cascade_residual_ratio", "gauge",
               "Mean squared residual of the recent expensive-judge verdicts against the offline score, "
               "over the older verdicts' own (both weighted 1/π), per selection metric: about 1 as usual; "
               "well above it, the offline judge has started to miss what the expensive judge sees "
               "(a drift it is blind to: retrain it or raise the share).", ("metric",), CASCADE),
    FamilySpec("ragpulse_cascade_residual_shifts_total", "counter",
               "Times ragpulse_cascade_residual_ratio rose past scorer.cascade.residual_shift_ratio, "
               "per selection metric: counted once until it falls back halfway to 1.", ("metric",), CASCADE),
    FamilySpec("ragpulse_quality_estimate", "gauge",
               "Prediction-powered estimate of the mean score the expensive judge would give every record: "
               "offline scores of all records corrected by the expensive judge's verdicts on the judged "
               "share, weighted by inclusion probability and adjusted count, exponentially decayed "
               "(scorer.cascade.estimate_half_life_s).", _BY_SERVICE_METRIC, CASCADE),
    FamilySpec("ragpulse_quality_estimate_lower", "gauge",
               "Lower bound of ragpulse_quality_estimate's confidence interval (scorer.cascade.confidence).",
               _BY_SERVICE_METRIC, CASCADE),
    FamilySpec("ragpulse_quality_estimate_upper", "gauge",
               "Upper bound of ragpulse_quality_estimate's confidence interval (scorer.cascade.confidence).",
               _BY_SERVICE_METRIC, CASCADE),
    FamilySpec("ragpulse_quality_estimate_effective_samples", "gauge",
               "Kish's effective number of records behind ragpulse_quality_estimate (decayed, weighted).",
               _BY_SERVICE_METRIC, CASCADE),
    FamilySpec("ragpulse_quality_estimate_judged_samples", "gauge",
               "Decayed number of records behind ragpulse_quality_estimate that have the expensive judge's "
               "verdict: with few of them the interval is not to be trusted.", _BY_SERVICE_METRIC, CASCADE),
    FamilySpec("ragpulse_quality_estimate_offline_weight", "gauge",
               "How much ragpulse_quality_estimate leans on the offline scores (power tuning, chosen to "
               "minimise the variance): 1 plain prediction-powered inference, 0 the expensive judge's "
               "verdicts alone.", _BY_SERVICE_METRIC, CASCADE),
    # --- scorer/web/history.py
    FamilySpec("ragpulse_label_values_truncated_total", "counter",
               "Distinct span values cut to prometheus.label_max_chars before becoming a label, by label "
               "(service, route, model).", ("label",), LABELS),
    FamilySpec("ragpulse_label_values_collapsed_total", "counter",
               "Distinct span values exported as `other`, by label: service, route or model (not on the allow-list, "
               "or beyond prometheus.label_cap distinct values), or combination (a (service, route, model) "
               "beyond prometheus.max_label_combinations, exported as (service, other, other)).",
               ("label",), LABELS),
    FamilySpec("ragpulse_segment_score_weighted_sum_total", "counter",
               "Sum of adjusted count x score per service, route, model and metric (divide by "
               "ragpulse_segment_score_weight_total for the weighted mean of a route or model).",
               ("service", "route", "model", "metric"), HISTORY),
    FamilySpec("ragpulse_segment_score_weight_total", "counter",
               "Sum of adjusted counts of scored records per service, route, model and metric.",
               ("service", "route", "model", "metric"), HISTORY),
    FamilySpec("ragpulse_recent_worst_score", "gauge",
               "The lowest faithfulness scores among each service's recent records, by record id "
               "(a bounded, churning set: look the id up on the live page or the scores topic).",
               ("service", "route", "model", "record_id"), HISTORY),
    # --- scorer/export/prometheus.py JudgeEndpointCollector: judges that call an endpoint (openai)
    FamilySpec("ragpulse_judge_endpoint_requests_total", "counter",
               "Requests to the judge's endpoint, by outcome.", ("judge", "outcome"), JUDGE_ENDPOINT),
    FamilySpec("ragpulse_judge_endpoint_failures_total", "counter",
               "Failed judge answers after retries, by reason.", ("judge", "reason"), JUDGE_ENDPOINT),
    FamilySpec("ragpulse_judge_endpoint_concurrency_limit", "gauge",
               "Requests the judge lets in flight to its endpoint at once: learned from the endpoint's "
               "latency, timeouts, 429 and 503 between 1 and openai.max_concurrency "
               "(openai.adaptive_concurrency), or max_concurrency itself.", ("judge",), JUDGE_ENDPOINT),
    FamilySpec("ragpulse_judge_endpoint_in_flight", "gauge",
               "Requests to the judge's endpoint in flight now, with those that timed out and may still be "
               "running there (they keep their slot for one usual reply time).", ("judge",), JUDGE_ENDPOINT),
    FamilySpec("ragpulse_judge_endpoint_latency_baseline_seconds", "gauge",
               "The endpoint's no-load reply time for the kind of request the judge sends most (each kind, by "
               "prompt size and reply bound, has its own; a reply far above its kind's baseline was queued). "
               "Absent until a reply came.", ("judge",), JUDGE_ENDPOINT),
    # --- scorer/export/otlp.py, with export.otlp.endpoint set
    FamilySpec("ragpulse_evaluation_spans_total", "counter",
               "Evaluation spans (one per scored record, its gen_ai.evaluation.result events attached to the "
               "evaluated span) sent to export.otlp.endpoint, by outcome: exported, failed (the backend "
               "refused or was unreachable after the exporter's retries), queue_full (dropped before "
               "export: export.otlp.max_queue spans were waiting).",
               ("outcome",), EVALUATION_EXPORT),
    # --- ragpulse/core/otlp_metrics.py
    FamilySpec("ragpulse_otlp_metric_exports_total", "counter",
               "Exports of this process's metrics to export.otlp_metrics.endpoint, by outcome: ok, failed "
               "(the endpoint refused, was unreachable or took longer than timeout_s; with delta temporality "
               "that interval's increments are lost, with cumulative the next export carries them).",
               ("outcome",), OTLP_METRICS),
    # --- ragpulse/kafka/producer.py
    FamilySpec("ragpulse_kafka_messages_delivered_total", "counter",
               "Messages the Kafka broker acknowledged (acks=all), by topic.", ("topic",), KAFKA_PRODUCER),
    FamilySpec("ragpulse_kafka_delivery_failures_total", "counter",
               "Messages that could not be delivered after the producer's retries, by topic and reason "
               "(timeout, message_too_large, authorization, unknown_topic, shutdown: given up when the "
               "collector stopped before the broker took them, ...).", ("topic", "reason"), KAFKA_PRODUCER),
    FamilySpec("ragpulse_kafka_publish_refused_total", "counter",
               "Records the publisher refused with retry-later (the OTLP client retries), by reason "
               "(buffer_full: too many unacknowledged records, or their bytes over the producer's queue).",
               ("reason",), KAFKA_PRODUCER),
    FamilySpec("ragpulse_kafka_records_truncated_total", "counter",
               "Records cut to fit bus.kafka.max_message_bytes (contexts first; the record says truncated).",
               ("service",), KAFKA_PRODUCER),
    FamilySpec("ragpulse_kafka_producer_buffered", "gauge",
               "Messages handed to the producer and not yet acknowledged or failed, by topic.",
               ("topic",), KAFKA_PRODUCER),
    # --- scorer/consume/kafka.py
    FamilySpec("ragpulse_kafka_consumer_lag", "gauge",
               "Records not yet finished by this scorer: the partition's high watermark (from the broker) "
               "minus the lowest unfinished offset.", ("topic", "partition"), KAFKA_CONSUMER),
    FamilySpec("ragpulse_kafka_commits_total", "counter",
               "Offset commits, by outcome (ok, failed, not_flushed: outputs not yet acknowledged).",
               ("outcome",), KAFKA_CONSUMER),
    FamilySpec("ragpulse_kafka_rebalance_partitions_total", "counter",
               "Partitions assigned, revoked or lost in rebalances.", ("event",), KAFKA_CONSUMER),
    FamilySpec("ragpulse_kafka_assigned_partitions", "gauge",
               "Partitions of the records topic this scorer owns now (0 while it waits for a rebalance "
               "or when the group has more members than partitions).", (), KAFKA_CONSUMER),
    FamilySpec("ragpulse_kafka_records_taken_alone_total", "counter",
               "Records handed out one at a time because the partition's previous owner died "
               "without handing it over (a crash, an OOM kill): each is committed before it is scored.",
               (), KAFKA_CONSUMER),
    FamilySpec("ragpulse_kafka_released_in_flight_total", "counter",
               "In-flight records released unfinished on a rebalance (rebalance_timeout_s passed); "
               "the next owner scores them.", (), KAFKA_CONSUMER),
)

_BY_NAME = {spec.name: spec for spec in FAMILIES}

# The OpenTelemetry name of every score histogram's data, with gen_ai.evaluation.name saying which
# metric: the name the OpenTelemetry-native peers (Splunk's util-genai-evals, Dash0) emit. The GenAI
# conventions define the evaluation event but no metric yet; this follows them when they do.
EVALUATION_SCORE = "gen_ai.evaluation.score"
EVALUATION_NAME = "gen_ai.evaluation.name"
# Gauges whose values are scores in [0, 1] (the score histograms are known by their buckets).
_SCORE_GAUGES = frozenset((
    "ragpulse_score_rolling_mean", "ragpulse_score_baseline_mean", "ragpulse_score_current_mean",
    "ragpulse_score_current_mean_lower", "ragpulse_score_current_mean_upper", "ragpulse_quality_estimate",
    "ragpulse_quality_estimate_lower", "ragpulse_quality_estimate_upper", "ragpulse_quality_estimate_offline_weight",
    "ragpulse_recent_worst_score"))
# Prometheus base-unit suffixes and their UCUM units: the OpenTelemetry name drops the suffix (the
# unit says it), and the Collector's prometheus exporter adds it back from the unit.
_UNIT_SUFFIXES = (("_seconds", "s"), ("_bytes", "By"))


def otel_name(s: FamilySpec) -> str:
    """The family's OpenTelemetry name: `ragpulse.` and the Prometheus name without its prefix, its
    `_total` and its unit suffix, so that the Collector's prometheus exporter, which adds those back
    from the type and the unit, gives the Prometheus name again."""
    stem = s.name.removeprefix("ragpulse_")
    if s.kind == "counter":
        stem = stem.removesuffix("_total")
    for suffix, _ in _UNIT_SUFFIXES:
        stem = stem.removesuffix(suffix)
    return f"ragpulse.{stem}"


def otel_unit(s: FamilySpec) -> str:
    """UCUM: `1` for scores, `s` and `By` for the base units, `{USD}` for money, `{count}` for counts
    (braces: an annotation, which Prometheus names ignore)."""
    if s.buckets == SCORE_BUCKETS or s.name in _SCORE_GAUGES:
        return "1"
    stem = s.name.removesuffix("_total")
    for suffix, unit in _UNIT_SUFFIXES:
        if stem.endswith(suffix):
            return unit
    return "{USD}" if stem.endswith("_usd") else "{count}"


def spec(name: str, *kinds: str) -> FamilySpec:
    """The declaration of `name`, which must be of one of `kinds`."""
    found = _BY_NAME.get(name)
    if found is None:
        raise UndeclaredFamily(f"{name} is not declared in ragpulse/core/telemetry_catalog.py")
    if found.kind not in kinds:
        raise UndeclaredFamily(f"{name} is declared as a {found.kind}, not a {' or '.join(kinds)}")
    return found


def counter(registry: CollectorRegistry, name: str) -> Counter:
    s = spec(name, "counter")
    return Counter(s.name, s.help, s.labels, registry=registry)


def gauge(registry: CollectorRegistry, name: str) -> Gauge:
    s = spec(name, "gauge")
    return Gauge(s.name, s.help, s.labels, registry=registry)


def histogram(registry: CollectorRegistry, name: str, with_optional_labels: bool = False) -> Histogram:
    s = spec(name, "histogram")
    labels = s.labels + s.optional_labels if with_optional_labels else s.labels
    return Histogram(s.name, s.help, labels, buckets=s.buckets, registry=registry)


def family(name: str) -> CounterMetricFamily | GaugeMetricFamily:
    """An empty family, for a collector that computes its samples when Prometheus scrapes."""
    s = spec(name, "counter", "gauge")
    cls = CounterMetricFamily if s.kind == "counter" else GaugeMetricFamily
    return cls(s.name, s.help, labels=s.labels)
