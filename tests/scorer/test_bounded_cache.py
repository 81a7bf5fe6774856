"""The scorer's one bounded memory: least recently used out first, check-and-insert in one step."""

from __future__ import annotations

import threading

import pytest

from ragpulse.scorer.bounded_cache import BoundedCache


def test_the_least_recently_used_entry_leaves_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    assert len(cache) == 2


def test_add_new_reports_a_key_already_held_and_keeps_its_place() -> None:
    cache: BoundedCache[str, None] = BoundedCache(2)
    assert [cache.add_new(k, None) for k in "aba"] == [False, False, True]
    cache.add_new("c", None)  # "a" was asked about again but is still the oldest
    assert cache.get("a") is None


def test_capacity_zero_remembers_nothing() -> None:
    cache: BoundedCache[str, int] = BoundedCache(0)
    cache.put("a", 1)
    assert cache.get("a") is None and len(cache) == 0
    with pytest.raises(ValueError):
        BoundedCache(-1)


def test_concurrent_add_new_admits_each_key_once() -> None:
    cache: BoundedCache[int, None] = BoundedCache(10_000)
    firsts: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = [k for k in range(2000) if not cache.add_new(k, None)]
        with lock:
            firsts.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(firsts) == list(range(2000))
