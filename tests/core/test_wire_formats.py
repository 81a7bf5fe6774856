"""The wire formats stay byte-compatible: messages written by the code before the shared core
(commit 04cf221, collector/record.py, scorer/worker.py, scorer/export/sinks.py) are read by today's code,
and today's code writes the same bytes; the scores message's one versioned change (1.1: the judge per
metric and the offline judge's view) only adds fields, and a 1.0 message still reads."""

from __future__ import annotations

import orjson

from ragpulse.core.wire import Record, Sampling, dead_letter_envelope, scores_message, wire_json
from ragpulse.scorer.web.records import record_detail

# Record.to_json() of 04cf221 for RECORD below (Japanese text, every optional field set).
OLD_RECORD = (
    '{"v":"1.0","id":"0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",'
    '"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","service":"support-bot",'
    '"route":"/faq","model":"gpt-4o-mini","time_unix_nano":1764600000000000000,"question":"返品できますか?",'
    '"contexts":["30日以内なら返品できます。","Shipping takes 3 days."],"answer":"はい、30日以内なら返品できます。",'
    '"sampling":{"probability":0.25,"adjusted_count":4.0,"rule":"service:support-bot"},"truncated":true,'
    '"attributes":{"rag.feedback":-1,"rag.prompt_version":"v7"}}'
).encode()

RECORD = Record(
    trace_id="0af7651916cd43dd8448eb211c80319c", span_id="b7ad6b7169203331", service="support-bot",
    question="返品できますか?", contexts=["30日以内なら返品できます。", "Shipping takes 3 days."],
    answer="はい、30日以内なら返品できます。", time_unix_nano=1764600000000000000,
    sampling=Sampling(0.25, 4.0, "service:support-bot"), route="/faq", model="gpt-4o-mini",
    truncated=True, attributes={"rag.feedback": -1, "rag.prompt_version": "v7"},
)

# Worker._message of 04cf221 for a record with one scored and one failed metric.
OLD_SCORES = (
    b'{"v":"1.0","record_id":"0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",'
    b'"trace_id":"0af7651916cd43dd8448eb211c80319c","service":"support-bot","route":"","model":"",'
    b'"time_unix_nano":1764600000000000000,"adjusted_count":4.0,"metrics":{"faithfulness":{"value":0.5,'
    b'"detail":{"statements":[{"statement":"a","supported":false}]},"usage":{"calls":2,"prompt_tokens":100,'
    b'"completion_tokens":20,"cost_usd":0.0001},"seconds":0.1235},"answer_relevancy":{"value":null,'
    b'"error":"no_questions","usage":{"calls":1,"prompt_tokens":50,"completion_tokens":5,"cost_usd":0.00005},'
    b'"seconds":0.05}},"judge":{"name":"openai","model":"gpt-4o-mini"},"usage":{"calls":3,"prompt_tokens":150,'
    b'"completion_tokens":25,"cost_usd":0.00015000000000000001},"latency_s":0.9877}'
)

# dead_letter_envelope of 04cf221 (scorer/export/sinks.py), text and binary payloads.
OLD_DEAD_LETTERS = (
    (b'{"v":"9.0"}', "unsupported_version", "major 9",
     b'{"reason":"unsupported_version","detail":"major 9","attempts":1,'
     b'"payload":"{\\"v\\":\\"9.0\\"}","payload_encoding":"utf-8"}'),
    (b"\xff\x00", "invalid_json", "not utf-8",
     b'{"reason":"invalid_json","detail":"not utf-8","attempts":1,"payload":"ff00","payload_encoding":"hex"}'),
)


def test_a_record_written_by_the_old_code_reads_and_writes_back_byte_for_byte():
    assert Record.from_json(OLD_RECORD) == RECORD
    assert RECORD.to_json() == OLD_RECORD


def test_the_scores_message_1_1_only_adds_to_1_0_and_a_1_0_message_still_reads():
    old = orjson.loads(OLD_SCORES)
    record = Record(
        trace_id=old["trace_id"], span_id="b7ad6b7169203331", service="support-bot", question="q",
        contexts=["c"], answer="a", time_unix_nano=old["time_unix_nano"], sampling=Sampling(0.25, 4.0, "default"),
    )
    message = scores_message(record, old["metrics"], old["judge"], old["usage"], 0.987654)
    assert wire_json(message) == OLD_SCORES.replace(b'{"v":"1.0"', b'{"v":"1.1"')
    offline = {"judge": {"name": "local", "model": "lexical"},
               "metrics": {"answer_relevancy": {"value": 0.8, "judge": "local"}}}
    new = orjson.loads(wire_json(scores_message(record, old["metrics"], old["judge"], old["usage"], 0.987654,
                                                offline)))
    assert new == {**old, "v": "1.1", "offline": offline}
    # The live page reads both: in 1.0 the message's judge gave every metric, and there is no offline view.
    for msg, view in ((old, None), (new, {"judge": offline["judge"],
                                          "metrics": {"answer_relevancy": {"value": 0.8, "judge": "local"}}})):
        detail = record_detail([msg], old["record_id"], None, "")
        assert detail is not None and detail["offline"] == view
        assert {m: v["judge"] for m, v in detail["metrics"].items()} == {
            "faithfulness": "openai", "answer_relevancy": "openai"}
        assert detail["metrics"]["answer_relevancy"]["error"] == "no_questions"


def test_the_dead_letter_envelope_is_unchanged():
    for payload, reason, detail, old in OLD_DEAD_LETTERS:
        assert wire_json(dead_letter_envelope(payload, reason, detail, 1)) == old
