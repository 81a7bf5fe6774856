"""Spreading a judge's spending budget over its window instead of spending it in the first minutes.

Without pacing, a budget of N dollars a day scores every record until the money runs out at,
say, 09:00, and nothing after: the day's quality figures then describe the morning only. The pacer
scores a share p of the records, re-estimated continuously so the remaining budget lasts the
remaining window at the current traffic and cost per record, and multiplies each scored record's
sampling weight by 1/p. Weighted sums, counts and means stay unbiased estimates of all traffic;
the records not scored are skipped with a counted reason.

The choice is consistent, like the collector's sampling: a record is kept when its trace id's
random low 56 bits clear the combined threshold (upstream probability × p), so every scorer makes
the same choice for the same trace, a redelivered record gets the same answer, and a lower p keeps
a subset of what a higher one kept.
"""

from __future__ import annotations

import dataclasses
import math
import random
import threading
import time
from collections.abc import Callable

from ragpulse.core.sampling import keeps, trace_randomness
from ragpulse.core.wire import Record
from ragpulse.scorer.judge.budget import Budget


class BudgetPacer:
    def __init__(self, budget: Budget, clock: Callable[[], float] = time.time, horizon_s: float = 300.0,
                 cost_smoothing: float = 0.05) -> None:
        if budget.limit_usd is None:
            raise ValueError("a pacer needs a budget with a limit")
        self._budget = budget
        self._clock = clock
        # Arrivals are counted with exponential decay over `horizon_s`: traffic a few minutes old
        # sets the rate, so the share follows the daily curve.
        self._horizon_s = horizon_s
        self._decayed_arrivals = 0.0
        self._last_arrival: float | None = None
        self._first_arrival: float | None = None
        self._cost_smoothing = cost_smoothing
        self._cost_per_record: float | None = None
        self._lock = threading.Lock()

    def _arrival_rate(self, now: float) -> float:
        """Records per second; called right after an arrival is counted, so nothing to decay."""
        if self._first_arrival is None:
            return 0.0
        # Early on fewer than horizon_s seconds have been seen: divide by the decayed time observed.
        seen = max(now - self._first_arrival, 1.0)
        return self._decayed_arrivals / (self._horizon_s * -math.expm1(-seen / self._horizon_s))

    def _share(self, now: float) -> float:
        remaining_usd = self._budget.remaining_usd()
        if remaining_usd <= 0.0:
            return 0.0
        if not self._cost_per_record:
            return 1.0  # nothing spent yet (or records cost nothing): score them
        demand_usd = self._arrival_rate(now) * self._cost_per_record * self._budget.remaining_s()
        return 1.0 if demand_usd <= remaining_usd else remaining_usd / demand_usd

    def arrival_share(self) -> float:
        """Counts one arriving record and returns the share of records the budget affords now (the
        cascade, scorer/estimate/cascade.py, spreads this share unevenly over the records)."""
        with self._lock:
            now = self._clock()
            if self._last_arrival is not None:
                self._decayed_arrivals *= math.exp(-(now - self._last_arrival) / self._horizon_s)
            else:
                self._first_arrival = now
            self._decayed_arrivals += 1.0
            self._last_arrival = now
            return self._share(now)

    def admit(self, record: Record) -> tuple[Record | None, str]:
        """(the record with its weight scaled by 1/share, "") or (None, skip reason)."""
        share = self.arrival_share()
        if share <= 0.0:
            return None, "budget_exhausted"
        if share >= 1.0:
            return record, ""
        upstream = record.sampling
        combined = upstream.probability * share
        if not kept_by_trace(record.trace_id, combined, upstream.rv):
            return None, "budget_paced"
        sampling = dataclasses.replace(upstream, probability=combined, adjusted_count=upstream.adjusted_count / share,
                                       rule=f"{upstream.rule}+budget_pacing")
        return dataclasses.replace(record, sampling=sampling), ""

    def scored(self, cost_usd: float) -> None:
        """What a scored record cost (all its judge calls)."""
        with self._lock:
            if self._cost_per_record is None:
                self._cost_per_record = cost_usd
            else:
                self._cost_per_record += self._cost_smoothing * (cost_usd - self._cost_per_record)


def kept_by_trace(trace_id: str, probability: float, rv: str = "") -> bool:
    """Whether a record is kept at `probability` (upstream sampling's included), decided by its trace's
    randomness (the tracestate's rv the collector decided on, else the trace id's low 56 bits): the same
    answer in every scorer and on every redelivery."""
    try:
        randomness = int(rv, 16) if rv else trace_randomness(bytes.fromhex(trace_id))
    except ValueError:  # not a hex trace id (a foreign producer): no consistency to keep
        return random.random() < probability
    return keeps(randomness, probability)
