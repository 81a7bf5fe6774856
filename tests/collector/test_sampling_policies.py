"""Tail-sampling policies (collector/policies.py) and upstream tracestate thresholds
(ragpulse/core/sampling.py): each policy on obvious cases, the order, the drop counters, the config
messages, and the adjusted counts from a real OTel SDK sampler through real exporters to the
scorer's weighted counters."""

from __future__ import annotations

import dataclasses
import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Status
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace._sampling_experimental import composable_traceid_ratio_based, composite_sampler
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_app import RagApp
from otlp_requests import add_rag_span, rag_request
from prometheus_client import CollectorRegistry
from ragpulse_process import RagpulseProcess

from ragpulse.collector.extract.config import AssemblyConfig, ExtractConfig
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.policies import PolicyConfig, Subject
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.receiver_http import OtlpHttpReceiver
from ragpulse.collector.sampling import ConsistentSampler, SamplingConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config, ConfigError, load_config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.sampling import trace_randomness, upstream
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.estimate.pacing import BudgetPacer, kept_by_trace
from ragpulse.scorer.export.prometheus import PrometheusScoreExporter
from ragpulse.scorer.judge.budget import Budget
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome

SCALE = 1 << 56
HIGH = b"\xff" * 16  # randomness 2^56 - 1: kept at any probability above 0
LOW = b"\x00" * 16  # randomness 0: kept only at probability 1


def _sampler(*policies: PolicyConfig, clock: Any = None, **config: Any) -> ConsistentSampler:
    settings = SamplingConfig(policies=list(policies), **config)
    settings.validate("sampling")
    return ConsistentSampler(settings, clock) if clock else ConsistentSampler(settings)


def _rule(sampler: ConsistentSampler, subject: Subject, trace_id: bytes = LOW) -> str | None:
    """The rule that kept the record, or None when dropped."""
    decision = sampler.decide(trace_id, subject)
    return decision.sampling.rule if decision.sampling is not None else None


# --- each policy, on obvious cases -------------------------------------------------------------


def test_always_keeps_negative_feedback_errors_a_route_and_a_pattern_that_sampling_would_drop() -> None:
    sampler = _sampler(
        PolicyConfig("feedback", "always", attribute="rag.feedback", values=["-1"]),
        PolicyConfig("errors", "always", error=True),
        PolicyConfig("checkout", "always", routes=["/checkout"]),
        PolicyConfig("beta", "always", attribute="rag.prompt_version", pattern=r"^beta-"),
        default_probability=0.0,
    )
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": -1})) == "feedback"
    assert _rule(sampler, Subject("s", error=True)) == "errors"
    assert _rule(sampler, Subject("s", route="/checkout")) == "checkout"
    assert _rule(sampler, Subject("s", attributes={"rag.prompt_version": "beta-7"})) == "beta"
    for other in (Subject("s", attributes={"rag.feedback": 1}), Subject("s", route="/home"),
                  Subject("s", attributes={"rag.prompt_version": "v2-beta"}), Subject("s")):
        decision = sampler.decide(HIGH, other)
        assert decision.sampling is None and decision.rule == "default"
    kept = sampler.decide(LOW, Subject("s", error=True)).sampling
    assert kept is not None and kept.adjusted_count == 1.0 and kept.probability == 1.0


def test_numeric_range_and_values_as_text() -> None:
    sampler = _sampler(PolicyConfig("unhappy", "always", attribute="rag.feedback", max_value=-0.5),
                       default_probability=0.0)
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": -1})) == "unhappy"
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": "-1"})) == "unhappy"
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": 0})) is None
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": "bad"})) is None
    assert _rule(sampler, Subject("s", attributes={"rag.feedback": True})) is None


