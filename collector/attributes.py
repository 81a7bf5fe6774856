"""OTLP AnyValue / KeyValue lists to plain Python values, and the test that spares a span no
convention reads from becoming any."""

from __future__ import annotations

from collections.abc import Container, Iterable
from operator import attrgetter
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, SpanFlags

# Distinct attribute keys whose test is remembered.
SEEN_KEYS = 4096

_STRING_VALUE = attrgetter("string_value")
_REMOTE_PARENT = SpanFlags.SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK


def any_value(v: AnyValue) -> Any:
    # Strings and arrays of strings first and inline: they are almost every RAG attribute, and this
    # runs for every attribute of every span (half the cost of the generic path).
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "array_value":
        values = v.array_value.values
        # string_value reads "" from an element of another kind: only those are looked at twice,
        # instead of a WhichOneof per element, and the strings are read by map, without a Python
        # loop (together a third of the array's cost besides the text itself; contexts are arrays).
        out = list(map(_STRING_VALUE, values))
        if "" in out:
            return [x.string_value if x.WhichOneof("value") == "string_value" else any_value(x) for x in values]
        return out
    if kind is None:
        return None
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, kind)


def attributes(kvs: Iterable[KeyValue], keys: Container[str] | None = None) -> dict[str, Any]:
    """The key-value list as a dict (the last of a repeated key wins); only `keys` when given, so
    a convention that reads a few keys does not pay for the values of the rest."""
    if keys is None:
        return {kv.key: any_value(kv.value) for kv in kvs}
    return {key: any_value(kv.value) for kv in kvs if (key := kv.key) in keys}


class ReadKeys:
    """The attribute keys and span event names the enabled conventions read at all. A span with none
    of them is read by no convention, and `may_matter(span)` says so from the keys alone, before any
    value becomes a Python object: an app's HTTP and DB spans, most of its traffic, cost a look at
    their keys. Over-inclusive by design (a prefix like `rag.`): a span it lets through takes the
    full path, which decides as before. With `keep_roots` (trace assembly on) a local root span is
    always let through: it may complete a buffered trace whatever its attributes."""

    def __init__(self, conventions: Iterable[str], keep_roots: bool) -> None:
        self._keep_roots = keep_roots
        # Imported here: the conventions' modules import this one.
        from ragpulse.collector.extract import genai, genai_events, openinference, openllmetry

        table: dict[str, tuple[set[str], tuple[str, ...], set[str]]] = {
            "native": (set(), ("rag.",), set()),  # rag.question, rag.contexts, rag.answer
            "openinference": ({openinference.SPAN_KIND}, (), set()),
            "openllmetry": ({openllmetry.OUTPUT_MESSAGES}, openllmetry._PREFIXES, {openllmetry.QUERY_RESULT}),
            "genai": ({genai.OPERATION, genai.INPUT_MESSAGES, genai.OUTPUT_MESSAGES}, (), set(genai_events.NAMES)),
        }
        keys: set[str] = set()
        prefixes: list[str] = []
        events: set[str] = set()
        for name in conventions:
            k, p, e = table[name]
            keys |= k
            prefixes += p
            events |= e
        self._keys = frozenset(keys)
        self._prefixes = tuple(prefixes)
        self._events = frozenset(events)
        # Keys already tested and the answer; bounded, since keys are the app's to choose (a key
        # per user id would otherwise grow it without end). Past the bound keys are tested afresh.
        self._seen: dict[str, bool] = {}

    def may_matter(self, span: Span) -> bool:
        if self._keep_roots and (not span.parent_span_id or span.flags & _REMOTE_PARENT == _REMOTE_PARENT):
            return True
        # An app's spans repeat a few dozen keys: one dict lookup per key instead of a set test and
        # a prefix scan was a third of the collector's CPU per span on mixed traffic.
        seen = self._seen
        for kv in span.attributes:
            key = kv.key
            read = seen.get(key)
            if read is None:
                read = self.reads(key)
                if len(seen) < SEEN_KEYS:
                    seen[key] = read
            if read:
                return True
        # Most spans have no events: the emptiness test spares them a generator (5 % of mixed traffic's CPU).
        events = span.events if self._events else None
        return bool(events) and any(e.name in self._events for e in events)

    def reads(self, key: str) -> bool:
        """Whether an enabled convention reads attribute `key`."""
        return key in self._keys or (bool(self._prefixes) and key.startswith(self._prefixes))
