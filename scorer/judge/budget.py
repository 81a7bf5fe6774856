"""How much a paid judge may spend: a budget in USD per clock hour or day (UTC). The judge checks
it before each call and charges it after; the scorer's pacer (scorer/estimate/pacing.py) reads it to spread
the spending over the window. When the window's budget is spent, calls are refused with
JudgeError('budget_exhausted') until the next window starts.

In a Kafka scorer group each member spends `share` of the limit: the share of the records topic's
partitions it owns, set on every rebalance (docs/design/kafka.md, "One budget for the group")."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from ragpulse.scorer.judge.base import JudgeError

WINDOW_SECONDS = {"hour": 3600, "day": 86400}


class Budget:
    def __init__(self, limit_usd: float | None, window: str, clock: Callable[[], float] = time.time,
                 paced: bool = False) -> None:
        if window not in WINDOW_SECONDS:
            raise ValueError(f"budget_window: expected one of {sorted(WINDOW_SECONDS)}, got {window!r}")
        self.limit_usd = limit_usd
        # Whether the scorer should spread this budget over its window (scorer/estimate/pacing.py).
        self.paced = paced and limit_usd is not None
        self._seconds = WINDOW_SECONDS[window]
        self._clock = clock
        self._lock = threading.Lock()
        self._window_start = self._current_window()
        self._spent = 0.0
        self._share = 1.0

    def set_share(self, share: float) -> None:
        """Spend `share` of the limit from now on; what this process already spent in the window
        counts against it (a member that lost partitions may have nothing left)."""
        with self._lock:
            self._share = share

    def _limit(self) -> float:
        return math.inf if self.limit_usd is None else self.limit_usd * self._share

    def _current_window(self) -> int:
        return int(self._clock() // self._seconds)

    def _roll(self) -> None:
        window = self._current_window()
        if window != self._window_start:
            self._window_start, self._spent = window, 0.0

    @property
    def spent_usd(self) -> float:
        with self._lock:
            self._roll()
            return self._spent

    def remaining_usd(self) -> float:
        with self._lock:
            self._roll()
            return self._limit() - self._spent

    def remaining_s(self) -> float:
        """Seconds until the window rolls over."""
        now = self._clock()
        return (int(now // self._seconds) + 1) * self._seconds - now

    def check(self) -> None:
        """Refuse a new call once the window's budget is spent. Calls already in flight still
        finish and are charged, so a window can overshoot by at most the concurrent calls."""
        if self.limit_usd is None:
            return
        with self._lock:
            self._roll()
            if self._spent >= self._limit():
                raise JudgeError("budget_exhausted", f"spent {self._spent:.4f} of {self._limit():.4f} USD")

    def charge(self, usd: float) -> None:
        with self._lock:
            self._roll()
            self._spent += usd
