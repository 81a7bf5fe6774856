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
            group = "broker"
        elif item.get_closest_marker("llm"):
            group = "llm"
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        item.user_properties.append(("xdist_group", group))  # travels with the report to the controller



# pytest-xdist has silently stopped honouring groups before (pytest-dev/pytest-xdist#1386, with
# pytest 9.2): both workers then started their own broker and the suite took 21 minutes instead of
# 13. The controller sees, per report, the group the test asked for and the worker that ran it,
# and fails the run when a group was split across workers or a grouped test ran ungrouped.
_group_workers: dict[str, set[str]] = {}
_ungrouped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)
    group = dict(report.user_properties).get("xdist_group")
    if node is None or group is None or report.when != "call":
        return  # not the xdist controller, or a test of no group
    if report.nodeid.endswith(f"@{group}"):
        _group_workers.setdefault(str(group), set()).add(str(node.workerinput["workerid"]))
    else:
        _ungrouped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if getattr(session.config.option, "dist", "no") != "loadgroup":
        return
    split = {g: sorted(w) for g, w in _group_workers.items() if len(w) > 1}
    if split or _ungrouped:
        detail = f"groups split across workers: {split}" if split else f"ran ungrouped: {_ungrouped[:3]}"
        session.config.get_terminal_writer().line(
            f"xdist grouping was lost ({detail}): check the pytest and pytest-xdist pins", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
