"""Lexical features of the `local` judge: content tokens (English words, numbers, Japanese character
bigrams), claim splitting and noncommittal-answer cues, in English and Japanese.

The static embedding model knows English well and Japanese poorly (the Llama 2 tokenizer falls
back to bytes for most kanji), so lexical overlap is what makes Japanese work, and what makes
numbers, dates and names decisive in both languages.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ragpulse.scorer.judge.local.units import without_conversions
from ragpulse.scorer.sentences import split_sentences

# Function words carry no claim; a statement supported only by them is not supported. "Located" and
# "available" only say that something is somewhere or exists: the place or the thing is the claim,
# and records of data never write the verb ('city': 'Goleta', 'WiFi': 'free').
# A link's scheme and "www" are its form: "https://www.example.fr" is the contexts' "http://example.fr".
_STOPWORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with without
    about above after before below between during over under up down out off again further once
    is are was were be been being am do does did done doing have has had having will would shall
    should can could may might must it its it's this that these those there here which who whom
    whose what when where why how i me my we our you your he him his she her they them their
    not no nor only own same too very just also such both each few more most other some any all
    one s t also however therefore thus while although though because since until yet yes ok okay
    located situated available availability http https www""".split()
)
# Question words are the question's form, not its content.
_QUESTION_WORDS = frozenset("what when where which who whom whose why how".split())

# Latin words (with inner hyphens/apostrophes), numbers (with inner separators, the a.m./p.m. of a
# time of day, an ordinal's suffix: "23rd" is 23), CJK runs.
_TOKEN = re.compile(
    r"(?P<num>\d+(?:[.,:/]\d+)*)(?:\s?(?P<half>[aApP])\.?[mM]\.?(?![^\W\d_])|(?:st|nd|rd|th)(?![^\W\d_]))?"
    r"|(?P<word>[^\W\d_](?:[^\W_]|['\-][^\W_])*)"
)
# Structured data's keys ("OutdoorSeating", "RestaurantsGoodForGroups") hold the words an answer
# uses ("outdoor seating"): a capitalised word with inner capitals is split into its words.
_CAMEL_PART = re.compile(r"[A-Z][a-z]{2,}")
_CAMEL = re.compile(r"^(?:[A-Z][a-z]{2,}){2,}$")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30fc]+")
_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f\u30fc]+$")

# Truncation stemming: English inflections ("launched"/"launch") share their first characters.
STEM_CHARS = 5


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def normalise(text: str) -> str:
    """NFKC folds full-width digits and letters, common in Japanese text, into ASCII."""
    return unicodedata.normalize("NFKC", text)


def _cjk_bigrams(run: str, at: int) -> list[tuple[int, int, str]]:
    """Character bigrams of a CJK run; all-hiragana bigrams are mostly particles and endings."""
    if len(run) == 1:
        return [] if _HIRAGANA_ONLY.match(run) else [(at, at + 1, run)]
    grams = ((at + i, at + i + 2, run[i : i + 2]) for i in range(len(run) - 1))
    return [g for g in grams if not _HIRAGANA_ONLY.match(g[2])]


