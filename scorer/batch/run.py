"""`ragpulse score`: score a batch file (JSONL or CSV) row by row, streaming.

Each output row keeps the input keys and adds one key per metric (null plus `<metric>_error` when
it fails). Bad rows are reported with their line number and do not stop the run. The report keeps
only each metric's values (and, against a baseline, the matched pairs) for the summary.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from ragpulse.scorer.batch.rows import Row, pairing_key, row_text
from ragpulse.scorer.judge.base import Judge, RecordText
from ragpulse.scorer.metrics import Metric
from ragpulse.scorer.score import RecordSkipped, score_text


@dataclass
class Baseline:
    """A previous run's scores by pairing key; a key found on more than one row matches nothing."""

    scores: dict[tuple[str, ...], dict[str, float | None]] = field(default_factory=dict)
    ambiguous: set[tuple[str, ...]] = field(default_factory=set)


def load_baseline(rows: Iterable[Row], metrics: Iterable[str]) -> Baseline:
    baseline = Baseline()
    names = list(metrics)
    for row in rows:
        if row.data is None or (key := pairing_key(row.data)) is None:
            continue
        if key in baseline.scores:
            baseline.ambiguous.add(key)
        baseline.scores[key] = {m: v for m in names if (v := _number(row.data.get(m))) is not None}
    for key in baseline.ambiguous:
        del baseline.scores[key]
    return baseline


def _number(value: Any) -> float | None:
    """A score as written by a previous run: a JSON number, or its text in a CSV cell."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass
class BatchReport:
    rows: int = 0
    scored: int = 0
    bad_rows: list[tuple[int, str]] = field(default_factory=list)
    # (metric, reason) -> rows where the metric gave no score.
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    # metric -> (current, baseline) values of the rows matched with the baseline.
    pairs: dict[str, tuple[list[float], list[float]]] = field(default_factory=lambda: defaultdict(lambda: ([], [])))
    # Scored rows with no (unambiguous) row in the baseline.
    unmatched: int = 0


def score_file(
    rows: Iterable[Row],
    sink: IO[str],
    judge: Judge,
    metrics: dict[str, Metric],
    baseline: Baseline | None = None,
    total: int | None = None,
) -> BatchReport:
    """`total` (the rows to expect) turns the progress bar on."""
    report = BatchReport()
    for row in rows:
        report.rows += 1
        if total is not None:
            _progress(report.rows, total)
        if row.data is None:
            _bad(report, row.line, row.error or "unreadable")
            continue
        try:
            text = row_text(row.data)
        except ValueError as e:
            _bad(report, row.line, str(e))
            continue
        try:
            rec = RecordText(text.question, text.contexts, text.answer, reference=text.reference,
                             samples=text.samples)
            outcomes = score_text(judge, metrics, rec)
        except RecordSkipped as e:
            _bad(report, row.line, f"judge refused the row: {e.reason}")
            continue
        out: dict[str, Any] = dict(row.data)
        for name, outcome in outcomes.items():
            out[name] = outcome.value
            if outcome.error is not None:
                out[f"{name}_error"] = outcome.error
                report.failures[(name, outcome.error)] += 1
            else:
                report.values[name].append(outcome.value)  # type: ignore[arg-type]
        sink.write(json.dumps(out, ensure_ascii=False) + "\n")
        report.scored += 1
        if baseline is not None:
            _pair(report, baseline, out, list(metrics))
    if total is not None:
        sys.stderr.write("\n")
    return report


def _bad(report: BatchReport, line: int, reason: str) -> None:
    report.bad_rows.append((line, reason))
    print(f"line {line}: skipped: {reason}", file=sys.stderr)


def _pair(report: BatchReport, baseline: Baseline, out: dict[str, Any], metrics: list[str]) -> None:
    before = baseline.scores.get(pairing_key(out) or ())
    if before is None:
        report.unmatched += 1
        return
    for name in metrics:
        if out.get(name) is not None and name in before:
            current, previous = report.pairs[name]
            current.append(out[name])
            previous.append(before[name])  # type: ignore[arg-type]


def _progress(done: int, total: int, width: int = 30) -> None:
    filled = width * min(done, total) // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} rows")
    sys.stderr.flush()
