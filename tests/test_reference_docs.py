"""docs/metrics.md, docs/configuration.md and README's module layout are generated (docs/generate.py):
the committed pages must be what the catalog, the config dataclasses and the modules say today, and
every key must say what it does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from ragpulse.config import Config
from ragpulse.config_env import fields, is_section, unwrap_optional
from ragpulse.core.settings import key

REPO = Path(__file__).resolve().parents[1]


def generator():
    spec = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_pages_are_generated():
    out = subprocess.run([sys.executable, str(REPO / "docs" / "generate.py"), "--check"],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr


def test_every_key_says_what_it_does():
    gen = generator()
    undescribed = []
    for where, cls, _ in gen.sections(Config, "", ""):
        comments = gen.field_comments(cls)
        for name, hint in fields(cls).items():
            if not is_section(unwrap_optional(hint)[0]) and not comments.get(name):
                undescribed.append(key(where, name))
    assert undescribed == [], "add a comment above the field (or after it): it is the key's documentation"
