"""The wire formats between ragpulse processes, each versioned: the record (ragpulse.records), the
scores message (ragpulse.scores) and the dead-letter envelope (ragpulse.dlq).

All are compact UTF-8 JSON objects. A reader refuses a record of another major version; minor
additions keep the major.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

RECORD_MAJOR = 1
RECORD_VERSION = f"{RECORD_MAJOR}.0"
# 1.1: each metric names the judge that gave it ("judge"), and a record the judge cascade sent to
# the expensive judge carries the offline judge's view beside it ("offline"). A 1.0 message has
# neither: its one judge gave every metric.
SCORES_VERSION = "1.1"

# Attributes copied onto the record besides the triple; everything else stays in the trace.
ATTRIBUTE_ALLOW_LIST = ("rag.prompt_version", "rag.feedback", "deployment.environment", "service.version",
                        "rag.reference", "rag.samples")


def wire_json(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, the encoding of every ragpulse topic (records, scores, dead letters)."""
    return orjson.dumps(message)


class RecordError(ValueError):
    """A payload that is not a valid record; `reason` is a short stable label for counters."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Sampling:
    # The share of trace randomness values the kept threshold lets through: what a later consistent
    # stage (the scorer's pacer) compares the same randomness with.
    probability: float
    # How many records this one stands for, an upstream sampler's count (tracestate th) included.
    adjusted_count: float
    # The sampling policy that kept the record.
    rule: str
    # The tracestate's explicit randomness (rv, 14 hex digits) when the decision used it instead of
    # the trace id's low 56 bits; written only when set, so records without it are unchanged.
    rv: str = ""


@dataclass(frozen=True)
class Record:
    trace_id: str
    span_id: str
    service: str
    question: str
    contexts: list[str]
    answer: str
    time_unix_nano: int
    sampling: Sampling
    route: str = ""
    model: str = ""
    truncated: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    v: str = RECORD_VERSION

    @property
    def id(self) -> str:
        return record_id(self.trace_id, self.span_id)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self.trace_id, self.span_id, self.service, self.question, self.contexts, self.answer,
                           self.time_unix_nano, self.sampling, self.route, self.model, self.truncated,
                           self.attributes, self.v)

    def to_json(self) -> bytes:
        return wire_json(self.to_dict())

    @classmethod
    def from_json(cls, payload: bytes | str) -> Record:
        try:
            d = orjson.loads(payload)
        except orjson.JSONDecodeError as e:
            raise RecordError("invalid_json", str(e)) from e
        if not isinstance(d, dict):
            raise RecordError("invalid_record", "record is not a JSON object")
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        version = str(d.get("v", ""))
        major = version.split(".", 1)[0]
        if major != str(RECORD_MAJOR):
            raise RecordError(
                "unsupported_version",
                f"record version {version!r} has major {major!r}; this scorer reads major {RECORD_MAJOR}",
            )
        for key, typ in (("trace_id", str), ("span_id", str), ("service", str), ("question", str),
                         ("answer", str), ("time_unix_nano", int)):
            if not isinstance(d.get(key), typ):
                raise RecordError("invalid_record", f"field {key!r} must be {typ.__name__}")
        contexts = d.get("contexts")
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise RecordError("invalid_record", "field 'contexts' must be a list of strings")
        s = d.get("sampling")
        if not isinstance(s, dict):
            raise RecordError("invalid_record", "field 'sampling' must be an object")
        try:
            sampling = Sampling(float(s["probability"]), float(s["adjusted_count"]), str(s["rule"]),
                                str(s.get("rv") or ""))
        except (KeyError, TypeError, ValueError) as e:
            raise RecordError("invalid_record", f"field 'sampling' is incomplete: {e}") from e
        attributes = d.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise RecordError("invalid_record", "field 'attributes' must be an object")
        return cls(
            trace_id=d["trace_id"],
            span_id=d["span_id"],
            service=d["service"],
            question=d["question"],
            contexts=list(contexts),
            answer=d["answer"],
            time_unix_nano=d["time_unix_nano"],
            sampling=sampling,
            route=str(d.get("route") or ""),
            model=str(d.get("model") or ""),
            truncated=bool(d.get("truncated", False)),
            attributes=attributes,
            v=version,
        )


def record_id(trace_id: str, span_id: str) -> str:
    return f"{trace_id}-{span_id}"


def record_dict(
    trace_id: str, span_id: str, service: str, question: str, contexts: list[str], answer: str,
    time_unix_nano: int, sampling: Sampling, route: str, model: str, truncated: bool, attributes: dict[str, Any],
    v: str = RECORD_VERSION,
) -> dict[str, Any]:
    """A record's fields as its JSON object, in the contract's key order. The collector calls it
    without building a Record: the frozen dataclass's __init__ cost as much as the JSON itself."""
    # Built by hand: dataclasses.asdict deep-copies every field and was half the collector's CPU
    # per span.
    sampling_dict: dict[str, Any] = {"probability": sampling.probability, "adjusted_count": sampling.adjusted_count,
                                     "rule": sampling.rule}
    if sampling.rv:
        sampling_dict["rv"] = sampling.rv
    return {
        "v": v,
        "id": record_id(trace_id, span_id),
        "trace_id": trace_id,
        "span_id": span_id,
        "service": service,
        "route": route,
        "model": model,
        "time_unix_nano": time_unix_nano,
        "question": question,
        "contexts": contexts,
        "answer": answer,
        "sampling": sampling_dict,
        "truncated": truncated,
        "attributes": attributes,
    }


def scores_message(
    record: Record,
    metrics: dict[str, dict[str, Any]],
    judge: dict[str, str],
    usage: dict[str, Any],
    latency_s: float,
    offline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One scored record: each metric's value or failure (with its detail and judge), the judge,
    its usage; `offline`, the offline judge's {judge, metrics} where the cascade also asked the
    expensive judge."""
    message = {
        "v": SCORES_VERSION,
        "record_id": record.id,
        "trace_id": record.trace_id,
        "service": record.service,
        "route": record.route,
        "model": record.model,
        "time_unix_nano": record.time_unix_nano,
        "adjusted_count": record.sampling.adjusted_count,
        "metrics": metrics,
        "judge": judge,
        "usage": usage,
        "latency_s": round(latency_s, 4),
    }
    if offline is not None:
        message["offline"] = offline
    return message


def dead_letter_envelope(payload: bytes, reason: str, detail: str, attempts: int) -> dict[str, Any]:
    """The DLQ message: the reason, and the original payload kept byte for byte when it is text."""
    try:
        original: Any = payload.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        original = payload.hex()
        encoding = "hex"
    return {"reason": reason, "detail": detail, "attempts": attempts,
            "payload": original, "payload_encoding": encoding}
