"""The live page's record paths without a browser: the bounded record-text store, the filters of
/api/records, /api/record's detail and trace link, and the page.trace_url check."""

from __future__ import annotations

import json

import pytest
import requests
from prometheus_client import CollectorRegistry

from ragpulse.core.exposition import PrometheusConfig
from ragpulse.core.http_guard import AuthConfig
from ragpulse.core.settings import ConfigError
from ragpulse.core.wire import Record, Sampling, scores_message
from ragpulse.scorer.export.http_server import ScorerHttp
from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome
from ragpulse.scorer.web.history import History
from ragpulse.scorer.web.page import LivePage, PageConfig
from ragpulse.scorer.web.record_texts import RecentRecordTexts

TRACE = "0af7651916cd43dd8448eb211c80319c"


def record(i: int, service: str = "shop", question: str = "q", answer: str = "a", contexts=("c",),
           t: int = 1_700_000_000) -> Record:
    return Record(TRACE, f"{i:016x}", service, question, list(contexts), answer, t * 10**9,
                  Sampling(1.0, 1.0, "default"), route="/faq", model="m1")


def scored(rec: Record, faithfulness: float | None) -> ScoredRecord:
    detail = {"statements": [{"statement": "The warranty is two years.", "verdict": 1.0,
                              "evidence": "The warranty lasts two years."}]}
    return ScoredRecord(rec, {"faithfulness": MetricOutcome(faithfulness, detail=detail)}, 0.01, "local")


def page(texts: RecentRecordTexts, scores: RecentScores, trace_url: str = "") -> LivePage:
    registry = CollectorRegistry()
    return LivePage(History(registry, {"faithfulness": 0.5}), scores, RecentDeadLetters(), None, registry,
                    texts, trace_url)


def feed(texts: RecentRecordTexts, scores: RecentScores, rec: Record, value: float | None) -> None:
    s = scored(rec, value)
    texts.on_scores(s)
    scores.publish(rec.id, scores_message(rec, {k: o.to_dict() for k, o in s.outcomes.items()},
                                          {"name": "local", "model": "lexical"}, {}, 0.01))


def get(p: LivePage, target: str) -> tuple[int, dict]:
    answer = p.handle(target)
    assert answer is not None
    status, ctype, body = answer
    assert ctype.startswith("application/json")
    return status, json.loads(body)


def test_record_texts_are_bounded_by_count_and_bytes() -> None:
    texts = RecentRecordTexts(max_records=3, max_bytes=1000)
    for i in range(5):
        texts.on_scores(scored(record(i, question="質問" * 10), 1.0))
    assert texts.usage()[0] == 3
    assert texts.get(record(0).id) is None and texts.get(record(4).id) is not None
    # Bytes are UTF-8 bytes: 300 bytes of kana each, so three do not fit in 1000 with a fourth.
    texts = RecentRecordTexts(max_records=100, max_bytes=1000)
    for i in range(5):
        texts.on_scores(scored(record(i, answer="あ" * 100), 1.0))
    n, size = texts.usage()
    assert n == 3 and size <= 1000
    # A record larger than the whole budget is not kept, and evicts nothing.
    texts.on_scores(scored(record(9, answer="x" * 2000), 1.0))
    assert texts.get(record(9).id) is None and texts.usage()[0] == 3
    # The same record again replaces its text, counted once.
    texts.on_scores(scored(record(4, answer="b"), 1.0))
    assert texts.get(record(4).id).answer == "b" and texts.usage()[0] == 3


def test_records_filter_by_service_route_model_score_and_time() -> None:
    texts, scores = RecentRecordTexts(100, 10**6), RecentScores()
    for i in range(10):
        feed(texts, scores, record(i, service="社内ヘルプデスク" if i % 2 else "shop", t=1_700_000_000 + 60 * i),
             i / 10)
    p = page(texts, scores)
    status, body = get(p, "/api/records")
    assert status == 200 and body["matched"] == 10 and body["kept"] == 10
    assert body["records"][0]["record_id"] == record(9).id  # newest first
    assert body["facets"]["service"] == ["shop", "社内ヘルプデスク"]
    _, body = get(p, "/api/records?service=%E7%A4%BE%E5%86%85%E3%83%98%E3%83%AB%E3%83%97%E3%83%87%E3%82%B9%E3%82%AF"
                     "&max=0.5")
    assert [r["scores"]["faithfulness"] for r in body["records"]] == [0.5, 0.3, 0.1]
    _, body = get(p, f"/api/records?from={1_700_000_000 + 120}&to={1_700_000_000 + 240}&min=0.25")
    assert [r["scores"]["faithfulness"] for r in body["records"]] == [0.4, 0.3]
    _, body = get(p, "/api/records?route=/other")
    assert body["matched"] == 0
    _, body = get(p, "/api/records?limit=2")
    assert len(body["records"]) == 2 and body["matched"] == 10
    status, body = get(p, "/api/records?min=abc")
    assert status == 400 and "min" in body["error"]


