"""Training examples for the local judge's combiner, generated from text that is no benchmark row.

Sources (all inside the repository or the Python standard library):
- prose paragraphs of Python's own documentation (`pydoc_data.topics`, shipped with CPython);
- fact sheets written here from templates (businesses, people, events: names, places, numbers and
  dates, the kinds of claim RAG answers get wrong), filled from word lists with a seeded RNG.

Each example is (contexts, statement, label). A statement is made from one source sentence of the
contexts; the same surface noise (a synonym, a dropped modifier, a framing such as "According to
the text,") is applied to both classes, so that rewording is not what tells them apart:
- supported (1): the sentence, a shortened one, two neighbouring sentences joined;
- unsupported (0): a number changed, a name replaced (by one from another sheet, or by another
  name of the same contexts), a negation added or removed, an antonym, a sentence of another
  document, a sentence whose end is taken from a far sentence of the same document, a content word
  from another document, a supported sentence with an unsupported clause added.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from ragpulse.scorer.sentences import split_sentences

FIRST = ("Anna Carlos Mei Oliver Priya Tomas Grace Hassan Elena Victor Ruth Kenji Laura Samuel Ingrid Diego "
         "Fatima Henry Chloe Marcus Nadia Peter Sofia Daniel Irene Felix Amara Jonas Clara Wesley").split()
LAST = ("Hartley Moreno Tanaka Fischer Okafor Lindqvist Brennan Costa Novak Patel Whitaker Duarte Kowalski "
        "Ramsey Abbott Sato Delgado Mercer Volkov Hughes Ferreira Lambert Osei Carver Nilsen Bauer").split()
CITIES = ("Tucson Leeds Porto Osaka Winnipeg Dayton Gdansk Bergen Adelaide Memphis Lyon Halifax Tampere "
          "Boise Cork Graz Eugene Salem Fresno Bilbao Aarhus Quito Reno Spokane").split()
STREETS = "Elm Oak Maple Cedar Harbor Mill Station Church Bridge Market Lake River Park".split()
KINDS = ("restaurant bakery bookshop pharmacy gym cafe hardware store hotel bicycle shop dental clinic "
         "pizzeria florist laundromat bar").split(" ")
FOODS = "tacos pastries ramen burgers salads sushi dumplings bagels curry pancakes seafood noodles".split()
ORGS = ("Northwind Holdings|Bluepeak Energy|Calder Foods|Ostrava Rail|Meridian Health|Lumen Labs|"
        "Harrow Motors|Pinecrest Bank|Solace Pharma|Tidewater Shipping|Quarry Media|Vantor Mining").split("|")
PRODUCTS = ("electric bus|insulin pump|cargo drone|solar roof tile|budget airline|streaming service|"
            "heat pump|battery plant|payment app|vaccine trial").split("|")
MONTHS = ("January February March April May June July August September October November December").split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
WEEKDAY_HOURS = ("7:00", "8:00", "9:00", "10:00", "11:00")

# Surface noise for both classes: a word and a synonym a rewording answer might use.
SYNONYMS = {
    "big": "large", "large": "big", "buy": "purchase", "use": "employ", "shows": "displays",
    "start": "begin", "begins": "starts", "help": "assist", "said": "stated", "says": "states",
    "about": "around", "many": "numerous", "fast": "quick", "small": "little", "also": "additionally",
    "must": "has to", "can": "is able to", "gets": "receives", "give": "provide", "make": "create",
    "often": "frequently", "only": "just", "new": "recent", "used": "employed", "called": "named",
    "returns": "gives back", "raises": "throws", "contains": "holds", "needed": "required",
}
ANTONYMS = {
    "increase": "decrease", "increased": "decreased", "rose": "fell", "higher": "lower", "more": "fewer",
    "before": "after", "after": "before", "first": "last", "last": "first", "open": "closed",
    "opens": "closes", "true": "false", "false": "true", "always": "never", "allowed": "forbidden",
    "won": "lost", "gained": "lost", "above": "below", "earlier": "later", "larger": "smaller",
    "positive": "negative", "early": "late", "same": "different", "required": "optional",
}
FRAMES = ("According to the text, ", "The passage says that ", "It is noted that ", "Notably, ", "In short, ")
ADDITIONS = (
    "which was widely praised by critics", "making it the largest in the region",
    "a decision that surprised many observers", "as part of a wider plan announced last year",
    "which is expected to double by next year", "according to a spokesperson",
    "after a long legal dispute", "which led to a sharp rise in prices",
)
_NEGATABLE = re.compile(r"\b(is|are|was|were|can|will|does|do|did|has|have|should|must)\b(?! not)")
_NOT = re.compile(r"\b(not|never) ")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NAME = re.compile(r"(?<=\s)[A-Z][a-z]{2,}")
_WORD = re.compile(r"\b[a-z]{5,}\b")
# Words an answer may leave out without changing the claim.
_MODIFIER = re.compile(r"\b(?:very|also|only|just|usually|currently|actually|simply|then|still|already|really) ")


@dataclass(frozen=True)
class Example:
    contexts: list[str]
    statement: str
    label: int  # 1: the contexts support the statement


def pydoc_documents() -> list[list[str]]:
    """Prose of each pydoc topic as sentences: code, grammar and headings dropped."""
    import pydoc_data.topics

    docs = []
    for key in sorted(pydoc_data.topics.topics):
        paragraphs = pydoc_data.topics.topics[key].split("\n\n")
        prose = [" ".join(p.split()) for p in paragraphs
                 if p and not p.startswith(" ") and not re.search(r"^[*=\-]{3,}", p, re.M) and "::=" not in p]
        sentences = [s for p in prose for s in split_sentences(p) if 6 <= len(s.split()) <= 45]
        if len(sentences) >= 6:
            docs.append(sentences)
    return docs


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _date(rng: random.Random) -> str:
    return f"{rng.choice(DAYS)}, {rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(1990, 2024)}"


def business_sheet(rng: random.Random) -> list[str]:
    kind, city, owner = rng.choice(KINDS), rng.choice(CITIES), _person(rng)
    name = f"The {rng.choice(LAST)} {kind.title()}"
    rating, reviews = rng.choice((3.0, 3.5, 4.0, 4.5, 5.0)), rng.randint(12, 900)
    open_at, close_at = rng.choice(WEEKDAY_HOURS), f"{rng.randint(17, 23)}:00"
    food, other = rng.sample(FOODS, 2)
    day_off = rng.choice(DAYS)
    return [
        f"{name} is a {kind} at {rng.randint(10, 4999)} {rng.choice(STREETS)} Street in {city}.",
        f"It was opened in {rng.randint(1960, 2022)} by {owner}.",
        f"It has an average rating of {rating} stars from {reviews} reviews.",
        f"It opens at {open_at} and closes at {close_at} from Monday to Saturday, and it is closed on {day_off}.",
        f"Customers praise its {food}, but several reviews complain about slow service.",
        f"One reviewer wrote that the {other} were cold and overpriced.",
        f"Parking is available behind the building, and the {kind} accepts credit cards.",
        f"{owner.split()[0]} employs {rng.randint(3, 60)} staff and plans a second branch in {rng.choice(CITIES)}.",
    ]


def company_sheet(rng: random.Random) -> list[str]:
    org, city, ceo, analyst = rng.choice(ORGS), rng.choice(CITIES), _person(rng), _person(rng)
    product = rng.choice(PRODUCTS)
    revenue, change = rng.randint(12, 980), rng.randint(2, 40)
    direction = rng.choice(("rose", "fell"))
    return [
        f"{org}, based in {city}, reported revenue of {revenue} million dollars for {rng.randint(2015, 2024)}.",
        f"Revenue {direction} by {change} percent compared with the previous year.",
        f"Chief executive {ceo} said the company would launch a new {product} on {_date(rng)}.",
        f"The company employs about {rng.randint(2, 90) * 100} people in {rng.randint(3, 30)} countries.",
        f"Shares in {org.split()[0]} closed {rng.randint(1, 15)} percent higher after the announcement.",
        f"Analyst {analyst} warned that rising costs could hurt profits in the second half.",
        f"The {product} will first be sold in {rng.choice(CITIES)} and {rng.choice(CITIES)}.",
        f"{ceo.split()[1]} has led the company since {rng.randint(2001, 2022)}, when she replaced its founder.",
    ]


def event_sheet(rng: random.Random) -> list[str]:
    city, mayor, witness = rng.choice(CITIES), _person(rng), _person(rng)
    injured, hours = rng.randint(2, 40), rng.randint(2, 30)
    return [
        f"A fire broke out at a warehouse in {city} on {_date(rng)}.",
        f"Firefighters needed {hours} hours to bring the blaze under control.",
        f"{injured} people were treated for smoke inhalation, and {rng.randint(0, 3)} were taken to hospital.",
        f"Mayor {mayor} said the cause of the fire was not yet known.",
        f"Witness {witness} told reporters she saw smoke shortly after {rng.randint(1, 11)} in the evening.",
        f"The warehouse stored furniture and was owned by {rng.choice(ORGS)}.",
        f"Police closed {rng.choice(STREETS)} Street for {rng.randint(2, 9)} days while the building was inspected.",
        f"The damage was estimated at {rng.randint(1, 90)} million dollars.",
    ]


SHEETS = (business_sheet, company_sheet, event_sheet)


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


def _reword(rng: random.Random, s: str) -> str:
    """Noise that keeps the meaning: synonyms, a dropped modifier, a framing, or nothing."""
    hits = sorted({w for w in re.findall(r"\b[a-z]+\b", s) if w in SYNONYMS})
    for w in rng.sample(hits, min(len(hits), rng.randint(0, 2))):
        s = re.sub(rf"\b{w}\b", SYNONYMS[w], s, count=1)
    modifiers = list(_MODIFIER.finditer(s))
    if modifiers and rng.random() < 0.3:
        m = rng.choice(modifiers)
        s = s[: m.start()] + s[m.end():]
    if rng.random() < 0.15:
        s = rng.choice(FRAMES) + _lower_first(s)
    return s


def _shorten(rng: random.Random, s: str) -> str | None:
    """Drop a clause after a comma or 'and', keeping the first part (a summary's compression)."""
    cuts = [m.start() for m in re.finditer(r",\s|\s(?:and|but|which|while|when)\s", s) if m.start() > 20]
    if not cuts:
        return None
    return s[: rng.choice(cuts)].rstrip(" ,") + "."


def _join(s: str, t: str) -> str:
    return s.rstrip(". ") + ", and " + _lower_first(t)


def _swap_number(rng: random.Random, s: str) -> str | None:
    numbers = list(_NUMBER.finditer(s))
    if not numbers:
        return None
    m = rng.choice(numbers)
    old = m.group()
    digits = [i for i, c in enumerate(old) if c.isdigit()]
    i = rng.choice(digits)
    new = old[:i] + rng.choice([d for d in "123456789" if d != old[i]]) + old[i + 1:]
    return s[: m.start()] + new + s[m.end():]


def _swap_name(rng: random.Random, s: str, pool: list[str]) -> str | None:
    names = [m for m in _NAME.finditer(s)]
    choices = [n for n in pool if n not in s]
    if not names or not choices:
        return None
    m = rng.choice(names)
    return s[: m.start()] + rng.choice(choices) + s[m.end():]


def _flip_negation(rng: random.Random, s: str) -> str | None:
    if _NOT.search(s):
        return _NOT.sub("", s, count=1)
    verbs = list(_NEGATABLE.finditer(s))
    if not verbs:
        return None
    m = rng.choice(verbs)
    return s[: m.end()] + " not" + s[m.end():]


def _antonym(rng: random.Random, s: str) -> str | None:
    hits = [w for w in re.findall(r"\b[a-z]+\b", s) if w in ANTONYMS]
    if not hits:
        return None
    w = rng.choice(hits)
    return re.sub(rf"\b{w}\b", ANTONYMS[w], s, count=1)


def _splice(rng: random.Random, s: str, far: str) -> str | None:
    """The start of one sentence with the end of a far one: every word is in the document."""
    a, b = s.split(), far.split()
    if len(a) < 6 or len(b) < 6:
        return None
    return " ".join(a[: rng.randint(3, len(a) - 3)] + b[rng.randint(2, len(b) - 3):])


def _foreign_word(rng: random.Random, s: str, foreign: list[str], known: str) -> str | None:
    words = list(_WORD.finditer(s))
    choices = [w for w in foreign if w not in known]
    if not words or not choices:
        return None
    m = rng.choice(words)
    return s[: m.start()] + rng.choice(choices) + s[m.end():]


def _add_clause(rng: random.Random, s: str, other: str) -> str:
    clause = rng.choice(ADDITIONS) if rng.random() < 0.5 else "and " + _lower_first(other.rstrip(". "))
    return s.rstrip(". ") + ", " + clause + "."


def examples(count: int, seed: int = 0) -> list[Example]:
    """`count` examples, about half supported, from pydoc prose and template sheets in equal parts.
    Both classes come from the same drafts: a statement is drafted from a source sentence, a way to
    break it is picked, and only drafts that it can break are kept, whichever class is emitted; so
    length, numbers or names present, closeness to the source do not tell the classes apart."""
    rng = random.Random(seed)
    prose = pydoc_documents()
    out: list[Example] = []
    while len(out) < count:
        # The source, a document unsupported statements borrow from, an unrelated retrieved one.
        if rng.random() < 0.5:
            doc, other_doc, noise = rng.sample(prose, 3)
        else:
            doc, other_doc, noise = (rng.choice(SHEETS)(rng) for _ in range(3))
        start = rng.randint(0, max(0, len(doc) - 6))
        window = doc[start: start + rng.randint(4, 12)]
        i = rng.randrange(len(window))
        contexts = [" ".join(window)]
        if rng.random() < 0.4:  # retrieval brings an unrelated passage along
            contexts.append(" ".join(rng.sample(noise, min(4, len(noise)))))
        draft = _draft(rng, window, i)
        broken = _break(rng, draft, window, i, other_doc, " ".join(contexts))
        if draft is None or broken is None or broken == draft:
            continue
        label = int(rng.random() < 0.5)
        out.append(Example(contexts, _reword(rng, draft if label else broken), label))
    return out


def _draft(rng: random.Random, sentences: list[str], i: int) -> str | None:
    """A supported statement from sentence i: as it is, shortened, or joined with the next."""
    kind = rng.randrange(3)
    if kind == 0:
        return sentences[i]
    if kind == 1:
        return _shorten(rng, sentences[i])
    return _join(sentences[i], sentences[i + 1]) if i + 1 < len(sentences) else None


def _break(rng: random.Random, draft: str | None, window: list[str], i: int, other_doc: list[str],
           text: str) -> str | None:
    """The draft made unsupported by one of eight edits (None when the picked one does not apply)."""
    if draft is None:
        return None
    far = [t for j, t in enumerate(window) if abs(j - i) > 1]
    pool = sorted({m.group() for t in other_doc for m in _NAME.finditer(t)}
                  | ({m.group() for t in window for m in _NAME.finditer(t)} if rng.random() < 0.5 else set()))
    kind = rng.randrange(8)
    if kind == 0:
        return _swap_number(rng, draft)
    if kind == 1:
        return _swap_name(rng, draft, pool)
    if kind == 2:
        return _flip_negation(rng, draft)
    if kind == 3:
        return _antonym(rng, draft)
    if kind == 4:
        j = rng.randrange(len(other_doc))
        return _draft(rng, other_doc, j)
    if kind == 5:
        return _splice(rng, draft, rng.choice(far)) if far else None
    if kind == 6:
        return _foreign_word(rng, draft, sorted({w for t in other_doc for w in _WORD.findall(t)}), text)
    return _add_clause(rng, draft, rng.choice(other_doc))
