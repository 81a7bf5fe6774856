"""A record's text as the judge sees it: the triple, and the reference answer and sampled answers
its span may carry (rag.reference, rag.samples: core/wire.py's attribute allow-list)."""

from __future__ import annotations

from typing import Any

from ragpulse.core.wire import Record
from ragpulse.scorer.judge.base import RecordText

REFERENCE_ATTRIBUTE = "rag.reference"
SAMPLES_ATTRIBUTE = "rag.samples"


def record_text(record: Record) -> RecordText:
    return RecordText(question=record.question, contexts=record.contexts, answer=record.answer,
                      reference=span_reference(record.attributes), samples=span_samples(record.attributes))


def span_reference(attributes: dict[str, Any]) -> str | None:
    value = attributes.get(REFERENCE_ATTRIBUTE)
    return value if isinstance(value, str) and value.strip() else None


def span_samples(attributes: dict[str, Any]) -> list[str] | None:
    """A string array; anything else (a number, a list holding one) is no samples."""
    value = attributes.get(SAMPLES_ATTRIBUTE)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None
