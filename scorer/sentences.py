"""Sentence splitting shared by metrics and judges; Japanese (。！？) and Latin punctuation alike."""

from __future__ import annotations

import re

# A sentence ends at a CJK full stop (Japanese puts no space after it), at a line break, or at
# Latin terminal punctuation followed by whitespace, unless the word before the dot is a common
# abbreviation or a single capital (initials such as "J. R. R. Tolkien").
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Mt", "vs", "e.g", "i.e", "etc", "No", "Jr", "Sr", "Inc", "Co")
_NOT_ABBREV = "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS) + r"(?<!\b[A-Z]\.)"
_SPLIT = re.compile(r"(?<=[。！？])\s*|\s*\n\s*|" + _NOT_ABBREV + r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    parts = (p.strip() for p in _SPLIT.split(text) if p)
    return [p for p in parts if p and any(ch.isalnum() for ch in p)]


def context_sentences(contexts: list[str]) -> list[str]:
    return [s for c in contexts for s in split_sentences(c)]
