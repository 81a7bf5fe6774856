"""Finding a record that kills the scorer process, through the committed offset's metadata.

A record that crashes the process (a segfault in a judge's native code, an OOM kill) is never
finished, so it comes back to every new owner of its partition, which crashes in turn: the
partition stalls for good and the retry count of the worker, kept in memory, dies with it.

So every commit by an owner carries a note, "ragpulse:abandoned=K;horizon=H":
- horizon H: the owner hands out no offset above H before it has committed a higher horizon
  (one synchronous commit per HORIZON_STEP records), so whatever was in flight at a crash lies
  between the committed offset and H;
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
# Records handed out per horizon commit: after a crash at most this many (plus the commit lag)
# are scored one at a time.
HORIZON_STEP = 256


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

    def careful(self, offset: int) -> bool:
        return offset <= self.careful_to

    def abandoned(self, offset: int) -> int:
        """Owners that took this record alone before and stopped (only known for the committed one)."""
        return self._abandoned if offset == self.committed else 0

    def taken_note(self, offset: int) -> CommitNote:
        """The note to commit at `offset` before handing it out alone."""
        return CommitNote(self.abandoned(offset) + 1, self.horizon)

    def needs_horizon(self, offset: int) -> bool:
        return offset > self.horizon
