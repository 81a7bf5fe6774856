"""Fitting a record into a bus message of at most N bytes.

The rule, in order, until the record's JSON fits:
1. Contexts keep their order; the first context that does not fit whole is cut at a character
   boundary to the bytes left, and every context after it is dropped.
2. If the record does not fit even with no contexts, the answer and then the question are cut
   to what is left, keeping at least their first MIN_TEXT_CHARS characters each.
`truncated` is set whenever anything was cut. A record is never split across messages and never
dropped here. Only when even the cut record cannot fit (the span's service, route, model and
attributes alone take more than the limit) does RecordTooLarge say so: the collector pipeline
drops that record and counts it (`ragpulse_records_dropped_total{reason="too_large"}`).
"""

from __future__ import annotations

import dataclasses

import orjson

from ragpulse.core.wire import Record

MIN_TEXT_CHARS = 200


class RecordTooLarge(ValueError):
    pass


def _json_len(text: str) -> int:
    """Bytes `text` takes as a JSON string in Record.to_json (quotes and escapes included)."""
    return len(orjson.dumps(text))


def _cut_to(text: str, max_json_bytes: int) -> str:
    """The longest prefix of `text` whose JSON form takes at most max_json_bytes."""
    if _json_len(text) <= max_json_bytes:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on characters: escapes and UTF-8 make bytes per char uneven
        mid = (lo + hi + 1) // 2
        if _json_len(text[:mid]) <= max_json_bytes:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def truncate_record(record: Record, max_bytes: int) -> Record:
    """The record itself if its JSON fits in max_bytes, else a cut copy with truncated=True."""
    if len(record.to_json()) <= max_bytes:
        return record
    # Measure everything but the contexts once; each kept context then adds its JSON string
    # and a comma. `truncated` is set before measuring: "true" is shorter than "false", so the
    # estimate never undercounts.
    bare = dataclasses.replace(record, contexts=[], truncated=True)
    budget = max_bytes - len(bare.to_json())
    kept: list[str] = []
    for context in record.contexts:
        cost = _json_len(context) + (1 if kept else 0)
        if cost <= budget:
            kept.append(context)
            budget -= cost
            continue
        room = budget - (1 if kept else 0)
        if room > 2:  # an empty string ("") is not worth a context slot
            kept.append(_cut_to(context, room))
        break
    if budget >= 0 and kept:
        return dataclasses.replace(record, contexts=kept, truncated=True)

    # Not even the bare record fits (or no context fits at all): cut answer, then question.
    question, answer = record.question, record.answer
    over = len(bare.to_json()) - max_bytes
    if over > 0:
        answer_floor = _json_len(answer[:MIN_TEXT_CHARS])
        answer = _cut_to(answer, max(answer_floor, _json_len(answer) - over))
        over = len(dataclasses.replace(bare, answer=answer).to_json()) - max_bytes
    if over > 0:
        question_floor = _json_len(question[:MIN_TEXT_CHARS])
        question = _cut_to(question, max(question_floor, _json_len(question) - over))
    cut = dataclasses.replace(bare, question=question, answer=answer)
    size = len(cut.to_json())
    if size > max_bytes:
        raise RecordTooLarge(
            f"record {record.id} is {size} bytes with no contexts and question/answer cut to "
            f"{MIN_TEXT_CHARS} characters; the limit of {max_bytes} bytes is too small"
        )
    return cut
