"""The layout's rules, checked on the source: collector and scorer stand on the shared core
(ragpulse/core, ragpulse/kafka) and never on each other; the core stands on neither, nor on the
wiring (config composition, CLI) that puts them together. Inside the scorer, metrics are formulas
over the judge contract (judge/base.py) and judges never read metrics; the two judges stay apart,
so the default install never loads the openai SDK. The scorer's stages (scorer/batch, consume,
estimate, export, web) never import the worker that runs them, and each stays out of the stages it
does not feed: records come in knowing nothing of judges or exports, the batch command and the
estimates need no Kafka and no Prometheus."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIRING = (
    "ragpulse.config", "ragpulse.config_env", "ragpulse.app", "ragpulse.cli", "ragpulse.kafka_mode", "ragpulse.demo",
)
S = "ragpulse.scorer"
# Folder → what its modules may not import (a name or any module under it).
FORBIDDEN = {
    "collector": ("ragpulse.scorer", *WIRING),
    "scorer": ("ragpulse.collector", *WIRING),
    "ragpulse/core": ("ragpulse.collector", "ragpulse.scorer", "ragpulse.kafka", *WIRING),
    "ragpulse/kafka": ("ragpulse.collector", "ragpulse.scorer", *WIRING),
    "scorer/batch": (f"{S}.worker", f"{S}.consume", f"{S}.estimate", f"{S}.export", f"{S}.web"),
    "scorer/consume": (f"{S}.worker", f"{S}.judge", f"{S}.metrics", f"{S}.score", f"{S}.batch", f"{S}.estimate",
                       f"{S}.export", f"{S}.web"),
    "scorer/estimate": (f"{S}.worker", f"{S}.consume", f"{S}.export", f"{S}.web"),
    "scorer/export": (f"{S}.worker", f"{S}.consume", f"{S}.batch", f"{S}.estimate"),
    "scorer/web": (f"{S}.worker", f"{S}.consume", f"{S}.batch"),
    "scorer/judge": ("ragpulse.scorer.metrics",),
    "scorer/judge/local": ("ragpulse.scorer.judge.openai", "openai"),
    "scorer/judge/openai": ("ragpulse.scorer.judge.local",),
}
# Folder → the only modules under a forbidden prefix it may import.
ALLOWED = {"scorer/metrics": ("ragpulse.scorer.judge.base",)}


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


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in imported_modules(path):
            if any(_under(name, banned) for banned in FORBIDDEN.get(folder, ())):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


def judge_imports_beyond_the_contract(folder: str) -> list[str]:
    allowed = ALLOWED[folder]
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in imported_modules(path):
            if _under(name, "ragpulse.scorer.judge") and not any(_under(name, a) for a in allowed):
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    return found


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_no_import_crosses_a_wall(folder):
    assert (ROOT / folder).is_dir(), f"{folder} moved: make the table follow it"
    assert violations(folder) == []


def test_metrics_see_only_the_judge_contract():
    assert judge_imports_beyond_the_contract("scorer/metrics") == []


def test_the_default_judge_never_loads_the_openai_sdk():
    # Static checks cannot see this: scorer/config.py reaches the SDK-free openai/config.py.
    code = (
        "import sys; from ragpulse.config import load_config; from ragpulse.scorer.judge.factory import build_judge;"
        "import ragpulse.app, ragpulse.cli; build_judge(load_config(environ={}).scorer);"
        "print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_check_sees_a_crossing(tmp_path):
    # The walker must find both import forms, or the test above could never fail.
    module = tmp_path / "m.py"
    module.write_text("import ragpulse.scorer.worker\nfrom ragpulse import config\n")
    assert imported_modules(module) == ["ragpulse.scorer.worker", "ragpulse", "ragpulse.config"]