def token_spans(text: str, drop_question_words: bool = True) -> list[tuple[int, int, str]]:
    """(start, end, content token) over normalise(text) for each content token: stemmed
    non-stopwords, numbers, CJK bigrams. Numbers keep a '#' prefix so that callers can treat them
    as decisive."""
    text = normalise(text)
    if ")" in text:
        text = _JA_WEEKDAY.sub(r"\1曜日", text)  # same length: offsets stay valid
    out: list[tuple[int, int, str]] = []
    # Japanese times of day are numbers like any other ("午後8時" is 20:00): taken out of the CJK
    # runs, so that they are not bigrams too.
    if "時" in text:
        for m in _JA_CLOCK.finditer(text):
            out.append((m.start(), m.end(), "#" + _ja_clock(m)))
        text = _JA_CLOCK.sub(lambda m: " " * len(m.group()), text)  # same length: offsets stay valid
    if "the" in text or "night" in text:
        for m in _EN_CLOCK.finditer(text):
            if (clock := _en_clock(m)) is not None:
                out.append((m.start(), m.end(), "#" + clock))
                text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]  # offsets stay valid
    # Kanji numerals before a counter are numbers like digits (「十年」 is 「10年」); only the numeral
    # is taken out, so the counter stays the same token either way.
    if _JA_NUMERAL_CHARS.search(text):
        for m in _JA_COUNTED.finditer(text):
            out.append((m.start(), m.end(), f"#{_kanji_number(m.group())}"))
        text = _JA_COUNTED.sub(lambda m: " " * len(m.group()), text)
    for run in _CJK.finditer(text):
        out.extend(_cjk_bigrams(run.group(), run.start()))
    latin = _CJK.sub(lambda m: " " * len(m.group()), text)
    for m in _TOKEN.finditer(latin):
        if m.group("num"):
            out.append((m.start(), m.end(), "#" + _number(m.group("num"), m.group("half"))))
            continue
        word = m.group("word")
        if (value := _number_word(word)) is not None:
            out.append((m.start(), m.end(), f"#{value}"))
        elif _CAMEL.match(word):
            # Each word, and each pair joined ("TakeOut" is also "takeout").
            parts = list(_CAMEL_PART.finditer(word))
            spans = [(p.start(), p.end(), p.group()) for p in parts]
            spans += [(a.start(), b.end(), a.group() + b.group()) for a, b in zip(parts, parts[1:], strict=False)]
            seen: set[str] = set()
            for start, end, text_ in spans:
                tok = _word_token(text_, drop_question_words)
                if tok is not None and tok not in seen:
                    seen.add(tok)
                    out.append((m.start() + start, m.start() + end, tok))
        elif word in _US_STATES:
            out.extend((m.start(), m.end(), tok) for part in _US_STATES[word]
                       if (tok := _word_token(part, drop_question_words)) is not None)
        elif (tok := _word_token(word, drop_question_words)) is not None:
            out.append((m.start(), m.end(), tok))
    return out


# Words recur across texts and records; what each becomes is remembered (~150 bytes a word).
@functools.lru_cache(maxsize=16384)
def _word_token(word: str, drop_question_words: bool) -> str | None:
    word = word.lower()
    if word in _STOPWORDS or (drop_question_words and word in _QUESTION_WORDS) or len(word) < 2:
        return None
    return _inflection_stem(_ABBREVIATIONS.get(word, word))[:STEM_CHARS]


# Records of data write a US state as its postal code ('state': 'CA'), prose as its name; only the
# capitalised code is one ("IN", "OR", "ME" are words in lower case).
_US_STATES = {code: name.split() for code, name in {
    "AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California", "CO": "Colorado",
    "CT": "Connecticut", "DE": "Delaware", "FL": "Florida", "GA": "Georgia", "HI": "Hawaii", "ID": "Idaho",
    "IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas", "KY": "Kentucky", "LA": "Louisiana",
    "ME": "Maine", "MD": "Maryland", "MA": "Massachusetts", "MI": "Michigan", "MN": "Minnesota", "MS": "Mississippi",
    "MO": "Missouri", "MT": "Montana", "NE": "Nebraska", "NV": "Nevada", "NH": "New Hampshire", "NJ": "New Jersey",
    "NM": "New Mexico", "NY": "New York", "NC": "North Carolina", "ND": "North Dakota", "OH": "Ohio",
    "OK": "Oklahoma", "OR": "Oregon", "PA": "Pennsylvania", "RI": "Rhode Island", "SC": "South Carolina",
    "SD": "South Dakota", "TN": "Tennessee", "TX": "Texas", "UT": "Utah", "VT": "Vermont", "VA": "Virginia",
    "WA": "Washington", "WV": "West Virginia", "WI": "Wisconsin", "WY": "Wyoming", "DC": "District of Columbia",
}.items()}

# Abbreviated months and weekdays are their names ("Aug 23" is "August 23rd"); "sat", "sun" and "may"
# are words of their own.
_ABBREVIATIONS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june", "jul": "july",
    "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december", "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday",
    "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday",
}


_NOT_PLURAL = frozenset("news always perhaps whereas series species physics economics politics mathematics gas lens "
                        "sometimes besides".split())
_VOWEL = re.compile(r"[aeiouy]")
_DOUBLED = re.compile(r"([b-df-hj-np-tv-xz])\1$")
_SHORT_CVC = re.compile(r"^[b-df-hj-np-tv-z]*[aeiou][b-df-hj-np-tvz]$")


