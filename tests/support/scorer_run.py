"""Runs a scorer in this process on the in-process bus until it has scored what it was given,
reading its openai judge's learned concurrency limit as it goes (the gauge, as Prometheus would)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry

from ragpulse.app import build_scorer
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.wire import Record
from ragpulse.scorer.config import ScorerConfig
from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig


def score_reading_the_limit(judge: OpenAIJudgeConfig, records: list[Record], limits: list[float | None],
                            timeout_s: float = 600) -> CollectorRegistry:
    """Scores `records` with the openai judge `judge`; the concurrency limit read every 0.1 s goes
    into `limits`. Returns the scorer's registry."""
    bus = InProcessBus(len(records) + 10)
    registry = CollectorRegistry()
    parts = build_scorer(Config(scorer=ScorerConfig(judge="openai", openai=judge)), bus, registry)
    for r in records:
        bus.publish(r.trace_id.encode(), r.to_json())
    parts.worker.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not bus.drained(0.1):
            assert time.monotonic() < deadline, "not scored in time"
            limits.append(registry.get_sample_value("ragpulse_judge_endpoint_concurrency_limit", {"judge": "openai"}))
    finally:
        parts.worker.stop()
    return registry
