"""The bus between collector and scorer: what a publisher and a consumer of records must do.

Payloads are the record contract's JSON bytes on every bus, so the in-process queue and Kafka
exercise the same parsing, dead-lettering and accounting in the scorer.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from ragpulse.core.settings import key, require_at_least


@dataclass
class MemoryBusConfig:
    # Records queued before OTLP clients are told to retry later.
    capacity: int = 10_000

    def validate(self, where: str) -> None:
        require_at_least(key(where, "capacity"), self.capacity, 1)


class BusFull(Exception):
    """The bus cannot take the record now; the caller should ask its client to retry later."""

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


class RecordPublisher(Protocol):
    def publish(self, key: bytes, value: bytes) -> None:
        """Hand one record to the bus or raise BusFull; never drop it silently."""
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
    """A bounded queue for one-process mode. A full queue pushes back on the OTLP client
    instead of growing without bound."""

    def __init__(self, capacity: int, put_timeout_s: float = 0.5) -> None:
        self._queue: queue.Queue[Delivery] = queue.Queue(maxsize=capacity)
        self._put_timeout_s = put_timeout_s
        self._in_flight = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def publish(self, key: bytes, value: bytes) -> None:
        try:
            self._queue.put(Delivery(key, value), timeout=self._put_timeout_s)
        except queue.Full:
            raise BusFull() from None

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        out: list[Delivery] = []
        try:
            out.append(self._queue.get(timeout=timeout_s))
            while len(out) < max_records:
                out.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        with self._lock:
            self._in_flight += len(out)
        return out

    def commit(self, delivery: Delivery) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.notify_all()

    def depth(self) -> int:
        return self._queue.qsize()

    def drained(self, timeout_s: float) -> bool:
        """Wait until every published record was polled and committed (clean shutdown)."""
        with self._lock:
            return self._idle.wait_for(lambda: self._queue.qsize() == 0 and self._in_flight == 0, timeout_s)

    def close(self) -> None:
        pass