def _inflection_stem(word: str) -> str:
    """The word without its plural, past or -ing ending (Porter's steps 1a and 1b): truncation alone
    left "turn"/"turns" and "use"/"used"/"using" apart, every short word's inflection a missing word."""
    if word in _NOT_PLURAL:
        return word
    if word.endswith("ies"):
        word = word[:-1] if len(word) <= 4 else word[:-3] + "y"  # "lies" -> "lie", "cities" -> "city"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    if word.endswith("eed"):
        return word[:-1] if len(word) > 4 else word  # "agreed" -> "agree"; "need" stays
    if word.endswith("ied"):
        return word[:-1] if len(word) <= 4 else word[:-3] + "y"  # "tied" -> "tie", "studied" -> "study"
    for ending in ("ing", "ed"):
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 2 and _VOWEL.search(stem):
            # "rated" -> "rate", "tabled" -> "table"; not "seating" -> "seate".
            if stem.endswith(("bl", "iz")) or (stem.endswith("at") and len(stem) <= 3) or _SHORT_CVC.match(stem):
                return stem + "e"
            return stem[:-1] if _DOUBLED.search(stem) else stem
    return word


# A date's weekday in brackets is the weekday: 「8月23日(火)」 is 「8月23日火曜日」.
_JA_WEEKDAY = re.compile(r"(?<=[\d日])\(([月火水木金土日])\)")

# Not 時間 (hours of duration), 時点, 時期, 時代.
_JA_CLOCK = re.compile(
    r"(?P<half>午前|午後|朝|夕方|夜|晩)?(?P<hour>\d{1,2})時(?!間|点|期|代)(?:(?P<minute>\d{1,2})分|(?P<half_hour>半))?")
# Parts of the day that say which half a time is in: 「夜11時」 is 23:00, as "11 at night" is.
_JA_AFTERNOON = frozenset(("午後", "夕方", "夜", "晩"))
_EN_CLOCK = re.compile(r"\b(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s+(?:o'clock\s+)?"
                       r"(?P<half>in\s+the\s+(?:morning|afternoon|evening)|at\s+night)\b", re.IGNORECASE)


# Numbers written as words are the numbers ("over ten or twenty years" is "over 10 or 20 years"):
# as words they were missing words beside a decisive number the contexts lacked, and a faithful
# "10 or 20 years" scored 0. Not "one": it is as often a pronoun ("one of the best") as a number.
_UNITS = {w: i for i, w in enumerate("zero _ two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen".split()) if w != "_"}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split())
         if w != "_"}
# After a tens word, "one" is a number ("twenty-one").
_TENS_UNITS = {w: v for w, v in {**_UNITS, "one": 1}.items() if 0 < v < 10}


def _number_word(word: str) -> int | None:
    """The value of a number written as a word ("ten", "Twenty-five"), else None."""
    word = word.lower()
    if word in _UNITS or word in _TENS:
        return _UNITS.get(word, _TENS.get(word))
    tens, _, unit = word.partition("-")
    return _TENS[tens] + _TENS_UNITS[unit] if tens in _TENS and unit in _TENS_UNITS else None


_KANJI_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_KANJI_POWERS = {"十": 10, "百": 100, "千": 1000}
_JA_NUMERAL_CHARS = re.compile(r"[一二三四五六七八九十百千]")
# A kanji numeral counts only before a counter, and not after 数/何/幾 (「数十年」 is "decades"): 一 is
# also a word's first character (一般, 一緒). Not before 分: 「十分」 is as often "enough" as ten minutes.
_JA_COUNTED = re.compile(
    r"(?<![数何幾第〇一二三四五六七八九十百千万])[一二三四五六七八九十百千]+"
    r"(?=つ|人|名|個|冊|台|日|年|回|歳|才|円|件|階|か月|ヶ月|カ月|週間|割|倍|枚|本|杯|秒|時間|キロ|メートル|グラム|ドル)")


def _kanji_number(numeral: str) -> int:
    """「二十五」 is 25, 「三百」 300, 「千二百」 1200 (a bare digit run, 「二〇」, reads digit by digit)."""
    if not any(c in _KANJI_POWERS for c in numeral):
        return int("".join(str(_KANJI_DIGITS[c]) for c in numeral))
    total, digit = 0, None
    for c in numeral:
        if c in _KANJI_POWERS:
            total += (digit if digit is not None else 1) * _KANJI_POWERS[c]
            digit = None
        else:
            digit = _KANJI_DIGITS[c]
    return total + (digit or 0)


