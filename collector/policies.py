"""Tail-sampling policies: rules evaluated in order on each assembled record, the first that applies decides.

In the shape of the OpenTelemetry Collector's tailsamplingprocessor, with one difference that keeps
the estimates right: the first policy whose conditions hold decides (always, never, a probability,
a rate limit, the first records of a new prompt version), so the policies cut the traffic into
disjoint strata and each kept record's inclusion probability is known when it is decided; the
record carries the policy's name and its adjusted count (collector/sampling.py composes it with an
upstream sampler's). A record no policy applies to falls through to `sampling.per_service` and
`sampling.default_probability`.

State (rate-limit buckets, prompt versions seen) lives in this collector process and is bounded:
each collector of a fleet limits and counts on its own.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragpulse.core.settings import ConfigError, require, require_at_least, require_one_of, require_probability
from ragpulse.core.wire import ATTRIBUTE_ALLOW_LIST

TYPES = ("always", "never", "probabilistic", "rate_limit", "new_prompt_version")
# What a condition or a stratum can read: the record's labels and its allow-listed attributes.
FIELDS = ("service", "route", "model", *ATTRIBUTE_ALLOW_LIST)
PROMPT_VERSION = "rag.prompt_version"
# Keys that only some types read, and those types: setting one elsewhere is a mistake worth naming.
_TYPE_KEYS = {
    "probability": ("probabilistic", "new_prompt_version"),
    "records_per_s": ("rate_limit",),
    "burst": ("rate_limit",),
    "min_probability": ("rate_limit",),
    "by": ("rate_limit",),
    "first_records": ("new_prompt_version",),
    "max_strata": ("rate_limit", "new_prompt_version"),
}


@dataclass
class PolicyConfig:
    """One policy; its conditions (services, routes, attribute tests, error) must all hold for it to
    apply, and none set means every record."""

    # Names the policy in the record's sampling.rule and in ragpulse_sampling_decisions_total.
    name: str
    # always, never, probabilistic, rate_limit or new_prompt_version.
    type: str
    # Condition: the record's service is one of these.
    services: list[str] = field(default_factory=list)
    # Condition: the record's route (rag.route) is one of these.
    routes: list[str] = field(default_factory=list)
    # Condition: a record field (service, route, model) or allow-listed attribute, tested by values,
    # pattern, min_value and max_value.
    attribute: str = ""
    # The attribute is any of these, compared as text: "-1" matches rag.feedback = -1.
    values: list[str] = field(default_factory=list)
    # A regular expression searched in the attribute's text.
    pattern: str = ""
    # The attribute is a number at least this.
    min_value: float | None = None
    # The attribute is a number at most this.
    max_value: float | None = None
    # Condition: a span of the record's trace (for a single-span record, its span) has status ERROR.
    error: bool = False
    # probabilistic and new_prompt_version: the share of the records it takes that are kept.
    probability: float = 1.0
    # rate_limit: records kept per second in each stratum (the token bucket's refill).
    records_per_s: float = 0.0
    # rate_limit: the token bucket's size (0: records_per_s, at least 1): how many records a quiet
    # stratum may send at once and all be kept.
    burst: float = 0.0
    # rate_limit: the guaranteed minimum share of a stratum's records, kept however busy it is.
    min_probability: float = 0.0
    # rate_limit: the fields whose values make a stratum.
    by: list[str] = field(default_factory=lambda: ["service"])
    # new_prompt_version: how many records of each new (service, rag.prompt_version) the policy decides.
    first_records: int = 100
    # rate_limit and new_prompt_version: strata (or versions) remembered in this process; the least
    # recent is forgotten.
    max_strata: int = 1000

    def validate(self, where: str) -> None:
        where = f"{where} (policy {self.name!r})"
        require(bool(self.name.strip()), f"{where}.name", "a non-empty name", self.name)
        require_one_of(f"{where}.type", self.type, TYPES)
        defaults = PolicyConfig(self.name, self.type)
        for name, types in _TYPE_KEYS.items():
            if self.type not in types and getattr(self, name) != getattr(defaults, name):
                raise ConfigError(f"{where}.{name} is read only by type {' or '.join(types)}, not {self.type}")
        tests = self.values or self.pattern or self.min_value is not None or self.max_value is not None
        if self.attribute or tests:
            require_one_of(f"{where}.attribute", self.attribute, FIELDS)
            require(bool(tests), f"{where}", "given values, a pattern, min_value or max_value to test "
                    f"attribute {self.attribute!r} with", self.attribute)
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as e:
                raise ConfigError(f"{where}.pattern is not a regular expression: {e}") from e
        require_probability(f"{where}.probability", self.probability)
        require_probability(f"{where}.min_probability", self.min_probability)
        require_at_least(f"{where}.burst", self.burst, 0.0)
        require_at_least(f"{where}.first_records", self.first_records, 1)
        require_at_least(f"{where}.max_strata", self.max_strata, 1)
        if self.type == "rate_limit":
            require(self.records_per_s > 0.0, f"{where}.records_per_s", "above 0", self.records_per_s)
            for name in self.by:
                require_one_of(f"{where}.by", name, FIELDS)


@dataclass(slots=True)
class Subject:
    """What a policy looks at: an assembled record's labels and attributes, and its trace's status."""

    service: str
    route: str = ""
    model: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    error: bool = False

    def get(self, name: str) -> Any:
        if name == "service":
            return self.service
        if name == "route":
            return self.route
        if name == "model":
            return self.model
        return self.attributes.get(name)


class Action(Protocol):
    # The probability every record that reaches the policy gets, when it does not depend on state.
    fixed: float | None

    def probability(self, subject: Subject) -> float | None:
        """The probability the record is decided at, or None to pass it to the next policy."""


class Fixed:
    def __init__(self, probability: float) -> None:
        self.fixed = probability

    def probability(self, subject: Subject) -> float | None:
        return self.fixed


class RateLimit:
    """A token bucket per stratum whose fill is the keep probability: a full bucket keeps everything,
    an emptier one less, never less than min_probability. Each record drains the bucket by the share
    of a record it is expected to keep (its probability), so the kept rate settles at what the
    bucket refills (records_per_s) plus the guaranteed minimum. The probability depends only on
    when records arrived, never on any trace's randomness: the adjusted count 1/p of a kept record
    is exact (Horvitz-Thompson), and the decision is as consistent as the probability policy's."""

    fixed = None

    def __init__(self, config: PolicyConfig, clock: Callable[[], float]) -> None:
        self._rate = config.records_per_s
        self._burst = config.burst or max(1.0, config.records_per_s)
        self._floor = config.min_probability
        self._by = tuple(config.by)
        self._max = config.max_strata
        self._clock = clock
        # stratum → (tokens, when last refilled), least recently seen first.
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def probability(self, subject: Subject) -> float | None:
        stratum = tuple(str(subject.get(name) or "") for name in self._by)
        with self._lock:
            now = self._clock()
            tokens, then = self._buckets.pop(stratum, (self._burst, now))
            tokens = min(self._burst, tokens + (now - then) * self._rate)
            p = min(1.0, max(self._floor, tokens / self._burst))
            self._buckets[stratum] = (max(0.0, tokens - p), now)
            if len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        return p


