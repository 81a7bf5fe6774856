"""Consistent probability sampling on the trace's randomness, shared by the collector's sampler and the
scorer's budget pacer.

Every process makes the same decision for the same trace: the randomness R is the tracestate's
explicit `rv` when an upstream sampler set one, else the trace id's low 56 bits (W3C Trace Context
level 2 random trace ids), compared with a rejection threshold as in OpenTelemetry's consistent
probability sampling ("TraceState: Probability Sampling"): keep when R >= T, T = (1 - p) * 2^56.

An upstream sampler that kept a span at threshold T_up says so in its tracestate (`ot=th:...`): the
span stands for 2^56 / (2^56 - T_up) spans. Our own probabilities are shares of what arrives, so our
threshold is T_up + (1 - p) * (2^56 - T_up), never below T_up: what we keep is a subset of what
upstream kept on the same R, and adjusted counts multiply.
"""

from __future__ import annotations

from dataclasses import dataclass

_RANDOM_BITS = 56
_SCALE = 1 << _RANDOM_BITS
_HEX_DIGITS = _RANDOM_BITS // 4
_HEX = frozenset("0123456789abcdef")


def trace_randomness(trace_id: bytes) -> int:
    """The random part of a trace id: its low 56 bits."""
    return int.from_bytes(trace_id[-7:], "big")


def keeps(randomness: int, probability: float) -> bool:
    """Whether a trace with this randomness is kept at `probability`; a lower probability keeps a
    subset of what a higher one keeps."""
    return randomness >= round((1.0 - probability) * _SCALE)


@dataclass(slots=True)
class Upstream:
    """A trace's randomness and what an upstream sampler said about it.

    outcome: none (no `ot` threshold), threshold (honoured), invalid (a malformed `th` or `rv`,
    ignored), inconsistent (R is below the threshold, so upstream did not decide on this randomness:
    its count is kept, but our threshold starts from 0 instead of T_up).
    """

    randomness: int
    threshold: int = 0
    outcome: str = "none"
    # Set when R came from the tracestate's rv rather than the trace id.
    explicit: bool = False

    @property
    def adjusted_count(self) -> float:
        return _SCALE / (_SCALE - self.threshold)

    def keep(self, probability: float) -> tuple[float, float] | None:
        """(probability, adjusted count) of a record kept at `probability`, None when it is dropped.

        Our threshold keeps `probability` of what upstream kept. The returned probability is the
        share of randomness values it lets through (what a later consistent stage, the scorer's
        pacer, compares R with); the adjusted count is how many records the record stands for,
        upstream's count included."""
        if probability <= 0.0:
            return None
        base = 0 if self.outcome == "inconsistent" else self.threshold
        threshold = rejection_threshold(probability, base)
        if self.randomness < threshold:
            return None
        return (_SCALE - threshold) / _SCALE, self.adjusted_count * (_SCALE - base) / (_SCALE - threshold)

    def clears(self, probability: float) -> bool:
        return self.keep(probability) is not None


def rejection_threshold(probability: float, base: int = 0) -> int:
    """The threshold that keeps `probability` (above 0) of the randomness values at or above `base`
    (upstream's threshold): R >= it is kept."""
    return _SCALE - round(probability * (_SCALE - base))


def upstream(trace_id: bytes, trace_state: str) -> Upstream:
    """The trace's randomness and upstream threshold from its W3C tracestate (OTLP Span.trace_state)."""
    if "ot=" not in trace_state:  # the common case: no upstream sampler said anything
        return Upstream(trace_randomness(trace_id))
    fields = _ot_fields(trace_state)
    th, rv = fields.get("th"), fields.get("rv")
    parsed_th = _threshold(th) if th is not None else 0
    parsed_rv = _randomness(rv) if rv is not None else None
    threshold = parsed_th or 0  # a malformed th is ignored: the span counts as kept at 100 %
    randomness = trace_randomness(trace_id) if parsed_rv is None else parsed_rv
    if randomness < threshold:
        outcome = "inconsistent"
    elif parsed_th is None or (rv is not None and parsed_rv is None):
        outcome = "invalid"
    else:
        outcome = "none" if th is None else "threshold"
    return Upstream(randomness, threshold, outcome, parsed_rv is not None)


def _ot_fields(trace_state: str) -> dict[str, str]:
    """The `ot` member's sub-keys (`th:c;rv:...` → {th: c, rv: ...}); the list is comma separated
    with optional spaces or tabs."""
    for member in trace_state.split(","):
        name, _, value = member.strip(" \t").partition("=")
        if name == "ot":
            return dict(part.partition(":")[::2] for part in value.split(";"))
    return {}


def _threshold(th: str) -> int | None:
    """`th`: 1 to 14 lowercase hex digits with trailing zeros dropped; th:0 keeps everything."""
    if not 1 <= len(th) <= _HEX_DIGITS or not _HEX.issuperset(th):
        return None
    return int(th.ljust(_HEX_DIGITS, "0"), 16)


def _randomness(rv: str) -> int | None:
    """`rv`: exactly 14 lowercase hex digits."""
    if len(rv) != _HEX_DIGITS or not _HEX.issuperset(rv):
        return None
    return int(rv, 16)
