"""`ragpulse collector` and `ragpulse scorer` as real subprocesses on a test broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ragpulse_process import RagpulseProcess


def kafka_process(tmp: Path, command: str, settings: dict[str, Any],
                  env: dict[str, str] | None = None) -> RagpulseProcess:
    """`ragpulse collector` or `ragpulse scorer`, started; call wait_ready() before use."""
    return RagpulseProcess(tmp, settings, command=command, wait=False, env=env)


def total(processes: list[RagpulseProcess], name: str, **labels: str) -> float:
    return sum(p.value(name, **labels) for p in processes)


def wait_until(check: Any, timeout_s: float, what: str, interval_s: float = 0.3) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
