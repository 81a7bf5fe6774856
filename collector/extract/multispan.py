"""What the multi-span conventions (OpenInference, OpenLLMetry, GenAI) read: the spans of one trace.

Those conventions put the question, the contexts and the answer on different spans of a trace;
collector/assemble.py buffers the spans and each convention module turns a finished trace into one
triple per answer (`answer_units` splits a trace that answered several times). This module holds
the span model they share and the JSON helpers they all need, because instrumentors serialise
framework inputs and outputs as JSON strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, SpanFlags

from ragpulse.collector.attributes import attributes
from ragpulse.collector.extract import genai_events
from ragpulse.collector.extract.triple import Triple

# Span events some convention reads (OpenLLMetry's vector-DB results, GenAI message content). Other
# events (embedding vectors, logs) are not kept: they can be large and no convention needs them.
KEPT_EVENTS = frozenset({"db.query.result", *genai_events.NAMES})

_REMOTE_PARENT = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK

# Keys under which frameworks commonly put the user's question / the final answer when an input or
# output is a mapping (LangChain chains take {"question": ...} and return {"answer": ...}, agents
# use "input" / "output", RetrievalQA returns "result").
QUESTION_KEYS = ("question", "query", "input", "user_input", "q")
ANSWER_KEYS = ("answer", "output", "result", "response", "text", "content")


@dataclass
class TraceSpan:
    """One buffered span: only what assembly reads, so the OTLP request's memory can be freed."""

    span_id: bytes
    parent_span_id: bytes
    service: str
    name: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict[str, Any]
    # The span's parent is in another process (W3C remote parent): for this app it is a root.
    remote_parent: bool = False
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @classmethod
    def from_proto(cls, span: Span, service: str, attrs: dict[str, Any]) -> TraceSpan:
        return cls(
            span_id=span.span_id,
            parent_span_id=span.parent_span_id,
            service=service,
            name=span.name,
            start_time_unix_nano=span.start_time_unix_nano,
            end_time_unix_nano=span.end_time_unix_nano,
            attributes=attrs,
            remote_parent=span.flags & _REMOTE_PARENT == _REMOTE_PARENT,
            events=[(e.name, attributes(e.attributes)) for e in span.events if e.name in KEPT_EVENTS],
        )

    @property
    def is_local_root(self) -> bool:
        return not self.parent_span_id or self.remote_parent

    @property
    def time_unix_nano(self) -> int:
        return int(self.end_time_unix_nano or self.start_time_unix_nano)


@dataclass
class Assembled:
    """A trace's triple and the span the record is named after (its id, time and service)."""

    triple: Triple
    span: TraceSpan


def by_start(spans: Iterable[TraceSpan]) -> list[TraceSpan]:
    return sorted(spans, key=lambda s: (s.start_time_unix_nano, s.end_time_unix_nano))


def topmost_ancestor(span: TraceSpan, spans: list[TraceSpan], keep: Callable[[TraceSpan], bool]) -> TraceSpan | None:
    """The highest ancestor of `span` (itself included) among `spans` for which `keep` holds: the
    convention's root of the pipeline run that did this retrieval, even under a web server's span."""
    parents = {s.span_id: s for s in spans}
    found = span if keep(span) else None
    seen = {span.span_id}
    node = parents.get(span.parent_span_id)
    while node is not None and node.span_id not in seen:
        seen.add(node.span_id)
        if keep(node):
            found = node
        node = parents.get(node.parent_span_id)
    return found


@dataclass
class Run:
    """The spans of one RAG answer. `outer`: the answer of a span that split into runs, given after
    them (a sub-question engine's synthesis, an agent's final LLM answer), whose spans hold its runs'."""

    spans: list[TraceSpan]
    outer: bool = False