class NewPromptVersion:
    """The first `first_records` records of each (service, rag.prompt_version) this process sees are
    decided here at `probability`; later ones, and records without a version, go on to the next
    policy. A version forgotten to stay within max_strata counts as new when it comes back."""

    fixed = None

    def __init__(self, config: PolicyConfig) -> None:
        self._p = config.probability
        self._first = config.first_records
        self._max = config.max_strata
        self._seen: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def probability(self, subject: Subject) -> float | None:
        version = subject.attributes.get(PROMPT_VERSION)
        if version is None or version == "":
            return None
        key = (subject.service, str(version))
        with self._lock:
            seen = self._seen.pop(key, 0)
            self._seen[key] = min(seen + 1, self._first)
            if len(self._seen) > self._max:
                self._seen.popitem(last=False)
        return self._p if seen < self._first else None


class Conditions:
    """A policy's conditions, compiled once (sets, a compiled pattern)."""

    def __init__(self, config: PolicyConfig) -> None:
        self._services = frozenset(config.services)
        self._routes = frozenset(config.routes)
        self._attribute = config.attribute
        self._values = frozenset(config.values)
        self._pattern = re.compile(config.pattern) if config.pattern else None
        self._min = config.min_value
        self._max = config.max_value
        self._error = config.error
        # Decidable from the service alone (before a trace is assembled).
        self.service_only = not (self._routes or self._attribute or self._error)
        self._none = self.service_only and not self._services

    def service_matches(self, service: str) -> bool:
        return not self._services or service in self._services

    def hold(self, subject: Subject) -> bool:
        if self._none:  # the fall-through default, met by every record
            return True
        if self._services and subject.service not in self._services:
            return False
        if self._routes and subject.route not in self._routes:
            return False
        if self._error and not subject.error:
            return False
        if self._attribute:
            return self._attribute_holds(subject.get(self._attribute))
        return True

    def _attribute_holds(self, value: Any) -> bool:
        if value is None:
            return False
        text = _text(value)
        if self._values and text not in self._values:
            return False
        if self._pattern is not None and self._pattern.search(text) is None:
            return False
        if self._min is not None or self._max is not None:
            number = _number(value)
            if number is None:
                return False
            if self._min is not None and number < self._min:
                return False
            if self._max is not None and number > self._max:
                return False
        return True


@dataclass(frozen=True)
class Policy:
    name: str
    conditions: Conditions
    action: Action


def compile_policies(configs: list[PolicyConfig], clock: Callable[[], float] = time.monotonic) -> list[Policy]:
    return [Policy(c.name, Conditions(c), _action(c, clock)) for c in configs]


def _action(config: PolicyConfig, clock: Callable[[], float]) -> Action:
    if config.type == "always":
        return Fixed(1.0)
    if config.type == "never":
        return Fixed(0.0)
    if config.type == "probabilistic":
        return Fixed(config.probability)
    if config.type == "rate_limit":
        return RateLimit(config, clock)
    return NewPromptVersion(config)


def evaluate(policies: list[Policy], subject: Subject) -> tuple[str, float] | None:
    """(policy name, probability) of the first policy that decides the record, or None."""
    for policy in policies:
        if policy.conditions.hold(subject):
            p = policy.action.probability(subject)
            if p is not None:
                return policy.name, p
    return None


def kept_before_assembly(policies: list[Policy], service: str, clears: Callable[[float], bool]) -> bool | None:
    """False only when the service and the trace's randomness are enough to tell that the record
    will be dropped: no policy ahead needs the assembled record or state of its own. None when no
    policy would decide it: the caller's fallback does."""
    for policy in policies:
        if not policy.conditions.service_only:
            return True
        if policy.conditions.service_matches(service):
            return policy.action.fixed is None or clears(policy.action.fixed)
    return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        number = float(str(value))
    except ValueError:
        return None
    return number if math.isfinite(number) else None
