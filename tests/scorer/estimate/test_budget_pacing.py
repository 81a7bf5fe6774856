"""Budget pacing: a spending budget lasts its whole window, and scored records carry the weight of
the ones skipped, so weighted totals and means stay honest estimates of all traffic."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from prometheus_client import CollectorRegistry

from ragpulse.app import build_scorer
from ragpulse.config import load_config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.sampling import keeps, trace_randomness
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.estimate.pacing import BudgetPacer
from ragpulse.scorer.judge.base import JudgeError
from ragpulse.scorer.judge.budget import Budget
from ragpulse.scorer.judge.openai.ratelimit import RateLimiter

HOUR = 3600.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def record(rng: random.Random, probability: float = 1.0) -> Record:
    """A record as the collector publishes it: its trace id passed sampling at `probability`."""
    while not keeps(trace_randomness((trace_id := rng.getrandbits(128)).to_bytes(16, "big")), probability):
        pass
    return Record(trace_id=f"{trace_id:032x}", span_id="cd" * 8, service="svc",
                  question="q", contexts=["c"], answer="a", time_unix_nano=1,
                  sampling=Sampling(probability, 1.0 / probability, "default"))


def simulate(rate_per_s: float, cost_usd: float, limit_usd: float, seconds: float) -> dict:
    """`seconds` of steady traffic through a pacer; each scored record costs `cost_usd`."""
    rng = random.Random(7)
    clock = Clock(0.0)
    budget = Budget(limit_usd, "hour", clock, paced=True)
    pacer = BudgetPacer(budget, clock)
    offered = scored = 0
    weight = spent = 0.0
    scored_by_quarter = [0, 0, 0, 0]
    step = 1.0 / rate_per_s
    while clock.now < seconds:
        offered += 1
        kept, reason = pacer.admit(record(rng))
        if kept is not None:
            scored += 1
            weight += kept.sampling.adjusted_count
            scored_by_quarter[int(clock.now // (seconds / 4))] += 1
            budget.charge(cost_usd)
            pacer.scored(cost_usd)
            spent += cost_usd
        else:
            assert reason in ("budget_paced", "budget_exhausted")
        clock.now += step
    return {"offered": offered, "scored": scored, "weight": weight, "spent": spent,
            "quarters": scored_by_quarter}


def test_the_budget_lasts_the_whole_window_and_weights_add_up_to_all_traffic() -> None:
    # 2 records/s for an hour at 0.5 mUSD each would cost 3.6 USD; the budget is 1 USD (~28 %).
    result = simulate(rate_per_s=2.0, cost_usd=0.0005, limit_usd=1.0, seconds=HOUR)
    assert 0.9 <= result["spent"] <= 1.0 + 0.0005  # used, and overshot by at most one record
    # Spread over the hour, not spent in its first quarter.
    assert min(result["quarters"]) >= 0.6 * max(result["quarters"]), result["quarters"]
    # Each scored record stands for the ones skipped: the weights estimate all 7,200 records.
    assert result["weight"] == pytest.approx(result["offered"], rel=0.1)


def test_without_pacing_pressure_every_record_is_scored_at_its_own_weight() -> None:
    result = simulate(rate_per_s=0.5, cost_usd=0.0005, limit_usd=5.0, seconds=HOUR)
    assert result["scored"] == result["offered"]
    assert result["weight"] == result["offered"]


def test_the_choice_is_consistent_by_trace_id_and_a_lower_share_keeps_a_subset() -> None:
    rng = random.Random(3)
    records = [record(rng, probability=0.5) for _ in range(4000)]

    def kept_at(remaining_usd: float) -> set[str]:
        # One record a second at 1 mUSD each: ~86 USD of demand over a day; the remaining budget
        # sets the share (~0.46 for 40 USD, ~0.12 for 10 USD), the same at each record in both runs.
        clock = Clock(0.0)
        budget = Budget(100.0, "day", clock, paced=True)
        budget.charge(100.0 - remaining_usd)
        pacer = BudgetPacer(budget, clock)
        pacer.scored(0.001)
        out = set()
        for r in records:
            kept, _ = pacer.admit(r)
            if kept is not None:
                assert kept.sampling.probability < 0.5 and kept.sampling.rule == "default+budget_pacing"
                assert kept.sampling.adjusted_count == pytest.approx(1 / kept.sampling.probability)
                out.add(r.trace_id)
            clock.now += 1.0
        return out

    more, fewer = kept_at(40.0), kept_at(10.0)
    assert 0.3 < len(more) / len(records) < 0.6 and 0.05 < len(fewer) / len(records) < 0.2
    assert fewer < more  # a strict subset: the same traces, fewer of them
    assert kept_at(10.0) == fewer  # the same answer for the same records (redeliveries, other scorers)


@pytest.fixture
def fault_server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("pacing", [True, False])
def test_a_spent_budget_skips_records_before_the_judge_is_called(fault_server, tmp_path: Path,
                                                                  pacing: bool) -> None:
    # A price at which the first record's two calls spend the whole budget: each call costs more
    # than half of it (the fault-injecting server reports ~1 token per 4 characters). One record at
    # a time: records in flight together all pass the budget check before the first is charged.
    config_path = tmp_path / "c.yaml"
    config_path.write_text(yaml.safe_dump({"scorer": {
        "judge": "openai", "metrics": ["faithfulness"], "concurrency": 1, "openai": {
        "model": "tiny", "base_url": fault_server.base_url, "api_key": "unused", "budget_usd": 1.0,
        "budget_pacing": pacing, "prices": {"tiny": {"prompt_per_1m": 2800.0, "completion_per_1m": 2800.0}}}}}))
    config = load_config(config_path, environ={})
    bus, registry = InProcessBus(10), CollectorRegistry()
    parts = build_scorer(config, bus, registry)
    rng = random.Random(1)
    for i in range(3):  # different answers: no verdict comes from the judge's cache
        bus.publish(str(i).encode(), dataclasses.replace(record(rng), answer=f"answer {i}").to_json())
    parts.worker.start()
    assert bus.drained(30)
    parts.worker.stop()
    skipped = registry.get_sample_value("ragpulse_scorer_records_skipped_total", {"reason": "budget_exhausted"})
    scored = registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"})
    assert (scored, skipped) == (1, 2)
    assert len(fault_server.requests) == 2  # the first record's two calls, none after
    refused_by_judge = registry.get_sample_value(
        "ragpulse_judge_endpoint_failures_total", {"judge": "openai", "reason": "budget_exhausted"}) or 0
    # Paced, the pacer skips the records before the judge is asked; unpaced, the judge refuses them.
    assert refused_by_judge == (0 if pacing else 2)


def simulate_group(scorers: int, partitions: int = 6, rate_per_s: float = 2.0, cost_usd: float = 0.0005,
                   limit_usd: float = 1.0) -> float:
    """An hour of traffic through a Kafka scorer group: each record goes to the owner of its trace's
    partition, whose budget is its share of the partitions. Returns what the group spent."""
    rng = random.Random(11)
    clock = Clock(0.0)
    owner = [p % scorers for p in range(partitions)]
    budgets = [Budget(limit_usd, "hour", clock, paced=True) for _ in range(scorers)]
    for i, budget in enumerate(budgets):
        budget.set_share(owner.count(i) / partitions)
    pacers = [BudgetPacer(budget, clock) for budget in budgets]
    spent = 0.0
    while clock.now < HOUR:
        r = record(rng)
        member = owner[int(r.trace_id[-8:], 16) % partitions]
        kept, _ = pacers[member].admit(r)
        if kept is not None:
            budgets[member].charge(cost_usd)
            pacers[member].scored(cost_usd)
            spent += cost_usd
        clock.now += 1.0 / rate_per_s
    return spent


@pytest.mark.parametrize("scorers", [1, 2, 3])
def test_a_paced_group_spends_one_budget_whatever_its_size(scorers: int) -> None:
    # 3.6 USD of demand against 1 USD: each member paces its share, the group uses the budget once.
    spent = simulate_group(scorers)
    assert 0.95 <= spent <= 1.0 + scorers * 0.0005


def test_spend_already_made_counts_against_a_smaller_share() -> None:
    clock = Clock(0.0)
    budget = Budget(1.0, "hour", clock)
    budget.charge(0.6)  # alone in the group so far
    budget.set_share(0.5)  # a second member joined: half the partitions are its
    assert budget.remaining_usd() == pytest.approx(-0.1)
    with pytest.raises(JudgeError):
        budget.check()
    clock.now += HOUR  # a new window: the share of a fresh budget
    assert budget.remaining_usd() == pytest.approx(0.5)


def test_rate_limits_shrink_to_the_members_share() -> None:
    clock = Clock(0.0)
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds

    limiter = RateLimiter(rpm=60, tpm=None, max_concurrency=1, clock=clock, sleep=sleep)
    limiter.set_share(1 / 3)
    for _ in range(20 + 10):  # a third of a minute's worth at once, then one every 3 s
        with limiter.request(1):
            pass
    assert clock.now == pytest.approx(10 * 3.0)
    limiter.set_share(0.0)  # no partitions: the last limits stay, nothing waits forever
    with limiter.request(1):
        pass
