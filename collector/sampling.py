"""Consistent probabilistic sampling on the trace id.

Every collector makes the same decision for the same trace: the randomness is the trace id's
low 56 bits (W3C Trace Context level 2 random trace ids), compared with a threshold as in
OpenTelemetry's consistent probability sampling: keep when R >= (1 - p) * 2^56.
"""

from __future__ import annotations

from ragpulse.collector.record import Sampling
from ragpulse.config import SamplingConfig

_RANDOM_BITS = 56
_SCALE = 1 << _RANDOM_BITS


def trace_randomness(trace_id: bytes) -> int:
    """The random part of a trace id: its low 56 bits."""
    return int.from_bytes(trace_id[-7:], "big")


def keeps(randomness: int, probability: float) -> bool:
    """Whether a trace with this randomness is kept at `probability`; a lower probability keeps a
    subset of what a higher one keeps."""
    return randomness >= round((1.0 - probability) * _SCALE)


class ConsistentSampler:
    def __init__(self, config: SamplingConfig) -> None:
        self._default = config.default_probability
        self._per_service = dict(config.per_service)

    def rule(self, service: str) -> tuple[float, str]:
        if service in self._per_service:
            return self._per_service[service], f"service:{service}"
        return self._default, "default"

    def decide(self, trace_id: bytes, service: str) -> Sampling | None:
        probability, rule = self.rule(service)
        if probability <= 0.0:
            return None
        if not keeps(trace_randomness(trace_id), probability):
            return None
        return Sampling(probability=probability, adjusted_count=1.0 / probability, rule=rule)
