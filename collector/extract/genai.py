"""OpenTelemetry GenAI semantic conventions (status: development).

Retrieval spans: `gen_ai.operation.name` = "retrieval", `gen_ai.retrieval.query.text` and
`gen_ai.retrieval.documents` (a JSON string or a structured list of {id, score, content?}: the
convention only requires id and score, so content is taken where present). Inference and agent
spans: `gen_ai.input.messages` / `gen_ai.output.messages`, each a list of
{role, parts: [{type: "text", content}]} (JSON string or structured), as opentelemetry-util-genai
writes them; or the same content in events (genai_events: on the span, or OTLP log records).

Per RAG run (multispan.answer_units: retrieval spans are the retrievals, spans with output
messages the answers): question = the retrieval query text, else the last user message of the
outermost span with input messages (for an outer run, the answering span's user message first);
contexts = the retrieval documents' content; answer = the assistant text of the last-ending span
with output messages (the agent or workflow span ends after its inner calls).
"""

from __future__ import annotations

from typing import Any

from ragpulse.collector.extract import genai_events
from ragpulse.collector.extract.multispan import (
    Assembled,
    Run,
    TraceSpan,
    answer_units,
    by_start,
    decode_json,
    document_text,
    unique,
)
from ragpulse.collector.extract.triple import make_triple

OPERATION = "gen_ai.operation.name"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
QUERY_TEXT = "gen_ai.retrieval.query.text"
DOCUMENTS = "gen_ai.retrieval.documents"


def wants(span: TraceSpan) -> bool:
    attrs = span.attributes
    return (OPERATION in attrs or INPUT_MESSAGES in attrs or OUTPUT_MESSAGES in attrs
            or any(name in genai_events.NAMES for name, _ in span.events))


def _messages(span: TraceSpan, key: str) -> Any:
    """A span's input or output messages: its attribute, else what its events carry (None if neither)."""
    return span.attributes[key] if key in span.attributes else genai_events.messages(span.events, key)


def _list(value: Any) -> list[Any]:
    value = decode_json(value)
    return value if isinstance(value, list) else []


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    if isinstance(message.get("content"), str):  # the pre-parts shape some instrumentors still send
        return message["content"].strip()
    texts = [p.get("content") for p in _list(message.get("parts")) if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str)).strip()


def last_message_text(value: Any, role: str) -> str:
    """The text of the last message with `role` in a gen_ai.{input,output}.messages value."""
    for message in reversed(_list(value)):
        if isinstance(message, dict) and message.get("role") == role and (text := _message_text(message)):
            return text
    return ""


def assemble(spans: list[TraceSpan]) -> list[Assembled]:
    runs = answer_units(spans, lambda s: s.attributes.get(OPERATION) == "retrieval",
                        lambda s: _messages(s, OUTPUT_MESSAGES) is not None)
    return [assembled for run in runs if (assembled := _assemble_run(run)) is not None]


def _assemble_run(run: Run) -> Assembled | None:
    ours = by_start(s for s in run.spans if wants(s))
    retrievals = [s for s in ours if s.attributes.get(OPERATION) == "retrieval"]
    if not retrievals:
        return None
    contexts = unique(document_text(d) for s in retrievals for d in _list(s.attributes.get(DOCUMENTS)))
    answering = sorted((s for s in ours if _messages(s, OUTPUT_MESSAGES) is not None),
                       key=lambda s: s.end_time_unix_nano)
    for span in reversed(answering):
        if answer := last_message_text(_messages(span, OUTPUT_MESSAGES), "assistant"):
            break
    else:
        return None
    # An outer answer replies to the user's question, not to the first sub-query its runs searched for.
    question = last_message_text(_messages(span, INPUT_MESSAGES), "user") if run.outer else ""
    question = question or next((q.strip() for s in retrievals
                                 if isinstance(q := s.attributes.get(QUERY_TEXT), str) and q.strip()), "")
    for candidate in ours:
        question = question or last_message_text(_messages(candidate, INPUT_MESSAGES), "user")
    if not question:
        return None
    attrs = span.attributes
    model = str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or "")
    return Assembled(make_triple(question, contexts, answer, model, attrs), span)
