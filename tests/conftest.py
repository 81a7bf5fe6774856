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


# Tests that must not run at the same time as others of their kind share one xdist worker
# (tests/run.sh runs `-n 2 --dist loadgroup`): the session's one Kafka broker (several workers
# would each start a JVM broker on 2 cores), and the llama.cpp server (two of them at once would
# each get half the cores their timeouts were measured with). tryfirst: before xdist reads the
# groups; the fixture is checked by name because tests/kafka/conftest.py marks `broker` by it.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kafka_broker" in getattr(item, "fixturenames", ()) or item.get_closest_marker("broker"):
            item.add_marker(pytest.mark.xdist_group("broker"))
        elif item.get_closest_marker("llm"):
            item.add_marker(pytest.mark.xdist_group("llm"))