def _ja_clock(m: re.Match[str]) -> str:
    hour = int(m.group("hour"))
    minute = 30 if m.group("half_hour") else int(m.group("minute") or 0)
    if m.group("half") is not None and hour <= 12:
        hour = hour % 12 + (12 if m.group("half") in _JA_AFTERNOON else 0)
    return f"{hour}:{minute:02d}"


def _en_clock(m: re.Match[str]) -> str | None:
    """"7 in the morning" is 7:00, "11 at night" 23:00; None for an hour that is no time of day."""
    hour, minute = int(m.group("hour")), int(m.group("minute") or 0)
    if hour > 12 or minute >= 60:
        return None
    return f"{hour % 12 + (0 if m.group('half').lower().endswith('morning') else 12)}:{minute:02d}"


def _number(text: str, half: str | None) -> str:
    """One spelling per value: "1,200" is "1200", "3.0" is "3", and a time of day is 24-hour
    h:mm ("8 PM", "8:00 p.m." and "20:0" are all "20:00"), as structured data and prose write them
    differently."""
    text = text.replace(",", "")
    clock = text.split(":")
    if half is not None or (len(clock) == 2 and all(len(x) <= 2 for x in clock)):
        if len(clock) <= 2 and all(x.isdigit() for x in clock):
            hour, minute = int(clock[0]), int(clock[1]) if len(clock) == 2 else 0
            if half is not None and hour <= 12:
                hour = hour % 12 + (12 if half in "pP" else 0)
            if hour < 24 and minute < 60:
                return f"{hour}:{minute:02d}"
    if "." in text and text.count(".") == 1:
        whole, _, fraction = text.partition(".")
        fraction = fraction.rstrip("0")
        return f"{whole}.{fraction}" if fraction else whole
    return text


# A kanji or katakana character says about as much as this many Latin letters (「設定」 as much as
# "settings"); a hiragana, mostly particles and endings, one.
CJK_CHAR_WEIGHT = 3.0


def text_weight(text: str, chars: set[int]) -> float:
    """How much of `text` (normalised) the characters at these offsets say (CJK_CHAR_WEIGHT). Token
    counts cannot compare languages: one Japanese word is several bigrams, one English word one token."""
    return sum(CJK_CHAR_WEIGHT if ord(text[i]) >= 0x2E80 and not 0x3040 <= ord(text[i]) <= 0x309F else 1.0
               for i in chars)


def new_content(text: str, known: set[str]) -> tuple[str, set[int], set[int]]:
    """normalise(text), the offsets of its content tokens, and those of them that no token in
    `known` covers: what the text says beyond `known` (a question's words)."""
    content: set[int] = set()
    covered: set[int] = set()
    for start, end, tok in token_spans(text):
        content.update(range(start, end))
        if tok in known:
            covered.update(range(start, end))
    return normalise(text), content, content - covered


def content_tokens(text: str, drop_question_words: bool = True) -> list[str]:
    return [tok for _, _, tok in token_spans(text, drop_question_words)]


def latin_words(text: str) -> list[tuple[str, str]]:
    """(content token, lower-case word) for each Latin word: the static embedding model knows
    English words, so these are the ones a synonym can stand for."""
    text_n = normalise(text)
    return [
        (tok, text_n[a:b].lower())
        for a, b, tok in token_spans(text, drop_question_words=False)
        if not is_decisive(tok) and text_n[a:b].isascii()
    ]


# A capitalised word inside a sentence (not its first word, not after a list number) is a name.
_NAME = re.compile(r"(?<!^)(?<![.!?:]\s)(?<!\n)\b[A-Z][a-z][\w'\-]*")


def name_tokens(text: str) -> list[str]:
    """Content tokens of the names in a sentence ("Collins", "Leeds"), lower-cased and stemmed like
    every token, so "Paris" is found in a context that writes "paris"."""
    return [tok for m in _NAME.finditer(normalise(text).strip()) for tok in content_tokens(m.group(), False)]


def keep_only(text: str, spans: list[tuple[int, int, str]]) -> str:
    """normalise(text) with everything outside `spans` blanked out and runs of blanks collapsed:
    the words of a question that an answer addresses, still readable in either language."""
    text = normalise(text)
    kept = [False] * len(text)
    for start, end, _ in spans:
        kept[start:end] = [True] * (end - start)
    masked = "".join(ch if k else " " for ch, k in zip(text, kept, strict=True))
    return " ".join(masked.split())


