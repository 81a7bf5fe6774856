"""`ragpulse score` on a small JSONL file written by the test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_score_file_keeps_keys_reports_bad_rows(tmp_path: Path) -> None:
    rows = [
        {"id": 1, "question": "What is the capital of Japan?", "contexts": ["Tokyo is the capital of Japan."],
         "answer": "The capital of Japan is Tokyo."},
        "this line is not json",
        {"id": 3, "question": "Q?", "contexts": "not a list", "answer": "A."},
        {"id": 4, "question": "日本の首都はどこですか？", "contexts": ["日本の首都は東京です。"],
         "answer": "東京です。"},
        {"id": 5, "question": "What is it?", "contexts": [], "answer": "It is a thing."},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "score", "--input", str(source), "--output", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "line 2: skipped: not valid JSON" in result.stderr
    assert "line 3: skipped: 'contexts' must be a list of strings" in result.stderr
    assert "[#" not in result.stderr  # no progress bar when stderr is not a terminal
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in scored] == [1, 4, 5]
    for row in scored[:2]:
        for metric in ("faithfulness", "answer_relevancy", "context_relevancy"):
            assert 0.0 <= row[metric] <= 1.0
    empty = scored[2]
    assert empty["faithfulness"] is None and empty["faithfulness_error"] == "no_contexts"
    assert empty["context_relevancy"] is None and empty["context_relevancy_error"] == "no_contexts"


def test_metrics_option_limits_the_work(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"question": "Q?", "contexts": ["C."], "answer": "A."}) + "\n")
    out = tmp_path / "out.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", "score", "--input", str(source), "--output", str(out),
         "--metrics", "context_relevancy"],
        check=True, capture_output=True, timeout=120,
    )
    row = json.loads(out.read_text())
    assert "context_relevancy" in row and "faithfulness" not in row
