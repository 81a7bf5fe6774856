"""One budget for the scorer group, on the real broker with 1, 2 and 3 real `ragpulse scorer`
processes: each member spends the share of `budget_usd` that it owns of the records topic's
partitions, so the group together stays within the budget (docs/design/kafka.md, "One budget for
the group"). The judge is the fault-injecting OpenAI-compatible test server answering every call
with a fixed token count, so each call costs exactly CALL_USD and the group's spend is the server's
request count times that.

The verdict cache is per process: a record of a trace already scored comes back to the same
member (one trace, one partition, one owner), so it hits; the same text under another trace id
lands on any member.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from kafka import KafkaProducer
from processes import kafka_bus, kafka_process, total, wait_until
from ragpulse_process import RagpulseProcess

from ragpulse.core.wire import Record, Sampling
from ragpulse.kafka.config import KafkaConfig
from ragpulse.kafka.producer import TraceIdPartitioner
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics

PARTITIONS = 6
PROMPT_TOKENS = 1000
CALL_USD = 0.001  # PROMPT_TOKENS at 1 USD per 1M prompt tokens; replies cost nothing
BUDGET_USD = 0.12  # 120 calls, 60 records of two calls (faithfulness: read the answer, verify)
FLOOD = 150  # records after the cache phase: demand ~2.5 times the budget, every partition's share spent
MARGIN = 0.05


class FixedCostServer(FaultInjectingOpenAIServer):
    """Every reply reports PROMPT_TOKENS prompt tokens and no completion tokens."""

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        reply = super()._completion(body, content)
        reply["usage"] = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": 0, "total_tokens": PROMPT_TOKENS}
        return reply

    def chat_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"].endswith("/chat/completions"))


@pytest.fixture
def judge_server() -> Iterator[FixedCostServer]:
    with FixedCostServer() as server:
        yield server


def settings(cfg: KafkaConfig, base_url: str) -> dict[str, Any]:
    return {
        "bus": kafka_bus(cfg, PARTITIONS),
        "scorer": {"judge": "openai", "metrics": ["faithfulness"], "concurrency": 1, "openai": {
            "model": "tiny", "base_url": base_url, "api_key": "unused",
            "budget_usd": BUDGET_USD, "budget_window": "hour",
            # Unpaced: each member spends until its share is gone, the hardest case for the cap
            # (paced spending stays below the same share: tests/scorer/estimate/test_budget_pacing.py).
            "budget_pacing": False,
            "prices": {"tiny": {"prompt_per_1m": CALL_USD * 1e6 / PROMPT_TOKENS, "completion_per_1m": 0.0}},
        }},
    }


def record(i: int, trace: int, span: int = 1, answer: str | None = None) -> Record:
    return Record(trace_id=f"{trace:032x}", span_id=f"{span:016x}", service="svc",
                  question="What is the population of Tokyo?",
                  contexts=["Tokyo has about 14 million inhabitants, the most of any prefecture."],
                  answer=answer or f"Tokyo has about 14 million inhabitants ({i}).", time_unix_nano=1,
                  sampling=Sampling(1.0, 1.0, "default"))


def publish(cfg: KafkaConfig, records: list[Record]) -> None:
    # Keyed and partitioned by trace id like the collector: one trace, one partition.
    producer = KafkaProducer(bootstrap_servers=cfg.bootstrap_servers, partitioner=TraceIdPartitioner())
    for r in records:
        producer.send(cfg.records_topic, key=r.trace_id.encode(), value=r.to_json())
    producer.flush()
    producer.close()


def finished(group: list[RagpulseProcess]) -> float:
    return sum(total(group, name) for name in ("ragpulse_records_scored_total",
                                               "ragpulse_scorer_records_skipped_total",
                                               "ragpulse_records_dead_lettered_total"))


def clear_of_window_end() -> None:
    """The budget is per clock hour: a run across the hour would get two budgets."""
    left = 3600 - time.time() % 3600
    if left < 240:
        time.sleep(left + 1)


@pytest.mark.parametrize("scorers", [1, 2, 3])
def test_the_group_spends_its_budget_once_whatever_its_size(kafka_broker, kafka_config: KafkaConfig,
                                                           judge_server: FixedCostServer, tmp_path: Path,
                                                           scorers: int) -> None:
    cfg = dataclasses.replace(kafka_config, records_partitions=PARTITIONS)
    ensure_topics(cfg, ragpulse_topics(cfg))  # so that every scorer joins one group at once
    clear_of_window_end()
    group = [kafka_process(tmp_path, "scorer", settings(cfg, judge_server.base_url)) for _ in range(scorers)]
    try:
        for p in group:
            p.wait_ready(120)
        wait_until(lambda: all(p.value("ragpulse_kafka_assigned_partitions") > 0 for p in group)
                   and total(group, "ragpulse_kafka_assigned_partitions") == PARTITIONS, 120,
                   "every scorer to own partitions of the records topic")

        # The cache: the same records again, same traces, new spans: the owner has the verdicts.
        first = [record(i, trace=0xA000 + i) for i in range(6)]
        publish(cfg, first)
        wait_until(lambda: finished(group) >= 6, 120, "the first records scored")
        assert judge_server.chat_calls() == 12
        publish(cfg, [dataclasses.replace(r, span_id=f"{2:016x}") for r in first])
        wait_until(lambda: finished(group) >= 12, 120, "the same traces scored again")
        assert judge_server.chat_calls() == 12
        assert total(group, "ragpulse_judge_endpoint_requests_total", outcome="cache_hit") == 12
        # The same texts under new trace ids: a hit only where the new partition's owner is the old one.
        publish(cfg, [dataclasses.replace(r, trace_id=f"{0xB000 + i:032x}") for i, r in enumerate(first)])
        wait_until(lambda: finished(group) >= 18, 120, "the same texts under new traces scored")
        missed_elsewhere = (judge_server.chat_calls() - 12) // 2

        publish(cfg, [record(100 + i, trace=0xC000 + i) for i in range(FLOOD)])
        wait_until(lambda: finished(group) >= 18 + FLOOD, 240, "every record scored or skipped")
        time.sleep(1.0)  # nothing more may come
        spent = judge_server.chat_calls() * CALL_USD
        reported = total(group, "ragpulse_judge_cost_usd_total")
        print(f"\n{scorers} scorer(s): group spent {spent:.3f} of {BUDGET_USD} USD "
              f"({spent / BUDGET_USD - 1:+.1%}); texts under new traces missed the cache {missed_elsewhere}/6; "
              f"per scorer {[round(p.value('ragpulse_judge_cost_usd_total'), 3) for p in group]}")
        assert BUDGET_USD * (1 - MARGIN) <= spent <= BUDGET_USD * (1 + MARGIN)
        assert reported == pytest.approx(spent, abs=CALL_USD * scorers)  # a refused record's first call aside
        assert total(group, "ragpulse_scorer_records_skipped_total", reason="budget_exhausted") > 0
        if scorers == 1:
            assert missed_elsewhere == 0
    finally:
        for p in group:
            p.stop()


def test_a_member_leaving_mid_window_overshoots_by_what_it_spent(kafka_broker, kafka_config: KafkaConfig,
                                                                 judge_server: FixedCostServer,
                                                                 tmp_path: Path) -> None:
    # The stated bound, measured: spend leaves with the member, its partitions bring the survivor
    # their share afresh (docs/design/kafka.md, "One budget for the group").
    cfg = dataclasses.replace(kafka_config, records_partitions=PARTITIONS)
    ensure_topics(cfg, ragpulse_topics(cfg))
    clear_of_window_end()
    group = [kafka_process(tmp_path, "scorer", settings(cfg, judge_server.base_url)) for _ in range(2)]
    try:
        for p in group:
            p.wait_ready(120)
        wait_until(lambda: all(p.value("ragpulse_kafka_assigned_partitions") == PARTITIONS // 2 for p in group),
                   120, "each scorer to own half of the partitions")
        publish(cfg, [record(i, trace=0xD000 + i) for i in range(20)])  # 40 calls, within both shares
        wait_until(lambda: finished(group) >= 20, 120, "the first records scored")
        leaving, survivor = group
        departed_usd = leaving.value("ragpulse_judge_cost_usd_total")
        leaving.stop()
        wait_until(lambda: survivor.value("ragpulse_kafka_assigned_partitions") == PARTITIONS, 120,
                   "the survivor to own every partition")
        publish(cfg, [record(100 + i, trace=0xE000 + i) for i in range(FLOOD)])
        departed_records = round(departed_usd / (2 * CALL_USD))
        wait_until(lambda: finished([survivor]) + departed_records >= 20 + FLOOD, 240,
                   "every record scored or skipped")
        time.sleep(1.0)
        spent = judge_server.chat_calls() * CALL_USD
        print(f"\nleave: the departed spent {departed_usd:.3f}, the group {spent:.3f} of {BUDGET_USD} USD "
              f"({spent / BUDGET_USD - 1:+.1%})")
        assert departed_usd > 0
        assert spent == pytest.approx(BUDGET_USD + departed_usd, abs=CALL_USD)
    finally:
        for p in group:
            p.stop()
