"""Yes/no facts of structured records, and whether a statement's negation agrees with them.

A record of data says what a business or product has as keys with yes/no values
({'RestaurantsReservations': True, 'WiFi': 'no', 'BusinessParking': {'valet': False}},
{"駐車場": "なし"}). An answer written from it restates them in words, and the commonest
hallucination there is the wrong polarity: "does not take reservations", "has free WiFi". Word
overlap cannot see it (every word is in the record), so each fact the statement mentions is
checked for the statement's polarity: negated when a negation cue comes before the mention in its
clause ("does not offer reservations", "no WiFi"), or after every fact the clause names ("WiFi is
not available", 「駐車場はありません」).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ragpulse.scorer.judge.local.text import content_tokens, has_cjk, normalise, token_spans

_VALUE_WORDS: dict[str, bool | None] = {
    "true": True, "yes": True, "free": True, "paid": True, "あり": True, "有": True, "可": True, "はい": True,
    "対応": True,
    "false": False, "no": False, "none": False, "なし": False, "無し": False, "無": False, "不可": False,
    "いいえ": False, "非対応": False,
    "unknown": None, "不明": None,
}
_OTHER = "other"
_KEY = r"""['"](?P<key>[^'"\n:{}\[\],]{1,40})['"]\s*:\s*"""
# A value: a bare boolean, or a quoted word, Python 2's u'' prefix included ("u'free'").
_FACT = re.compile(_KEY + r"""(?P<value>True|False|true|false|None|null"""
                   r"""|"u?'?(?P<dq>[^'"\n]{1,8})'?"|'u?(?P<sq>[^'"\n]{1,8})')""")
# A key whose value is a flat object: its keys are qualified by it ('BusinessParking': {'valet': ...}).
_GROUP = re.compile(_KEY + r"\{(?P<body>[^{}]*)\}")
_CAMEL_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+")
_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")

# Negation cues. Clauses end at contrast words: "no reservations, but it has WiFi".
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|lacks?|lacking|nor|neither|doesn't|don't|isn't|aren't|wasn't|weren't|cannot|can't"
    r"|unavailable)\b"
    r"|ない|なく|ません|なし|無し|不可|非対応|できず|せず|おらず",
    re.IGNORECASE,
)
# Bounded: an unbounded run to the comma made a long statement of openers quadratic.
_OPENER = re.compile(r"\b(?:despite|although|though|while|whereas|if|when|since|because|unlike|without|apart\s+from)\b"
                     r"[^,.;:]{0,200},", re.IGNORECASE)
_CLAUSE_END = re.compile(
    # A Japanese clause also ends at a comma after a verb's joining form (「駐車場があり、」「できず、」);
    # after a noun it lists, as an English comma does ("no WiFi, parking or TV").
    r"[;:.!?。；：]|\b(?:but|while|whereas|although|though|however|yet|except)\b|が、|けど|ものの|一方"
    r"|(?<=[りきしくでてず])、",
    re.IGNORECASE,
)


# Groups named for what they hold qualify nothing: 'attributes': {'WiFi': ...} is about WiFi.
_CONTAINERS = frozenset("attributes attrs features amenities properties details info specs metadata data fields "
                        "tags facilities services options".split())


@dataclass(frozen=True)
class Fact:
    tokens: frozenset[str]  # what a statement must contain to mention it
    group: frozenset[str]  # and one of these, the name of the group it is in ('BusinessParking')
    # None: the record says it does not know ('WiFi': None), so neither "has WiFi" nor "no WiFi"
    # is supported.
    value: bool | None


# The facts of a record, each filed under one of its tokens: a clause is checked against the facts
# filed under its own tokens, not against every fact of a record that may hold thousands.
Facts = dict[str, list[Fact]]


def facts(contexts: list[str]) -> Facts:
    """The yes/no facts of the contexts' structured records; none in prose."""
    out: Facts = {}
    for text in contexts:
        if ":" not in text:
            continue
        groups = [(m.start("body"), m.end("body"), _head_tokens(m.group("key"))) for m in _GROUP.finditer(text)
                  if m.group("key").lower() not in _CONTAINERS]
        keys = list(_FACT.finditer(text))
        # A word that starts several keys ("Restaurants" in RestaurantsReservations and
        # RestaurantsTakeOut) names the kind of record, not the fact.
        firsts = Counter(words[0].lower() for m in keys if (words := _words(m.group("key"))))
        generic = {word for word, count in firsts.items() if count >= 2}
        for m in keys:
            value = _value(m)
            if isinstance(value, str):  # no yes/no
                continue
            tokens = _key_tokens(m.group("key"), generic)
            group = next((parent for start, end, parent in groups if start <= m.start() < end), set())
            if tokens:
                out.setdefault(min(tokens), []).append(Fact(frozenset(tokens), frozenset(group), value))
    return out


def agreement(statement: str, known: Facts) -> float:
    """Share of the facts the statement mentions whose polarity it states rightly; 1 when it
    mentions none."""
    if not known:
        return 1.0
    mentioned = right = 0
    for clause in _clauses(_unhyphenated(normalise(statement))):
        spans = _token_positions(clause)
        found = [(pos, fact) for token in spans for fact in known.get(token, ())
                 if (pos := _mention(fact, spans)) is not None]
        if not found:
            continue
        cues = [m.start() for m in _NEGATION.finditer(clause)]
        last = max(pos for pos, _ in found)
        for pos, fact in found:
            # Before the mention ("no WiFi"), or after every mention ("WiFi and parking are not
            # available"); a cue between two mentions negates only what follows it.
            negated = any(c < pos or c > last for c in cues)
            mentioned += 1
            right += fact.value is not None and negated != fact.value
    return right / mentioned if mentioned else 1.0


def _value(m: re.Match[str]) -> bool | None | str:
    """True, False, None (unknown: a bare None or null), or _OTHER for a value that is no yes/no."""
    quoted = m.group("dq") or m.group("sq")
    if quoted is None:
        return None if m.group("value") in ("None", "null") else m.group("value").lower() == "true"
    return _VALUE_WORDS.get(quoted.strip().lower(), _OTHER)


def _words(key: str) -> list[str]:
    return _CAMEL_WORD.findall(_unhyphenated(key))


def _unhyphenated(text: str) -> str:
    """"Wi-Fi" is "WiFi", "take-out" "takeout": keys and prose hyphenate them differently."""
    return _HYPHEN.sub("", text)


def _key_tokens(key: str, generic: set[str]) -> set[str]:
    """The tokens that name a key's fact in prose: all of a Japanese key's; of an English key, its
    last word (joined to the one before when it is a function word or both are halves of one:
    TakeOut is "takeout", WiFi "wifi") and the word before, unless that is generic."""
    if has_cjk(key):
        return set(content_tokens(key))
    words = _words(key)
    if not words:
        return set()
    head = set(content_tokens(words[-1]))
    rest = words[:-1]
    halves = rest and len(words[-1]) <= 2 and len(rest[-1]) <= 2
    if rest and (not head or halves):
        head = set(content_tokens(rest[-1] + words[-1].lower()))
        rest = rest[:-1]
    if rest and rest[-1].lower() not in generic:
        head |= set(content_tokens(rest[-1]))
    return head


def _head_tokens(key: str) -> set[str]:
    words = _words(key)
    return set(content_tokens(words[-1])) if words else set()


def _clauses(text: str) -> list[str]:
    # "Despite not having a garage, there is street parking": the opener's clause ends at its comma.
    text = _OPENER.sub(lambda m: m.group()[:-1] + ";", text)
    return [c for c in _CLAUSE_END.split(text) if c.strip()]


def _token_positions(clause: str) -> dict[str, int]:
    """Each content token of the clause and where it first occurs."""
    positions: dict[str, int] = {}
    for start, _, tok in token_spans(clause, drop_question_words=False):
        positions.setdefault(tok, start)
    return positions


def _mention(fact: Fact, positions: dict[str, int]) -> int | None:
    """Where the clause mentions the fact (its last token), or None. The group's name is matched
    by its first four letters: records write 'Ambience', prose "ambiance"."""
    if not all(t in positions for t in fact.tokens):
        return None
    if fact.group and not any(t[:4] == g[:4] for t in positions for g in fact.group):
        return None
    return max(positions[t] for t in fact.tokens)