def is_decisive(token: str) -> bool:
    """Numbers (dates, amounts, ids) decide whether a claim is the context's claim."""
    return token.startswith("#")


# LLM answers often glue sentences ("...in 2014.PharmaCann is..."): a terminal mark between a
# lowercase letter or digit and a capital is a boundary.
_GLUED = re.compile(r"(?<=[a-z0-9)][.!?])(?=[A-Z])")
_CLAUSE = re.compile(r"\s*;\s+")


# Names for the documents an answer was given, in either language: citation markers and tellers
# below, and the sentences about the documents in relevance.py, all name them.
SOURCE_EN = (r"(?:passage|source|document|documentation|doc|context|ref|reference|citation|chunk|excerpt|snippet"
             r"|article|text|page|information|material)s?")
SOURCE_JA = (r"(?:文書|資料|文章|出典|参考|参照|ソース|コンテキスト|文献|抜粋|記事|テキスト|ドキュメント"
             r"|マニュアル|ページ|案内)")
_SOURCE = rf"(?:{SOURCE_EN}|{SOURCE_JA})"
# Who wrote the document, as a summary names them: "The author recounts ...", "The report concludes".
_WRITER = (r"(?:news\s+)?(?:report|story|piece|essay|op-ed|editorial|column|author|writer|columnist|reporter"
           r"|journalist)s?")
_NUMBERS = r"\d+(?:\s*(?:[,、\-–~〜]|and|&|or|と)\s*\d+)*"
# References to the sources are no part of a claim: their numbers are not the contexts' numbers,
# so "Paris is the capital of France [1]." was unsupported, and an answer that cites its passages
# scored 0 whatever it said. Bracketed numbers ("[1]", "[1, 3]", "[^2]", "【1】") and a source word
# with numbers in brackets ("(Passage 2)", "[Source 1]", "（文書1）"), with the space before them.
_CITATION = re.compile(
    rf"[ \t]*(?:[\[【［]\^?\s*{_NUMBERS}\s*[\]】］]"
    rf"|[\[(（【［]\s*(?:see\s+)?{_SOURCE}\s*[:：#]?\s*{_NUMBERS}"
    # several sources in one bracket: "(Passage 1, Passage 3)", 「（文書1、文書3）」
    rf"(?:\s*(?:[,;、]|and|&|と)\s*{_SOURCE}\s*[:：#]?\s*{_NUMBERS})*\s*(?:より|から|参照)?\s*[\])）】］])",
    re.IGNORECASE,
)
# Who a claim is told by, when that is the sources or a crowd; what follows (or precedes, in
# Japanese) is the claim.
_CITED_TELLER = re.compile(
    # "According to Passage 2,", "Based on the provided passages,", "According to the reviews,";
    # at the end too: "..., as mentioned in passage 1."
    rf"(?:,\s*)?\b(?:based\s+on|according\s+to|as\s+(?:stated|mentioned|described|noted|explained|shown)\s+in)\s+"
    rf"(?:the\s+)?(?:(?:given|provided|above|available|retrieved|customer|user|online|structured|json|following)\s+){{0,2}}"
    rf"(?:{_SOURCE}|search\s+results?|news|reports?|data|reviews?)(?:\s*#?\s*{_NUMBERS})?"
    rf"(?:\s+(?:provided|given|above))?(?:\s*,\s*|\s*(?=[.!?]*\s*$))"
    # A source as the subject of what it says or covers: "The passages suggest that", "Passage 3
    # explains that", "Passage 1 provides information on" (a determiner or a number makes it one).
    rf"|\b(?:(?:the|this|that|each|both|these|all)\s+(?:(?:given|provided|above)\s+)?(?:{_SOURCE}|{_WRITER})"
    rf"(?:\s*#?\s*{_NUMBERS})?|{_SOURCE}\s*#?\s*{_NUMBERS})(?:\s+provided)?\s+"
    rf"(?:also\s+|then\s+|further\s+)?(?:says?|states?|explains?|mentions?|notes?|suggests?|indicates?|shows?"
    rf"|describes?|adds?|recounts?|recalls?|argues?|urges?|predicts?|questions?|reveals?|warns?|claims?|believes?"
    rf"|asserts?|writes?|details?|concludes?(?:\s+by\s+(?:saying|noting|mentioning|discussing|arguing))?"
    rf"|confirms?|highlights?|emphasi[sz]es|emphasi[sz]e|reports?|points?\s+out|discuss(?:es)?|covers?"
    rf"|talks?\s+about|provides?\s+(?:the\s+)?(?:necessary\s+|some\s+|more\s+|detailed\s+)?information\s+(?:on|about)"
    rf"|offers?\s+(?:some\s+)?insights?\s+into)\s+(?:that\s+)?"
    # Reported speech of a crowd: "One reviewer mentioned that", "Some customers noted"; the
    # reviewer is no word of the review.
    rf"|\b(?:one|another|a|some|many|several|most|other|few|the)?\s*(?:of\s+the\s+)?"
    rf"(?:reviewers?|customers?|users?|guests?|visitors?|diners?|patrons?|people)\s+(?:have\s+|has\s+|also\s+)*"
    rf"(?:said|say|says|mentioned|mention|mentions|noted|note|notes|stated|states|reported|reports|commented"
    rf"|pointed\s+out|wrote|writes|claimed|felt|found)\s+(?:that\s+)?"
    # 「文書1によると、」「提供された文書によると、」「文書2では、」「口コミによると、」
    rf"|(?:提供された|与えられた|上記の)?(?:{_SOURCE}|情報|検索結果|レビュー|口コミ|データ|利用者|お客様|ユーザー|筆者|著者|記者|報道)"
    rf"\s*(?:{_NUMBERS})?(?:の中)?(?:によると|によれば|に基づくと|では|には|からは)、?"
    # 「〜という口コミがあります」「〜と述べています」
    rf"|(?:という|との)(?:口コミ|レビュー|声|意見|感想|評価)(?:が|も)(?:あります|ありました|見られます|寄せられています)"
    rf"|と(?:述べ|説明し|記載し|書かれ|書い|示し|指摘し)て(?:います|いる|おり)",
    re.IGNORECASE,
)
# Markers of list items at the start of a line ("1.", "2)", "-", "*", "•", "・"): the splitter would
# cut "1." off as a sentence of its own, an unsupported number.
_LIST_MARKER = re.compile(
    r"(?im)^[ \t]*(?:(?:\d{1,3}[.)）]|[-*]|(?:step|option|method|tip|way|solution|passage|source|document)\s+\d{1,3}"
    r"\s*[:.)])[ \t]+"
    r"|(?:[•・●▪◦]|(?:ステップ|手順|方法|オプション)\s*\d{1,3}\s*[:：.)）])[ \t]*)(?=\S)"
)
# What is left of an inline list ("... as follows: 1. X. 2. Y."): a piece that is only its number.
_ENUMERATOR = re.compile(r"^\(?\d{1,3}[.)）]$")


