"""Built-in PII detectors: patterns that find candidates, and a check that confirms them.

The patterns never use `\\b`: kanji and kana are word characters, so `\\b` sees no boundary in
電話番号090-1234-5678まで. Each pattern states its boundary instead ("no digit before or after"),
and the classes hold full-width digits, hyphens and spaces, so matching runs on the original text
and everything around a match stays byte-identical.

Every pattern runs in time linear in the text: a lookbehind on its first character lets it start
only at the start of a run, repetitions are bounded or possessive, and no repeated group can split
the same characters two ways. A candidate that fails its check is retried a group shorter from the same
start ("4111 1111 1111 1111 12" holds a card): candidates are bounded, and so are the retries.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# Half- and full-width digits; hyphens as Japanese text writes them (ASCII, Unicode hyphens and
# dashes, minus, full-width hyphen-minus, the long-vowel marks IMEs put between digits); spaces.
# (The hyphens come first in every class, so the leading "-" is never read as a range.)
_D = "[0-9０-９]"
_HYPHENS = "-\u2010-\u2015\u2212\uff0d\u30fc\uff70"
_SPACES = " \u00a0\u3000"
_HY = f"[{_HYPHENS}]"
_SP = f"[{_SPACES}]"
_SEP = f"[{_HYPHENS}{_SPACES}]"
# Separators inside a phone number: hyphens, spaces, dots, and parentheses ("(03) 1234").
_PSEP = f"[{_HYPHENS}{_SPACES}.．()（）]{{1,3}}"
_US_SEP = f"[{_HYPHENS}{_SPACES}.．]"
# A number starts where no digit (nor a digit and a decimal point or comma) precedes it, and ends
# where none follows: "3.14159265358979" holds no card, "090-1234-5678まで" is a phone.
_NUM_END = "(?![0-9０-９])(?![.,．，][0-9０-９])"


def _number(first: str, rest: str) -> str:
    """A number's pattern: its first character's class, then the check on what precedes it. In
    this order re skips to candidate characters quickly (7 ns a character here, not 40)."""
    return f"{first}(?<![0-9０-９].)(?<![0-9０-９][.,．，].){rest}{_NUM_END}"


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def digits(text: str) -> str:
    """The ASCII digits of a match, full-width ones included."""
    return "".join(c for c in _nfkc(text) if "0" <= c <= "9")


def _folded(text: str) -> str:
    return _nfkc(text).casefold()


def _compact(text: str) -> str:
    return "".join(_nfkc(text).split()).upper()


# Every number a detector looks for lies in a run of digits and the separators between them
# (possessive: digits and separators never compete for a character).
_NUMBER_RUN = re.compile(f"{_D}(?:[{_HYPHENS}{_SPACES}.．,，()（）]*+{_D}){{3,}}+")


@dataclass(frozen=True)
class Detector:
    name: str
    patterns: tuple[re.Pattern[str], ...]
    # What a candidate must also satisfy (a checksum, a valid range); None: every candidate counts.
    check: Callable[[str], bool] | None
    # Where a candidate may end, checked again on the whole text: a shorter retry or a window's
    # edge cut off what the pattern's own lookahead saw.
    end: re.Pattern[str]
    # Two matches with the same key are the same value and share a placeholder.
    key: Callable[[str], str] = digits
    # Where values can be: each holds a match of `hint`, and reaches at most `reach` characters
    # beyond it, cues and lookarounds included (None: anywhere in a text with a match). Ordinary
    # text has few matches, so the patterns scan a few windows instead of all of it.
    hint: re.Pattern[str] = _NUMBER_RUN
    reach: int | None = 16

    @property
    def label(self) -> str:
        return self.name.upper()

    def spans(self, text: str, windows: Sequence[tuple[int, int]] | None = None) -> Iterator[tuple[int, int]]:
        """Where the detector's values are in `text`; spans of different patterns may overlap.
        `windows` is self.windows(text), for callers that share it between detectors with one hint.
        A pattern with a group `v` matches its cue too ("〒") but only the group is a value."""
        for pattern in self.patterns:
            for pos, endpos in self.windows(text) if windows is None else windows:
                if self.check is None:
                    for m in pattern.finditer(text, pos, endpos):
                        yield m.span("v") if "v" in pattern.groupindex else m.span()
                else:
                    yield from _checked(pattern, self.end, self.check, text, pos, endpos)

    def windows(self, text: str) -> list[tuple[int, int]]:
        if self.reach is None:
            return [(0, len(text))] if self.hint.search(text) else []
        windows: list[tuple[int, int]] = []
        for m in self.hint.finditer(text):
            start, end = max(0, m.start() - self.reach), min(len(text), m.end() + self.reach)
            if windows and start <= windows[-1][1]:
                windows[-1] = (windows[-1][0], end)
            else:
                windows.append((start, end))
        return windows


def _checked(
    pattern: re.Pattern[str], end: re.Pattern[str], check: Callable[[str], bool], text: str, pos: int, endpos: int
) -> Iterator[tuple[int, int]]:
    while (m := pattern.search(text, pos, endpos)) is not None:
        start = m.start()
        found: re.Match[str] | None = m
        while found is not None and not (check(found[0]) and end.match(text, found.end())):
            # A shorter candidate ends before the last separator: a whole group fewer.
            stop = start + _last_separator(found[0])
            found = pattern.match(text, start, stop) if stop > start else None
        if found is None:
            pos = start + 1
        else:
            yield start, found.end()
            pos = found.end()


def _last_separator(candidate: str) -> int:
    for i in range(len(candidate) - 1, 0, -1):
        if not candidate[i].isalnum():
            return i
    return 0


# -- checks --------------------------------------------------------------------------------------


def luhn(number: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(number)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _credit_card(match: str) -> bool:
    number = digits(match)
    return 13 <= len(number) <= 19 and luhn(number)


_MY_NUMBER_WEIGHTS = (6, 5, 4, 3, 2, 7, 6, 5, 4, 3, 2)


def my_number_check_digit(first11: str) -> int:
    """The check digit of a マイナンバー (個人番号), as the ordinance on its check digit defines it:
    weights 6,5,4,3,2,7,6,5,4,3,2 over the first 11 digits from the left, r = sum mod 11,
    check = 0 if r <= 1 else 11 - r."""
    r = sum(int(c) * w for c, w in zip(first11, _MY_NUMBER_WEIGHTS, strict=True)) % 11
    return 0 if r <= 1 else 11 - r


def _my_number(match: str) -> bool:
    number = digits(match)
    return len(number) == 12 and my_number_check_digit(number[:11]) == int(number[11])


# Japanese numbers of 11 digits: mobile (070, 080, 090), IP phones (050), M2M (020), 0800 free dial.
_JP_ELEVEN = ("020", "050", "060", "070", "080", "090", "0800")


def _phone(match: str) -> bool:
    number = digits(match)
    if match.lstrip("(（")[:1] in ("+", "＋"):
        return 8 <= len(number) <= 15  # E.164
    if number.startswith("0"):
        # Japan: 10 digits for fixed lines and 0120/0570, a national number never starts 00.
        return (len(number) == 10 and number[1] != "0") or (len(number) == 11 and number.startswith(_JP_ELEVEN))
    return len(number) == 10  # North America; the pattern already wants NXX-XXX-XXXX


def _us_ssn(match: str) -> bool:
    number = digits(match)
    area, group, serial = number[:3], number[3:5], number[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _ipv4(match: str) -> bool:
    return all(int(octet) <= 255 for octet in _nfkc(match).split("."))


def _ipv6(match: str) -> bool:
    try:
        ipaddress.IPv6Address(match)
    except ValueError:
        return False
    return True


def _ipv6_key(match: str) -> str:
    return str(ipaddress.IPv6Address(match))


_LETTER_VALUES = str.maketrans({chr(c): str(c - ord("A") + 10) for c in range(ord("A"), ord("Z") + 1)})


def _iban(match: str) -> bool:
    iban = match.replace(" ", "")  # the patterns match ASCII and single spaces only
    if not 15 <= len(iban) <= 34:
        return False
    # ISO 13616: move the country and check digits to the end, letters become 10..35, mod 97 is 1.
    return int((iban[4:] + iban[:4]).translate(_LETTER_VALUES)) % 97 == 1


# -- the detectors -------------------------------------------------------------------------------

_NUM_END_RE = re.compile(_NUM_END)
_LOCAL = "A-Za-z0-9._%+\\-Ａ-Ｚａ-ｚ０-９．＿％＋－"
_LABEL = "A-Za-z0-9\\-Ａ-Ｚａ-ｚ０-９－"
_PREFECTURE_OR_CITY = "[\u4e00-\u9fff々ヶケ]{1,5}?[都道府県市区町村郡]"


def _detector(
    name: str,
    *patterns: str,
    check: Callable[[str], bool] | None = None,
    end: re.Pattern[str] = _NUM_END_RE,
    key: Callable[[str], str] = digits,
    hint: re.Pattern[str] = _NUMBER_RUN,
    reach: int | None = 16,
) -> Detector:
    return Detector(name, tuple(re.compile(p) for p in patterns), check, end, key, hint, reach)


DETECTORS: dict[str, Detector] = {
    d.name: d
    for d in (
        _detector(
            "email",
            # The local part can only start at the start of a run and is possessive, and each
            # domain label is possessive and ends at a dot: no start re-scans a run.
            f"(?<![{_LOCAL}])[{_LOCAL}]++[@＠](?:[{_LABEL}]++[.．])+[A-Za-zＡ-Ｚａ-ｚ]{{2,63}}+(?![{_LABEL}])",
            key=_folded,
            hint=re.compile("[@＠]"),
            reach=None,  # a local part has no length limit here
        ),
        _detector(
            "credit_card",
            _number(_D, f"{_D}{{12,18}}"),
            # 4-4-4-4 (and 4-4-4-1..4, 4-4-4-4-1..3) with one separator throughout
            _number(_D, f"{_D}{{3}}(?P<s>{_SEP}){_D}{{4}}(?P=s){_D}{{4}}(?P=s){_D}{{1,4}}(?:(?P=s){_D}{{1,3}})?"),
            # American Express 4-6-5, Diners Club 4-6-4
            _number(_D, f"{_D}{{3}}(?P<s>{_SEP}){_D}{{6}}(?P=s){_D}{{4,5}}"),
            check=_credit_card,
        ),
        _detector(
            "my_number",
            _number(_D, f"{_D}{{3}}(?P<s>{_SEP}?){_D}{{4}}(?P=s){_D}{{4}}"),
            check=_my_number,
        ),
        _detector(
            "phone",
            # Japan: 0 and 9 or 10 more digits, grouped any way (03-1234-5678, 0120-123-456,
            # (090)1234-5678, ０９０－１２３４－５６７８, 09012345678)
            _number(
                "[(（0０]", f"(?:(?<=[(（])[0０]|(?<=[0０])){_D}{{1,4}}(?:{_PSEP})?{_D}{{1,4}}(?:{_PSEP})?{_D}{{3,4}}"
            ),
            # International: +CC and groups (+81 90-1234-5678, +1 (555) 123-4567); possessive
            # groups, so a run of digits splits one way only.
            _number("[+＋]", f"{_D}{{1,3}}(?:(?:{_PSEP})?{_D}{{1,4}}+){{2,5}}"),
            # North America with separators: 555-123-4567, 555.123.4567, (555) 123-4567
            _number(
                "[(（2-9２-９]",
                f"(?:(?<=[(（])[2-9２-９]{_D}{{2}}[)）]{_SP}?|(?<=[2-9２-９]){_D}{{2}}{_US_SEP}){_D}{{3}}{_US_SEP}{_D}{{4}}",
            ),
            check=_phone,
        ),
        _detector(
            "postal_code",
            # 〒 always marks one; a bare 123-4567 only next to an address cue (郵便番号, 住所,
            # or a prefecture or city name right after it).
            f"〒{_SP}?(?P<v>{_D}{{3}}{_HY}?{_D}{{4}}){_NUM_END}",
            # (the cue's first character comes first: re then skips to candidates quickly)
            "[郵住所Pp](?:(?<=郵)便番号|(?<=住)所|(?<=所)在地|(?<=[Pp])ostal code)"
            f"[^0-9０-９\\n]{{0,4}}(?P<v>{_D}{{3}}{_HY}{_D}{{4}}){_NUM_END}",
            f"(?P<v>{_D}(?<![0-9０-９].){_D}{{2}}{_HY}{_D}{{4}}){_NUM_END}{_SP}{{0,2}}(?={_PREFECTURE_OR_CITY})",
        ),
        _detector(
            "us_ssn",
            _number(_D, f"{_D}{{2}}(?P<s>{_SEP}){_D}{{2}}(?P=s){_D}{{4}}"),
            check=_us_ssn,
        ),
        _detector(
            "ipv4",
            _number(_D, f"{_D}{{0,2}}[.．](?:{_D}{{1,3}}[.．]){{2}}{_D}{{1,3}}"),
            check=_ipv4,
            key=_nfkc,
        ),
        _detector(
            "ipv6",
            # Up to 8 groups, "::" once (the check decides), an IPv4 tail (::ffff:192.0.2.1)
            "[0-9A-Fa-f:](?<![0-9A-Fa-f:].)"
            "(?:(?<=:)(?=:)(?::[0-9A-Fa-f]{0,4}){1,7}+|(?<=[0-9A-Fa-f])[0-9A-Fa-f]{0,3}(?::[0-9A-Fa-f]{0,4}){2,7}+)"
            "(?:\\.[0-9]{1,3}){0,3}+(?![0-9A-Fa-f:])",
            check=_ipv6,
            end=re.compile("(?![0-9A-Fa-f:])"),
            key=_ipv6_key,
            hint=re.compile(":(?<=[0-9A-Fa-f:]:)(?=[0-9A-Fa-f:])"),  # "::" or a colon between hex digits
            reach=45,
        ),
        _detector(
            "iban",
            "[A-Z](?<![A-Za-z0-9].)[A-Z][0-9]{2}[A-Z0-9]{11,30}+(?![A-Za-z0-9])",
            # printed in groups of four: DE89 3704 0044 0532 0130 00
            "[A-Z](?<![A-Za-z0-9].)[A-Z][0-9]{2}(?: [A-Z0-9]{4}){2,7}+(?: [A-Z0-9]{1,3})?(?![A-Za-z0-9])",
            check=_iban,
            end=re.compile("(?![A-Za-z0-9])"),
            key=_compact,
            hint=re.compile("[A-Z](?<![A-Za-z0-9].)[A-Z][0-9]{2}"),
            reach=42,
        ),
    )
}
