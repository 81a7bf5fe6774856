"""A quantity restated in another unit in brackets is no new claim, when the conversion is right.

Answers add conversions the contexts do not write: "58 degrees Fahrenheit (15 degrees Celsius)",
"100 km (62 miles)", 「華氏58度（摂氏15度）」. The bracketed number is then an unsupported number
and the statement lost its support for being helpful. A right conversion (within rounding) is
taken out before the statement is checked; a wrong one stays, and is unsupported as it should be
(43 degrees Fahrenheit is 6 degrees Celsius, not 4).
"""

from __future__ import annotations

import re

# Unit names, each with its kind and its size in the kind's base unit. Temperatures are converted
# apart (an offset, not a factor).
_UNITS: dict[str, tuple[str, float]] = {}
for _kind, _size, _names in (
    ("length", 1000.0, "km kilometer kilometers kilometre kilometres キロメートル キロ"),
    ("length", 1609.344, "mi mile miles マイル"),
    ("length", 1.0, "m meter meters metre metres メートル"),
    ("length", 0.3048, "ft foot feet フィート"),
    ("length", 0.01, "cm centimeter centimeters centimetre centimetres センチメートル センチ"),
    ("length", 0.0254, "in inch inches インチ"),
    ("mass", 1.0, "kg kilogram kilograms kilo kilos キログラム"),
    ("mass", 0.45359237, "lb lbs pound pounds ポンド"),
    ("mass", 0.001, "g gram grams グラム"),
    ("mass", 0.028349523125, "oz ounce ounces オンス"),
    ("volume", 1.0, "l liter liters litre litres リットル"),
    ("volume", 3.785411784, "gal gallon gallons ガロン"),
    ("volume", 0.001, "ml milliliter milliliters millilitre millilitres ミリリットル"),
    ("speed", 1.0, "km/h kph kmh キロメートル毎時 時速"),
    ("speed", 1.609344, "mph"),
    ("temperature", 0.0, "°f ℉ f fahrenheit 華氏"),
    ("temperature", 1.0, "°c ℃ c celsius centigrade 摂氏"),
):
    for _name in _names.split():
        _UNITS[_name] = (_kind, _size)

_UNIT = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = r"\d+(?:[.,]\d+)*"
_ABOUT = r"(?:about|approx\.?|approximately|around|roughly|nearly|almost|~|約|およそ)?\s*"
# "58 degrees Fahrenheit (15 degrees Celsius)", "100 km (about 62 miles)", 「華氏58度（摂氏15度）」
# and 「100キロ（約62マイル）」: number and unit in either order, "degrees"/「度」 optional.
_QUANTITY = (rf"(?:(?P<{{p}}v>{_NUMBER})\s*(?:degrees?\s+|度)?(?P<{{p}}u>{_UNIT})(?![^\W\d_])"
             rf"|(?P<{{p}}u2>{_UNIT})\s*(?P<{{p}}v2>{_NUMBER})\s*(?:度)?)")
_RESTATED = re.compile(
    f"(?P<first>{_QUANTITY.format(p='a')})" + rf"\s*[(（]\s*{_ABOUT}" + _QUANTITY.format(p="b") + r"\s*[)）]",
    re.IGNORECASE,
)


def without_conversions(text: str) -> str:
    """The text without the bracketed conversions that are right."""
    if "(" not in text and "（" not in text:
        return text
    return _RESTATED.sub(_keep, text)


def _keep(m: re.Match[str]) -> str:
    first, second = _quantity(m, "a"), _quantity(m, "b")
    if first is None or second is None or not _same(first, second):
        return m.group()
    return m.group("first")


def _quantity(m: re.Match[str], p: str) -> tuple[str, float, float, float] | None:
    """(kind, unit size, value, the value's last written digit: 1 for "15", 0.1 for "15.5")."""
    value = (m.group(f"{p}v") or m.group(f"{p}v2")).replace(",", "")
    unit = (m.group(f"{p}u") or m.group(f"{p}u2")).lower()
    try:
        number = float(value)
    except ValueError:  # "1.2.3"
        return None
    kind, size = _UNITS[unit]
    return kind, size, number, 10.0 ** -len(value.partition(".")[2])


def _same(a: tuple[str, float, float, float], b: tuple[str, float, float, float]) -> bool:
    """The same amount in two units, within 5 % or the rounding of the restated value."""
    if a[0] != b[0] or a[1] == b[1]:
        return False
    if a[0] == "temperature":
        converted = (a[2] - 32.0) * 5.0 / 9.0 if a[1] == 0.0 else a[2] * 9.0 / 5.0 + 32.0
    else:
        converted = a[2] * a[1] / b[1]
    return abs(converted - b[2]) <= max(0.05 * abs(converted), 0.5 * b[3])
