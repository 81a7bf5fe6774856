"""GenAI message content carried as events instead of span attributes.

The GenAI conventions let instrumentations put prompts and completions in events, on the span or
as OTLP log records that carry the span's trace and span ids:
- `gen_ai.client.inference.operation.details` (the current conventions): attributes
  `gen_ai.input.messages` and `gen_ai.output.messages`, in the same shapes as on a span;
- the per-message events of the conventions up to 1.36, still the default of instrumentations that
  have not opted in to the latest (OTEL_SEMCONV_STABILITY_OPT_IN): `gen_ai.system.message`,
  `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` with a body
  {"content", ...}, and `gen_ai.choice` with a body {"index", "finish_reason", "message": {"content"}}.

An event is kept as (name, attributes); a log record's body, which span events do not have, goes in
under BODY. Log records reach their span when the trace is assembled (collector/assemble.py).
"""

from __future__ import annotations

from typing import Any

DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
NAMES = frozenset({DETAILS, CHOICE, *_ROLES})
BODY = "body"


def messages(events: list[tuple[str, dict[str, Any]]], key: str) -> Any:
    """The value of `key` (gen_ai.input.messages or gen_ai.output.messages) that the events carry,
    else None: the details event's attribute, or messages rebuilt from the per-message events."""
    for name, attrs in events:
        if name == DETAILS and key in attrs:
            return attrs[key]
    if key == "gen_ai.input.messages":
        found = [{"role": _ROLES[name], "content": _content(attrs.get(BODY))} for name, attrs in events
                 if name in _ROLES]
    else:
        found = [{"role": "assistant", "content": _content(body.get("message"))} for name, attrs in events
                 if name == CHOICE and isinstance(body := attrs.get(BODY), dict)]
    return found or None


def _content(body: Any) -> str:
    if isinstance(body, dict):
        body = body.get("content")
    return body if isinstance(body, str) else ""
