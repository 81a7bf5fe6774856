"""Whether a retrieved context was useful for the answer, offline: the share of what the answer
says that the context contains.

"What the answer says" is its content tokens that the question lacks: the question's own words
are in every context retrieved for it, on topic or not, and say nothing about the answer. Numbers
and names count like any word here (unlike faithfulness, where they are decisive): a context that
gives one part of a two-part answer was useful for that part.
"""

from __future__ import annotations

from ragpulse.scorer.judge.local.text import content_tokens


def usefulness(question: str, contexts: list[str], answer: str) -> list[float]:
    asked = set(content_tokens(question, drop_question_words=False))
    said = list(dict.fromkeys(content_tokens(answer, drop_question_words=False)))
    # An answer that only repeats the question: its words are all it has to be found by.
    new = [t for t in said if t not in asked] or said
    if not new:
        return [0.0] * len(contexts)
    return [sum(t in have for t in new) / len(new)
            for have in (set(content_tokens(c, drop_question_words=False)) for c in contexts)]
