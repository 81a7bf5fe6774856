"""Label values from spans are bounded three ways (length, distinct values, combinations), the
bounds multiply no more, and every value a bound changed is counted."""

from __future__ import annotations

from otlp_requests import add_rag_span, rag_request
from ports import loopback_receivers
from prometheus_client import CollectorRegistry, generate_latest
from test_worker import record, run

from ragpulse.app import build_collector
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.labels import CombinationGuard, LabelGuard


def test_a_long_value_is_cut_and_counted():
    guard = LabelGuard(cap=5, max_chars=16)
    assert guard("x" * 1_000_000) == "x" * 15 + "…"
    assert guard("short") == "short"
    assert guard("x" * 1_000_000) == "x" * 15 + "…"  # the same value again: counted once
    assert guard.truncated.value == 1 and guard.collapsed.value == 0


def test_values_beyond_the_cap_or_off_the_allow_list_become_other_and_are_counted():
    capped, allowed = LabelGuard(cap=2), LabelGuard(allow=("shop",))
    assert [capped(v) for v in ("a", "b", "c", "a")] == ["a", "b", "other", "a"]
    assert [allowed(v) for v in ("shop", "blog")] == ["shop", "other"]
    assert capped("c") == "other"
    assert capped.collapsed.value == 1 and allowed.collapsed.value == 1


def test_combinations_beyond_the_budget_keep_their_service():
    guard = CombinationGuard(2)
    assert guard("s", "r1", "m") == ("s", "r1", "m")
    assert guard("s", "r2", "m") == ("s", "r2", "m")
    assert guard("t", "r1", "m") == ("t", "other", "other")
    assert guard("s", "r1", "m") == ("s", "r1", "m")
    assert guard("t", "r1", "m") == ("t", "other", "other")
    assert guard.collapsed.value == 1


def test_a_one_mebibyte_service_name_stays_a_short_label_on_the_collector():
    registry = CollectorRegistry()
    parts = build_collector(loopback_receivers(Config()), InProcessBus(10), registry)
    request, scope = rag_request("s" * (1 << 20))
    add_rag_span(scope, b"\x01" * 16, b"\x02" * 8)
    parts.pipeline.consume_export_request(request, "test")
    exposition = generate_latest(registry)
    assert len(exposition) < 64 * 1024
    assert registry.get_sample_value("ragpulse_label_values_truncated_total", {"label": "service"}) == 1


def test_segment_series_are_bounded_by_the_combination_budget():
    config = Config(prometheus=PrometheusConfig(route_label=True, max_label_combinations=3))
    records = [record(span_id=f"{i:016x}", route=f"/r{i % 5}", model=f"m{i % 7}").to_json() for i in range(35)]
    _, registry = run(records, config=config)
    segments = {
        (s.labels["route"], s.labels["model"])
        for m in registry.collect() if m.name == "ragpulse_segment_score_weight"
        for s in m.samples if s.labels.get("metric") == "faithfulness"
    }
    assert len(segments) == 4  # the first three combinations, then (other, other)
    assert ("other", "other") in segments
    collapsed = registry.get_sample_value("ragpulse_label_values_collapsed_total", {"label": "combination"})
    assert collapsed == 35 - 3  # each later record brings a new combination (5 x 7 > 35)
