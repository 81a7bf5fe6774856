"""Drift detector on synthetic score streams: detection delay of a step drop and false alarms of a
stationary stream, both measured here (run with -s to see the numbers).

The synthetic faithfulness stream mimics the metric: an answer has 1..6 statements, each supported
with probability p, the score is the supported fraction, so its mean is p and its sd ~0.23 at
p = 0.85. Weighted streams mix two sampling strata, kept at 100% (weight 1) and 10% (weight 10).
"""

from __future__ import annotations

import random
import statistics

import pytest
from prometheus_client import CollectorRegistry

from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.estimate.drift import CusumDetector, DriftConfig, DriftDetectorBank
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome

BASELINE_P = 0.85
DROP = 0.15
# Stated bounds (docs/dashboards.md): with the defaults a 0.15 drop in mean faithfulness is
# detected within 400 records unweighted (measured: median ~75, max ~300), within 500 records when half the
# records carry weight 10 (measured: median ~100); a stationary stream raises no alarm in 500,000
# records unweighted and at most one per 100,000 with the weighted mix.
MAX_DELAY_UNWEIGHTED = 400
MAX_DELAY_WEIGHTED = 500


def faithfulness_like(rng: random.Random, p: float) -> float:
    n = rng.randint(1, 6)
    return sum(rng.random() < p for _ in range(n)) / n


def weight_of(rng: random.Random, weighted: bool) -> float:
    return (1.0 if rng.random() < 0.5 else 10.0) if weighted else 1.0


def detection_delays(weighted: bool, trials: int, seed: int) -> list[int | None]:
    rng = random.Random(seed)
    cfg = DriftConfig()
    delays: list[int | None] = []
    for _ in range(trials):
        det = CusumDetector(cfg)
        for _ in range(1000):
            det.update(faithfulness_like(rng, BASELINE_P), weight_of(rng, weighted))
        assert not det.alarm
        found = None
        for i in range(1, 3000):
            det.update(faithfulness_like(rng, BASELINE_P - DROP), weight_of(rng, weighted))
            if det.alarm:
                found = i
                break
        delays.append(found)
    return delays


def false_alarm_episodes(weighted: bool, streams: int, length: int, seed: int) -> int:
    rng = random.Random(seed)
    cfg = DriftConfig()
    episodes = 0
    for _ in range(streams):
        det = CusumDetector(cfg)
        previous = False
        for _ in range(length):
            det.update(faithfulness_like(rng, BASELINE_P), weight_of(rng, weighted))
            alarm = det.alarm
            episodes += alarm and not previous
            previous = alarm
    return episodes


def test_step_drop_detected_within_stated_delay_unweighted():
    delays = detection_delays(weighted=False, trials=100, seed=7)
    assert all(d is not None for d in delays)
    print(f"\nunweighted 0.15 drop: median delay {statistics.median(delays)}, max {max(delays)} records")
    assert max(delays) <= MAX_DELAY_UNWEIGHTED


def test_step_drop_detected_within_stated_delay_weighted():
    delays = detection_delays(weighted=True, trials=60, seed=8)
    assert all(d is not None for d in delays)
    print(f"\nweighted 0.15 drop: median delay {statistics.median(delays)}, max {max(delays)} records")
    assert max(delays) <= MAX_DELAY_WEIGHTED


@pytest.mark.slow
def test_stationary_stream_false_alarm_rate_unweighted():
    n = 5 * 100_000
    episodes = false_alarm_episodes(weighted=False, streams=5, length=100_000, seed=11)
    print(f"\nunweighted stationary: {episodes} false alarms in {n} records ({episodes / n:.2e}/record)")
    assert episodes == 0


@pytest.mark.slow
def test_stationary_stream_false_alarm_rate_weighted():
    n = 3 * 100_000
    episodes = false_alarm_episodes(weighted=True, streams=3, length=100_000, seed=12)
    print(f"\nweighted stationary: {episodes} false alarms in {n} records ({episodes / n:.2e}/record)")
    assert episodes / n <= 1e-5


def test_alarm_clears_after_recovery():
    rng = random.Random(3)
    cfg = DriftConfig()
    det = CusumDetector(cfg)
    for _ in range(1000):
        det.update(faithfulness_like(rng, BASELINE_P))
    for _ in range(2000):
        det.update(faithfulness_like(rng, 0.5))
    assert det.alarm and det.state().direction == "down"
    # The statistic is capped at cap_factor * h, so it falls below h within ~(cap-1)*h/k records.
    bound = int((cfg.cap_factor - 1) * cfg.h / cfg.k * 2)
    recovered_after = None
    for i in range(1, bound + 1):
        det.update(faithfulness_like(rng, BASELINE_P))
        if not det.alarm:
            recovered_after = i
            break
    assert recovered_after is not None, f"still alarmed after {bound} records of recovered quality"


def test_upward_shift_is_reported_as_up():
    rng = random.Random(4)
    det = CusumDetector(DriftConfig())
    for _ in range(1000):
        det.update(faithfulness_like(rng, 0.6))
    for _ in range(1000):
        det.update(faithfulness_like(rng, 0.9))
    st = det.state()
    assert st.alarm and st.direction == "up"


