"""The live page's record views: recent records filtered (/api/records) and one record opened
(/api/record), built from the recent scores messages and the recent record texts.

Service, route and model in a scores message are the span's own values, unbounded: the page gets
them cut to MAX_NAME characters, and a filter matches the cut name, so any name can be filtered on
with what the page was given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ragpulse.scorer.web.record_texts import RecentRecordTexts
from ragpulse.scorer.web.trace_link import trace_link

MAX_NAME = 200
DEFAULT_LIMIT = 100
MAX_LIMIT = 500


def cut(name: Any) -> str:
    s = str(name or "")
    return s if len(s) <= MAX_NAME else s[:MAX_NAME] + "…"


@dataclass(frozen=True)
class RecordQuery:
    service: str = ""
    route: str = ""
    model: str = ""
    # The metric the score range applies to.
    metric: str = "faithfulness"
    min: float = 0.0
    max: float = 1.0
    # Unix seconds, bounds included; None: open.
    start: float | None = None
    end: float | None = None
    limit: int = DEFAULT_LIMIT

    @classmethod
    def parse(cls, params: dict[str, str]) -> RecordQuery:
        """From the query parameters of docs/live-page-api.md; ValueError names a bad one."""
        def number(name: str, default: float | None) -> float | None:
            raw = params.get(name, "")
            if raw == "":
                return default
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {raw[:40]!r}") from None
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite")
            return value

        limit = number("limit", DEFAULT_LIMIT)
        return cls(service=params.get("service", ""), route=params.get("route", ""),
                   model=params.get("model", ""), metric=params.get("metric", "") or "faithfulness",
                   min=number("min", 0.0), max=number("max", 1.0),  # type: ignore[arg-type]
                   start=number("from", None), end=number("to", None),
                   limit=max(1, min(MAX_LIMIT, int(limit))))  # type: ignore[arg-type]

    def matches(self, msg: dict[str, Any]) -> bool:
        for name in ("service", "route", "model"):
            wanted = getattr(self, name)
            if wanted and cut(msg.get(name)) != wanted:
                return False
        t = (msg.get("time_unix_nano") or 0) / 1e9
        if (self.start is not None and t < self.start) or (self.end is not None and t > self.end):
            return False
        if self.min > 0.0 or self.max < 1.0:
            value = _value(msg, self.metric)
            return value is not None and self.min <= value <= self.max
        return True


def _value(msg: dict[str, Any], metric: str) -> float | None:
    value = ((msg.get("metrics") or {}).get(metric) or {}).get("value")
    return value if isinstance(value, int | float) else None


def _judged_metrics(metrics: Any, judge: Any) -> dict[str, Any]:
    """Each metric with the judge that gave it: named per metric since scores message 1.1, the
    message's one judge in a 1.0 message."""
    name = judge.get("name") if isinstance(judge, dict) else None
    return {metric: {"judge": name, **m} for metric, m in (metrics or {}).items() if isinstance(m, dict)}


def _offline_view(offline: Any) -> dict[str, Any] | None:
    """The offline judge's outcomes of a record the cascade also sent to the expensive judge (1.1)."""
    if not isinstance(offline, dict):
        return None
    return {"judge": offline.get("judge"), "metrics": _judged_metrics(offline.get("metrics"), offline.get("judge"))}


def record_list(messages: list[dict[str, Any]], q: RecordQuery) -> dict[str, Any]:
    """Newest first, at most q.limit; facets: the names among all recent records, for the filters."""
    facets: dict[str, set[str]] = {"service": set(), "route": set(), "model": set()}
    metrics: set[str] = set()
    out = []
    matched = 0
    for msg in reversed(messages):
        for name, values in facets.items():
            values.add(cut(msg.get(name)))
        metrics.update((msg.get("metrics") or {}).keys())
        if not q.matches(msg):
            continue
        matched += 1
        if len(out) < q.limit:
            out.append({
                "record_id": msg.get("record_id"), "trace_id": msg.get("trace_id"),
                "service": cut(msg.get("service")), "route": cut(msg.get("route")),
                "model": cut(msg.get("model")), "time_unix_nano": msg.get("time_unix_nano"),
                "scores": {name: m.get("value") for name, m in (msg.get("metrics") or {}).items()},
            })
    return {"kept": len(messages), "matched": matched, "records": out,
            "facets": {name: sorted(values - {""}) for name, values in facets.items()},
            "metrics": sorted(metrics)}


def record_detail(messages: list[dict[str, Any]], record_id: str, texts: RecentRecordTexts | None,
                  trace_url: str) -> dict[str, Any] | None:
    """Everything the page knows of one recent record; None once it left the recent scores."""
    msg = next((m for m in reversed(messages) if m.get("record_id") == record_id), None)
    if msg is None:
        return None
    trace_id = str(msg.get("trace_id") or "")
    text = texts.get(record_id) if texts is not None else None
    # The record id is "<trace id>-<span id>" (ragpulse.core.wire.Record.id).
    span_id = text.span_id if text is not None else record_id.removeprefix(f"{trace_id}-")
    return {
        "record_id": record_id, "trace_id": trace_id, "span_id": span_id,
        "service": cut(msg.get("service")), "route": cut(msg.get("route")), "model": cut(msg.get("model")),
        "time_unix_nano": msg.get("time_unix_nano"), "adjusted_count": msg.get("adjusted_count"),
        "judge": msg.get("judge"), "latency_s": msg.get("latency_s"),
        "metrics": _judged_metrics(msg.get("metrics"), msg.get("judge")),
        "offline": _offline_view(msg.get("offline")),
        "text": None if text is None else
        {"question": text.question, "contexts": list(text.contexts), "answer": text.answer},
        "trace_url": trace_link(trace_url, trace_id, span_id),
    }