# "The answer to the question is:" announces what follows; it claims nothing ("So, the answer to your
# question "What is leasing?" is:"), and before a claim on the same line it is no part of the claim.
_ANSWER_IS_EN = (r"(?:(?:so|therefore|thus|hence|in\s+conclusion|in\s+summary|overall|to\s+sum\s+up)\s*,?\s*)?"
                 r"(?:the\s+)?(?:short\s+|final\s+|simple\s+|direct\s+)?answer\s+(?:to\s+(?:the|your|this)\s+question"
                 r"(?:\s*\"[^\"]*\"|\s*“[^”]*”)?\s+)?is\s*[:：]")
# 「したがって、ご質問への答えは：」
_ANSWER_IS_JA = (r"(?:(?:したがって|つまり|結論として|以上から|以上より)、?)?"
                 r"(?:ご)?質問(?:へ|に対する)?の?(?:答え|回答)は\s*[:：]")
_ANSWER_IS = re.compile(rf"^(?:{_ANSWER_IS_EN}|{_ANSWER_IS_JA})\s*", re.IGNORECASE)


# Sentences that only frame the answer: "Sure!", "Here is a summary of the article in 121 words:",
# 「以下は要約です：」. They claim nothing about the world, yet counted as statements they were
# unsupported (the word count is no number of the contexts'), in a third of RAGTruth's summaries.
_FRAMING = re.compile(
    r"^(?:(?:sure|certainly|of\s+course|absolutely|okay|ok|great\s+question|good\s+question)[!.,]*\s*)?"
    r"(?:(?:here(?:'s|\s+is|\s+are)|below\s+(?:is|are)|the\s+following\s+(?:is|are))\b[^.!?]*[:：]"
    r"|[^.!?]*\b(?:as\s+follows|the\s+following(?:\s+[\w-]+){0,2}|these\s+(?:steps|ways|tips|options|methods|signs|factors"
    r"|reasons|points)|are|include|includes|including|such\s+as)\s*[:：]"
    # "Therefore, the answer to the question "What is leasing?" is:" announces the answer.
    rf"|{_ANSWER_IS_EN}"
    r"|(?:sure|certainly|of\s+course|absolutely|okay|ok|great\s+question|good\s+question)[!.]*"
    r"|(?:i\s+can|i'd\s+be\s+(?:happy|glad)\s+to|i\s+would\s+be\s+(?:happy|glad)\s+to|let\s+me)\s+help"
    r"(?:\s+you)?(?:\s+with\s+(?:that|this))?[!.]*"
    # Closings: "I hope this helps!", "Let me know if you have any other questions.", "Good luck!"
    r"|(?:i\s+)?hope\s+(?:this|that|it|the\s+above)\s+(?:helps?|answers?|was\s+helpful)\b[^.!?]*[!.]*"
    r"|(?:please\s+)?(?:let\s+me\s+know|do\s+not\s+hesitate|don't\s+hesitate|feel\s+free\s+to\s+(?:ask|reach|contact)"
    r"|if\s+you\s+have\s+(?:any\s+)?(?:other|further|more|additional|follow-up)\s+questions|is\s+there\s+anything\s+else)"
    r"\b[^.!?]*[!.?]*"
    r"|(?:good\s+luck|enjoy|happy\s+\w+ing)(?:\s+\w+){0,3}[!.]*"
    # A bare reply ("Partly.", "Not by default."): it says no more than the sentences after it, and no
    # word of it can be found in a passage.
    r"|(?:yes|no|yeah|nope|partly|partially|mostly|sometimes|usually|generally|correct|exactly|indeed"
    r"|not\s+(?:quite|really|always|exactly|by\s+default)|it\s+depends)[!.]*"
    # A bare heading ("Kinetic Energy:", "Passage 1:", "Ingredients:"): what follows is the claim.
    r"|(?:\S+\s+){0,3}[^\s.!?:：]+\s*[:：])$"
    r"|^(?:(?:はい|かしこまりました|承知しました|もちろんです)[、。！!]*)?"
    r"(?:(?:以下|次)(?:は|の|に)[^。]*[:：]|[^。]*(?:以下|次)の(?:通り|とおり|手順)(?:です)?[。:：]?"
    r"|(?:はい|かしこまりました|承知しました|もちろんです)[。！!]*"
    r"|(?:いいえ|ええ|いえ|一部(?:のみ)?|部分的に(?:は)?|場合によります|その通りです|そうです|違います)(?:です)?[。！!]*"
    rf"|{_ANSWER_IS_JA}"
    r"|(?:お手伝い|お答え|ご説明|ご案内)(?:します|いたします)[。！!]*"
    # 「お役に立てれば幸いです」「他にご質問があればお気軽にどうぞ」
    r"|(?:お役に立て|参考にな|ご参考にな)(?:れば|ましたら|ると)[^。]*[。！!]*"
    r"|(?:他に|ほかに|その他)?(?:ご質問|ご不明な点|お困りのこと|気になること)(?:など)?(?:が|は)?(?:あれば|ございましたら|ありましたら)"
    r"[^。]*[。！!]*"
    r"|[^\s。！!？?]{1,12}[:：])$",
    re.IGNORECASE,
)


