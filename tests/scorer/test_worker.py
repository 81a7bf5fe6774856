"""The scoring worker: every delivery ends scored, skipped by a named rule, or dead-lettered."""

from __future__ import annotations

import json
import time

import pytest
from prometheus_client import CollectorRegistry

from ragpulse.app import build_scorer
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.judge.base import JudgeError, RecordText, Usage
from ragpulse.scorer.judge.local import LexicalJudge


def record(**overrides: object) -> Record:
    fields: dict = dict(
        trace_id="ab" * 16, span_id="cd" * 8, service="svc", time_unix_nano=1,
        question="Where is the Louvre?", contexts=["The Louvre is an art museum in Paris, France."],
        answer="The Louvre is in Paris.", sampling=Sampling(0.5, 2.0, "default"),
    )
    fields.update(overrides)
    return Record(**fields)  # type: ignore[arg-type]


class FaultInjectingJudge:
    """Wraps the real local judge and fails one primitive question on purpose."""

    def __init__(self, failing: str, error: Exception) -> None:
        self._inner = LexicalJudge()
        self.name, self.model = "local", self._inner.model
        self._failing, self._error = failing, error

    def __getattr__(self, name: str):
        if name == self._failing:
            def fail(*_args: object, **_kwargs: object):
                raise self._error
            return fail
        return getattr(self._inner, name)


def run(deliveries: list[bytes], judge=None, config: Config | None = None):
    config = config or Config()
    bus = InProcessBus(100)
    registry = CollectorRegistry()
    parts = build_scorer(config, bus, registry, judge)
    for i, payload in enumerate(deliveries):
        bus.publish(str(i).encode(), payload)
    parts.worker.start()
    assert bus.drained(60)
    parts.worker.stop()
    return parts, registry


def test_scores_published_with_detail_and_weights() -> None:
    parts, registry = run([record().to_json()])
    (message,) = parts.scores.snapshot()
    assert message["record_id"] == record().id
    faith = message["metrics"]["faithfulness"]
    assert 0.0 <= faith["value"] <= 1.0
    assert faith["detail"]["statements"][0]["statement"]
    assert message["judge"]["name"] == "local"
    weight = registry.get_sample_value("ragpulse_score_weight_total", {"service": "svc", "metric": "faithfulness"})
    assert weight == 2.0  # the adjusted count of a record sampled at 50 %


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff\xfe not json", "invalid_json"),
        (b"[1, 2]", "invalid_record"),
        (json.dumps({**record().to_dict(), "v": "2.0"}).encode(), "unsupported_version"),
        (json.dumps({**record().to_dict(), "contexts": "not a list"}).encode(), "invalid_record"),
    ],
)
def test_bad_records_go_to_the_dead_letter_sink(payload: bytes, reason: str) -> None:
    parts, registry = run([payload, record().to_json()])
    (letter,) = parts.dead_letters.snapshot()
    assert letter["reason"] == reason
    # The original payload travels with the reason, byte for byte (hex when it is not UTF-8).
    assert letter["payload"] in (payload.hex(), payload.decode("utf-8", errors="replace"))
    assert registry.get_sample_value("ragpulse_records_dead_lettered_total", {"reason": reason}) == 1
    assert registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"}) == 1


def test_fault_injected_judge_error_is_a_counted_failure_not_a_score() -> None:
    judge = FaultInjectingJudge("verify", JudgeError("timeout", "injected"))
    parts, registry = run([record().to_json()], judge)
    (message,) = parts.scores.snapshot()
    assert message["metrics"]["faithfulness"]["value"] is None
    assert message["metrics"]["faithfulness"]["error"] == "timeout"
    assert message["metrics"]["context_relevancy"]["value"] is not None
    labels = {"metric": "faithfulness", "reason": "timeout"}
    assert registry.get_sample_value("ragpulse_metric_failures_total", labels) == 1
    # No faithfulness series at all: a failure never shows up as a low score.
    assert registry.get_sample_value("ragpulse_faithfulness_score_count", {"service": "svc"}) is None
    assert "NaN" not in json.dumps(parts.scores.snapshot())


def test_fault_injected_budget_exhaustion_skips_the_record() -> None:
    judge = FaultInjectingJudge("statements", JudgeError("budget_exhausted", "injected"))
    parts, registry = run([record().to_json()], judge)
    assert parts.scores.snapshot() == []
    assert registry.get_sample_value("ragpulse_scorer_records_skipped_total", {"reason": "budget_exhausted"}) == 1


def test_fault_injected_crash_retries_then_dead_letters() -> None:
    judge = FaultInjectingJudge("statements", RuntimeError("injected bug"))
    parts, registry = run([record().to_json()], judge)
    (letter,) = parts.dead_letters.snapshot()
    assert letter["reason"] == "scoring_error" and letter["attempts"] == 3
    assert "injected bug" in letter["detail"]


