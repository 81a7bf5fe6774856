"""Redaction happens in the collector, before a record is put on the bus: personal data in English
and Japanese text (next to kanji and kana, in full-width forms) becomes numbered placeholders, the
same value the same placeholder within a record, and no detector's work grows faster than the text."""

from __future__ import annotations

import time

import pytest
from otlp_requests import add_rag_span, rag_request
from pii_adversarial import adversarial
from prometheus_client import CollectorRegistry

from ragpulse.collector.extract.triple import Triple
from ragpulse.collector.pii_detectors import DETECTORS, luhn, my_number_check_digit
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.redact import RedactionConfig, Redactor
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.config import Config
from ragpulse.core.bus import InProcessBus
from ragpulse.core.settings import ConfigError
from ragpulse.core.wire import Record


def redact(text: str) -> str:
    return Redactor(RedactionConfig(enabled=True)).label(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # email: ASCII, next to kana, full-width, case-insensitive as one value
        ("mail me at jo@example.com.", "mail me at [EMAIL_1]."),
        ("メールはjo.doe+rag@mail.example.co.jpまで", "メールは[EMAIL_1]まで"),
        ("連絡先：ｊｏ＠ｅｘａｍｐｌｅ．ｃｏｍへ", "連絡先：[EMAIL_1]へ"),
        ("JO@Example.com or jo@example.com", "[EMAIL_1] or [EMAIL_1]"),
        # phone: Japanese mobile and fixed lines, with and without hyphens, full-width, +CC, US
        ("電話番号090-1234-5678までご連絡ください", "電話番号[PHONE_1]までご連絡ください"),
        ("代表は03-1234-5678です", "代表は[PHONE_1]です"),
        ("携帯は０９０－１２３４－５６７８です", "携帯は[PHONE_1]です"),
        ("携帯09012345678と090-1234-5678は同じ", "携帯[PHONE_1]と[PHONE_1]は同じ"),
        ("フリーダイヤル0120-123-456、(03) 1234-5678", "フリーダイヤル[PHONE_1]、[PHONE_2]"),
        ("call +81 90-1234-5678 or +1 (555) 123-4567", "call [PHONE_1] or [PHONE_2]"),
        ("電話+81-3-1234-5678まで", "電話[PHONE_1]まで"),
        ("call 555.123.4567 or 555-123-4567 now", "call [PHONE_1] or [PHONE_1] now"),
        # credit cards 13-19 digits, spaces or hyphens, Luhn-valid; a trailing number stays
        ("カード番号4111111111111111です", "カード番号[CREDIT_CARD_1]です"),
        ("カード番号4111-1111-1111-1111です", "カード番号[CREDIT_CARD_1]です"),
        ("カード番号４１１１　１１１１　１１１１　１１１１で", "カード番号[CREDIT_CARD_1]で"),
        ("card 4111 1111 1111 1111 12 months", "card [CREDIT_CARD_1] 12 months"),
        ("19 digits: 4111111111111111110.", "19 digits: [CREDIT_CARD_1]."),
        ("Visa 4222222222222, Amex 3782 822463 10005", "Visa [CREDIT_CARD_1], Amex [CREDIT_CARD_2]"),
        # マイナンバー: 12 digits whose last is the check digit
        ("マイナンバーは123456789018です", "マイナンバーは[MY_NUMBER_1]です"),
        ("個人番号 1234 5678 9018、１２３４－５６７８－９０１８", "個人番号 [MY_NUMBER_1]、[MY_NUMBER_1]"),
        # 郵便番号: after 〒 always, a bare one next to an address cue; the address itself stays
        ("〒100-0001 東京都千代田区千代田1-1", "〒[POSTAL_CODE_1] 東京都千代田区千代田1-1"),
        ("住所：〒１００－０００１", "住所：〒[POSTAL_CODE_1]"),
        ("郵便番号は100-0001です", "郵便番号は[POSTAL_CODE_1]です"),
        ("100-0001 東京都千代田区", "[POSTAL_CODE_1] 東京都千代田区"),
        ("Postal code: 100-0001", "Postal code: [POSTAL_CODE_1]"),
        # US SSN
        ("SSN 123-45-6789.", "SSN [US_SSN_1]."),
        ("社会保障番号123-45-6789です", "社会保障番号[US_SSN_1]です"),
        # IP addresses
        ("from 192.168.0.1:8080 and サーバー10.0.0.1に", "from [IPV4_1]:8080 and サーバー[IPV4_2]に"),
        ("via 2001:db8::1. and fe80::1%eth0", "via [IPV6_1]. and [IPV6_2]%eth0"),
        ("mapped ::ffff:192.0.2.1 here", "mapped [IPV6_1] here"),
        ("2001:DB8:0:0:0:0:0:1 is 2001:db8::1", "[IPV6_1] is [IPV6_1]"),
        # a value that is the whole text
        ("090-1234-5678", "[PHONE_1]"),
        ("::1", "[IPV6_1]"),
        # IBAN, printed in groups or not
        ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [IBAN_1] please"),
        ("口座GB82WEST12345698765432へ", "口座[IBAN_1]へ"),
    ],
)
def test_each_detector_finds_its_values_in_english_and_japanese(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "注文番号1234567812345678でお届けします",  # 16 digits, Luhn fails: an order number
        "order 4111111111111112 shipped",
        "tracking 1234 5678 1234 5678",
        "マイナンバーではない123456789012",  # check digit wrong
        "SSN 666-45-6789, 000-12-3456, 123-00-4567, 900-12-3456, 123-45-0000",
        "pi 3.14159265358979, version 1.2.3 and 1.2.3.4.5, 256.1.1.1",
        "at 10:56:27 on 2023-07-30, 06:30 IST",
        "100-0001 alone, 090-1234 short, 0012345678 starts 00",
        "IBAN GB82WEST12345698765433 fails mod 97",
        "face:cafe and deadbeef",
        "年収1234万円、人口13,960,000人",
    ],
)
def test_lookalikes_are_not_redacted(text: str) -> None:
    assert redact(text) == text


