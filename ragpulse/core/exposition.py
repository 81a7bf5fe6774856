"""Where /metrics is served, who may read it, and how label values from spans are bounded. Section
`prometheus`, read by the collector's and the scorer's telemetry alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.http_guard import AuthConfig, RequestGuard, validate_allowed_hosts
from ragpulse.core.labels import CombinationGuard, LabelBounds, LabelGuard
from ragpulse.core.settings import key, require_at_least
from ragpulse.core.tls import TlsConfig


@dataclass
class PrometheusConfig:
    # /metrics and the live page (port 0: the system picks one, the start-up line prints it).
    endpoint: str = "127.0.0.1:9464"
    # Names the Host header may carry on /metrics and the live page (no port); empty: localhost
    # and the endpoint's host if it is a name. An IP address is always accepted (DNS rebinding
    # cannot forge one, and Prometheus scrapes pods by IP); other names get 421. "*" accepts any.
    allowed_hosts: list[str] = field(default_factory=list)
    # Credentials /metrics and the live page require (bearer tokens for Prometheus's
    # `authorization`, basic users for its `basic_auth` and for browsers); /healthz stays open.
    auth: AuthConfig = field(default_factory=AuthConfig)
    # TLS on /metrics and the live page (Prometheus's `scheme: https` and `tls_config`).
    tls: TlsConfig = field(default_factory=TlsConfig)
    # Add a `route` label to the score histograms.
    route_label: bool = False
    # Allowed label values for service / route; empty means first `label_cap` values seen.
    service_allow_list: list[str] = field(default_factory=list)
    route_allow_list: list[str] = field(default_factory=list)  # likewise for route
    # Without an allow-list, the first this many values seen of service, route and model; later
    # ones become `other`.
    label_cap: int = 50
    # Longer span values are cut to this many characters (ending in …) before becoming a label.
    label_max_chars: int = 128
    # Distinct (service, route, model) combinations exported; later ones keep their service and
    # become (service, other, other), so the per-label caps cannot multiply.
    max_label_combinations: int = 500

    def validate(self, where: str) -> None:
        parse_endpoint(self.endpoint, key(where, "endpoint"))
        require_at_least(key(where, "label_cap"), self.label_cap, 1)
        require_at_least(key(where, "label_max_chars"), self.label_max_chars, 16)
        require_at_least(key(where, "max_label_combinations"), self.max_label_combinations, 1)
        validate_allowed_hosts(key(where, "allowed_hosts"), self.allowed_hosts)

    def guard(self, bound_host: str) -> RequestGuard:
        return RequestGuard(self.auth, self.allowed_hosts, bound_host)

    def label_bounds(self) -> LabelBounds:
        """New bounds for one process; build them once and hand them to every part that exports
        span values as labels."""
        return LabelBounds(
            service=LabelGuard(tuple(self.service_allow_list), self.label_cap, self.label_max_chars),
            route=LabelGuard(tuple(self.route_allow_list), self.label_cap, self.label_max_chars),
            # Models have no allow-list: the first `label_cap` values seen.
            model=LabelGuard(cap=self.label_cap, max_chars=self.label_max_chars),
            combinations=CombinationGuard(self.max_label_combinations),
        )