def without_references(text: str) -> str:
    """The answer without citation markers and list markers."""
    return _LIST_MARKER.sub("", _CITATION.sub("", text))


def claims(text: str) -> list[str]:
    """Sentences of the answer (without its citation and list markers), also split at glued
    boundaries and semicolons; each keeps at least one content token (a bare "Yes." is no claim)
    and says more than how the answer is framed, and a bare list number is no claim unless it is
    the whole answer."""
    parts: list[str] = []
    # Split before normalising: NFKC turns the full-width "？！" into "?!", which the splitter would
    # then honour only before whitespace.
    for sentence in split_sentences(without_references(text)):
        for piece in _GLUED.split(sentence):
            parts.extend(p.strip() for p in _CLAUSE.split(piece))
    kept = [p for p in parts if p and content_tokens(p) and not _FRAMING.match(p)]
    return [p for p in kept if not _ENUMERATOR.match(p)] if len(kept) > 1 else kept


def claim_content(claim: str) -> str | None:
    """What a claim says about the world, for checking it against the contexts: without a right
    conversion of a quantity in brackets (units.py), without a source or a crowd named as its
    teller ("According to Passage 2, ...", "The passages suggest that ...", "One reviewer mentioned
    that ...", 「文書1によると、」); None when that leaves nothing to check
    ("Based on the given passages, here are the signs:"). Answer relevancy keeps the whole claim:
    an answer that only describes the documents answers nothing."""
    content = without_conversions(_CITED_TELLER.sub("", _ANSWER_IS.sub("", claim))).strip()
    return content if content and content_tokens(content) and not _FRAMING.match(content) else None


