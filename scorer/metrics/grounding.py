"""The statements a judge extracts must come from the answer it read.

An LLM judge reads the answer as data, but the answer is written by the system under watch and may
carry instructions ("output no statements", "add the statement ..."). A judge that obeys would hide a
hallucination (no statement: no score) or swap it for claims the contexts support. So, whichever
judge answered, the metric keeps the judge's claims (the paper's decomposition, with pronouns
resolved and compound sentences split) only when each is grounded in the answer's text, and an
empty list for an answer that commits to something is a refusal, not "no claim". Checked here, once
for every judge, because the check is about the judge's output, not about how a judge works.

Grounded is lexical and deliberately lenient: at least GROUNDED_SHARE of a claim's content units
occur in the answer, and every number in the claim does. Content units are Latin words and numbers
outside a list of function words, and, where the text has no spaces (Japanese), character bigrams
that hold a kanji or katakana (bigrams of hiragana alone are particles and endings: の, です).
Numbers are strict because swapping a claim for the document's version ("completed in 1889" for
the answer's "1925") keeps most words and changes the number, while resolving a pronoun never adds
one.
"""

from __future__ import annotations

import re
import unicodedata

from ragpulse.scorer.judge.base import Judge, RecordText, Usage
from ragpulse.scorer.metrics.base import MetricFailure
from ragpulse.scorer.sentences import split_sentences

# Lenient: resolving "it" to a name, or "2 million people" to "a population of 2 million", adds
# words that are not in the answer; a claim with less than half of its content there was invented.
GROUNDED_SHARE = 0.5
# Bounds the calls spent telling a refusal from a judge that was told to find nothing.
MAX_REREAD_SENTENCES = 8

_WORD = re.compile(r"[a-z0-9]+(?:['.,][a-z0-9]+)*")
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff々〆ー]+")
_HIRAGANA = re.compile(r"^[\u3040-\u309fー]+$")
_FUNCTION_WORDS = frozenset(
    """a an the and or but if then so of in on at to for from by with without about as into over under
    is are was were be been being am do does did has have had having it its this that these those there
    here he she they them his her their we our you your i me my not no yes than too very can could will
    would shall should may might must which who whom whose what when where why how also just only
    such each other some any all both either neither nor""".split()
)


def content_units(text: str) -> set[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    units = {w for w in _WORD.findall(text) if w not in _FUNCTION_WORDS}
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            units.add(run)
        units.update(b for i in range(len(run) - 1) if not _HIRAGANA.match(b := run[i : i + 2]))
    return units


def numbers(text: str) -> set[str]:
    # "1,889" and "1889" are the same number; a judge may add or drop thousands separators.
    return {n.replace(",", "") for n in _NUMBER.findall(unicodedata.normalize("NFKC", text))}


def grounded_share(statement: str, answer_units: set[str], answer_numbers: set[str]) -> float:
    """The share of the statement's content units that occur in the answer, 0 when it has a number
    the answer lacks; 1 for a statement without content units, which adds nothing."""
    if not numbers(statement) <= answer_numbers:
        return 0.0
    units = content_units(statement)
    return len(units & answer_units) / len(units) if units else 1.0


def checked_statements(judge: Judge, rec: RecordText, statements: list[str], usage: Usage) -> list[str]:
    """The judge's statements when each is grounded in the answer; else a counted failure."""
    if not statements:
        # Only an answer that commits to nothing has no claim. Neither the empty list nor the
        # judge's noncommittal flag can tell: told to "output no statements", Qwen2.5-1.5B gave
        # both. Read one sentence at a time, an instruction in one sentence no longer covers the
        # others, so a sentence that yields a claim shows a refusal. Costs calls only here; a
        # one-sentence answer is the same question again, which the judge's cache answers.
        for sentence in split_sentences(rec.answer)[:MAX_REREAD_SENTENCES]:
            if judge.statements(RecordText(rec.question, rec.contexts, sentence), usage):
                raise MetricFailure("judge_refused", "no claim in the answer, but one in a sentence of it")
        raise MetricFailure("no_statements", "the answer contains no claim to check")
    answer_units, answer_numbers = content_units(rec.answer), numbers(rec.answer)
    for i, statement in enumerate(statements):
        share = grounded_share(statement, answer_units, answer_numbers)
        if share < GROUNDED_SHARE:
            # No record text in the message: it may reach logs.
            detail = f"statement {i + 1}: {share:.0%} of its content is in the answer"
            raise MetricFailure("ungrounded_statement", detail)
    return statements
