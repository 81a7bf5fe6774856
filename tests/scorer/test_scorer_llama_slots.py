"""A scorer with the openai judge's defaults against the real llama.cpp server that
deploy/llm/install.sh builds (llama-cpp-python's server: one request answered at a time, replies
of seconds to minutes on 2 cores). The judge finds the one slot: every record scored, no request
timed out, none abandoned in the server's queue (the server logs "Disconnected from client" for
those), and queueing seen and answered by a cut of the limit to 1.

Skipped only when the LLM venv is absent and RAGPULSE_REQUIRE_LLM is unset (as
tests/scorer/judge/test_openai_judge_llama.py)."""

from __future__ import annotations

import os
from pathlib import Path

import llm_server
import pytest
from distinct_records import distinct_records
from scorer_run import score_reading_the_limit

from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig

if not llm_server.available() and not os.environ.get("RAGPULSE_REQUIRE_LLM"):
    pytest.skip(f"no LLM venv at {llm_server.llm_venv()} (run deploy/llm/install.sh)", allow_module_level=True)

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]

RECORDS = 3


def test_the_defaults_find_the_real_servers_one_slot_and_abandon_nothing(tmp_path: Path) -> None:
    log = tmp_path / "llama.log"
    limits: list[float | None] = []
    with llm_server.llama_server(log_path=log) as base_url:
        judge = OpenAIJudgeConfig(model=llm_server.MODEL_ALIAS, base_url=base_url, api_key="unused")
        registry = score_reading_the_limit(judge, distinct_records(RECORDS), limits, timeout_s=1500)
    assert registry.get_sample_value("ragpulse_records_scored_total", {"service": "svc"}) == RECORDS
    assert registry.get_sample_value("ragpulse_judge_endpoint_requests_total",
                                     {"judge": "openai", "outcome": "timeout"}) is None
    assert "Disconnected from client" not in log.read_text(errors="replace")
    # The limit went above one (slow start, probes) and the queueing that caused was seen: it came
    # back to one, where it ended or from where it was probing again.
    seen = [x for x in limits if x is not None]
    assert max(seen) >= 2 and 1 in seen[seen.index(max(seen)):], seen