def test_long_names_are_cut_and_filter_by_their_cut_form() -> None:
    texts, scores = RecentRecordTexts(100, 10**6), RecentScores()
    feed(texts, scores, record(1, service="x" * 100_000), 0.2)
    p = page(texts, scores)
    _, body = get(p, "/api/records")
    (name,) = body["facets"]["service"]
    assert len(name) == 201
    _, body = get(p, "/api/records?service=" + name)
    assert body["matched"] == 1


def test_record_detail_with_text_verdicts_and_trace_link() -> None:
    texts, scores = RecentRecordTexts(1, 10**6), RecentScores()
    feed(texts, scores, record(1, question="保証は？", contexts=("The warranty lasts two years.",)), 1.0)
    p = page(texts, scores, "http://jaeger:16686/trace/{trace_id}?uiFind={span_id}")
    status, d = get(p, f"/api/record?id={record(1).id}")
    assert status == 200
    assert d["text"] == {"question": "保証は？", "contexts": ["The warranty lasts two years."], "answer": "a"}
    assert d["metrics"]["faithfulness"]["detail"]["statements"][0]["evidence"] == "The warranty lasts two years."
    assert d["trace_url"] == f"http://jaeger:16686/trace/{TRACE}?uiFind={1:016x}"
    assert d["judge"] == {"name": "local", "model": "lexical"}
    # Its text pushed out of the store (one record kept): the scores and verdicts remain.
    feed(texts, scores, record(2), 1.0)
    _, d = get(p, f"/api/record?id={record(1).id}")
    assert d["text"] is None and d["span_id"] == f"{1:016x}" and d["metrics"]["faithfulness"]["value"] == 1.0
    status, _ = get(p, "/api/record?id=nope")
    assert status == 404
    # Without a template: no link.
    _, d = get(page(texts, scores), f"/api/record?id={record(2).id}")
    assert d["trace_url"] is None


@pytest.mark.parametrize("url", ["javascript:alert(1)//{trace_id}", "http://jaeger/trace/", "jaeger/{trace_id}",
                                 "data:text/html,{trace_id}"])
def test_trace_url_must_be_http_with_a_trace_id(url: str) -> None:
    with pytest.raises(ConfigError, match="page.trace_url"):
        PageConfig(trace_url=url).validate("page")


def test_trace_url_accepts_backends_own_braces() -> None:
    PageConfig(trace_url='https://grafana/explore?left={"queries":[{"query":"{trace_id}"}]}').validate("page")
    PageConfig(trace_url="http://jaeger:16686/trace/{trace_id}").validate("page")


def test_record_paths_sit_behind_the_page_guard() -> None:
    """The record paths show record text: the Host check and authentication hold for them as for
    the page, and they are not served beside /metrics when the page has its own address."""
    texts, scores = RecentRecordTexts(10, 10**6), RecentScores()
    feed(texts, scores, record(1, question="秘密の質問"), 0.2)
    p = page(texts, scores)
    paths = ["/api/records?service=shop", f"/api/record?id={record(1).id}"]
    token = {"Authorization": "Bearer t0ken"}
    auth = AuthConfig(bearer_tokens=["t0ken"])
    http = ScorerHttp(PrometheusConfig(endpoint="127.0.0.1:0", auth=auth), PageConfig(endpoint="127.0.0.1:0"),
                      CollectorRegistry(), p.handle)
    http.start()
    try:
        assert http.page is not None
        metrics, base = f"http://{http.endpoint}", f"http://{http.page.endpoint}"
        for path in paths:
            assert requests.get(base + path, timeout=10).status_code == 401
            bad_host = requests.get(base + path, headers={**token, "Host": "evil.example"}, timeout=10)
            assert bad_host.status_code == 421 and "秘密" not in bad_host.text
            assert requests.get(metrics + path, headers=token, timeout=10).status_code == 404
            ok = requests.get(base + path, headers=token, timeout=10)
            assert ok.status_code == 200 and "default-src 'self'" in ok.headers["Content-Security-Policy"]
        assert "秘密の質問" in requests.get(base + paths[1], headers=token, timeout=10).text
    finally:
        http.stop()