def test_first_policy_that_applies_decides() -> None:
    sampler = _sampler(
        PolicyConfig("no-canary", "never", services=["canary"]),
        PolicyConfig("errors", "always", error=True),
    )
    # The canary's errors meet "never" first; another service's errors meet "always".
    assert _rule(sampler, Subject("canary", error=True), HIGH) is None
    assert sampler.decide(HIGH, Subject("canary", error=True)).rule == "no-canary"
    assert _rule(sampler, Subject("shop", error=True)) == "errors"
    assert _rule(sampler, Subject("shop"), HIGH) == "default"


def test_probability_per_stratum_keeps_its_share_with_its_adjusted_count() -> None:
    sampler = _sampler(PolicyConfig("chatty", "probabilistic", services=["chatty"], probability=0.1))
    n = 20_000
    kept = [sampler.decide(os.urandom(16), Subject("chatty")).sampling for _ in range(n)]
    kept_records = [k for k in kept if k is not None]
    assert abs(len(kept_records) - 0.1 * n) <= 5 * math.sqrt(n * 0.1 * 0.9)
    assert all(k.rule == "chatty" and k.adjusted_count == pytest.approx(10.0) for k in kept_records)
    assert _rule(sampler, Subject("quiet")) == "default"


class Clock:
    """Time that the test moves by hand, so a rate is exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_limit_keeps_about_its_rate_per_stratum_with_counts_that_add_up_to_the_traffic() -> None:
    clock = Clock()
    sampler = _sampler(PolicyConfig("cap", "rate_limit", records_per_s=5.0, burst=10.0), clock=clock)
    rng = random.Random(7)
    arrivals = {"busy": 100, "quiet": 2}  # records per second
    kept: dict[str, list[float]] = {s: [] for s in arrivals}
    seconds = 120
    for step in range(seconds * 100):
        clock.now += 0.01
        for service, rate in arrivals.items():
            if step % (100 // rate) == 0:
                decision = sampler.decide(rng.randbytes(16), Subject(service))
                if decision.sampling is not None:
                    assert decision.sampling.rule == "cap"
                    kept[service].append(decision.sampling.adjusted_count)
    # The busy stratum keeps about its rate; the quiet one, under its rate, keeps everything.
    assert 4.0 * seconds <= len(kept["busy"]) <= 6.0 * seconds
    assert len(kept["quiet"]) == 2 * seconds and set(kept["quiet"]) == {1.0}
    # Each kept record stands for 1/p records, p known when it was decided: the counts estimate the traffic.
    assert sum(kept["busy"]) == pytest.approx(100 * seconds, rel=0.1)


def test_rate_limit_guaranteed_minimum_holds_under_any_load() -> None:
    clock = Clock()
    sampler = _sampler(PolicyConfig("cap", "rate_limit", records_per_s=1.0, min_probability=0.2), clock=clock)
    n = 5_000
    kept = [sampler.decide(os.urandom(16), Subject("flood")).sampling for _ in range(n)]  # all in one instant
    counts = [k.adjusted_count for k in kept if k is not None]
    assert max(counts) <= 5.0 + 1e-9
    assert abs(len(counts) - 0.2 * n) <= 5 * math.sqrt(n * 0.2 * 0.8) + 1
    # Without a minimum an empty bucket keeps nothing: the first record drained the only token.
    bare = _sampler(PolicyConfig("cap", "rate_limit", records_per_s=1.0), clock=Clock())
    assert sum(bare.decide(os.urandom(16), Subject("flood")).sampling is not None for _ in range(n)) == 1


def test_rate_limited_decisions_are_the_same_in_two_collectors_that_see_the_same_arrivals() -> None:
    """The probability follows arrivals only, so the trace's randomness decides alike everywhere."""
    clocks = [Clock(), Clock()]
    samplers = [_sampler(PolicyConfig("cap", "rate_limit", records_per_s=3.0), clock=c) for c in clocks]
    rng = random.Random(5)
    kept: list[list[str]] = [[], []]
    for _ in range(3_000):
        trace_id = rng.randbytes(16)
        for clock, sampler, out in zip(clocks, samplers, kept, strict=True):
            clock.now += 0.02
            if sampler.decide(trace_id, Subject("s")).sampling is not None:
                out.append(trace_id.hex())
    assert kept[0] == kept[1] and 100 < len(kept[0]) < 300


