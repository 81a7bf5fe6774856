"""Finding a record that kills the scorer process, through the committed offset's metadata.

A record that crashes the process (a segfault in a judge's native code, an OOM kill) is never
finished, so it comes back to every new owner of its partition, which crashes in turn: the
partition stalls for good and the retry count of the worker, kept in memory, dies with it.

So every commit by an owner carries a note, "ragpulse:abandoned=K;horizon=H":
- horizon H: the owner hands out no offset above H before it has committed a higher horizon
  (moved ahead asynchronously, by about HORIZON_S worth of records at the current rate), so
  whatever was in flight at a crash lies between the committed offset and H;
- abandoned K: how many owners took the record at the committed offset, alone, and stopped
  without finishing it.
A graceful hand-over (revocation, shutdown) commits without a note. A new owner that finds a note
knows its predecessor died: it goes through the records up to H one at a time, committing each
one's offset with K + 1 before handing it out, so the next crash is pinned on that record; and the
worker dead-letters a record whose K reached scorer.max_attempts instead of scoring it again.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "ragpulse:"
# The horizon runs ahead of the hand-out by about this much time at the partition's rate, within
# the step bounds: horizon commits stay rare in a fast stream, and after a crash the records taken
# one at a time stay few in a slow one (an LLM judge).
HORIZON_S = 0.5
MIN_STEP, MAX_STEP = 32, 4096


@dataclass(frozen=True)
class CommitNote:
    abandoned: int
    horizon: int

    def encode(self) -> str:
        return f"{PREFIX}abandoned={self.abandoned};horizon={self.horizon}"

    @classmethod
    def decode(cls, metadata: str | None) -> CommitNote | None:
        """None for no note (a graceful hand-over, another tool's commit, an unreadable note)."""
        if not metadata or not metadata.startswith(PREFIX):
            return None
        fields = dict(item.partition("=")[::2] for item in metadata[len(PREFIX):].split(";"))
        abandoned, horizon = fields.get("abandoned", ""), fields.get("horizon", "")
        if not (abandoned.isdigit() and horizon.isdigit()):
            return None
        return cls(int(abandoned), int(horizon))


class PartitionGuard:
    """One partition of the current assignment: which records go out alone, and when the
    horizon must move before the next one goes out."""

    def __init__(self, committed: int | None, note: CommitNote | None) -> None:
        self.committed = committed
        self._abandoned = note.abandoned if note is not None else 0
        # After a crash: records up to the dead owner's horizon go out one at a time.
        self.careful_to = note.horizon if note is not None and committed is not None else -1
        self.horizon = self.careful_to
        # The last position this owner committed (None: none yet).
        self.position: int | None = None
        self._step = MIN_STEP
        self._rate_mark: tuple[int, float] | None = None

    def careful(self, offset: int) -> bool:
        return offset <= self.careful_to

    def abandoned(self, offset: int) -> int:
        """Owners that took this record alone before and stopped (only known for the committed one)."""
        return self._abandoned if offset == self.committed else 0

    def taken_note(self, offset: int) -> CommitNote:
        """The note to commit at `offset` before handing it out alone."""
        return CommitNote(self.abandoned(offset) + 1, self.horizon)

    def safe_position(self, offset: int) -> int:
        """Where a horizon commit can go without moving past an unfinished record: the last
        position committed, else the one found at the assignment, else `offset` (nothing out yet)."""
        if self.position is not None:
            return self.position
        return self.committed if self.committed is not None else offset

    def needs_horizon(self, offset: int) -> bool:
        return offset > self.horizon

    def wants_extension(self, offset: int) -> bool:
        """Halfway to the horizon: time to move it ahead before the hand-out gets there."""
        return self.horizon - offset < self._step // 2

    def next_horizon(self, offset: int, now: float) -> int:
        """A horizon ahead of `offset` by HORIZON_S of the hand-out rate since the last call."""
        if self._rate_mark is not None:
            last_offset, last_time = self._rate_mark
            if now > last_time and offset > last_offset:
                rate = (offset - last_offset) / (now - last_time)
                self._step = max(MIN_STEP, min(MAX_STEP, int(rate * HORIZON_S)))
        self._rate_mark = (offset, now)
        return offset + self._step