# Evasions: a sentence says it cannot or will not answer. The judge asks this of each claim: a
# refusal padded with generic text still answers nothing, while a full answer with one "Unable to
# answer that part" caveat is no evasion (it was one when matched anywhere in the answer: 9 of the
# 72 real QA answers in RAGTruth dev were scored 0 that way).
_NONCOMMITTAL_EN = re.compile(
    r"\b(?:i\s+(?:do\s+not|don't|cannot|can't|am\s+not\s+able\s+to|am\s+unable\s+to)\s+"
    r"(?:know|have\s+(?:any\s+|enough\s+|sufficient\s+)?(?:information|access|data|details)|provide|answer|say|find"
    r"|determine|help\s+with)"
    r"|i'?m\s+(?:not\s+sure|sorry|unable|not\s+able)"
    r"|i\s+am\s+(?:not\s+sure|sorry)"
    r"|as\s+an\s+ai\b"
    r"|no\s+(?:information|data|details)\s+(?:is|are|was|were)\s+(?:available|provided|given)"
    r"|(?:is|are|was|were|has|have)\s+(?:not\s+been\s+|not\s+)(?:provided|specified|mentioned|disclosed|stated)"
    r"|(?:is|are|remains?)\s+(?:currently\s+)?(?:unknown|unclear|not\s+known)"
    r"|cannot\s+be\s+(?:determined|answered|confirmed)"
    r"|(?:there\s+is|i\s+have)\s+no\s+(?:information|data|record)"
    r"|unable\s+to\s+(?:find|provide|answer|determine)"
    r"|(?:cannot|can't|can\s+not)\s+answer"
    # That the question cannot be settled ("it is difficult to definitively say which is better",
    # "without more information, it is hard to give a more specific definition"): a hedge on the
    # answer, not a claim about the world, and no claim at all when nothing but "but" follows. Only
    # verbs of answering: "it is difficult to predict earthquakes" is a claim.
    r"|(?:it\s+is|it's)\s+(?:\w+\s+)?(?:difficult|hard|impossible|not\s+possible)\s+to\s+(?:\w+ly\s+)?"
    r"(?:say|determine|give|provide|answer|conclude|pinpoint|know\s+for\s+(?:sure|certain))\b(?![^.!?]*\bbut\b))",
    re.IGNORECASE,
)
_NONCOMMITTAL_JA = re.compile(
    r"(?:わかりません|分かりません|知りません|存じません|不明です|不明で|わからない|分からない"
    r"|(?:お答え|回答|判断|特定|ご案内)(?:でき(?:ません|かねます)|いたしかねます|しかねます)"
    r"|(?:分|わ)かりかねます|存じ上げません|見当たりません"
    r"|情報(?:が|は)(?:ありません|ございません|ない|見つかりません|提供されていません)"
    r"|(?:記載|言及|明記|提供|公表)されていません"
    # 「一概には言えません」「断定することは難しいです」: the hedge of the English above.
    r"|一概に(?:は)?(?:言え|いえ)(?:ません|ない)|はっきり(?:と(?:は)?)?(?:言え|いえ)(?:ません|ない)"
    r"|(?:断定|断言|明言|判断|特定)(?:する(?:こと|の)は|は)(?:でき(?:ません|ない)|難しい|困難))"
)


def is_noncommittal(answer: str) -> bool:
    text = normalise(answer)
    return bool(_NONCOMMITTAL_EN.search(text) or _NONCOMMITTAL_JA.search(text))