def test_new_prompt_version_decides_its_first_records_then_passes_them_on() -> None:
    sampler = _sampler(
        PolicyConfig("new-prompt", "new_prompt_version", first_records=3, probability=1.0, max_strata=2),
        default_probability=0.0,
    )

    def version(v: str, service: str = "s") -> Subject:
        return Subject(service, attributes={"rag.prompt_version": v})

    assert [_rule(sampler, version("v2"), HIGH) for _ in range(5)] == ["new-prompt"] * 3 + [None] * 2
    # Per service: the same version in another service is new there.
    assert _rule(sampler, version("v2", "other"), HIGH) == "new-prompt"
    assert _rule(sampler, Subject("s"), HIGH) is None  # no version: not this policy's
    # Bounded: a third (service, version) pushes out the least recent, which is then new again.
    assert _rule(sampler, version("v3"), HIGH) == "new-prompt"
    assert _rule(sampler, version("v2"), HIGH) == "new-prompt"


def test_new_prompt_version_at_a_probability_counts_arrivals_not_keeps() -> None:
    sampler = _sampler(PolicyConfig("new", "new_prompt_version", first_records=1000, probability=0.25),
                       default_probability=0.0)
    decisions = [sampler.decide(os.urandom(16), Subject("s", attributes={"rag.prompt_version": "v9"}))
                 for _ in range(2000)]
    assert {d.rule for d in decisions[:1000]} == {"new"} and {d.rule for d in decisions[1000:]} == {"default"}
    kept = [d.sampling for d in decisions[:1000] if d.sampling is not None]
    assert abs(len(kept) - 250) <= 5 * math.sqrt(1000 * 0.25 * 0.75)
    assert {k.adjusted_count for k in kept} == {4.0}
    assert all(d.sampling is None for d in decisions[1000:])


# --- upstream tracestate thresholds --------------------------------------------------------------