@pytest.mark.parametrize(("abandoned", "scored"), [(2, True), (3, False)])
def test_a_record_abandoned_by_max_attempts_crashed_scorers_is_dead_lettered_unscored(
        abandoned: int, scored: bool) -> None:
    from ragpulse.core.bus import Delivery

    parts = build_scorer(Config(), InProcessBus(1), CollectorRegistry(), LexicalJudge())
    parts.worker.handle(Delivery(b"k", record().to_json(), None, abandoned))
    assert len(parts.scores.snapshot()) == (1 if scored else 0)
    letters = parts.dead_letters.snapshot()
    if not scored:
        (letter,) = letters
        assert letter["reason"] == "scorer_crashed" and letter["attempts"] == 3
        assert json.loads(letter["payload"])["id"] == record().id
    else:
        assert letters == []


def test_nan_from_a_judge_is_a_failure() -> None:
    judge = FaultInjectingJudge("none", RuntimeError())
    judge.verify = lambda rec, statements, usage: [float("nan")] * len(statements)  # type: ignore[method-assign]
    parts, registry = run([record().to_json()], judge)
    (message,) = parts.scores.snapshot()
    assert message["metrics"]["faithfulness"]["value"] is None
    assert message["metrics"]["faithfulness"]["error"] == "invalid_judge_output"


def test_japanese_record_scores() -> None:
    jp = record(
        question="東京タワーの高さは？",
        contexts=["東京タワーは高さ333メートルの電波塔です。1958年に完成しました。"],
        answer="東京タワーの高さは333メートルです。",
    )
    parts, _ = run([jp.to_json()])
    (message,) = parts.scores.snapshot()
    assert all(m["value"] is not None for m in message["metrics"].values()), message


def test_every_delivery_is_accounted_for() -> None:
    payloads = [record(span_id=f"{i:016x}").to_json() for i in range(5)] + [b"junk"]
    started = time.monotonic()
    parts, registry = run(payloads)
    assert time.monotonic() - started < 120
    consumed = registry.get_sample_value("ragpulse_scorer_records_consumed_total")
    scored = registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"})
    dead = registry.get_sample_value("ragpulse_records_dead_lettered_total", {"reason": "invalid_json"})
    assert (consumed, scored, dead) == (6, 5, 1)


def test_no_statements_is_a_metric_failure() -> None:
    usage = Usage()
    judge = LexicalJudge()
    from ragpulse.scorer.metrics import METRICS, MetricFailure

    with pytest.raises(MetricFailure):
        METRICS["faithfulness"](judge, RecordText("q?", [], "a."), usage)


def test_fault_injected_judge_outage_pauses_scoring_instead_of_failing(monkeypatch) -> None:
    monkeypatch.setattr("ragpulse.scorer.worker.JUDGE_UNAVAILABLE_WAIT_S", 0.05)
    judge = FaultInjectingJudge("none", RuntimeError())
    real_statements = judge._inner.statements
    outages = iter([True, True, False])

    def statements(rec, usage):
        if next(outages, False):
            raise JudgeError("circuit_open", "injected outage")
        return real_statements(rec, usage)

    judge.statements = statements  # type: ignore[method-assign]
    parts, registry = run([record().to_json()], judge)
    (message,) = parts.scores.snapshot()
    assert message["metrics"]["faithfulness"]["value"] is not None
    assert registry.get_sample_value("ragpulse_judge_unavailable_waits_total") == 2
    assert registry.get_sample_value("ragpulse_metric_failures_total", {"metric": "faithfulness",
                                                                        "reason": "circuit_open"}) is None


def test_span_values_are_bounded_once_for_every_observer() -> None:
    from ragpulse.scorer.estimate.drift import DriftDetectorBank
    from ragpulse.scorer.web.history import History

    config = Config()
    config.prometheus.label_cap = 2
    payloads = [record(span_id=f"{i:016x}", service=service, model=f"m{i}").to_json()
                for i, service in enumerate(("a", "b", "c", "d"))]
    parts, registry = run(payloads, config=config)
    expected = {"a", "b", "other"}
    scored = {s.labels["service"] for f in registry.collect() if f.name == "ragpulse_records_scored"
              for s in f.samples}
    assert scored == expected
    (history,) = [o for o in parts.observers if isinstance(o, History)]
    (drift,) = [o for o in parts.observers if isinstance(o, DriftDetectorBank)]
    assert set(history.series()) == expected
    assert {service for service, _ in drift.states()} == expected
    models = {s.labels["model"] for f in registry.collect() if f.name == "ragpulse_segment_score_weight"
              for s in f.samples}
    assert models == {"m0", "m1", "other"}
    # The scores topic keeps the record's own service: only labels are bounded.
    assert {m["service"] for m in parts.scores.snapshot()} == {"a", "b", "c", "d"}


def test_rolling_mean_spans_every_route_of_a_service() -> None:
    config = Config()
    config.prometheus.route_label = True
    payloads = [record(span_id=f"{i:016x}", route=f"/r{i}").to_json() for i in range(3)]
    parts, registry = run(payloads, config=config)
    values = [m["metrics"]["faithfulness"]["value"] for m in parts.scores.snapshot()]
    rolling = registry.get_sample_value("ragpulse_score_rolling_mean", {"service": "svc", "metric": "faithfulness"})
    assert rolling == pytest.approx(sum(values) / len(values))
    routes = {s.labels["route"] for f in registry.collect() if f.name == "ragpulse_faithfulness_score"
              for s in f.samples}
    assert routes == {"/r0", "/r1", "/r2"}
