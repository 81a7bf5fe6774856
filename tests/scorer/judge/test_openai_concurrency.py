"""The adaptive concurrency limit and the latency book (scorer/judge/openai/concurrency.py,
latency.py) on a clock of their own: a simulated endpoint with a number of slots and a FIFO queue,
driven by clients that always have a request to send, so that hours of traffic take milliseconds.
The same behaviour against real servers: tests/scorer/test_scorer_slow_endpoint.py."""

from __future__ import annotations

import heapq

import pytest

from ragpulse.scorer.judge.openai.concurrency import ConcurrencyLimit, Ticket
from ragpulse.scorer.judge.openai.latency import DEADLINE_FLOOR_S, LatencyBook, kind_of


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SimulatedEndpoint:
    """`slots` requests served at once, each `service_s`; the others wait in its FIFO queue."""

    def __init__(self, slots: int, service_s: float) -> None:
        self.slots, self.service_s = slots, service_s
        self.free_at = [0.0] * slots
        self.queued_s = 0.0

    def finish_time(self, now: float) -> float:
        start = max(now, heapq.heappop(self.free_at))
        self.queued_s += start - now
        heapq.heappush(self.free_at, start + self.service_s)
        return start + self.service_s


def drive(limit: ConcurrencyLimit, clock: Clock, endpoint: SimulatedEndpoint, clients: int,
          replies: int) -> list[tuple[float, int]]:
    """Clients send whenever the limit lets them; returns (time, limit) at each of `replies`
    replies."""
    pending: list[tuple[float, int, Ticket]] = []
    seq = 0
    trace = []
    for _ in range(replies):
        while len(pending) < clients and limit.state().in_flight < limit.limit:
            ticket = limit.acquire(1000, 256)
            heapq.heappush(pending, (endpoint.finish_time(clock.now), seq, ticket))
            seq += 1
        at, _, ticket = heapq.heappop(pending)
        clock.now = at
        limit.done(ticket, "ok")
        limit.release()
        trace.append((at, limit.limit))
    for at, _, ticket in sorted(pending):  # the last ones come back; nothing stays in flight
        clock.now = at
        limit.done(ticket, "ok")
        limit.release()
    return trace


def one_request(limit: ConcurrencyLimit, outcome: str) -> None:
    limit.done(limit.acquire(1000, 256), outcome)
    limit.release()


def test_a_one_slot_endpoint_settles_the_limit_at_one_and_stays_busy() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=4, adaptive=True, timeout_s=600, clock=clock)
    endpoint = SimulatedEndpoint(slots=1, service_s=20.0)
    trace = drive(limit, clock, endpoint, clients=4, replies=400)
    at_one = sum(1 for _, n in trace[50:] if n == 1) / len(trace[50:])
    assert at_one >= 0.95, at_one
    assert trace[-1][0] == pytest.approx(400 * 20.0)  # the endpoint never idled
    # A probe of a second request queues one or two at the endpoint, and probes get ever rarer.
    assert endpoint.queued_s <= 0.06 * trace[-1][0]


def test_a_fast_wide_endpoint_gets_the_ceiling_within_a_few_round_trips() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=64, adaptive=True, timeout_s=600, clock=clock)
    endpoint = SimulatedEndpoint(slots=64, service_s=1.5)
    trace = drive(limit, clock, endpoint, clients=64, replies=2000)
    reached = next(t for t, n in trace if n == 64)
    assert reached <= 8 * 1.5  # slow start: one step per reply, doubling per round trip
    assert all(n == 64 for t, n in trace if t > reached)
    assert endpoint.queued_s == 0.0


def test_an_endpoint_with_four_slots_under_a_ceiling_of_sixteen_is_held_near_four() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=16, adaptive=True, timeout_s=600, clock=clock)
    endpoint = SimulatedEndpoint(slots=4, service_s=2.0)
    trace = drive(limit, clock, endpoint, clients=16, replies=3000)
    late = [n for _, n in trace[500:]]
    assert sum(late) / len(late) == pytest.approx(4, abs=1.0)
    assert max(late) <= 6
    assert trace[-1][0] == pytest.approx(3000 * 2.0 / 4, rel=0.02)  # all four slots kept busy


def test_timeouts_of_one_burst_halve_the_limit_once_and_keep_their_slots_a_while() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=8, adaptive=True, timeout_s=600, clock=clock)
    endpoint = SimulatedEndpoint(slots=64, service_s=1.0)
    drive(limit, clock, endpoint, clients=8, replies=100)
    assert limit.limit == 8
    tickets = [limit.acquire(1000, 256) for _ in range(8)]
    clock.now += 100.0
    for t in tickets:
        limit.done(t, "timeout")
        limit.release()
    assert limit.limit == 4  # one congestion event, one cut
    assert limit.state().in_flight == 8  # the endpoint may still be working on all eight
    clock.now += 1.01  # one usual reply later
    assert limit.state().in_flight == 0


def test_a_429_cuts_the_limit_and_other_failures_do_not() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=8, adaptive=True, timeout_s=600, clock=clock)
    drive(limit, clock, SimulatedEndpoint(slots=64, service_s=1.0), clients=8, replies=100)
    one_request(limit, "failed")
    assert limit.limit == 8
    one_request(limit, "congested")
    assert (limit.limit, limit.state().in_flight) == (4, 0)


def test_a_fixed_limit_never_moves() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(ceiling=4, adaptive=False, timeout_s=600, clock=clock)
    drive(limit, clock, SimulatedEndpoint(slots=1, service_s=20.0), clients=4, replies=50)
    one_request(limit, "timeout")
    assert limit.limit == 4


def test_deadlines_follow_the_observed_latency_of_each_kind_under_the_ceiling() -> None:
    book = LatencyBook(ceiling_s=600)
    slow, fast = kind_of(2000, 512), kind_of(100, 16)
    assert book.deadline_s(slow) == 600  # nothing known yet: the whole budget
    for _ in range(20):
        book.observe(slow, 120.0, alone=True)
        book.observe(fast, 0.5, alone=True)
    assert 360 <= book.deadline_s(slow) <= 600  # a two-minute model gets minutes
    assert book.deadline_s(fast) == DEADLINE_FLOOR_S  # a fast one is cut after the floor
    for _ in range(50):
        book.observe(slow, 400.0, alone=False)
    assert book.deadline_s(slow) == 600  # never above the ceiling


def test_the_baseline_learns_no_queueing_but_follows_an_endpoint_that_got_slower() -> None:
    book = LatencyBook(ceiling_s=600)
    k = kind_of(1000, 256)
    book.observe(k, 10.0, alone=True)
    book.observe(k, 40.0, alone=False)  # queued behind others of ours
    assert book.baseline_s(k) == 10.0
    book.observe(k, 13.0, alone=True)  # alone, a reply is the endpoint's own time
    assert book.baseline_s(k) == 13.0
    book.observe(k, 8.0, alone=False)
    assert book.baseline_s(k) == pytest.approx(10.5)
