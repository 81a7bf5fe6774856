"""Rows of a batch file, streamed: JSONL or CSV, with our column names or Ragas's.

CSV cells are strings, so a CSV file's contexts (and samples) are one cell holding a JSON array of
strings.
A row that cannot be read is yielded as its error (with its line number) and does not stop the run.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# Ours first, then Ragas's (EvaluationDataset's single-turn sample) for the same thing.
COLUMNS = {
    "question": ("question", "user_input"),
    "contexts": ("contexts", "retrieved_contexts"),
    "answer": ("answer", "response"),
    "reference": ("reference", "ground_truth"),
    # Other answers sampled for the same question, for SelfCheck consistency.
    "samples": ("samples",),
}


@dataclass(frozen=True)
class Row:
    line: int
    # The row as read (output keeps every key); None when `error` says why it could not be read.
    data: dict[str, Any] | None
    error: str | None = None


def is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv"


def read_rows(source: IO[str], csv_format: bool) -> Iterator[Row]:
    return _csv_rows(source) if csv_format else _jsonl_rows(source)


def count_rows(source: IO[str], csv_format: bool) -> int:
    """Rows in the file, read as a stream (for the progress bar's total)."""
    if csv_format:
        return max(sum(1 for _ in csv.reader(source)) - 1, 0)
    return sum(1 for line in source if line.strip())


def _jsonl_rows(source: IO[str]) -> Iterator[Row]:
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            yield Row(number, None, f"not valid JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(data, dict):
            yield Row(number, None, "a row must be a JSON object")
            continue
        yield Row(number, data)


def _csv_rows(source: IO[str]) -> Iterator[Row]:
    reader = csv.DictReader(source)
    for data in reader:
        if None in data:
            yield Row(reader.line_num, None, "more cells than header columns")
            continue
        try:
            for name in ("contexts", "samples"):
                if (list_key := next((k for k in COLUMNS[name] if k in data), None)) is not None:
                    data[list_key] = _json_array(data[list_key], list_key)
        except ValueError as e:
            yield Row(reader.line_num, None, str(e))
            continue
        yield Row(reader.line_num, data)


def _json_array(cell: str, key: str) -> Any:
    try:
        return json.loads(cell or "[]")
    except json.JSONDecodeError as e:
        raise ValueError(f"'{key}' is not a JSON array of strings ({e.msg})") from None


def column(data: dict[str, Any], name: str) -> tuple[str, Any]:
    """(the key used, its value) for one of COLUMNS; a row naming it twice differently is an error."""
    present = [k for k in COLUMNS[name] if k in data]
    if len(present) > 1 and any(data[k] != data[present[0]] for k in present[1:]):
        raise ValueError(f"'{present[0]}' and '{present[1]}' differ; give one of them")
    return (present[0], data[present[0]]) if present else (COLUMNS[name][0], None)


@dataclass(frozen=True)
class RowText:
    question: str
    contexts: list[str]
    answer: str
    reference: str | None
    samples: list[str] | None


def row_text(data: dict[str, Any]) -> RowText:
    """The texts a metric needs, checked; raises ValueError saying which column is wrong."""
    texts: dict[str, Any] = {}
    for name in ("question", "answer"):
        key, value = column(data, name)
        if not isinstance(value, str):
            raise ValueError(f"'{key}' must be a string")
        texts[name] = value
    key, contexts = column(data, "contexts")
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise ValueError(f"'{key}' must be a list of strings")
    key, reference = column(data, "reference")
    if reference == "":
        reference = None  # an empty CSV cell: no reference for this row
    if reference is not None and not isinstance(reference, str):
        raise ValueError(f"'{key}' must be a string")
    key, samples = column(data, "samples")
    if samples is not None and (not isinstance(samples, list) or not all(isinstance(x, str) for x in samples)):
        raise ValueError(f"'{key}' must be a list of strings")
    return RowText(texts["question"], contexts, texts["answer"], reference, samples or None)


def pairing_key(data: dict[str, Any]) -> tuple[str, ...] | None:
    """How a row is matched with the same row of another run: its id, else (question, answer)."""
    if data.get("id") not in (None, ""):
        return ("id", str(data["id"]))
    try:
        _, question = column(data, "question")
        _, answer = column(data, "answer")
    except ValueError:
        return None
    if isinstance(question, str) and isinstance(answer, str):
        return ("text", question, answer)
    return None