def test_everything_around_a_match_stays_byte_identical() -> None:
    # NFKC would change the half-width kana, the combining accent and the ㈱; none may change.
    before, after = "ｶﾞｲﾄﾞ café ㈱テスト tel:", " ﾃｽﾄ①"
    assert redact(f"{before}０９０－１２３４－５６７８{after}") == f"{before}[PHONE_1]{after}"


def test_one_record_numbers_each_value_once_across_its_fields() -> None:
    redactor = Redactor(RedactionConfig(enabled=True))
    triple = Triple(
        question="jo@example.com の電話は090-1234-5678ですか？",
        contexts=["JO@example.com: 09012345678 (ann@example.org: 03-1234-5678)"],
        answer="jo@example.com は ０９０－１２３４－５６７８ です。",
        route="/users/ann@example.org",
        model="m-192.168.0.1",
        attributes={"deployment.environment": "prod", "service.version": "2001:db8::1",
                    "rag.prompt_version": ["jo@example.com", 3], "rag.feedback": 1},
    )
    redactor(triple)
    assert triple.question == "[EMAIL_1] の電話は[PHONE_1]ですか？"
    assert triple.contexts == ["[EMAIL_1]: [PHONE_1] ([EMAIL_2]: [PHONE_2])"]
    assert triple.answer == "[EMAIL_1] は [PHONE_1] です。"
    assert triple.route == "/users/[EMAIL_2]"
    assert triple.model == "m-[IPV4_1]"
    assert triple.attributes == {"deployment.environment": "prod", "service.version": "[IPV6_1]",
                                 "rag.prompt_version": ["[EMAIL_1]", 3], "rag.feedback": 1}
    # A new record starts its numbering again.
    assert redactor(Triple("ann@example.org", [], "")).question == "[EMAIL_1]"