def test_tracestate_parsing() -> None:
    trace_id = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
    r = trace_randomness(trace_id)
    assert upstream(trace_id, "") == upstream(trace_id, "vendor=x")
    assert upstream(trace_id, "").outcome == "none" and upstream(trace_id, "").adjusted_count == 1.0
    quarter = upstream(trace_id, "vendor=x, ot=th:c;rv:ffffffffffffff")
    assert (quarter.threshold, quarter.randomness, quarter.outcome, quarter.explicit) == (
        3 * SCALE // 4, SCALE - 1, "threshold", True)
    assert quarter.adjusted_count == 4.0
    assert upstream(trace_id, "ot=th:0").adjusted_count == 1.0
    assert upstream(trace_id, "ot=th:fffffffffffff").adjusted_count == pytest.approx(2**56 / 2**4)
    for bad in ("ot=th:C", "ot=th:", "ot=th:123456789abcdef", "ot=th:8;rv:123", "ot=th:8;rv:zzzzzzzzzzzzzz"):
        parsed = upstream(trace_id, bad)
        assert parsed.outcome in ("invalid", "inconsistent"), bad
    assert upstream(trace_id, "ot=th:zz") == upstream(trace_id, "ot=th:zz")
    assert upstream(trace_id, "ot=th:zz").threshold == 0 and upstream(trace_id, "ot=th:zz").randomness == r
    # R = 0x1000... is below th:8 (half): upstream cannot have kept it on this randomness.
    assert upstream(trace_id, "ot=th:8;rv:10000000000000").outcome == "inconsistent"


def test_upstream_threshold_composes_consistently_and_counts_multiply() -> None:
    """An upstream consistent sampler at 25 % (th:c), then our 50 %: we keep 12.5 % of all traces,
    a subset of upstream's on the same randomness, each standing for 8."""
    sampler = _sampler(default_probability=0.5)
    n, kept, weight = 40_000, 0, 0.0
    for _ in range(n):
        trace_id = os.urandom(16)
        if trace_randomness(trace_id) < 3 * SCALE // 4:
            continue  # what the upstream sampler dropped never reaches us
        decision = sampler.decide(trace_id, Subject("s"), "ot=th:c")
        if decision.sampling is not None:
            assert trace_randomness(trace_id) >= 7 * SCALE // 8
            assert decision.sampling.adjusted_count == 8.0 and decision.sampling.probability == 0.125
            kept += 1
            weight += decision.sampling.adjusted_count
    assert abs(kept - n / 8) <= 5 * math.sqrt(n / 8 * 7 / 8)
    assert weight == pytest.approx(n, rel=0.05)
    # always keeps what upstream kept with upstream's count; the pacer's later threshold stays a subset.
    always = _sampler(PolicyConfig("all", "always"))
    kept_always = always.decide(b"\x00" * 9 + b"\xf0" + b"\x00" * 6, Subject("s"), "ot=th:c").sampling
    assert kept_always is not None and kept_always.adjusted_count == 4.0 and kept_always.probability == 0.25


def test_explicit_randomness_decides_and_travels_to_the_scorer() -> None:
    sampler = _sampler(default_probability=0.5)
    # The trace id's own randomness (0) would drop it; rv (all ones) keeps it.
    kept = sampler.decide(LOW, Subject("s"), "ot=rv:ffffffffffffff").sampling
    assert kept is not None and kept.rv == "ffffffffffffff"
    assert sampler.decide(HIGH, Subject("s"), "ot=rv:00000000000000").sampling is None
    record = _record(kept)
    assert Record.from_json(record.to_json()).sampling == kept
    # The scorer's consistent choices use the same randomness.
    assert kept_by_trace(record.trace_id, 0.5, kept.rv) and not kept_by_trace(record.trace_id, 0.5)


def test_the_budget_pacer_decides_on_the_records_rv_and_keeps_it() -> None:
    clock = Clock()
    budget = Budget(0.01, "hour", clock, paced=True)
    pacer = BudgetPacer(budget, clock)
    pacer.admit(_record(Sampling(1.0, 1.0, "default")))
    budget.charge(0.001)
    pacer.scored(0.001)  # ten records' worth of budget left for an hour of one record a second
    by_rv = _record(Sampling(1.0, 1.0, "default", "ffffffffffffff"))  # trace id randomness 0, rv the top
    against_rv = dataclasses.replace(by_rv, trace_id="ff" * 16, sampling=Sampling(1.0, 1.0, "default",
                                                                                  "00000000000000"))
    for _ in range(20):
        clock.now += 1.0
        kept, _ = pacer.admit(by_rv)
        assert kept is not None and kept.sampling.rv == "ffffffffffffff" and kept.sampling.adjusted_count > 1.0
        assert pacer.admit(against_rv) == (None, "budget_paced")


def test_inconsistent_upstream_keeps_its_count_and_decides_on_our_probability_alone() -> None:
    sampler = _sampler(default_probability=0.5)
    decision = sampler.decide(HIGH, Subject("s"), "ot=th:8;rv:10000000000000")  # rv below th
    assert decision.upstream.outcome == "inconsistent" and decision.sampling is None
    decision = sampler.decide(LOW, Subject("s"), "ot=th:c;rv:90000000000000")  # 1/4 upstream, R = 9/16
    assert decision.upstream.outcome == "inconsistent"
    assert decision.sampling is not None and decision.sampling.adjusted_count == 8.0
    decision = sampler.decide(LOW, Subject("s"), "ot=th:f;rv:90000000000000")  # 1/16 upstream, R = 9/16
    assert decision.upstream.outcome == "inconsistent"
    assert decision.sampling is not None and decision.sampling.adjusted_count == 32.0


# --- in the pipeline: counters, assembled traces, the pre-buffer check ------------------------------


def _pipeline(sampling: SamplingConfig, **extract: Any) -> tuple[CollectorPipeline, InProcessBus, CollectorRegistry]:
    config = Config(sampling=sampling, extract=ExtractConfig(**extract))
    bus, registry = InProcessBus(100_000), CollectorRegistry()
    return (CollectorPipeline(config.extract, config.sampling, config.redaction, bus, CollectorMetrics(registry)),
            bus, registry)


def _set(span: Any, key: str, value: Any) -> None:
    kv = span.attributes.add()
    kv.key = key
    if isinstance(value, int):
        kv.value.int_value = value
    else:
        kv.value.string_value = value


def test_every_drop_and_keep_is_counted_by_rule_and_the_books_balance() -> None:
    sampling = SamplingConfig(policies=[
        PolicyConfig("feedback", "always", attribute="rag.feedback", values=["-1"]),
        PolicyConfig("errors", "always", error=True),
        PolicyConfig("bots", "never", routes=["/bot"]),
    ], default_probability=0.0)
    pipeline, bus, registry = _pipeline(sampling)
    request, scope = rag_request("shop")
    rng = random.Random(3)
    for i in range(30):
        add_rag_span(scope, rng.randbytes(16), rng.randbytes(8))
        span = scope.spans[-1]
        if i % 3 == 0:
            _set(span, "rag.feedback", -1)
        elif i % 3 == 1:
            span.status.code = Status.STATUS_CODE_ERROR
            _set(span, "rag.route", "/bot")  # never comes after errors: the error keeps it
        elif i % 2 == 0:
            _set(span, "rag.route", "/bot")
    pipeline.consume_export_request(request, "test")
    records = [Record.from_json(m.value) for m in bus.poll(1000, 0.1)]
    assert sorted(r.sampling.rule for r in records) == ["errors"] * 10 + ["feedback"] * 10

    def value(name: str, **labels: str) -> float:
        return registry.get_sample_value(name, labels) or 0.0

    decisions = "ragpulse_sampling_decisions_total"
    assert value(decisions, service="shop", rule="feedback", decision="kept") == 10
    assert value(decisions, service="shop", rule="errors", decision="kept") == 10
    assert value(decisions, service="shop", rule="bots", decision="dropped") == 5
    assert value(decisions, service="shop", rule="default", decision="dropped") == 5
    assert value("ragpulse_records_received_total", service="shop") == 30
    assert value("ragpulse_records_dropped_total", service="shop", reason="sampled_out") == 10
    assert value("ragpulse_records_sampled_total", service="shop") == 20


def _openinference_trace(scope: ScopeSpans, trace_id: bytes, error: bool, trace_state: str = "") -> None:
    """A minimal OpenInference chain: a CHAIN root with question and answer, a RETRIEVER child."""
    root, retriever = scope.spans.add(), scope.spans.add()
    root.trace_id, root.span_id, root.name = trace_id, os.urandom(8), "query"
    retriever.trace_id, retriever.span_id, retriever.name = trace_id, os.urandom(8), "retrieve"
    retriever.parent_span_id = root.span_id
    root.trace_state = retriever.trace_state = trace_state
    for key, value in (("openinference.span.kind", "CHAIN"), ("input.value", "Where is Kyoto?"),
                       ("output.value", "In Japan.")):
        _set(root, key, value)
    for key, value in (("openinference.span.kind", "RETRIEVER"), ("input.value", "Where is Kyoto?"),
                       ("retrieval.documents.0.document.content", "Kyoto is a city in Japan.")):
        _set(retriever, key, value)
    if error:
        retriever.status.code = Status.STATUS_CODE_ERROR


def test_assembled_traces_are_decided_after_assembly_with_the_trace_status_and_tracestate() -> None:
    sampling = SamplingConfig(policies=[PolicyConfig("errors", "always", error=True)], default_probability=0.0)
    pipeline, bus, registry = _pipeline(sampling, assembly=AssemblyConfig(grace_s=0.0, timeout_s=30.0))
    request, scope = rag_request("llama-shop")
    failing, fine = os.urandom(9) + b"\xff" * 7, os.urandom(16)  # randomness above th:c, as upstream kept it
    _openinference_trace(scope, failing, error=True, trace_state="ot=th:c")
    _openinference_trace(scope, fine, error=False)
    pipeline.consume_export_request(request, "test")
    pipeline.stop()
    records = [Record.from_json(m.value) for m in bus.poll(1000, 0.1)]
    assert [(r.trace_id, r.sampling.rule, r.sampling.adjusted_count) for r in records] == [
        (failing.hex(), "errors", 4.0)]
    # Both traces were buffered: an attribute policy can only decide on the assembled record.
    assert registry.get_sample_value("ragpulse_trace_spans_total", {"outcome": "buffered"}) == 4
    assert registry.get_sample_value("ragpulse_sampling_upstream_total", {"outcome": "threshold"}) == 1


def test_spans_of_traces_the_policies_drop_whatever_they_hold_are_not_buffered() -> None:
    """Only policies decidable on the service and randomness may drop a trace before assembly."""
    by_service = SamplingConfig(policies=[PolicyConfig("no-canary", "never", services=["canary"])])
    pipeline, _, registry = _pipeline(by_service, assembly=AssemblyConfig(grace_s=0.0, timeout_s=30.0))
    for service in ("canary", "shop"):
        request, scope = rag_request(service)
        _openinference_trace(scope, os.urandom(16), error=False)
        pipeline.consume_export_request(request, "test")
    assert registry.get_sample_value("ragpulse_trace_spans_total", {"outcome": "sampled_out"}) == 2
    assert registry.get_sample_value("ragpulse_trace_spans_total", {"outcome": "buffered"}) == 2
    pipeline.stop()


# --- the config file --------------------------------------------------------------------------------


def _load(tmp_path: Path, sampling: dict[str, Any]) -> Config:
    path = tmp_path / "ragpulse.yaml"
    path.write_text(yaml.safe_dump({"sampling": sampling}), encoding="utf-8")
    return load_config(path, environ={})


def test_the_documented_example_loads(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "sampling.md").read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = _load(tmp_path, yaml.safe_load(example)["sampling"])
    assert [p.type for p in config.sampling.policies] == [
        "always", "always", "always", "never", "new_prompt_version", "probabilistic", "rate_limit"]


@pytest.mark.parametrize(("policy", "message"), [
    ({"name": "x", "type": "sometimes"}, r"sampling\.policies\[0\] \(policy 'x'\)\.type must be one of always"),
    ({"name": "cap", "type": "rate_limit"}, r"policies\[0\] \(policy 'cap'\)\.records_per_s must be above 0"),
    ({"name": "p", "type": "probabilistic", "records_per_s": 3},
     r"\(policy 'p'\)\.records_per_s is read only by type rate_limit, not probabilistic"),
    ({"name": "re", "type": "always", "attribute": "route", "pattern": "("},
     r"\(policy 're'\)\.pattern is not a regular expression"),
    ({"name": "a", "type": "always", "attribute": "http.route", "values": ["/"]},
     r"\(policy 'a'\)\.attribute must be one of service, route, model, rag\.prompt_version"),
    ({"name": "a", "type": "always", "attribute": "route"}, r"\(policy 'a'\) must be given values, a pattern"),
    ({"name": "half", "type": "probabilistic", "probability": 1.5},
     r"\(policy 'half'\)\.probability must be between 0 and 1"),
    ({"name": "default", "type": "always"}, r"'default' is reserved"),
    ({"name": "x", "type": "always", "unknown": 1}, r"unknown key sampling\.policies\[0\]\.unknown"),
])
def test_config_names_the_bad_policy(tmp_path: Path, policy: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, {"policies": [policy]})


def test_config_refuses_two_policies_of_one_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"policies\[1\]\.name 'a' is used by an earlier policy"):
        _load(tmp_path, {"policies": [{"name": "a", "type": "always"}, {"name": "a", "type": "never"}]})


