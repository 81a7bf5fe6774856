"""The bus between collector and scorer: what a publisher and a consumer of records must do.

Payloads are the record contract's JSON bytes on every bus, so the in-process queue and Kafka
exercise the same parsing, dead-lettering and accounting in the scorer.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragpulse.core.settings import key, require_at_least


@dataclass
class MemoryBusConfig:
    # Records queued before OTLP clients are told to retry later.
    capacity: int = 10_000
    # Record ids the one-process scorer remembers, so a record an exporter sent twice (it gave up
    # waiting for an answer that did come) is scored once.
    dedupe_window: int = 100_000

    def validate(self, where: str) -> None:
        require_at_least(key(where, "capacity"), self.capacity, 1)
        require_at_least(key(where, "dedupe_window"), self.dedupe_window, 1)


class BusFull(Exception):
    """The bus cannot take the records now; the caller should ask its client to retry later."""

    def __init__(self, retry_after_s: float = 1.0) -> None:
        super().__init__(f"bus full, retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Delivery:
    key: bytes
    value: bytes
    # Whatever the bus needs to commit this delivery (a Kafka partition and offset, ...).
    token: Any = None
    # Scorers that took this record before and stopped without finishing it (a crash).
    abandoned: int = 0


# A record for the bus: (key, value).
KeyedRecord = tuple[bytes, bytes]


class RecordPublisher(Protocol):
    def publish_batch(self, records: Sequence[KeyedRecord]) -> list[int]:
        """Take every record or none and raise BusFull, at once: an OTLP request is accepted or
        refused whole, so the client's retry of a refused request duplicates nothing, and a full
        bus answers before the client's timeout. Never drop a record silently.

        A batch larger than the bus's whole room is taken when the bus is empty (otherwise it
        could never go in): the bound is overshot by at most one request. Returns the indices of
        records the bus can never take (too large for a message even when cut): those are not
        taken, the rest are, and the caller counts them."""
        ...

    def close(self) -> None: ...


class RecordConsumer(Protocol):
    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]: ...

    def commit(self, delivery: Delivery) -> None:
        """Mark a delivery done: scored, dropped by a rule, or dead-lettered."""
        ...

    def depth(self) -> int:
        """Records waiting (queue depth, or consumer lag on Kafka)."""
        ...

    def close(self) -> None: ...


class InProcessBus:
    """A bounded queue for one-process mode. A full queue pushes back on the OTLP client at once
    instead of growing without bound or holding the client's request open."""

    def __init__(self, capacity: int, retry_after_s: float = 1.0) -> None:
        self._capacity = capacity
        self._retry_after_s = retry_after_s
        self._queue: collections.deque[Delivery] = collections.deque()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def publish_batch(self, records: Sequence[KeyedRecord]) -> list[int]:
        with self._lock:
            if self._queue and len(self._queue) + len(records) > self._capacity:
                raise BusFull(self._retry_after_s)
            # Copied to their exact size: the record JSON from orjson holds on to more memory than
            # its length (about 8 KB of RSS per 1.5 KB record, measured), and a full queue keeps
            # `capacity` of them: 80 MB instead of 15 for 10,000 such records.
            self._queue.extend(Delivery(k, bytes(memoryview(v))) for k, v in records)
            self._changed.notify_all()
        return []

    def publish(self, key: bytes, value: bytes) -> None:
        self.publish_batch([(key, value)])

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        with self._lock:
            self._changed.wait_for(lambda: self._queue, timeout_s)
            out = [self._queue.popleft() for _ in range(min(max_records, len(self._queue)))]
            self._in_flight += len(out)
            return out

    def commit(self, delivery: Delivery) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._changed.notify_all()

    def depth(self) -> int:
        return len(self._queue)

    def drained(self, timeout_s: float) -> bool:
        """Wait until every published record was polled and committed (clean shutdown)."""
        with self._lock:
            return self._changed.wait_for(lambda: not self._queue and self._in_flight == 0, timeout_s)

    def close(self) -> None:
        pass
