"""What every convention extracts from a span, and how it says a span's RAG data is unusable."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from ragpulse.core.wire import ATTRIBUTE_ALLOW_LIST


class ExtractRejection(Exception):
    """The span carries RAG attributes that cannot make a record. `reason` labels the counter;
    the message goes back to the client in OTLP's partial-success error_message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class Triple:
    question: str
    contexts: list[str]
    answer: str
    route: str = ""
    model: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)


ROUTE = "rag.route"
# What make_triple reads of the answering span's attributes.
READS = frozenset({ROUTE, *ATTRIBUTE_ALLOW_LIST})


def make_triple(question: str, contexts: list[str], answer: str, model: str, attrs: dict[str, Any]) -> Triple:
    """A triple with the route and the allow-listed attributes taken from the span that answered.
    Raises ExtractRejection for a kept attribute that holds bytes (OTLP's bytes_value), which the
    record's JSON cannot carry."""
    kept = {k: attrs[k] for k in ATTRIBUTE_ALLOW_LIST if k in attrs}
    for key, value in kept.items():
        if _holds_bytes(value):
            raise ExtractRejection("attribute_not_text", f"{key} must be a string, number, boolean or a list of "
                                                         "them, not bytes")
    return Triple(
        question=question,
        contexts=contexts,
        answer=answer,
        route=str(attrs.get(ROUTE, "")),
        model=model,
        attributes=kept,
    )


def _holds_bytes(value: Any) -> bool:
    if isinstance(value, bytes):
        return True
    if isinstance(value, list):
        return any(map(_holds_bytes, value))
    if isinstance(value, dict):
        return any(map(_holds_bytes, value.values()))
    return False


def string_list(value: Any, key: str) -> list[str]:
    """A list of strings; a string holding a JSON array is accepted because several SDKs can only
    set scalar attributes and serialise lists."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, list):
            raise ExtractRejection(
                "contexts_not_list", f"{key} must be a string array (or a JSON array string), got a plain string"
            )
        value = decoded
    if not isinstance(value, list) or not all(map(isinstance, value, repeat(str))):
        raise ExtractRejection("contexts_not_list", f"{key} must be an array of strings")
    return value
