"""Shared fixtures: a running `ragpulse up` on free loopback ports. The fake servers and sample
apps the tests use live in tests/support/, on sys.path through pyproject's pytest `pythonpath`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ragpulse_process import RagpulseProcess


@pytest.fixture
def ragpulse_up(tmp_path: Path) -> Iterator[RagpulseProcess]:
    proc = RagpulseProcess(tmp_path)
    yield proc
    proc.stop()
