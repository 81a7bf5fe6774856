"""OTLP AnyValue / KeyValue lists to plain Python values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def any_value(v: AnyValue) -> Any:
    # Strings and arrays of strings first and inline: they are almost every RAG attribute, and this
    # runs for every attribute of every span (half the cost of the generic path).
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "array_value":
        return [x.string_value if x.WhichOneof("value") == "string_value" else any_value(x)
                for x in v.array_value.values]
    if kind is None:
        return None
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, kind)


def attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}
