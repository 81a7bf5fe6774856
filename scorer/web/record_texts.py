"""The text of recently scored records (question, contexts, answer), for the live page's drill-down.

Kept apart from RecentScores: the scores stream (ragpulse.scores on Kafka) carries no record text,
and should not start to; only the page needs it, and only in the process that serves the page. A
worker observer, bounded by count and by bytes (UTF-8) at once: a few huge records cannot hold
memory that many small ones would not, and a record larger than the whole byte budget is not kept.
The text is the record as it left the collector, so redaction has already been applied.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass

from ragpulse.scorer.observer import ScoredRecord


@dataclass(frozen=True)
class RecordText:
    question: str
    contexts: tuple[str, ...]
    answer: str
    span_id: str
    size: int  # UTF-8 bytes of the three texts: what the byte budget counts


class RecentRecordTexts:
    """The last records' text by record id, oldest dropped first past `max_records` or `max_bytes`."""

    def __init__(self, max_records: int, max_bytes: int) -> None:
        self.max_records = max_records
        self.max_bytes = max_bytes
        self._items: collections.OrderedDict[str, RecordText] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def on_scores(self, scored: ScoredRecord) -> None:
        r = scored.record
        size = len(r.question.encode()) + len(r.answer.encode()) + sum(len(c.encode()) for c in r.contexts)
        if size > self.max_bytes or self.max_records <= 0:
            return
        text = RecordText(r.question, tuple(r.contexts), r.answer, r.span_id, size)
        with self._lock:
            old = self._items.pop(r.id, None)  # the same record scored again replaces its text
            if old is not None:
                self._bytes -= old.size
            self._items[r.id] = text
            self._bytes += size
            while len(self._items) > self.max_records or self._bytes > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= dropped.size

    def get(self, record_id: str) -> RecordText | None:
        with self._lock:
            return self._items.get(record_id)

    def usage(self) -> tuple[int, int]:
        """(records, bytes) held now."""
        with self._lock:
            return len(self._items), self._bytes
