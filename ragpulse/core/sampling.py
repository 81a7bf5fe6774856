"""Consistent probability sampling on the trace id, shared by the collector's sampler and the
scorer's budget pacer.

Every process makes the same decision for the same trace: the randomness is the trace id's low 56
bits (W3C Trace Context level 2 random trace ids), compared with a threshold as in OpenTelemetry's
consistent probability sampling: keep when R >= (1 - p) * 2^56.
"""

from __future__ import annotations

_RANDOM_BITS = 56
_SCALE = 1 << _RANDOM_BITS


def trace_randomness(trace_id: bytes) -> int:
    """The random part of a trace id: its low 56 bits."""
    return int.from_bytes(trace_id[-7:], "big")


def keeps(randomness: int, probability: float) -> bool:
    """Whether a trace with this randomness is kept at `probability`; a lower probability keeps a
    subset of what a higher one keeps."""
    return randomness >= round((1.0 - probability) * _SCALE)
