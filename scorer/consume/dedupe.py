"""Skipping redelivered records so Prometheus does not count them twice.

Kafka delivery is at-least-once: after a failed commit, a broker restart or a partition coming
back, a scorer may see a record it already scored. The window remembers the last `capacity`
record ids this process scored; a redelivery within it is skipped (and counted as a duplicate).
Bounded on purpose: memory stays flat, and a redelivery older than the window is rare enough
(commits run every fraction of a second) to accept.
"""

from __future__ import annotations

from ragpulse.scorer.bounded_cache import BoundedCache


class RecentRecordIds:
    """RecordDeduper for the scorer worker: a thread-safe, bounded set in arrival order."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._ids: BoundedCache[str, None] = BoundedCache(capacity)

    def seen(self, record_id: str) -> bool:
        return self._ids.add_new(record_id, None)

    def __len__(self) -> int:
        return len(self._ids)
