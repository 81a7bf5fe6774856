"""A scorer with the openai judge's defaults against a slow endpoint with one slot, as a llama.cpp or
Ollama server on a small machine: the fault-injecting OpenAI-compatible server answering one
request at a time, the others in its queue. The judge learns the slot count: every record is scored,
no request is abandoned, and the limit settles at 1. With a fixed concurrency of 4 and a deadline
that counts the server's queue (the behaviour before the adaptive limit), the same endpoint is
thrashed: that case shows the server's counters see abandoned work."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distinct_records import distinct_records
from fault_injecting_openai_server import FaultInjectingOpenAIServer
from scorer_run import score_reading_the_limit

from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig

RECORDS = 16
REPLY_S = 0.5


@pytest.fixture
def one_slot_server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer() as server:
        server.slots = 1
        server.latency_s = REPLY_S
        yield server


def judge(server: FaultInjectingOpenAIServer, **settings: object) -> OpenAIJudgeConfig:
    return OpenAIJudgeConfig(model="tiny", base_url=server.base_url, api_key="unused", **settings)  # type: ignore[arg-type]


def test_the_defaults_learn_a_one_slot_endpoint_and_score_everything_without_abandoning_work(
        one_slot_server: FaultInjectingOpenAIServer) -> None:
    limits: list[float | None] = []
    registry = score_reading_the_limit(judge(one_slot_server), distinct_records(RECORDS), limits)
    assert registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"}) == RECORDS
    # No request timed out, not even one retried.
    assert registry.get_sample_value("ragpulse_judge_endpoint_requests_total",
                                     {"judge": "openai", "outcome": "timeout"}) is None
    assert (one_slot_server.abandoned_queued, one_slot_server.abandoned_started) == (0, 0)
    # Settled at the slot count: most of the time at 1 once found, probes of a second request brief
    # and ever rarer (their share over hours: bench/scorer_llm_concurrency.py --slots 1).
    later = limits[len(limits) // 2:]
    assert later.count(1) > 0.5 * len(later), later
    baseline = registry.get_sample_value("ragpulse_judge_endpoint_latency_baseline_seconds", {"judge": "openai"})
    assert baseline >= REPLY_S  # the server's own time at least; a loaded machine adds its share
    # No retry added load: three requests a record (the answer read, the claims checked, the
    # context sentences picked), each sent once.
    assert len(one_slot_server.requests) == 3 * RECORDS


def test_fixed_concurrency_with_a_deadline_that_counts_the_queue_abandons_work(
        one_slot_server: FaultInjectingOpenAIServer) -> None:
    # Four at once on one slot: the fourth waits three replies in the server's queue, past 2.5 of them.
    score_reading_the_limit(judge(one_slot_server, adaptive_concurrency=False, timeout_s=2.5 * REPLY_S, max_retries=1),
                            distinct_records(RECORDS), [])
    assert one_slot_server.abandoned_queued + one_slot_server.abandoned_started > 0
