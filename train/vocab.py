"""The XLM-R tokenizer pruned to the pieces English and Japanese text use.

The full vocabulary (250,002 pieces) makes a 384-wide embedding table of 96 M floats; the pieces
the training texts use, plus every single character of the scripts we serve (so that unseen text
still segments into known pieces, never into <unk> where a character is kept), are a fraction of it.
The pruned tokenizer is a Unigram model over the kept pieces with their original scores: a word
whose piece was dropped segments into smaller kept pieces. Training and run time use the same file.
"""

from __future__ import annotations

import copy
import json
import unicodedata
from collections import Counter
from collections.abc import Iterable

SPECIALS = 4  # <s>, <pad>, </s>, <unk>: ids 0-3 in both vocabularies
_SCRIPTS = ("LATIN", "HIRAGANA", "KATAKANA", "CJK", "DIGIT", "FULLWIDTH", "HALFWIDTH", "IDEOGRAPHIC")


def _served_char(piece: str) -> bool:
    text = piece.lstrip("▁")
    if len(text) != 1:
        return False
    if text.isascii():
        return True
    name = unicodedata.name(text, "")
    return any(s in name for s in _SCRIPTS) or unicodedata.category(text).startswith("P")


# English training text is the smaller part: the most probable ASCII pieces are kept besides those it
# uses, so that everyday English words stay whole; every Japanese-script piece is kept (20,618).
COMMON_ASCII = 15000


def _japanese(piece: str) -> bool:
    text = piece.lstrip("▁")
    return bool(text) and all(unicodedata.name(c, "").split(" ")[0] in ("HIRAGANA", "KATAKANA", "CJK", "FULLWIDTH",
                                                                       "HALFWIDTH", "IDEOGRAPHIC") for c in text)


def kept_ids(full: dict, encoded: Iterable[list[int]], min_count: int = 1) -> list[int]:
    """Old ids to keep, in old order: the specials, every piece seen `min_count` times, the
    single characters of the served scripts, the COMMON_ASCII most probable ASCII pieces and the
    Japanese-script pieces."""
    counts: Counter[int] = Counter()
    for ids in encoded:
        counts.update(ids)
    vocab = full["model"]["vocab"]
    ascii_ids = sorted((i for i, (piece, _) in enumerate(vocab) if i >= SPECIALS and piece.lstrip("▁").isascii()),
                       key=lambda i: -vocab[i][1])
    common = set(ascii_ids[:COMMON_ASCII])
    return [i for i, (piece, _) in enumerate(vocab)
            if i < SPECIALS or counts[i] >= min_count or i in common or _served_char(piece) or _japanese(piece)]


def pruned(full: dict, keep: list[int]) -> dict:
    """tokenizer.json of the pruned model: the same normaliser, pre-tokeniser and template."""
    out = copy.deepcopy(full)
    vocab = full["model"]["vocab"]
    out["model"]["vocab"] = [vocab[i] for i in keep]
    out["model"]["unk_id"] = 3
    out["added_tokens"] = [t for t in out["added_tokens"] if t["id"] < SPECIALS]
    out["truncation"] = None
    out["padding"] = None
    return out


def dump(tokenizer_json: dict) -> str:
    return json.dumps(tokenizer_json, ensure_ascii=False, separators=(",", ":"))
