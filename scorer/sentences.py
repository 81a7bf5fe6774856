"""Sentence splitting shared by metrics and judges; Japanese (。！？) and Latin punctuation alike."""

from __future__ import annotations

import re

# A sentence ends at a CJK full stop (Japanese puts no space after it), at a line break, or at
# Latin terminal punctuation followed by whitespace, unless the word before a dot is a common
# abbreviation or a single capital (initials such as "J. R. R. Tolkien") and the line goes on.
_ABBREVIATIONS = frozenset(
    ("Mr", "Mrs", "Ms", "Dr", "St", "Mt", "vs", "e.g", "i.e", "etc", "No", "Jr", "Sr", "Inc", "Co")
)
# Candidates only (one character class, which the regex engine scans fast); Latin punctuation is
# a boundary only when whitespace follows, checked in split_sentences.
_BOUNDARY = re.compile(r"[。！？.!?\n]\s*")
_LAST_WORD = re.compile(r"([\w.]+)$")
# str.isalnum() as a class: word characters without the underscore.
_ALNUM = re.compile(r"[^\W_]")


def _is_abbreviation(text: str, dot: int) -> bool:
    match = _LAST_WORD.search(text, max(0, dot - 8), dot)
    if match is None:
        return False
    word = match.group(1)
    last = word.rsplit(".", 1)[-1]  # "U.S" ends in an initial like "J"
    return word in _ABBREVIATIONS or (len(last) == 1 and last.isupper())


def split_sentences(text: str) -> list[str]:
    # One pass over candidate boundaries, with the abbreviation check only where a dot is
    # followed by space: a regex with look-behinds for each abbreviation costs ~1 ms per KB.
    sentences: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        mark = m.start()
        # A line break after the dot ends the sentence whatever the word before it ("375°F.\n").
        if text[mark] in ".!?" and (m.end() == mark + 1 or (
                text[mark] == "." and "\n" not in m.group() and _is_abbreviation(text, mark))):
            continue
        _keep(text[start : m.end()], sentences)
        start = m.end()
    _keep(text[start:], sentences)
    return sentences


def _keep(piece: str, sentences: list[str]) -> None:
    """Keep a piece that holds a letter or digit: bare punctuation or whitespace is no sentence."""
    piece = piece.strip()
    if _ALNUM.search(piece):
        sentences.append(piece)


def context_sentences(contexts: list[str]) -> list[str]:
    return [s for c in contexts for s in split_sentences(c)]