def test_user_patterns_get_the_literal_replacement_and_only_chosen_detectors_run() -> None:
    redactor = Redactor(RedactionConfig(enabled=True, builtin=["email"], patterns=[r"ACCT-\d+"], replacement=r"<\1>"))
    assert redactor.label("ACCT-12 jo@example.com 090-1234-5678") == r"<\1> [EMAIL_1] 090-1234-5678"


def test_all_detectors_are_on_by_default_and_unknown_names_fail_naming_the_key() -> None:
    assert RedactionConfig().builtin == list(DETECTORS)
    with pytest.raises(ConfigError, match=r"redaction\.builtin: unknown \['ssn'\]"):
        RedactionConfig(builtin=["email", "ssn"]).validate("redaction")


def test_check_digits() -> None:
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    # 1..9, 0, 1 weighted 6,5,4,3,2,7,6,5,4,3,2 sum to 212; 212 mod 11 = 3; 11 - 3 = 8.
    assert my_number_check_digit("12345678901") == 8
    assert my_number_check_digit("98765432109") == 3  # 228 mod 11 = 8
    assert my_number_check_digit("20000000000") == 0  # 12 mod 11 = 1, at most 1 gives 0
    assert my_number_check_digit("00000000000") == 0


def test_text_attributes_and_service_are_redacted_before_the_bus_and_the_metrics() -> None:
    config = Config(redaction=RedactionConfig(enabled=True, patterns=[r"ACCT-\d+"], replacement="<x>"))
    bus = InProcessBus(10)
    registry = CollectorRegistry()
    pipeline = CollectorPipeline(config.extract, config.sampling, config.redaction, bus, CollectorMetrics(registry))
    request, scope = rag_request(service="bot-of-ops@example.com")
    add_rag_span(scope, b"\x11" * 16, b"\x22" * 8, question="Why is ACCT-123 locked? mail me at jo@example.com",
                 contexts=("Account ACCT-123 of jo@example.com was locked.",), answer="ACCT-123 is locked.")
    extra = {"rag.route": "/u/090-1234-5678", "rag.model": "m", "deployment.environment": "jo@example.com"}
    for key, value in extra.items():
        kv = scope.spans[0].attributes.add()
        kv.key, kv.value.string_value = key, value
    pipeline.consume_export_request(request, "test")
    (delivery,) = bus.poll(1, 0.1)
    record = Record.from_json(delivery.value)
    assert record.question == "Why is <x> locked? mail me at [EMAIL_1]"
    assert record.contexts == ["Account <x> of [EMAIL_1] was locked."]
    assert record.route == "/u/[PHONE_1]"
    assert record.attributes["deployment.environment"] == "[EMAIL_1]"
    assert record.service == "[EMAIL_1]"
    assert b"example.com" not in delivery.value and b"ACCT-123" not in delivery.value
    labels = {v for metric in registry.collect() for s in metric.samples for v in s.labels.values()}
    assert "[EMAIL_1]" in labels and not any("example.com" in v for v in labels)


def _cpu_seconds(detector: str, text: str) -> float:
    spans = DETECTORS[detector].spans
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        for _span in spans(text):
            pass
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize(
    ("small", "large"),
    [(2_000, 20_000), pytest.param(100_000, 1_000_000, marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("detector", list(DETECTORS))
def test_work_grows_linearly_with_adversarial_text(detector: str, small: int, large: int) -> None:
    """Not a timing bound (machines differ): ten times the text may cost at most twenty times the
    CPU, where a pattern that backtracks quadratically costs a hundred times. Times under 2 ms are
    rounded up to 2 ms, below which the clock says nothing about growth."""
    small_texts, large_texts = adversarial(small), adversarial(large)
    for name, large_text in large_texts.items():
        ratio = _cpu_seconds(detector, large_text) / max(_cpu_seconds(detector, small_texts[name]), 0.002)
        assert ratio < 20, f"{detector} on {name}: {ratio:.1f}x the time for 10x the text"
