"""The built-in live page, served by the scorer's HTTP server next to /metrics.

For users without Grafana (and for `ragpulse up`): quality per service over the last hours,
drift alarms, volume, judge failures, the most recent low-faithfulness records with the statements
the judge found unsupported, and every recent record, filtered and opened to its text, verdicts and
trace (the drill-down). The page is static files shipped in the package (no build step, no CDN, no
third-party JavaScript) that read the JSON paths of docs/live-page-api.md; everything in it is
bounded (History, RecentScores, RecentRecordTexts and RecentDeadLetters are bounded; lists are cut
below).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from prometheus_client import CollectorRegistry

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.settings import key, require_at_least
from ragpulse.scorer.estimate.drift import DriftDetectorBank
from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
from ragpulse.scorer.web.history import History
from ragpulse.scorer.web.metric_styles import metric_styles
from ragpulse.scorer.web.record_texts import RecentRecordTexts
from ragpulse.scorer.web.records import RecordQuery, record_detail, record_list
from ragpulse.scorer.web.trace_link import validate_trace_url

_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}
JSON_TYPE = "application/json; charset=utf-8"
# Counter families the page totals (sample name → the label it is broken down by).
_COUNTERS = {
    "ragpulse_records_received_total": "service",
    "ragpulse_records_sampled_total": "service",
    "ragpulse_records_scored_total": "service",
    "ragpulse_metric_failures_total": ("metric", "reason"),
    "ragpulse_judge_requests_total": ("judge", "outcome"),
    "ragpulse_records_dead_lettered_total": "reason",
    "ragpulse_judge_cost_usd_total": "judge",
}
MAX_TEXT = 400  # characters of one statement in the summary's low records (/api/record has them whole)
# Everything comes from this server: no CDN, no inline script or style, nothing fetched elsewhere;
# and no other site may frame the page (clickjacking). Sent as a header on every answer: a header
# covers what a meta tag cannot (frame-ancestors) and the JSON and script files too.
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                           "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


@dataclass
class PageConfig:
    # Serve the live page. It shows record text (questions, answers, statements): turn it off, or
    # give it its own loopback address, where /metrics must be reachable from other hosts.
    enabled: bool = True
    # Its own listen address (HOST:PORT; port 0: the system picks one); empty: beside /metrics on
    # prometheus.endpoint. prometheus.auth, allowed_hosts and tls apply here too.
    endpoint: str = ""
    # A record's trace in your tracing backend, linked from its drill-down: a URL with {trace_id}
    # and optionally {span_id}, e.g. http://jaeger:16686/trace/{trace_id}. Empty: no link.
    trace_url: str = ""
    # The drill-down shows the question, contexts and answer of the last this many records scored
    # (older ones keep their scores and verdicts only); 0: keep no record text in memory.
    text_records: int = 500
    # The record text kept for the drill-down, at most this many bytes (UTF-8) in all; a record
    # larger than that keeps no text.
    text_bytes: int = 16 * 1024 * 1024

    def validate(self, where: str) -> None:
        if self.endpoint:
            parse_endpoint(self.endpoint, key(where, "endpoint"))
        if self.trace_url:
            validate_trace_url(self.trace_url, key(where, "trace_url"))
        require_at_least(key(where, "text_records"), self.text_records, 0)
        require_at_least(key(where, "text_bytes"), self.text_bytes, 0)


class LivePage:
    def __init__(
        self,
        history: History,
        scores: RecentScores,
        dead_letters: RecentDeadLetters,
        drift: DriftDetectorBank | None,
        registry: CollectorRegistry,
        texts: RecentRecordTexts | None = None,
        trace_url: str = "",
        low_threshold: float = 0.5,
        max_low_records: int = 20,
        max_statements: int = 8,
    ) -> None:
        self.history = history
        self.scores = scores
        self.dead_letters = dead_letters
        self.drift = drift
        self.registry = registry
        self.texts = texts
        self.trace_url = trace_url
        self.low_threshold = low_threshold
        self.max_low_records = max_low_records
        self.max_statements = max_statements
        # Static files are read once: they are part of the installed package.
        self._files = {
            path: (ctype, resources.files("ragpulse.scorer.web").joinpath("static", name).read_bytes())
            for path, (name, ctype) in _STATIC.items()
        }

    def handle(self, target: str) -> tuple[int, str, bytes] | None:
        """The answer for a request target (path and query), or None: not one of the page's paths."""
        path, _, query = target.partition("?")
        if path in self._files:
            ctype, body = self._files[path]
            return 200, ctype, body
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(query, keep_blank_values=True).items()}
        if path == "/api/summary":
            return _json(200, self.summary())
        if path == "/api/records":
            try:
                q = RecordQuery.parse(params)
            except ValueError as e:
                return _json(400, {"error": str(e)})
            return _json(200, record_list(self.scores.snapshot(), q))
        if path == "/api/record":
            detail = record_detail(self.scores.snapshot(), params.get("id", ""), self.texts, self.trace_url)
            if detail is None:
                return _json(404, {"error": "no such record among the recent ones"})
            return _json(200, detail)
        return None

    def summary(self) -> dict[str, Any]:
        series = self.history.series()
        scores = self.scores.snapshot()
        # Names of the last 6 hours' charts and of the records the lists can show.
        seen = {m for s in series.values() for m in cast(dict, s["mean"])} | {
            m for msg in scores for m in (msg.get("metrics") or {})}
        return {
            "now": time.time(),
            "low_threshold": self.low_threshold,
            "metrics": metric_styles(seen, self.history.bad_threshold),
            "series": series,
            "drift": self._drift(),
            "counters": self._counters(),
            "queue_depth": self.registry.get_sample_value("ragpulse_queue_depth"),
            "low_records": self._low_records(scores),
            "dead_letters": [
                {"reason": d["reason"], "detail": str(d["detail"])[:MAX_TEXT], "attempts": d["attempts"]}
                for d in self.dead_letters.snapshot()[-10:][::-1]
            ],
        }

    def _drift(self) -> list[dict[str, Any]]:
        if self.drift is None:
            return []
        out = []
        for (service, metric), st in sorted(self.drift.states().items()):
            out.append({"service": service, "metric": metric, "threshold": self.drift.cfg.h,
                        "min_samples": self.drift.cfg.min_samples, **st.to_dict()})
        return out

    def _counters(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {name: [] for name in _COUNTERS}
        for family in self.registry.collect():
            for sample in family.samples:
                keys = _COUNTERS.get(sample.name)
                if keys is None:
                    continue
                keys = (keys,) if isinstance(keys, str) else keys
                out[sample.name].append({**{k: sample.labels.get(k, "") for k in keys}, "value": sample.value})
        return out

    def _low_records(self, scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
        low = []
        for msg in reversed(scores):
            faith = (msg.get("metrics") or {}).get("faithfulness") or {}
            value = faith.get("value")
            if value is None or value >= self.low_threshold:
                continue
            statements = ((faith.get("detail") or {}).get("statements")) or []
            unsupported = [
                {"statement": str(s.get("statement", ""))[:MAX_TEXT], "verdict": s.get("verdict"),
                 "evidence": str(s["evidence"])[:MAX_TEXT] if s.get("evidence") else None}
                for s in statements if isinstance(s, dict) and (s.get("verdict") or 0) < 0.5
            ]
            low.append({
                "record_id": msg.get("record_id"),
                "trace_id": msg.get("trace_id"),
                "service": msg.get("service"),
                "route": msg.get("route"),
                "model": msg.get("model"),
                "time_unix_nano": msg.get("time_unix_nano"),
                "faithfulness": value,
                "other": {name: m.get("value") for name, m in (msg.get("metrics") or {}).items()
                          if name != "faithfulness"},
                "unsupported": unsupported[: self.max_statements],
                "statements": len(statements),
            })
            if len(low) >= self.max_low_records:
                break
        return low


def _json(status: int, body: dict[str, Any]) -> tuple[int, str, bytes]:
    return status, JSON_TYPE, json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
