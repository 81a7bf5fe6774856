"""Where the scorer's per-record outputs go: the scores stream and the dead-letter sink.

In one-process mode both are bounded in memory (the live page reads them); on Kafka they are the
ragpulse.scores and ragpulse.dlq topics.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Protocol

from ragpulse.core.wire import dead_letter_envelope


class ScoreSink(Protocol):
    def publish(self, record_id: str, scores: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class DeadLetterSink(Protocol):
    def publish(self, payload: bytes, reason: str, detail: str, attempts: int) -> None: ...

    def close(self) -> None: ...


class RecentScores:
    """The last `capacity` score messages, newest last."""

    def __init__(self, capacity: int = 500) -> None:
        self._items: collections.deque[dict[str, Any]] = collections.deque(maxlen=capacity)
        self._lock = threading.Lock()

    def publish(self, record_id: str, scores: dict[str, Any]) -> None:
        with self._lock:
            self._items.append(scores)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items)

    def close(self) -> None:
        pass


class RecentDeadLetters:
    """The last `capacity` dead letters, kept in memory for the live page and for tests."""

    def __init__(self, capacity: int = 200) -> None:
        self._items: collections.deque[dict[str, Any]] = collections.deque(maxlen=capacity)
        self._lock = threading.Lock()

    def publish(self, payload: bytes, reason: str, detail: str, attempts: int) -> None:
        envelope = dead_letter_envelope(payload, reason, detail, attempts)
        with self._lock:
            self._items.append(envelope)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items)

    def close(self) -> None:
        pass

