"""What an endpoint's replies take, learned from the replies: per kind of request (its prompt size
and reply bound), a smoothed latency and its spread (as TCP estimates a round trip, RFC 6298) and
a no-load baseline. The deadline of a request comes from them, so it measures the model, not a
guess: a local model that takes two minutes a reply is given the time it needs, a hung request to a
fast API is cut in seconds. `timeout_s` stays the ceiling, and the whole budget before anything is
known.

Not thread-safe by itself: concurrency.py's lock guards it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# A deadline is this many times the smoothed latency plus four spreads (a reply several times
# longer than usual is still a reply; the ceiling catches the hung ones)...
DEADLINE_FACTOR = 3.0
# ... and never shorter than this: a fast API's occasional slow reply is no failure.
DEADLINE_FLOOR_S = 30.0
# RFC 6298's gains for the smoothed latency and its spread.
_ALPHA = 1 / 8
_BETA = 1 / 4
# A baseline sample above it by less than this share moves it up slowly (the endpoint may have got
# slower); far above it is queueing, which the baseline must not learn.
_DRIFT_TOLERANCE = 1.5
_DRIFT_GAIN = 0.05


@dataclass
class _Kind:
    smoothed_s: float
    spread_s: float
    baseline_s: float
    samples: int = 1


def kind_of(estimated_tokens: int, max_tokens: int | None) -> tuple[int, int]:
    """Requests alike in what the endpoint does for them: the prompt size to a power of two (prefill
    time grows with it) and the reply bound (decoding time does)."""
    return (max(0, math.ceil(math.log2(max(estimated_tokens, 1)))), max_tokens or 0)


class LatencyBook:
    def __init__(self, ceiling_s: float) -> None:
        self.ceiling_s = ceiling_s
        self._kinds: dict[tuple[int, int], _Kind] = {}

    def deadline_s(self, kind: tuple[int, int]) -> float:
        k = self._kinds.get(kind)
        if k is None:
            return self.ceiling_s
        return min(self.ceiling_s, max(DEADLINE_FLOOR_S, DEADLINE_FACTOR * (k.smoothed_s + 4 * k.spread_s)))

    def baseline_s(self, kind: tuple[int, int]) -> float | None:
        k = self._kinds.get(kind)
        return None if k is None else k.baseline_s

    def observe(self, kind: tuple[int, int], seconds: float, alone: bool) -> None:
        """A reply that took `seconds`; `alone`: no other request of ours was in flight, so nothing
        of ours queued before it and its time is the endpoint's own."""
        k = self._kinds.get(kind)
        if k is None:
            self._kinds[kind] = _Kind(seconds, seconds / 2, seconds)
            return
        k.samples += 1
        k.spread_s += _BETA * (abs(k.smoothed_s - seconds) - k.spread_s)
        k.smoothed_s += _ALPHA * (seconds - k.smoothed_s)
        if alone or seconds < k.baseline_s:
            # Alone, a reply is the no-load latency by definition; faster than the baseline, the
            # baseline was too high (its first sample may have queued).
            k.baseline_s = seconds if alone else (k.baseline_s + seconds) / 2
        elif seconds < _DRIFT_TOLERANCE * k.baseline_s:
            k.baseline_s += _DRIFT_GAIN * (seconds - k.baseline_s)

    def typical_baseline_s(self) -> float | None:
        """The baseline of the kind seen most often: the one figure a dashboard shows."""
        if not self._kinds:
            return None
        return max(self._kinds.values(), key=lambda k: k.samples).baseline_s
