"""One scorer keeps an LLM judge busy: many records in flight against the fault-injecting
OpenAI-compatible server answering after a delay, every record scored exactly once, and never more
requests at once than openai.max_concurrency."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distinct_records import distinct_records
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from prometheus_client import CollectorRegistry

from ragpulse.app import build_scorer
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig

MAX_CONCURRENCY = 8
# Three calls a record with the default metrics: the answer read (claims and questions), the
# claims checked against the contexts, the context sentences the question needs.
CALLS_PER_RECORD = 3


def openai_scorer(server: FaultInjectingOpenAIServer) -> ScorerConfig:
    return ScorerConfig(judge="openai", openai=OpenAIJudgeConfig(
        model="tiny", base_url=server.base_url, api_key="unused", max_concurrency=MAX_CONCURRENCY, timeout_s=10))


@pytest.fixture
def slow_server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer() as server:
        server.latency_s = 0.2
        yield server


def test_records_in_flight_follow_the_judge_unless_set() -> None:
    assert ScorerConfig().records_in_flight() == 1
    openai = ScorerConfig(judge="openai", openai=OpenAIJudgeConfig(model="m", max_concurrency=64))
    assert openai.records_in_flight() == 64
    openai.concurrency = 3
    assert openai.records_in_flight() == 3


def test_many_records_in_flight_fill_every_request_slot_and_each_is_scored_once(slow_server) -> None:
    config = Config(scorer=openai_scorer(slow_server))
    bus = InProcessBus(1000)
    registry = CollectorRegistry()
    parts = build_scorer(config, bus, registry)
    fed = distinct_records(40)
    for r in fed:
        bus.publish(r.trace_id.encode(), r.to_json())
    parts.worker.start()
    try:
        assert bus.drained(120)
    finally:
        parts.worker.stop()

    # The request slots were all in use at once, and never more than them.
    assert slow_server.max_in_flight == MAX_CONCURRENCY
    chats = [r for r in slow_server.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == CALLS_PER_RECORD * len(fed)
    scored = [m["record_id"] for m in parts.scores.snapshot()]
    assert sorted(scored) == sorted(r.id for r in fed)
    assert registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"}) == len(fed)
    for m in parts.scores.snapshot():
        assert all(o.get("error") is None for o in m["metrics"].values()), m["metrics"]
        assert m["usage"]["calls"] == CALLS_PER_RECORD
