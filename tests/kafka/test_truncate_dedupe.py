"""Pure parts of the Kafka path: the size rule for records, the dedupe window, the offset tracker."""

from __future__ import annotations

import pytest
from kafka import TopicPartition

from ragpulse.collector.truncate import MIN_TEXT_CHARS, RecordTooLarge, truncate_record
from ragpulse.core.wire import Record, Sampling
from ragpulse.scorer.consume.dedupe import RecentRecordIds
from ragpulse.scorer.consume.kafka import OffsetTracker


def record(contexts: list[str], question: str = "東京の人口は？", answer: str = "約1400万人です。") -> Record:
    return Record(trace_id="ab" * 16, span_id="cd" * 8, service="svc", question=question,
                  contexts=contexts, answer=answer, time_unix_nano=1,
                  sampling=Sampling(1.0, 1.0, "default"))


def test_record_that_fits_is_returned_unchanged() -> None:
    r = record(["短い文脈。"])
    assert truncate_record(r, 10_000) is r


def test_contexts_are_cut_in_order_and_the_record_says_truncated() -> None:
    contexts = ["一" * 1000, "二" * 1000, "三" * 1000]  # 3 bytes per character in UTF-8
    r = record(contexts)
    limit = len(record([]).to_json()) + 4000
    cut = truncate_record(r, limit)
    assert len(cut.to_json()) <= limit
    assert cut.truncated
    assert cut.contexts[0] == contexts[0]  # the first whole, the second cut, the third dropped
    assert len(cut.contexts) == 2 and contexts[1].startswith(cut.contexts[1]) and cut.contexts[1]
    assert (cut.question, cut.answer, cut.id) == (r.question, r.answer, r.id)
    assert Record.from_json(cut.to_json()) == cut  # still a valid record on the wire


def test_escaped_characters_are_measured_as_sent() -> None:
    r = record(['"\\\n' * 2000])
    limit = len(record([]).to_json()) + 1000
    assert len(truncate_record(r, limit).to_json()) <= limit


def test_question_and_answer_are_cut_when_contexts_alone_do_not_help() -> None:
    r = record(["x" * 100], question="質" * 5000, answer="答" * 5000)
    cut = truncate_record(r, 20_000)
    assert len(cut.to_json()) <= 20_000
    assert cut.truncated and cut.answer.startswith("答" * MIN_TEXT_CHARS)


def test_a_limit_below_the_metadata_raises_instead_of_dropping() -> None:
    with pytest.raises(RecordTooLarge):
        truncate_record(record(["x"], question="q" * 1000, answer="a" * 1000), 300)


def test_dedupe_window_is_bounded_and_forgets_the_oldest() -> None:
    ids = RecentRecordIds(capacity=3)
    assert [ids.seen(x) for x in "abca"] == [False, False, False, True]
    ids.seen("d")  # evicts "a"
    assert len(ids) == 3
    assert ids.seen("a") is False
    assert ids.seen("d") is True


def test_offset_tracker_commits_only_the_finished_prefix() -> None:
    tracker = OffsetTracker()
    tp = TopicPartition("t", 0)
    tracker.assign([tp])
    tokens = [tracker.start(tp, offset) for offset in range(10, 15)]
    for i in (1, 2, 4):  # finish out of order; offset 10 still running
        tracker.finish(tokens[i])
    assert tracker.committable() == {}
    assert tracker.lowest_unfinished(tp) == 10
    tracker.finish(tokens[0])
    assert tracker.committable() == {tp: 13}  # 10, 11, 12 done; 13 still running
    tracker.committed({tp: 13})
    assert tracker.committable() == {}
    tracker.finish(tokens[3])
    assert tracker.committable() == {tp: 15}


def test_offset_tracker_ignores_work_finished_after_its_partition_was_released() -> None:
    tracker = OffsetTracker()
    tp = TopicPartition("t", 0)
    tracker.assign([tp])
    old = tracker.start(tp, 0)
    assert tracker.release([tp]) == 1
    tracker.assign([tp])  # the partition comes back: a new epoch
    new = tracker.start(tp, 0)
    tracker.finish(old)
    assert tracker.committable() == {}
    tracker.finish(new)
    assert tracker.committable() == {tp: 1}
