"""Request and token budgets for a judge endpoint: token buckets (requests per minute, tokens per
minute) and the bound on concurrent requests (concurrency.py), shared by all work in a process that
uses the same endpoint and key, since that is what the provider's limits apply to. In a Kafka scorer group the
provider's limits are the group's: each member takes the share of them that it owns of the records
topic's partitions (set_group_share; docs/design/kafka.md, "One budget for the group")."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ragpulse.scorer.judge.openai.concurrency import ConcurrencyLimit, Ticket


class TokenBucket:
    """Holds up to `per_minute` units, refilled continuously. A debit may drive it negative (the
    real token count of a reply is known only afterwards); later takers then wait it off."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = float(per_minute)
        self.capacity = self.per_minute
        self.rate = per_minute / 60.0
        self._level = self.capacity
        self._clock = clock
        self._stamp = clock()

    def set_share(self, share: float) -> None:
        """Refill at `share` of the configured rate, holding at most `share` of a minute's worth."""
        self._refill()
        self.capacity = self.per_minute * share
        self.rate = self.capacity / 60.0
        self._level = min(self._level, self.capacity)

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now

    def wait_s(self, amount: float) -> float:
        """Seconds until `amount` can be taken (0 now). A request larger than the whole bucket
        waits for a full bucket instead of forever."""
        self._refill()
        need = min(amount, self.capacity) - self._level
        return max(need / self.rate, 0.0)

    def take(self, amount: float) -> None:
        self._refill()
        self._level -= amount


@dataclass
class Admitted:
    """A request let through: its concurrency slot (`ticket`, with its deadline) and
    `settle(actual_tokens)`, which corrects the token bucket by what the reply really used."""

    ticket: Ticket
    settle: Callable[[int], None]


class RateLimiter:
    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        max_concurrency: int,
        adaptive: bool = False,
        timeout_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._requests = TokenBucket(rpm, clock) if rpm else None
        self._tokens = TokenBucket(tpm, clock) if tpm else None
        self.concurrency = ConcurrencyLimit(max_concurrency, adaptive, timeout_s, clock)
        self._lock = threading.Lock()
        self._sleep = sleep

    def _wait_for_budget(self, tokens: int) -> None:
        while True:
            with self._lock:
                wait = max(
                    self._requests.wait_s(1) if self._requests else 0.0,
                    self._tokens.wait_s(tokens) if self._tokens else 0.0,
                )
                if wait <= 0.0:
                    if self._requests:
                        self._requests.take(1)
                    if self._tokens:
                        self._tokens.take(tokens)
                    return
            self._sleep(min(wait, 5.0))

    def set_share(self, share: float) -> None:
        """Take `share` of the configured requests and tokens per minute. A member that owns no
        partition keeps its last limits: it gets no records to call for, and a call still finishing
        from before the rebalance must not wait on an empty bucket forever."""
        if share <= 0.0:
            return
        with self._lock:
            for bucket in (self._requests, self._tokens):
                if bucket:
                    bucket.set_share(share)

    @contextmanager
    def request(self, estimated_tokens: int, max_tokens: int | None = None) -> Iterator[Admitted]:
        """Hold the budget and a concurrency slot for one request; the caller reports its outcome
        to `concurrency.done` with the ticket."""
        self._wait_for_budget(estimated_tokens)
        settled = False

        def settle(actual_tokens: int) -> None:
            nonlocal settled
            if self._tokens and not settled:
                with self._lock:
                    self._tokens.take(actual_tokens - estimated_tokens)
            settled = True

        with self.concurrency.slot(estimated_tokens, max_tokens) as ticket:
            yield Admitted(ticket, settle)


_SHARED: dict[tuple[object, ...], RateLimiter] = {}
_SHARED_LOCK = threading.Lock()


def shared_limiter(endpoint: tuple[object, ...], rpm: float | None, tpm: float | None, max_concurrency: int,
                   adaptive: bool, timeout_s: float) -> RateLimiter:
    """The process-wide limiter for `endpoint` (URL and credential) and these limits: judges built
    separately for the same endpoint still share one budget and one learned concurrency."""
    key = (*endpoint, rpm, tpm, max_concurrency, adaptive, timeout_s)
    with _SHARED_LOCK:
        limiter = _SHARED.get(key)
        if limiter is None:
            limiter = _SHARED[key] = RateLimiter(rpm, tpm, max_concurrency, adaptive, timeout_s)
        return limiter


def set_group_share(share: float) -> None:
    """Every process-wide limiter takes `share` of its limits: in a Kafka scorer group, the share of
    the records topic's partitions this process owns (all its calls serve those records)."""
    with _SHARED_LOCK:
        limiters = list(_SHARED.values())
    for limiter in limiters:
        limiter.set_share(share)
