"""The layout's one rule, checked on the source: collector and scorer stand on the shared core
(ragpulse/core, ragpulse/kafka) and never on each other; the core stands on neither, nor on the
wiring (config composition, CLI) that puts them together."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIRING = ("ragpulse.config", "ragpulse.app", "ragpulse.cli", "ragpulse.kafka_mode", "ragpulse.demo")
# Folder → what its modules may not import (a name or any module under it).
FORBIDDEN = {
    "collector": ("ragpulse.scorer", *WIRING),
    "scorer": ("ragpulse.collector", *WIRING),
    "ragpulse/core": ("ragpulse.collector", "ragpulse.scorer", "ragpulse.kafka", *WIRING),
    "ragpulse/kafka": ("ragpulse.collector", "ragpulse.scorer", *WIRING),
}


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def violations(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in imported_modules(path):
            for banned in FORBIDDEN[folder]:
                if name == banned or name.startswith(banned + "."):
                    found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_import_crosses_a_wall(folder):
    assert violations(folder) == []


def test_the_check_sees_a_crossing(tmp_path):
    # The walker must find both import forms, or the test above could never fail.
    module = tmp_path / "m.py"
    module.write_text("import ragpulse.scorer.worker\nfrom ragpulse import config\n")
    assert imported_modules(module) == ["ragpulse.scorer.worker", "ragpulse", "ragpulse.config"]
