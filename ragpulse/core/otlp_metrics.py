"""The process's metrics over OTLP: every family of its /metrics registry, read at each export
interval and handed to the OpenTelemetry SDK's OTLP metric exporter, plus gen_ai.evaluation.score.

Why a bridge from the registry rather than a second set of OpenTelemetry instruments: /metrics and
OTLP then carry the same numbers by construction (one count, two expositions, as the Go SDK's
Prometheus bridge does), nothing is recorded twice on the scoring path, and a family added to the
catalog is exported both ways without a code change. The SDK's data model and exporters do the
encoding and the transport; this module only maps prometheus_client's samples onto that model:

- a counter becomes a monotonic Sum, a gauge a Gauge, a histogram an explicit-bucket Histogram with
  the same bounds; names and units come from the catalog (telemetry_catalog.otel_name / otel_unit),
  attributes are the Prometheus labels;
- every score histogram is also sent as one gen_ai.evaluation.score histogram, its data points told
  apart by gen_ai.evaluation.name (the metric), for dashboards built on the peers' convention;
- a histogram's exemplars (the scored record's trace and span ids) become OTLP exemplars; each is
  sent once, with the first export after it was recorded;
- delta temporality subtracts the previous export's values per series.

Exports run on their own thread, one at a time, from a snapshot: there is no queue to grow, and a
collector that is down or slow costs only counted failures (ragpulse_otlp_metric_exports_total).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from opentelemetry.sdk.metrics import Exemplar as OtelExemplar
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as PromFamily

from ragpulse import __version__
from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.otlp_metrics_config import OtlpMetricsConfig

log = logging.getLogger(__name__)

_SCOPE = InstrumentationScope("ragpulse", __version__)
# The collected name of each declared family: prometheus_client drops a counter's _total.
_BY_COLLECTED_NAME = {s.name.removesuffix("_total") if s.kind == "counter" else s.name: s for s in catalog.FAMILIES}
_SCORE_PREFIX, _SCORE_SUFFIX = "ragpulse_", "_score"

Attributes = tuple[tuple[str, str], ...]


@dataclass
class _Buckets:
    """One histogram series as prometheus_client exposes it: cumulative counts per upper bound."""

    bounds: list[float]
    cumulative: list[float]
    count: float = 0.0
    total: float = 0.0
    exemplars: list[OtelExemplar] | None = None


class RegistryBridge:
    """A registry's families as the SDK's MetricsData, cumulative or delta. Not thread-safe: one
    exporting thread calls collect()."""

    def __init__(self, registry: CollectorRegistry, resource: Resource, temporality: str,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self._registry = registry
        self._resource = resource
        self._delta = temporality == "delta"
        self._clock = clock
        self._start = clock()
        self._last = self._start
        # Exemplars recorded after this are sent: at first, all (a record scored before the start).
        self._exemplars_since = 0
        # Per (OpenTelemetry name, attributes): the values of the previous collect, for deltas.
        self._previous: dict[tuple[str, Attributes], tuple[float, ...]] = {}

    def collect(self) -> MetricsData:
        now = self._clock()
        since, self._exemplars_since = self._exemplars_since, now
        start = self._last if self._delta else self._start
        temporality = AggregationTemporality.DELTA if self._delta else AggregationTemporality.CUMULATIVE
        metrics: list[Metric] = []
        evaluation_points: list[HistogramDataPoint] = []
        for family in self._registry.collect():
            spec = _BY_COLLECTED_NAME.get(family.name)
            if spec is None:
                continue  # not ragpulse's (tests/core/test_telemetry_catalog.py keeps ours declared)
            name, unit = catalog.otel_name(spec), catalog.otel_unit(spec)
            if spec.kind == "histogram":
                points = [self._histogram_point(name, attrs, series, start, now, since)
                          for attrs, series in _histogram_series(family)]
                metrics.append(Metric(name, spec.help, unit, Histogram(points, temporality)))
                if spec.buckets == catalog.SCORE_BUCKETS:
                    evaluation = ((catalog.EVALUATION_NAME, _metric_of(spec.name)),)
                    evaluation_points += [_with_attributes(p, evaluation) for p in points]
            elif spec.kind == "counter":
                points = [self._number_point(name, attrs, value, start, now)
                          for attrs, value in _samples(family, "_total")]
                metrics.append(Metric(name, spec.help, unit, Sum(points, temporality, is_monotonic=True)))
            else:
                points = [NumberDataPoint(dict(attrs), start, now, value) for attrs, value in _samples(family, "")]
                metrics.append(Metric(name, spec.help, unit, Gauge(points)))
        if evaluation_points:
            metrics.append(Metric(catalog.EVALUATION_SCORE,
                                  "Scores of scored records (0..1), unweighted; gen_ai.evaluation.name says which "
                                  "metric.", "1", Histogram(evaluation_points, temporality)))
        self._last = now
        scope = ScopeMetrics(_SCOPE, [m for m in metrics if m.data.data_points], "")
        return MetricsData([ResourceMetrics(self._resource, [scope], "")])

    def _delta_of(self, name: str, attrs: Attributes, values: tuple[float, ...]) -> tuple[float, ...]:
        if not self._delta:
            return values
        before = self._previous.get((name, attrs))
        self._previous[(name, attrs)] = values
        if before is None or len(before) != len(values) or values[0] < before[0]:
            return values  # a new series (or one that restarted): all of it is new
        return tuple(v - b for v, b in zip(values, before, strict=True))

    def _number_point(self, name: str, attrs: Attributes, value: float, start: int, now: int) -> NumberDataPoint:
        (value,) = self._delta_of(name, attrs, (value,))
        return NumberDataPoint(dict(attrs), start, now, value)

    def _histogram_point(self, name: str, attrs: Attributes, series: _Buckets, start: int, now: int,
                         since: int) -> HistogramDataPoint:
        # OTLP counts per bucket, Prometheus cumulative ones: the difference of neighbours.
        per_bucket = [c - b for c, b in zip(series.cumulative, [0.0, *series.cumulative[:-1]], strict=True)]
        count, total, *per_bucket = self._delta_of(name, attrs, (series.count, series.total, *per_bucket))
        exemplars = [e for e in series.exemplars or () if e.time_unix_nano > since]
        # The bounds without +Inf: OTLP's last bucket is implicitly unbounded. Minimum and maximum
        # are unknown to a Prometheus histogram and left out.
        return HistogramDataPoint(dict(attrs), start, now, round(count), total, [round(c) for c in per_bucket],
                                  series.bounds[:-1], None, None, exemplars)  # type: ignore[arg-type]


def _samples(family: PromFamily, suffix: str) -> Iterable[tuple[Attributes, float]]:
    wanted = family.name + suffix
    for sample in family.samples:
        if sample.name == wanted:
            yield tuple(sorted(sample.labels.items())), float(sample.value)


def _histogram_series(family: PromFamily) -> list[tuple[Attributes, _Buckets]]:
    series: dict[Attributes, _Buckets] = {}
    for sample in family.samples:
        labels = {k: v for k, v in sample.labels.items() if k != "le"}
        attrs = tuple(sorted(labels.items()))
        s = series.setdefault(attrs, _Buckets([], []))
        if sample.name.endswith("_bucket"):
            s.bounds.append(float(sample.labels["le"]))
            s.cumulative.append(float(sample.value))
            if sample.exemplar is not None:
                s.exemplars = [*(s.exemplars or ()), _exemplar(sample.exemplar)]
        elif sample.name.endswith("_count"):
            s.count = float(sample.value)
        elif sample.name.endswith("_sum"):
            s.total = float(sample.value)
    return list(series.items())


def _exemplar(exemplar: object) -> OtelExemplar:
    labels: dict[str, str] = getattr(exemplar, "labels", {})
    stamp = getattr(exemplar, "timestamp", None)
    when = int(float(stamp) * 1e9) if stamp is not None else time.time_ns()
    trace_id, span_id = labels.get("trace_id", ""), labels.get("span_id", "")
    try:
        ids = (int(span_id, 16), int(trace_id, 16)) if trace_id and span_id else (None, None)
    except ValueError:  # not hex (a foreign producer's ids): kept as attributes only
        ids = (None, None)
    rest = {k: v for k, v in labels.items() if ids[0] is None or k not in ("trace_id", "span_id")}
    return OtelExemplar(rest, float(getattr(exemplar, "value", 0.0)), when, span_id=ids[0], trace_id=ids[1])


def _with_attributes(point: HistogramDataPoint, extra: Attributes) -> HistogramDataPoint:
    return HistogramDataPoint({**dict(extra), **dict(point.attributes or {})}, point.start_time_unix_nano,
                              point.time_unix_nano, point.count, point.sum, point.bucket_counts,
                              point.explicit_bounds, point.min, point.max, point.exemplars)


def _metric_of(family_name: str) -> str:
    return family_name.removeprefix(_SCORE_PREFIX).removesuffix(_SCORE_SUFFIX)


class OtlpMetricsExport:
    """Exports a registry every interval_s on its own thread; stop() sends a last one."""

    def __init__(self, config: OtlpMetricsConfig, registry: CollectorRegistry, role: str,
                 exporter: MetricExporter | None = None) -> None:
        self._config = config
        exports = catalog.counter(registry, "ragpulse_otlp_metric_exports_total")
        self._ok, self._failed = exports.labels(outcome="ok"), exports.labels(outcome="failed")
        resource = Resource.create({
            "service.name": config.service_name,
            "service.version": __version__,
            # Each process its own series: two scorers' cumulative counters must not be merged.
            "service.instance.id": f"{socket.gethostname()}-{os.getpid()}",
            "ragpulse.role": role,
        })
        self._bridge = RegistryBridge(registry, resource, config.temporality)
        self._exporter = exporter or _otlp_exporter(config)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragpulse-otlp-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """A last export (so the final counts arrive), then the exporter's shutdown."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self._config.timeout_s * 2 + 1)
        self._exporter.shutdown(timeout_millis=self._config.timeout_s * 1000)

    def export_once(self) -> bool:
        try:
            result = self._exporter.export(self._bridge.collect(), timeout_millis=self._config.timeout_s * 1000)
        except Exception:  # the exporters report failures by result; anything else must not stop the thread
            log.exception("OTLP metrics export to %s raised", self._config.endpoint)
            result = MetricExportResult.FAILURE
        (self._ok if result is MetricExportResult.SUCCESS else self._failed).inc()
        return result is MetricExportResult.SUCCESS

    def _run(self) -> None:
        while not self._stop.wait(self._config.interval_s):
            self.export_once()
        self.export_once()


def _otlp_exporter(config: OtlpMetricsConfig) -> MetricExporter:
    if config.protocol == "grpc":
        import grpc
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcExporter

        credentials = None
        if config.secure:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(config.ca_file), private_key=_read(config.key_file),
                certificate_chain=_read(config.cert_file))
        return GrpcExporter(endpoint=config.endpoint, insecure=not config.secure, credentials=credentials,
                            headers=dict(config.headers), timeout=config.timeout_s)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpExporter

    return HttpExporter(endpoint=config.metrics_url(), headers=dict(config.headers), timeout=config.timeout_s,
                        certificate_file=config.ca_file or None, client_key_file=config.key_file or None,
                        client_certificate_file=config.cert_file or None)


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def start_otlp_metrics(config: OtlpMetricsConfig, registry: CollectorRegistry, role: str) -> OtlpMetricsExport | None:
    """The export when configured, started; None when export.otlp_metrics.endpoint is empty."""
    if not config.enabled:
        return None
    export = OtlpMetricsExport(config, registry, role)
    export.start()
    return export
