"""A bounded, thread-safe map that forgets its least recently used entry first.

The scorer remembers things whose number has no natural end (record ids, judge replies, embedded
sentences); each memory is bounded so the process's footprint stays flat however long it runs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most `capacity` entries (0: remembers nothing). Safe to share between threads."""

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("capacity must be at least 0")
        self._capacity = capacity
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value, now the most recently used; None when absent."""
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._trim()

    def add_new(self, key: K, value: V) -> bool:
        """Insert unless the key is present, in one step; True when it was already present (and is
        then left where it was, so a key asked about again still leaves in insertion order)."""
        with self._lock:
            if key in self._data:
                return True
            self._data[key] = value
            self._trim()
            return False

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def _trim(self) -> None:
        while len(self._data) > self._capacity:
            self._data.popitem(last=False)
