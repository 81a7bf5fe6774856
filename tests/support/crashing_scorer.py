"""`ragpulse scorer` with a fault injected: the real local judge, except that a record whose
answer holds CRASH_MARK kills the process at once with exit code 137, as a segfault in a judge's
native code or an OOM kill would (no cleanup, no leaving the group).

    python tests/support/crashing_scorer.py CONFIG
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ragpulse.cli import wait_for_stop_signal
from ragpulse.config import load_config
from ragpulse.kafka_mode import KafkaScorer
from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.judge.factory import build_judge

CRASH_MARK = "CRASH-THE-SCORER"


class CrashingJudge:
    def __init__(self, inner: Judge) -> None:
        self._inner = inner
        self.name = inner.name
        self.model = inner.model

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        if CRASH_MARK in rec.answer:
            os._exit(137)
        return self._inner.statements(rec, usage)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(config_path: str) -> None:
    config = load_config(config_path)
    scorer = KafkaScorer(config, judge=CrashingJudge(build_judge(config.scorer)))
    scorer.start()
    print("ready", flush=True)
    wait_for_stop_signal()
    scorer.stop()


if __name__ == "__main__":
    main(sys.argv[1])
