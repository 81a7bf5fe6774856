"""Links from a record on the live page to its trace in the user's tracing backend.

A template such as `http://jaeger:16686/trace/{trace_id}` (Jaeger), `.../explore?...{trace_id}...`
(Grafana Tempo) or `.../trace/{trace_id}?spanId={span_id}`: only the two placeholders below are
filled, by plain replacement (a `{` of the backend's own URL syntax stays as written), and the ids
are hex, so nothing from a span can change where the link points.
"""

from __future__ import annotations

import re
import urllib.parse

from ragpulse.core.settings import require

PLACEHOLDERS = ("{trace_id}", "{span_id}")
_HEX = re.compile(r"[0-9a-f]+")


def validate_trace_url(template: str, where: str) -> None:
    url = urllib.parse.urlsplit(template.replace("{trace_id}", "0").replace("{span_id}", "0"))
    # http(s) only: the page puts the link in an href, where javascript: would run on click.
    require(url.scheme in ("http", "https") and bool(url.hostname), where,
            "an http:// or https:// URL", template)
    require("{trace_id}" in template, where, "a URL with a {trace_id} placeholder", template)


def trace_link(template: str, trace_id: str, span_id: str) -> str | None:
    """The filled template; None without a template or for ids that are not lower-case hex."""
    if not template or not _HEX.fullmatch(trace_id) or (span_id and not _HEX.fullmatch(span_id)):
        return None
    return template.replace("{trace_id}", trace_id).replace("{span_id}", span_id)