# --- the real OTel SDK's consistent sampler, through real exporters, to the scorer's weights ------


@pytest.fixture
def collector_over_http() -> Iterator[tuple[InProcessBus, str]]:
    sampling = SamplingConfig(policies=[PolicyConfig("half", "probabilistic", probability=0.5)])
    pipeline, bus, _ = _pipeline(sampling)
    receiver = OtlpHttpReceiver("127.0.0.1", 0, pipeline, CollectorMetrics(CollectorRegistry()), ReceiverConfig())
    receiver.start()
    yield bus, f"127.0.0.1:{receiver.port}"
    receiver.stop()


def test_otel_sdk_threshold_sampler_composes_with_ours_and_reaches_the_weighted_counters(
    collector_over_http: tuple[InProcessBus, str],
) -> None:
    """The SDK's composite sampler at 25 % writes ot=th:c into the tracestate; the collector keeps half
    of that on the same randomness. The scorer's weight counter then estimates the app's traffic."""
    bus, endpoint = collector_over_http
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-shop"}),
                              sampler=composite_sampler(composable_traceid_ratio_based(0.25)))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://{endpoint}/v1/traces")))
    tracer = provider.get_tracer("tests.sampling_policies")
    n = 4_000
    for i in range(n):
        with tracer.start_as_current_span("rag") as span:
            span.set_attribute("rag.question", f"q{i}?")
            span.set_attribute("rag.contexts", ["c."])
            span.set_attribute("rag.answer", "a.")
    provider.shutdown()
    records = [Record.from_json(m.value) for m in bus.poll(n, 0.5)]
    assert abs(len(records) - n / 8) <= 5 * math.sqrt(n / 8 * 7 / 8)
    for r in records:
        assert (r.sampling.rule, r.sampling.adjusted_count, r.sampling.probability) == ("half", 8.0, 0.125)
        assert trace_randomness(bytes.fromhex(r.trace_id)) >= 7 * SCALE // 8

    registry = CollectorRegistry()
    exporter = PrometheusScoreExporter(registry, "local", 10, {"faithfulness": 0.5})
    for r in records:
        exporter.on_scores(ScoredRecord(r, {"faithfulness": MetricOutcome(1.0)}, 0.01, "local"))
    weight = registry.get_sample_value("ragpulse_score_weight_total", {"service": "sdk-shop", "metric": "faithfulness"})
    assert weight == 8.0 * len(records)
    assert abs(weight - n) <= 5 * 8 * math.sqrt(n / 8 * 7 / 8)


