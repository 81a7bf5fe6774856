"""Sampling-weighted means, written once: the rolling-mean gauge, the drift detector's baseline and
recent window, and the live page's per-minute means all keep their numbers here.

A record kept with probability p carries weight 1/p (its adjusted count), so a weighted mean
estimates the mean over all traffic, not over whatever share of it happened to be sampled.
"""

from __future__ import annotations

import collections
import math


class WeightedSums:
    """Running sums of (x, w) pairs: Σw, Σw·x, Σw·x², Σw² and n. Not thread-safe: owners lock."""

    __slots__ = ("n", "w", "ww", "wx", "wxx")

    def __init__(self) -> None:
        self.n = self.w = self.ww = self.wx = self.wxx = 0.0

    def add(self, x: float, w: float, decay: float = 1.0) -> None:
        """Adds a pair after scaling what is there by `decay` (below 1: exponential forgetting)."""
        self.n = self.n * decay + 1.0
        self.w = self.w * decay + w
        self.ww = self.ww * decay + w * w
        self.wx = self.wx * decay + w * x
        self.wxx = self.wxx * decay + w * x * x

    def remove(self, x: float, w: float) -> None:
        self.n -= 1.0
        self.w -= w
        self.ww -= w * w
        self.wx -= w * x
        self.wxx -= w * x * x

    @property
    def mean(self) -> float:
        """The weighted mean; only defined once a pair with a positive weight was added."""
        return self.wx / self.w

    @property
    def variance(self) -> float:
        # Clamped: running sums can leave a rounding residue just below 0.
        return max(self.wxx / self.w - self.mean**2, 0.0)

    @property
    def effective_n(self) -> float:
        """Kish's effective sample size: unequal weights count as fewer samples."""
        return self.w * self.w / self.ww

    @property
    def rms_weight(self) -> float:
        return math.sqrt(self.ww / self.n)


class WeightedWindow:
    """The last `size` pairs and their sums, so a mean costs the same whatever the window."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sums = WeightedSums()
        self._pairs: collections.deque[tuple[float, float]] = collections.deque()

    def add(self, x: float, w: float) -> tuple[float, float] | None:
        """Adds a pair; returns the one that left the window, if one did."""
        self._pairs.append((x, w))
        self.sums.add(x, w)
        if len(self._pairs) <= self.size:
            return None
        old = self._pairs.popleft()
        self.sums.remove(*old)
        return old
