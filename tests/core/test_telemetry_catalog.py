"""Telemetry declared once (ragpulse/core/telemetry_catalog.py): every family a real run registers is
declared, with its type, help and labels; every declared family is registered by some part; no
module builds a family any other way; metric names come from one list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ports import loopback_receivers
from prometheus_client import CollectorRegistry

from ragpulse.app import build_collector, build_scorer
from ragpulse.config import Config
from ragpulse.core import telemetry_catalog as catalog
from ragpulse.core.bus import InProcessBus
from ragpulse.core.metric_names import DEFAULT_BAD_EVENT_THRESHOLDS, DEFAULT_METRICS, METRIC_NAMES
from ragpulse.core.otlp_metrics import OtlpMetricsExport, RegistryBridge
from ragpulse.core.otlp_metrics_config import OtlpMetricsConfig
from ragpulse.core.wire import Record, Sampling
from ragpulse.kafka.producer import KafkaProducerMetrics
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.consume.kafka import KafkaConsumerMetrics
from ragpulse.scorer.estimate.drift import DriftConfig
from ragpulse.scorer.export.config import OtlpExportConfig
from ragpulse.scorer.export.otlp import OtlpEvaluationExporter
from ragpulse.scorer.export.prometheus import JudgeEndpointCollector
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig

ROOT = Path(__file__).resolve().parents[2]
# What builds a family in prometheus_client: only the catalog may call these.
BUILDERS = {
    "Counter", "Gauge", "Histogram", "Summary", "Info", "Enum", "CounterMetricFamily", "GaugeMetricFamily",
    "HistogramMetricFamily", "SummaryMetricFamily", "InfoMetricFamily", "StateSetMetricFamily",
    "GaugeHistogramMetricFamily", "UnknownMetricFamily",
}


def real_registry() -> CollectorRegistry:
    """Every part that registers families, on one registry, after one record was scored."""
    from ragpulse.scorer.judge.factory import build_judge

    config = loopback_receivers(Config())
    config.prometheus.route_label = True
    # The judge cascade and its estimates (off by default; here the local judge plays both parts).
    config.scorer.cascade.enabled = True
    registry = CollectorRegistry()
    bus = InProcessBus(10)
    build_collector(config, bus, registry)
    KafkaProducerMetrics(registry)
    KafkaConsumerMetrics(registry)
    OtlpEvaluationExporter(OtlpExportConfig(endpoint="http://127.0.0.1:9"), registry, {})
    OtlpMetricsExport(OtlpMetricsConfig(endpoint="http://127.0.0.1:9"), registry, "test")  # never started
    parts = build_scorer(config, bus, registry)
    record = Record(trace_id="ab" * 16, span_id="cd" * 8, service="svc", time_unix_nano=1, route="/faq",
                    question="Where is the Louvre?", contexts=["The Louvre is an art museum in Paris."],
                    answer="The Louvre is in Paris.", sampling=Sampling(1.0, 1.0, "default"))
    bus.publish(b"k", record.to_json())
    parts.worker.start()
    assert bus.drained(60)
    parts.worker.stop()
    # The local judge calls no endpoint; an openai judge (built, never called) exports its counts.
    openai = ScorerConfig(judge="openai", openai=OpenAIJudgeConfig(model="m", base_url="http://127.0.0.1:9/v1",
                                                                   api_key="unused"))
    registry.register(JudgeEndpointCollector(build_judge(openai)))
    return registry


def test_a_real_run_registers_exactly_the_declared_families():
    declared = {spec.name: spec for spec in catalog.FAMILIES}
    registered = set()
    for family in real_registry().collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        registered.add(name)
        spec = declared.get(name)
        assert spec is not None, f"{name} is registered but not declared in the catalog"
        assert (family.type, family.documentation) == (spec.kind, spec.help), name
        for sample in family.samples:
            assert set(sample.labels) - {"le"} <= set(spec.labels + spec.optional_labels), sample
    assert registered == set(declared), "declared but registered by no part"


def test_every_family_goes_over_otlp_under_its_own_name_and_unit():
    from opentelemetry.sdk.resources import Resource

    data = RegistryBridge(real_registry(), Resource.create({}), "cumulative").collect()
    (scope,) = data.resource_metrics[0].scope_metrics
    sent = {m.name: m for m in scope.metrics}
    for spec in catalog.FAMILIES:
        name = catalog.otel_name(spec)
        if name in sent:  # a family with no sample yet (a labelled child never touched) sends nothing
            assert (sent[name].unit, sent[name].description) == (catalog.otel_unit(spec), spec.help)
    assert len({catalog.otel_name(s) for s in catalog.FAMILIES}) == len(catalog.FAMILIES)
    assert {"ragpulse.faithfulness_score", "ragpulse.records_scored", "ragpulse.score_weighted_sum",
            "ragpulse.quality_estimate_lower", "ragpulse.queue_depth", catalog.EVALUATION_SCORE} <= set(sent)
    # The Collector's prometheus exporter adds the suffixes back from type and unit.
    latency = catalog.spec("ragpulse_judge_latency_seconds", "histogram")
    assert (catalog.otel_name(latency), catalog.otel_unit(latency)) == ("ragpulse.judge_latency", "s")


def test_families_can_only_be_built_from_the_catalog():
    with pytest.raises(catalog.UndeclaredFamily):
        catalog.counter(CollectorRegistry(), "ragpulse_not_declared_total")
    with pytest.raises(catalog.UndeclaredFamily):
        catalog.gauge(CollectorRegistry(), "ragpulse_queue_depth_total")
    offenders = []
    for folder in ("ragpulse", "collector", "scorer"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "ragpulse" / "core" / "telemetry_catalog.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prometheus_client"):
                    offenders += [f"{path.relative_to(ROOT)}: {a.name}" for a in node.names if a.name in BUILDERS]
                elif isinstance(node, ast.Attribute) and node.attr in BUILDERS and \
                        isinstance(node.value, ast.Name) and node.value.id == "prometheus_client":
                    offenders.append(f"{path.relative_to(ROOT)}: prometheus_client.{node.attr}")
    assert offenders == [], "build families with ragpulse.core.telemetry_catalog, declared there"


def test_metric_names_come_from_one_list():
    from ragpulse.scorer.metrics import METRICS

    assert tuple(METRICS) == METRIC_NAMES
    assert ScorerConfig().metrics == list(DEFAULT_METRICS) and DriftConfig().metrics == list(METRIC_NAMES)
    assert ScorerConfig().bad_event_threshold == DEFAULT_BAD_EVENT_THRESHOLDS
    scores = {spec.name for spec in catalog.FAMILIES if spec.kind == "histogram" and "service" in spec.labels}
    assert scores == {f"ragpulse_{name}_score" for name in METRIC_NAMES}
