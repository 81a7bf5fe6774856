"""`ragpulse score`: score a JSONL file of {question, contexts, answer} rows offline.

Each output row keeps the input keys and adds one key per metric (null plus `<metric>_error` when
it fails). Bad rows are reported with their line number and do not stop the run.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ragpulse.scorer.judge.base import Judge, RecordText
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.score import RecordSkipped, score_text


@dataclass
class BatchReport:
    rows: int = 0
    scored: int = 0
    bad_rows: list[tuple[int, str]] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)


def parse_row(line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(row, dict):
        raise ValueError("a row must be a JSON object")
    for key in ("question", "answer"):
        if not isinstance(row.get(key), str):
            raise ValueError(f"'{key}' must be a string")
    contexts = row.get("contexts")
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise ValueError("'contexts' must be a list of strings")
    return row


def _lines(source: IO[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(source, start=1):
        if line.strip():
            yield number, line


def score_file(
    source: IO[str], sink: IO[str], judge: Judge, metrics: dict[str, Metric], progress: bool
) -> BatchReport:
    report = BatchReport()
    lines = list(_lines(source))
    for done, (number, line) in enumerate(lines, start=1):
        report.rows += 1
        try:
            row = parse_row(line)
        except ValueError as e:
            report.bad_rows.append((number, str(e)))
            print(f"line {number}: skipped: {e}", file=sys.stderr)
            continue
        try:
            outcomes = score_text(judge, metrics, RecordText(row["question"], row["contexts"], row["answer"]))
        except RecordSkipped as e:
            report.bad_rows.append((number, f"judge refused the row: {e.reason}"))
            continue
        for name, outcome in outcomes.items():
            row[name] = outcome.value
            if outcome.error is not None:
                row[f"{name}_error"] = outcome.error
                report.failures[f"{name}:{outcome.error}"] += 1
        sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        report.scored += 1
        if progress:
            _progress(done, len(lines))
    if progress:
        sys.stderr.write("\n")
    return report


def _progress(done: int, total: int, width: int = 30) -> None:
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} rows")
    sys.stderr.flush()
