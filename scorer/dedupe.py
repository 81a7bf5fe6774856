"""Skipping redelivered records so Prometheus does not count them twice.

Kafka delivery is at-least-once: after a failed commit, a broker restart or a partition coming
back, a scorer may see a record it already scored. The window remembers the last `capacity`
record ids this process scored; a redelivery within it is skipped (and counted as a duplicate).
Bounded on purpose: memory stays flat, and a redelivery older than the window is rare enough
(commits run every fraction of a second) to accept.
"""

from __future__ import annotations

import collections
import threading


class RecentRecordIds:
    """RecordDeduper for the scorer worker: a thread-safe, bounded set in arrival order."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def seen(self, record_id: str) -> bool:
        with self._lock:
            if record_id in self._ids:
                return True
            self._ids[record_id] = None
            if len(self._ids) > self._capacity:
                self._ids.popitem(last=False)
            return False

    def __len__(self) -> int:
        return len(self._ids)
