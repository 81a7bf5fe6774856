"""Reading the model's replies: the JSON object in the text, checked against the prompt's schema,
and the verdicts' probabilities from the token logprobs where the endpoint returns them."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any


class InvalidReply(ValueError):
    """The reply is not the JSON the schema asks for."""


@dataclass
class Reply:
    text: str
    logprobs: list[dict[str, Any]] | None


def parse_json_reply(text: str) -> Any:
    """The JSON object in a reply, tolerating a Markdown code fence or prose around it."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise InvalidReply("no JSON object in the reply")
    try:
        return json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise InvalidReply(f"invalid JSON: {exc.msg} at char {exc.pos}") from None


def check_schema(value: Any, schema: dict[str, Any], where: str = "$") -> None:
    """Validate against the subset of JSON Schema our prompts use (type, properties, required,
    additionalProperties, items, min/maxItems, minimum/maximum)."""
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            raise InvalidReply(f"{where}: expected an object")
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                raise InvalidReply(f"{where}: missing {name!r}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            if extra:
                raise InvalidReply(f"{where}: unexpected {sorted(extra)}")
        for name, sub in props.items():
            if name in value:
                check_schema(value[name], sub, f"{where}.{name}")
    elif kind == "array":
        if not isinstance(value, list):
            raise InvalidReply(f"{where}: expected an array")
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", math.inf):
            raise InvalidReply(
                f"{where}: {len(value)} items, expected {schema.get('minItems', 0)}..{schema.get('maxItems', 'any')}"
            )
        for i, item in enumerate(value):
            check_schema(item, schema.get("items", {}), f"{where}[{i}]")
    elif kind == "string":
        if not isinstance(value, str):
            raise InvalidReply(f"{where}: expected a string")
    elif kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidReply(f"{where}: expected true or false")
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidReply(f"{where}: expected an integer")
        if value < schema.get("minimum", -math.inf) or value > schema.get("maximum", math.inf):
            raise InvalidReply(f"{where}: {value} out of range")


def verdict_ids(obj: dict[str, Any], n: int) -> list[int]:
    """The statement index (0-based) of each verdict of a verify reply, in the reply's order. Every
    id 1..n exactly once: a reply that drops, repeats or invents one cannot be matched and is
    rejected, whatever its length."""
    ids = [v["id"] for v in obj["verdicts"]]
    if sorted(ids) != list(range(1, n + 1)):
        raise InvalidReply(f"verdict ids {ids}, expected each of 1..{n} once")
    return [i - 1 for i in ids]


_VERDICT = re.compile(r'"supported"\s*:\s*(true|false)')


def verdict_probabilities(reply: Reply, hard: list[bool]) -> list[float]:
    """P(supported) per statement from the logprobs of each verdict token, renormalised over the
    two answers the schema allows; the hard verdict where logprobs are absent or do not align."""
    fallback = [1.0 if h else 0.0 for h in hard]
    tokens = reply.logprobs
    if not tokens or "".join(t.get("token", "") for t in tokens) != reply.text:
        return fallback
    positions = [m.start(1) for m in _VERDICT.finditer(reply.text)]
    if len(positions) != len(hard):
        return fallback
    starts, offset = [], 0
    for t in tokens:
        starts.append(offset)
        offset += len(t["token"])
    out = []
    for pos, h in zip(positions, hard, strict=True):
        i = max(j for j, s in enumerate(starts) if s <= pos)
        prefix = reply.text[starts[i] : pos]  # text of the token before the verdict word, e.g. " "
        p_true = p_false = 0.0
        for alt in tokens[i].get("top_logprobs") or []:
            tok = alt.get("token", "")
            if not tok.startswith(prefix):
                continue
            rest = tok[len(prefix) :].strip().lower()
            if rest and "true".startswith(rest[:4]):
                p_true += math.exp(alt["logprob"])
            elif rest and "false".startswith(rest[:5]):
                p_false += math.exp(alt["logprob"])
        total = p_true + p_false
        out.append(p_true / total if total > 0 else (1.0 if h else 0.0))
    return out
