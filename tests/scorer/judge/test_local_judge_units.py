"""Conversions in brackets that the local judge takes out of a statement (units.py)."""

from __future__ import annotations

import pytest

from ragpulse.scorer.judge.local.units import without_conversions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It is 100 km (about 62 miles) away.", "It is 100 km away."),
        ("Heat the oven to 350°F (175°C).", "Heat the oven to 350°F."),
        ("It weighs 5 kg (11 lbs).", "It weighs 5 kg."),
        ("It is 3 in (7.6 cm) long.", "It is 3 in long."),
        ("100キロ（約62マイル）です。", "100キロです。"),
        ("華氏58度（摂氏15度）です。", "華氏58度です。"),
    ],
)
def test_a_right_conversion_is_taken_out(text: str, expected: str) -> None:
    assert without_conversions(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "It was 43 degrees Fahrenheit (4 degrees Celsius).",  # 43 °F is 6 °C
        "It weighs 5 kg (5 lbs).",
        "It is 100 km (100 km) away.",  # the same unit restated is no conversion
        "Call 1-800-275 (option 2).",
        "It takes 5 minutes (10 at most).",
        "Dial 5 (C) for the front desk.",
    ],
)
def test_anything_else_in_brackets_stays(text: str) -> None:
    assert without_conversions(text) == text
