"""How many requests one endpoint gets at once, learned from what it does, in the manner of TCP
Vegas and the gradient limits of Netflix's concurrency-limits and Envoy's adaptive concurrency
filter: between 1 and `max_concurrency` (the ceiling).

- A reply that takes QUEUEING_RATIO times the no-load latency of its kind of request or more
  (latency.py) was queued at the endpoint: the limit falls at once to about what the endpoint
  served without queueing (from the requests in flight and the latency ratio). A one-slot server
  asked for two gives the second twice the latency: the limit falls to 1.
- A timeout, a 429 or a 503 halves it, once per congestion event (requests sent before the last cut
  do not cut it again).
- It grows by one per reply while nothing has been cut yet (TCP's slow start: a fast API reaches its
  ceiling in a few round trips), then by one per limit's worth of replies; only while the limit is in
  use, and more slowly each time a step up was cut back (a one-slot server is probed ever more
  rarely, so the limit settles at the slot count).
- A request that would pass the limit waits here, not in the endpoint's queue; a request that timed
  out keeps its slot for one more usual reply time, since the endpoint may still be working on it
  and a retry must not add to that.

With `adaptive: false` the limit is the ceiling and never moves (today's fixed concurrency).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ragpulse.scorer.judge.openai.latency import LatencyBook, kind_of

# Latency over the no-load baseline of the same kind that counts as queueing at the endpoint.
QUEUEING_RATIO = 1.5
# A probe cut back makes the next one wait twice as long, up to this many times the usual pace.
MAX_PATIENCE = 64.0


@dataclass(frozen=True)
class State:
    limit: int
    in_flight: int
    baseline_s: float | None


@dataclass
class Ticket:
    """One request's slot: its deadline, and what it found when it was sent."""

    kind: tuple[int, int]
    deadline_s: float
    sent_at: float
    in_flight_at_send: int
    limit_at_send: int
    epoch: int


class ConcurrencyLimit:
    def __init__(self, ceiling: int, adaptive: bool, timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = ceiling
        self.adaptive = adaptive
        self.latency = LatencyBook(timeout_s)
        self._limit = 1.0 if adaptive else float(ceiling)
        self._slow_start = True
        self._credit = 0.0
        self._patience = 1.0
        self._probe_top = 0
        self._probe_held = 0
        self._epoch = 0
        self._in_flight = 0
        self._held: list[float] = []  # until when timed-out requests keep their slots
        self._clock = clock
        self._cond = threading.Condition()

    @property
    def limit(self) -> int:
        return max(1, math.floor(self._limit))

    def state(self) -> State:
        with self._cond:
            now = self._clock()
            held = sum(1 for t in self._held if t > now)
            return State(self.limit, self._in_flight + held, self.latency.typical_baseline_s())

    @contextmanager
    def slot(self, estimated_tokens: int, max_tokens: int | None) -> Iterator[Ticket]:
        """Wait for a slot; the caller reports how the request ended with `done` before leaving."""
        ticket = self.acquire(estimated_tokens, max_tokens)
        try:
            yield ticket
        finally:
            self.release()

    def acquire(self, estimated_tokens: int, max_tokens: int | None) -> Ticket:
        kind = kind_of(estimated_tokens, max_tokens)
        with self._cond:
            while True:
                now = self._clock()
                self._held = [t for t in self._held if t > now]
                busy = self._in_flight + len(self._held)
                if busy < self.limit:
                    break
                self._cond.wait(timeout=min(self._held) - now if self._held else None)
            self._in_flight += 1
            return Ticket(kind, self.latency.deadline_s(kind), self._clock(), busy + 1, self.limit, self._epoch)

    def release(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    def done(self, ticket: Ticket, outcome: str) -> None:
        """`ok`; `congested` (a timeout, 429 or 503: the endpoint is over its capacity) or `timeout`
        (congested, and the endpoint may still be working on it); anything else moves nothing."""
        with self._cond:
            now = self._clock()
            if outcome == "ok":
                seconds = now - ticket.sent_at
                baseline = self.latency.baseline_s(ticket.kind)
                self.latency.observe(ticket.kind, seconds, ticket.in_flight_at_send == 1)
                if self.adaptive:
                    self._on_reply(ticket, seconds, baseline)
            elif outcome in ("congested", "timeout"):
                if outcome == "timeout":
                    typical = self.latency.baseline_s(ticket.kind) or 0.0
                    self._held.append(now + typical)
                if self.adaptive and ticket.epoch == self._epoch:
                    self._cut(self._limit / 2)
            self._cond.notify_all()

    def _on_reply(self, ticket: Ticket, seconds: float, baseline: float | None) -> None:
        if ticket.epoch != self._epoch:
            return  # sent before the last cut: it tells of a limit no longer in force
        if baseline is not None and seconds >= QUEUEING_RATIO * baseline:
            # n requests in flight, one of them ratio r times its no-load latency: at least n / r were
            # served at once, fewer than n / (r - 1) (a reply queued behind others waits whole
            # service times); the cut takes one under the upper bound, and never less than the lower.
            n, r = ticket.in_flight_at_send, seconds / baseline
            served = max(n / r, min(n - 1, n / (r - 1) - 1))
            if served < self._limit:
                self._cut(served)
            return
        if 2 * ticket.in_flight_at_send < ticket.limit_at_send:
            return  # the limit was not in use: this reply says nothing about a higher one
        if self._probe_top and ticket.in_flight_at_send >= self._probe_top:
            self._probe_held += 1
            if self._probe_held >= self._probe_top:  # a limit's worth of replies: the step up held
                self._patience = max(1.0, self._patience / 2)
                self._probe_top = 0
        self._credit += 1.0 if self._slow_start else 1.0 / (self._limit * self._patience)
        if self._credit >= 1.0 and self._limit < self.ceiling:
            self._credit = 0.0
            self._limit = min(float(self.ceiling), self._limit + 1.0)
            self._probe_top, self._probe_held = self.limit, 0

    def _cut(self, to: float) -> None:
        if self._probe_top:
            self._patience = min(MAX_PATIENCE, self._patience * 2)
            self._probe_top = 0
        self._slow_start = False
        self._credit = 0.0
        self._limit = max(1.0, to)
        self._epoch += 1
