"""The collector's sampler: the tail-sampling policies, then a probability per service, decided
consistently on the trace's randomness and composed with an upstream sampler's threshold."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ragpulse.collector.policies import PolicyConfig, Subject, compile_policies, evaluate, kept_before_assembly
from ragpulse.core.sampling import Upstream, rejection_threshold, upstream
from ragpulse.core.settings import ConfigError, key, require_probability
from ragpulse.core.wire import Sampling

DEFAULT_RULE = "default"
# (rule, probability) pairs whose decision is remembered; bounded, since a rate_limit policy's
# probability changes with its traffic. Past the bound records are decided afresh.
PLAIN_DECISIONS = 1024
SERVICE_RULE_PREFIX = "service:"


@dataclass
class SamplingConfig:
    # Share of traces kept for scoring, decided on the trace's randomness so every collector keeps the
    # same ones.
    default_probability: float = 1.0
    # service.name → probability; a service not listed gets default_probability.
    per_service: dict[str, float] = field(default_factory=dict)
    # Tail-sampling policies, tried in order on each record before per_service and
    # default_probability; the first whose conditions hold decides (docs/sampling.md).
    policies: list[PolicyConfig] = field(default_factory=list)

    def validate(self, where: str) -> None:
        require_probability(key(where, "default_probability"), self.default_probability)
        for service, p in self.per_service.items():
            require_probability(key(where, f"per_service.{service}"), p)
        names: set[str] = set()
        for i, policy in enumerate(self.policies):
            at = key(where, f"policies[{i}]")
            policy.validate(at)
            if policy.name in names:
                raise ConfigError(f"{at}.name {policy.name!r} is used by an earlier policy: names must differ")
            if policy.name == DEFAULT_RULE or policy.name.startswith(SERVICE_RULE_PREFIX):
                raise ConfigError(f"{at}.name {policy.name!r} is reserved for per_service and default_probability")
            names.add(policy.name)


@dataclass(slots=True)
class Decision:
    # The policy that decided the record.
    rule: str
    # None when the record is dropped.
    sampling: Sampling | None
    upstream: Upstream


class ConsistentSampler:
    def __init__(self, config: SamplingConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._policies = compile_policies(config.policies, clock)
        # After the policies, per_service then default_probability: one dict lookup, however many
        # services are listed (a per-record cost on the collector's hot path).
        self._per_service = dict(config.per_service)
        self._default = config.default_probability
        # Where no upstream sampler set a threshold or rv (almost every trace), a kept record's
        # Sampling depends on the rule and probability alone, and so does the threshold the trace's
        # randomness must reach: by (rule, probability), from the first record kept under them.
        # Saves keep()'s arithmetic and a frozen dataclass per record (~1 of ~2.4 us).
        self._plain: dict[tuple[str, float], tuple[int, Sampling]] = {}

    def _fallback(self, service: str) -> tuple[str, float]:
        p = self._per_service.get(service)
        return (DEFAULT_RULE, self._default) if p is None else (f"{SERVICE_RULE_PREFIX}{service}", p)

    def decide(self, trace_id: bytes, subject: Subject, trace_state: str = "") -> Decision:
        """The decision on one assembled record of the trace (`trace_state`: its span's W3C tracestate)."""
        up = upstream(trace_id, trace_state)
        rule, p = evaluate(self._policies, subject) or self._fallback(subject.service)
        plain = not up.threshold and not up.explicit
        if plain and (known := self._plain.get((rule, p))) is not None:
            threshold, sampling = known
            return Decision(rule, sampling if up.randomness >= threshold else None, up)
        kept = up.keep(p)
        if kept is None:
            return Decision(rule, None, up)
        probability, adjusted = kept
        rv = f"{up.randomness:014x}" if up.explicit else ""
        sampling = Sampling(probability, adjusted, rule, rv)
        if plain and len(self._plain) < PLAIN_DECISIONS:
            self._plain[rule, p] = (rejection_threshold(p), sampling)
        return Decision(rule, sampling, up)

    def may_keep(self, trace_id: bytes, service: str, trace_state: str = "") -> bool:
        """False when a trace's records will be dropped whatever they hold, so its spans need not be
        buffered for assembly."""
        clears = upstream(trace_id, trace_state).clears
        known = kept_before_assembly(self._policies, service, clears)
        return known if known is not None else clears(self._fallback(service)[1])
