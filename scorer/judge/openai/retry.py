"""When to try a judge request again: exponential backoff with jitter, Retry-After, and a circuit
breaker that holds requests back while the endpoint is down.

The breaker pauses instead of failing fast: a scorer would otherwise turn an outage into a burst
of failed records. Requests wait for the breaker (bounded by `max_wait_s`, after which the caller
gets `circuit_open`, a reason to requeue the record rather than drop it).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from ragpulse.scorer.judge.base import JudgeError


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (0 = first retry). A server's
        Retry-After wins when present (capped, so a bad header cannot stall a worker for hours);
        otherwise full jitter spreads the retries of concurrent workers apart."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_s)
        return rng.uniform(0.0, min(self.max_s, self.base_s * 2**attempt))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


class CircuitBreaker:
    """Closed → open after `failure_threshold` consecutive failed requests; while open, requests
    wait; after `cooldown_s` one probe is let through (half-open) and its outcome closes or
    re-opens the breaker."""

    def __init__(
        self,
        failure_threshold: int = 5,
        cooldown_s: float = 10.0,
        max_wait_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.cooldown_s = cooldown_s
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._cond = threading.Condition()
        self._failures = 0
        self._opened_at: float | None = None
        self._probe_out = False

    @property
    def is_open(self) -> bool:
        with self._cond:
            return self._opened_at is not None

    def acquire(self) -> None:
        """Block until a request may go out; JudgeError('circuit_open') after max_wait_s."""
        deadline = self._clock() + self.max_wait_s
        with self._cond:
            while True:
                if self._opened_at is None:
                    return
                now = self._clock()
                if not self._probe_out and now >= self._opened_at + self.cooldown_s:
                    self._probe_out = True
                    return
                if now >= deadline:
                    raise JudgeError("circuit_open", f"endpoint down; waited {self.max_wait_s:.0f} s")
                wake = deadline if self._probe_out else min(deadline, self._opened_at + self.cooldown_s)
                self._cond.wait(timeout=max(wake - now, 0.01))

    def success(self) -> None:
        with self._cond:
            self._failures = 0
            self._opened_at = None
            self._probe_out = False
            self._cond.notify_all()

    def failure(self) -> None:
        with self._cond:
            self._failures += 1
            if self._probe_out or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._probe_out = False
            self._cond.notify_all()

    def neutral(self) -> None:
        """The request ended without telling whether the endpoint is up (e.g. a 400): release a
        probe slot without moving the breaker."""
        with self._cond:
            self._probe_out = False
            self._cond.notify_all()
