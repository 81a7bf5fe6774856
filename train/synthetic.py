"""Seeded synthetic pairs made from passages: statements a window does and does not support, and
replies that do not answer a question.

Unsupported statements keep most of the window's words, because that is where a lexical judge is
fooled: a number, date or name swapped for another, the polarity flipped, two names of one sentence
exchanged, or a true clause joined to an invented half taken from another passage. Supported ones
are the window's sentence itself, or its first clause. Non-answers are the question said back and
vague half-answers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

Pair = dict[str, object]

_NUMBER = re.compile(r"[0-9０-９]+(?:[.,][0-9]+)?")
_EN_NAME = re.compile(r"(?<=\s)[A-Z][a-z]+(?:\s[A-Z][a-z]+)*")
_JA_NAME = re.compile(r"[ァ-ヴー]{3,}|[一-龥]{2,4}")
_EN_NEGATE = [(" is not ", " is "), (" was not ", " was "), (" are not ", " are "), (" were not ", " were "),
              (" is ", " is not "), (" was ", " was not "), (" are ", " are not "), (" were ", " were not "),
              (" can ", " cannot "), (" will ", " will not "), (" has ", " has never "), (" have ", " have never ")]
_JA_NEGATE = [("ません。", "ます。"), ("ではない。", "である。"), ("ない。", "る。"),
              ("ます。", "ません。"), ("である。", "ではない。"), ("ある。", "ない。"), ("いる。", "いない。"),
              ("した。", "しなかった。"), ("された。", "されなかった。"), ("です。", "ではありません。")]
_RESTATE = {
    "en": ["{q}", "You are asking: {q}", "Your question is about this: {q}", "Good question. {q}"],
    "ja": ["{q}", "{q}についてのご質問ですね。", "ご質問は「{q}」ですね。", "{q}とのことですね。"],
}
_VAGUE = {
    "en": ["It depends on several factors.", "There are many things to consider here.",
           "That varies from case to case.", "Please refer to the documentation for the details.",
           "This is a common question, and the answer is not simple.", "It is complicated."],
    "ja": ["いくつかの要因によります。", "場合によって異なります。", "詳しくは資料をご覧ください。",
           "よくあるご質問ですが、一概には言えません。", "状況次第です。", "色々な考え方があります。"],
}


def _pair(a: str, b: str, label: int, kind: str, lang: str, task: str = "support") -> Pair:
    return {"task": task, "a": a, "b": b, "label": label, "source": f"synthetic.{kind}", "lang": lang}


def _swap_number(s: str, rng: random.Random) -> str | None:
    found = list(_NUMBER.finditer(s))
    if not found:
        return None
    m = rng.choice(found)
    digits = m.group()
    pos = rng.choice([i for i, c in enumerate(digits) if c.isdigit()])
    new_digit = rng.choice([d for d in "0123456789" if d != digits[pos]])
    if digits[pos] in "０１２３４５６７８９":
        new_digit = chr(ord(new_digit) + 0xFEE0)
    return s[:m.start() + pos] + new_digit + s[m.start() + pos + 1:]


def _names(s: str, lang: str) -> list[re.Match[str]]:
    return list((_EN_NAME if lang == "en" else _JA_NAME).finditer(s))


def _swap_name(s: str, lang: str, other: str) -> str | None:
    mine, theirs = _names(s, lang), [m.group() for m in _names(other, lang)]
    theirs = [t for t in theirs if t not in s]
    if not mine or not theirs:
        return None
    m = mine[len(mine) // 2]
    return s[:m.start()] + theirs[len(theirs) // 2] + s[m.end():]


def _exchange_names(s: str, lang: str) -> str | None:
    names = [m for m in _names(s, lang)]
    distinct = list({m.group(): m for m in names}.values())
    if len(distinct) < 2:
        return None
    a, b = distinct[0], distinct[1]
    if a.start() > b.start():
        a, b = b, a
    return s[:a.start()] + b.group() + s[a.end():b.start()] + a.group() + s[b.end():]


def _negate(s: str, lang: str) -> str | None:
    if lang == "en":
        for old, new in _EN_NEGATE:
            if old in s:
                return s.replace(old, new, 1)
        return None
    for old, new in _JA_NEGATE:
        if s.endswith(old):
            return s[: -len(old)] + new
    return None


def _join_invented(s: str, lang: str, other: str) -> str | None:
    cut = other.find(", ") if lang == "en" else other.find("、")
    if cut < 0 or cut > len(other) - 10:
        return None
    tail = other[cut + (2 if lang == "en" else 1):]
    if lang == "en":
        return s.rstrip(".!? ") + ", and " + tail[0].lower() + tail[1:]
    return s.rstrip("。") + "、そして" + tail


def _other(s: str, other: str) -> str | None:
    return other if other != s else None


def _first_clause(s: str, lang: str) -> str | None:
    cut = s.find(", ") if lang == "en" else s.find("、")
    if cut < 15:
        return None
    return s[:cut] + ("." if lang == "en" else "。")


def statements(paragraphs: list[list[str]], lang: str, rng: random.Random, per_paragraph: int = 2) -> Iterator[Pair]:
    """Per paragraph, up to `per_paragraph` statements, each against a window of one to three
    sentences around the one it was made from; about as many unsupported ones as supported."""
    usable = [p for p in paragraphs if len(p) >= 2]
    for paragraph in usable:
        for _ in range(per_paragraph):
            k = rng.randrange(len(paragraph))
            s = paragraph[k]
            if not 15 <= len(s) <= 300:
                continue
            lo, hi = max(0, k - rng.randint(0, 1)), min(len(paragraph), k + 1 + rng.randint(0, 1))
            window = " ".join(paragraph[lo:hi]) if lang == "en" else "".join(paragraph[lo:hi])
            other_par = rng.choice(usable)
            other = rng.choice(other_par)
            if rng.random() < 0.45:
                kind, text = rng.choice([("verbatim", s), ("first_clause", _first_clause(s, lang))])
                if text is not None:
                    yield _pair(window, text, 1, kind, lang)
                continue
            kinds = [("number", _swap_number, (s, rng)), ("name", _swap_name, (s, lang, " ".join(other_par))),
                     ("exchange", _exchange_names, (s, lang)), ("negation", _negate, (s, lang)),
                     ("invented_half", _join_invented, (s, lang, other)),
                     ("other_passage", _other, (s, other))]
            rng.shuffle(kinds)
            for kind, make, make_args in kinds:
                text = make(*make_args)
                if text is not None and text != s:
                    yield _pair(window, text, 0, kind, lang)
                    break


def non_answers(questions: list[str], lang: str, rng: random.Random, share: float = 0.15) -> Iterator[Pair]:
    """A share of the questions said back, or answered with a vague half-answer: neither answers."""
    for q in questions:
        if rng.random() >= share:
            continue
        if rng.random() < 0.5:
            yield _pair(q, rng.choice(_RESTATE[lang]).format(q=q.rstrip("?？")), 0, "restatement", lang, "answers")
        else:
            yield _pair(q, rng.choice(_VAGUE[lang]), 0, "vague", lang, "answers")