def _record(sampling: Any) -> Record:
    return Record(trace_id="00" * 16, span_id="00" * 8, service="s", question="q", contexts=["c"], answer="a",
                  time_unix_nano=1, sampling=sampling)


def test_ragpulse_up_reads_the_policies_from_its_config_file_and_counts_by_rule(tmp_path: Path) -> None:
    """The one config file, a real `ragpulse up`, the real SDK over gRPC: unhappy users' answers kept,
    the rest dropped by default_probability 0, and /metrics says which rule did what."""
    settings = {"sampling": {"default_probability": 0.0, "policies": [
        {"name": "thumbs-down", "type": "always", "attribute": "rag.feedback", "values": ["-1"]}]}}
    proc = RagpulseProcess(tmp_path, settings)
    try:
        app = RagApp("up-shop", "grpc", proc.grpc)
        for i in range(6):
            app.answer(f"q{i}?", ["c."], "a.", **({"rag.feedback": -1} if i % 2 else {}))
        app.close()
        proc.wait_for("ragpulse_records_received_total", 6, service="up-shop")
        decisions = "ragpulse_sampling_decisions_total"
        assert proc.value(decisions, service="up-shop", rule="thumbs-down", decision="kept") == 3
        assert proc.value(decisions, service="up-shop", rule="default", decision="dropped") == 3
        assert proc.value("ragpulse_records_sampled_total", service="up-shop") == 3
    finally:
        proc.stop()
