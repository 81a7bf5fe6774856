"""Who may talk to ragpulse's HTTP servers: the Host header check and authentication, applied to a
request's headers before its body is read (the OTLP/HTTP receiver, /metrics and the live page).

Host check (DNS rebinding): a web page on a name its attacker controls can point that name at
127.0.0.1 and then read ragpulse's pages, or post spans, as its own origin; the browser still sends
the attacker's name as Host. So a name must be one ragpulse was told about (`allowed_hosts`, by
default `localhost` and the bound host when that is a name). A Host that is an IP address is
accepted: a browser sends one only to a page loaded from that very address, which rebinding cannot
forge, and Prometheus and the kubelet scrape and probe pods by IP. The answer otherwise is 421
Misdirected Request.

Authentication, after the OpenTelemetry Collector's `bearertokenauth`: `Authorization: Bearer
<token>` with one of `bearer_tokens`, or HTTP basic with a user of `basic_users` (what a browser can
send: it asks for them). Secrets are compared in constant time, every configured one every time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

from ragpulse.core.settings import ConfigError, key

REALM = "ragpulse"


@dataclass
class AuthConfig:
    # Tokens accepted as `Authorization: Bearer <token>`; empty (and no basic_users): no
    # authentication. Set them from the environment (a JSON list), not in a file under version control.
    bearer_tokens: list[str] = field(default_factory=list)
    # user → password accepted as HTTP basic authentication (a browser asks for them).
    basic_users: dict[str, str] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return bool(self.bearer_tokens or self.basic_users)

    def validate(self, where: str) -> None:
        for i, token in enumerate(self.bearer_tokens):
            # HTTP header values are visible ASCII; a token with a space or newline could never match.
            if not token or not token.isascii() or not token.isprintable() or " " in token:
                raise ConfigError(f"{key(where, 'bearer_tokens')}[{i}] must be non-empty printable ASCII "
                                  "without spaces")
        for user, password in self.basic_users.items():
            if not user or ":" in user or not password:
                raise ConfigError(f"{key(where, 'basic_users')}: user {user!r} needs a name without ':' "
                                  "and a non-empty password")


@dataclass(frozen=True)
class Refusal:
    status: int  # 421 or 401
    reason: str  # "host" or "unauthenticated": the reason label where refusals are counted
    message: str
    headers: Mapping[str, str]


class RequestGuard:
    def __init__(self, auth: AuthConfig, allowed_hosts: list[str], bound_host: str) -> None:
        self._tokens = [t.encode() for t in auth.bearer_tokens]
        self._users = [(u.encode(), p.encode()) for u, p in auth.basic_users.items()]
        self._names = host_names(allowed_hosts, bound_host)
        challenges = []
        if self._users:
            challenges.append(f'Basic realm="{REALM}", charset="UTF-8"')
        if self._tokens:
            challenges.append(f'Bearer realm="{REALM}"')
        self._challenge = ", ".join(challenges)

    @property
    def authenticates(self) -> bool:
        return bool(self._tokens or self._users)

    def check(self, host: str | None, authorization: str | None, authenticate: bool = True) -> Refusal | None:
        """None when the request may go on. `authenticate=False` checks the Host only."""
        if not self.host_allowed(host):
            return Refusal(421, "host", f"Host {host!r} is not one this server answers to; add it to allowed_hosts",
                           {})
        if authenticate and self.authenticates and not self.authorized(authorization):
            return Refusal(401, "unauthenticated", "missing or wrong credentials",
                           {"WWW-Authenticate": self._challenge})
        return None

    def host_allowed(self, host: str | None) -> bool:
        if self._names is None:
            return True
        name = _host_name(host)
        if name is None:
            return False
        return _is_ip(name) or name in self._names

    def authorized(self, authorization: str | None) -> bool:
        scheme, _, credentials = (authorization or "").strip().partition(" ")
        credentials = credentials.strip()
        if scheme.lower() == "bearer" and self._tokens:
            return _any_equal(credentials.encode("utf-8", "replace"), self._tokens)
        if scheme.lower() == "basic" and self._users:
            try:
                user, _, password = base64.b64decode(credentials, validate=True).partition(b":")
            except (binascii.Error, ValueError):
                return False
            matched = False
            for known_user, known_password in self._users:
                # Both compared, for every user: the time says nothing about which part was wrong.
                same_user = hmac.compare_digest(user, known_user)
                matched |= hmac.compare_digest(password, known_password) and same_user
            return matched
        return False


def _any_equal(given: bytes, known: list[bytes]) -> bool:
    matched = False
    for secret in known:
        matched |= hmac.compare_digest(given, secret)
    return matched


def host_names(allowed_hosts: list[str], bound_host: str) -> frozenset[str] | None:
    """The names a Host header may carry (lower case, no port); None: any (an entry "*")."""
    if "*" in allowed_hosts:
        return None
    names = {h.strip().lower().rstrip(".") for h in allowed_hosts}
    if not allowed_hosts:
        names = {"localhost"}
        if bound_host and not _is_ip(bound_host):
            names.add(bound_host.lower())
    return frozenset(names)


def _host_name(host: str | None) -> str | None:
    """The name or address of a Host header value, without its port; None when it is not one."""
    if not host:
        return None
    host = host.strip().lower()
    if host.startswith("["):  # [v6]:port
        end = host.find("]")
        return host[1:end] if end > 0 else None
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit():
        host = name
    return host.rstrip(".") or None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def validate_allowed_hosts(where: str, allowed_hosts: list[str]) -> None:
    for name in allowed_hosts:
        if not name.strip() or any(c in name for c in " /:@[]"):
            raise ConfigError(f"{where}: {name!r} must be a host name without port or scheme (or '*' for any)")