def answer_units(
    spans: list[TraceSpan], is_retrieval: Callable[[TraceSpan], bool], is_answer: Callable[[TraceSpan], bool]
) -> list[Run]:
    """The trace cut into its RAG runs, each the spans of one subtree, in start order.

    A subtree is a run when it holds a retrieval and an answer span that starts after that
    retrieval ended (retrieve, then answer: a query rewrite's LLM before its retriever, or a
    reranker's LLM inside the reranker, is not one). Going down from the top, a span whose children
    hold two runs or more is split into them; otherwise the whole span is one run, whatever its
    inner structure (multi-query retrieval, a reranker, several LLM calls). So a trace with one run
    is one unit holding every span, exactly as before, and an agent that ran two RAG chains under
    one parent (or under a wrapper below it) gives two. A split span that also answered after a
    retrieval, outside its runs, is one more run, outer, after them: that answer, what the user
    saw, keeps its record. Retrievals outside every run of a split trace (before it, shared)
    belong to no answer but an outer one."""
    by_id = {s.span_id: s for s in spans}
    children: dict[bytes, list[TraceSpan]] = {}
    tops: list[TraceSpan] = []
    for span in by_start(spans):
        if span.parent_span_id in by_id and span.parent_span_id != span.span_id:
            children.setdefault(span.parent_span_id, []).append(span)
        else:
            tops.append(span)

    def subtree(span: TraceSpan) -> list[TraceSpan]:
        found, stack, seen = [], [span], set()
        while stack:
            node = stack.pop()
            if node.span_id not in seen:  # a malformed trace may loop
                seen.add(node.span_id)
                found.append(node)
                stack.extend(children.get(node.span_id, ()))
        return found

    def answers_after_retrieval(members: list[TraceSpan], answers: list[TraceSpan]) -> bool:
        ends = [s.end_time_unix_nano for s in members if is_retrieval(s)]
        return bool(ends) and any(s.start_time_unix_nano >= min(ends) for s in answers if is_answer(s))

    def split(heads: list[TraceSpan], whole: list[TraceSpan]) -> list[Run]:
        runs = [(head, members) for head in heads if answers_after_retrieval(members := subtree(head), members)]
        units = [unit for head, members in runs for unit in split(children.get(head.span_id, []), members)]
        # One run alone is searched below (a wrapper span over the agent's calls) but stays whole
        # unless it splits there.
        if len(units) < 2:
            return [Run(whole)]
        in_runs = {s.span_id for _, members in runs for s in members}
        if answers_after_retrieval(whole, [s for s in whole if s.span_id not in in_runs]):
            units.append(Run(whole, outer=True))
        return units

    return split(tops, spans)


def indexed(attrs: dict[str, Any], prefix: str, suffix: str) -> list[Any]:
    """Values of flattened list attributes `<prefix>.<i>.<suffix>`, in index order (OpenInference
    and OpenLLMetry flatten lists of documents and messages this way)."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\." + re.escape(suffix) + r"\Z")
    found = []
    for key, value in attrs.items():
        if key.startswith(prefix) and (m := pattern.match(key)):
            found.append((int(m.group(1)), value))
    return [v for _, v in sorted(found, key=lambda item: item[0])]


def decode_json(value: Any) -> Any:
    """A JSON string decoded, anything else (or a string that is not JSON) as it is."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def pick_text(value: Any, keys: tuple[str, ...]) -> str:
    """The text in a framework input or output: the string itself, or the first non-empty string
    under one of `keys` of a mapping (JSON strings are decoded first). Empty when there is none."""
    value = decode_json(value)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        for key in keys:
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
        # A serialised LangChain message: {"type": "ai", "data": {"content"}} (message_to_dict) or
        # {"lc": 1, "kwargs": {"content"}} (dumpd), as chains that end in a chat model return.
        for nested in ("data", "kwargs"):
            if isinstance(value.get(nested), dict):
                return pick_text(value[nested], keys)
    return ""


def document_text(doc: Any) -> str:
    """A retrieved document's text from the shapes instrumentors serialise: a string, LangChain's
    Document ({"page_content"} or its lc-serialised {"kwargs": {"page_content"}}), LlamaIndex nodes
    ({"text"}, {"node": {"text"}}) or GenAI / generic {"content"}."""
    if isinstance(doc, str):
        return doc
    if not isinstance(doc, dict):
        return ""
    for key in ("page_content", "content", "text"):
        text = doc.get(key)
        if isinstance(text, str):
            return text
    for nested in ("kwargs", "node"):
        if isinstance(doc.get(nested), dict):
            return document_text(doc[nested])
    return ""


def unique(texts: Iterable[str]) -> list[str]:
    """Non-empty texts in first-seen order, duplicates removed (several retrievers of one question,
    e.g. multi-query retrieval, return overlapping documents)."""
    return list(dict.fromkeys(t for t in texts if t))
