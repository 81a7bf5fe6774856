"""The notes a scorer commits so that its successor can find a record that crashed it."""

from __future__ import annotations

import pytest

from ragpulse.scorer.consume.crash_guard import MAX_STEP, MIN_STEP, CommitNote, PartitionGuard


def test_a_note_survives_the_trip_through_commit_metadata() -> None:
    note = CommitNote(abandoned=2, horizon=1064)
    assert note.encode() == "ragpulse:abandoned=2;horizon=1064"
    assert CommitNote.decode(note.encode()) == note


@pytest.mark.parametrize("metadata", [None, "", "someone else's", "ragpulse:abandoned=x;horizon=3",
                                      "ragpulse:horizon=3", "ragpulse:abandoned=-1;horizon=3"])
def test_no_note_or_an_unreadable_one_is_no_note(metadata: str | None) -> None:
    assert CommitNote.decode(metadata) is None


def test_after_a_graceful_hand_over_nothing_goes_out_alone() -> None:
    guard = PartitionGuard(committed=100, note=None)
    assert not guard.careful(100)
    assert guard.needs_horizon(100)  # the first record out commits a horizon
    assert guard.abandoned(100) == 0


def test_after_a_crash_records_up_to_the_horizon_go_out_alone_and_count_their_owners() -> None:
    guard = PartitionGuard(committed=100, note=CommitNote(abandoned=1, horizon=164))
    assert guard.careful(100) and guard.careful(164) and not guard.careful(165)
    assert guard.abandoned(100) == 1 and guard.abandoned(101) == 0
    assert guard.taken_note(100) == CommitNote(2, 164)  # committed before it goes out again
    assert guard.taken_note(101) == CommitNote(1, 164)
    assert not guard.needs_horizon(164) and guard.needs_horizon(165)


def test_a_note_without_a_committed_offset_is_ignored() -> None:
    assert not PartitionGuard(committed=None, note=CommitNote(1, 10)).careful(0)


def test_the_horizon_runs_ahead_by_half_a_second_of_the_hand_out_rate_within_bounds() -> None:
    guard = PartitionGuard(committed=None, note=None)
    assert guard.next_horizon(0, now=100.0) == 0 + MIN_STEP  # no rate known yet
    assert guard.next_horizon(1000, now=101.0) == 1000 + 500  # 1,000 records/s for 0.5 s
    assert guard.next_horizon(1001, now=111.0) == 1001 + MIN_STEP  # a slow stream (an LLM judge)
    assert guard.next_horizon(101001, now=112.0) == 101001 + MAX_STEP
    guard.horizon = 101001 + MAX_STEP
    assert not guard.wants_extension(101001) and guard.wants_extension(101001 + MAX_STEP // 2 + 1)
