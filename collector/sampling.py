"""The collector's sampler: a probability per service, decided consistently on the trace id."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpulse.core.sampling import keeps, trace_randomness
from ragpulse.core.settings import key, require_probability
from ragpulse.core.wire import Sampling


@dataclass
class SamplingConfig:
    # Share of traces kept for scoring, decided on the trace id so every collector keeps the same ones.
    default_probability: float = 1.0
    # service.name → probability; a service not listed gets default_probability.
    per_service: dict[str, float] = field(default_factory=dict)

    def validate(self, where: str) -> None:
        require_probability(key(where, "default_probability"), self.default_probability)
        for service, p in self.per_service.items():
            require_probability(key(where, f"per_service.{service}"), p)


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