def record(service: str, weight: float = 1.0) -> Record:
    return Record(trace_id="t", span_id="s", service=service, question="q", contexts=["c"], answer="a",
                  time_unix_nano=0, sampling=Sampling(1 / weight, weight, "test"))


def scored(rec: Record, values: dict[str, float]) -> ScoredRecord:
    return ScoredRecord(rec, {name: MetricOutcome(value) for name, value in values.items()}, 0.01, "local")


def test_bank_exports_gauges_and_quiet_service_never_alarms():
    registry = CollectorRegistry()
    cfg = DriftConfig(min_samples=50)
    bank = DriftDetectorBank(cfg, registry)
    labels = {"service": "quiet", "metric": "faithfulness"}
    # Fewer records than min_samples, all terrible: not armed, so no statistic and no alarm.
    for _ in range(49):
        bank.on_scores(scored(record("quiet"), {"faithfulness": 0.0}))
    assert registry.get_sample_value("ragpulse_score_drift_alarm", labels) is None
    assert registry.get_sample_value("ragpulse_score_drift_statistic", labels) is None
    assert registry.get_sample_value("ragpulse_score_current_mean", labels) == 0.0

    rng = random.Random(5)
    busy = {"service": "busy", "metric": "faithfulness"}
    for _ in range(500):
        bank.on_scores(scored(record("busy"), {"faithfulness": faithfulness_like(rng, 0.9), "answer_relevancy": 0.8}))
    assert registry.get_sample_value("ragpulse_score_drift_alarm", busy) == 0.0
    baseline = registry.get_sample_value("ragpulse_score_baseline_mean", busy)
    assert abs(baseline - 0.9) < 0.05
    for _ in range(500):
        bank.on_scores(scored(record("busy"), {"faithfulness": faithfulness_like(rng, 0.6)}))
    assert registry.get_sample_value("ragpulse_score_drift_alarm", busy) == 1.0
    assert registry.get_sample_value("ragpulse_score_drift_direction", busy) == -1.0
    lower = registry.get_sample_value("ragpulse_score_current_mean_lower", busy)
    upper = registry.get_sample_value("ragpulse_score_current_mean_upper", busy)
    current = registry.get_sample_value("ragpulse_score_current_mean", busy)
    assert lower < current < upper and abs(current - 0.6) < 0.1
    assert registry.get_sample_value("ragpulse_score_drift_threshold") == cfg.h
    assert bank.states()[("busy", "faithfulness")].alarm


def test_weights_make_the_baseline_the_population_mean():
    # Stratum A (weight 1) scores 1.0, stratum B (weight 9) scores 0.5: the population mean is
    # (1*1.0 + 9*0.5) / 10 = 0.55, while the unweighted sample mean would be 0.75.
    registry = CollectorRegistry()
    bank = DriftDetectorBank(DriftConfig(min_samples=100, recent_window=100), registry)
    for i in range(200):
        heavy = i % 2 == 1
        bank.on_scores(scored(record("svc", 9.0 if heavy else 1.0), {"faithfulness": 0.5 if heavy else 1.0}))
    labels = {"service": "svc", "metric": "faithfulness"}
    assert abs(registry.get_sample_value("ragpulse_score_baseline_mean", labels) - 0.55) < 1e-4
    assert abs(registry.get_sample_value("ragpulse_score_current_mean", labels) - 0.55) < 1e-9


# --- scorer/web/history.py: the page's bounded history (here for want of a file of its own) -------

def test_history_is_bounded_and_worst_records_churn():
    from ragpulse.scorer.web.history import History

    now = [1_000_000.0]
    registry = CollectorRegistry()
    history = History(registry, {"faithfulness": 0.5}, minutes=5, worst_per_service=3, worst_window=10,
                      clock=lambda: now[0])
    for i in range(30):
        now[0] += 60  # one record per minute: only the last 5 minutes stay
        rec = Record(trace_id=f"t{i}", span_id="s", service="svc", question="q", contexts=["c"], answer="a",
                     time_unix_nano=0, sampling=Sampling(0.5, 2.0, "test"), route="/faq", model="m")
        history.on_scores(scored(rec, {"faithfulness": 1.0 - i / 100, "answer_relevancy": 0.5}))
    series = history.series()["svc"]
    assert len(series["t"]) == 5 and series["records"] == [1] * 5
    assert series["mean"]["faithfulness"][-1] == 1.0 - 29 / 100
    # Worst records: only the 3 lowest of the last 10 are exported; evicted ids are removed.
    worst = {s.labels["record_id"]: s.value for f in registry.collect() if f.name == "ragpulse_recent_worst_score"
             for s in f.samples if s.labels["service"] == "svc"}
    assert set(worst) == {"t29-s", "t28-s", "t27-s"}
    weight = registry.get_sample_value("ragpulse_segment_score_weight_total",
                                       {"service": "svc", "route": "/faq", "model": "m", "metric": "faithfulness"})
    assert weight == 60.0
