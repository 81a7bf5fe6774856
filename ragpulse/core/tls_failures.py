"""Failed TLS handshakes on ragpulse's HTTP servers, sorted into a few reasons and counted
(ragpulse_tls_handshake_failures_total), so a client fleet with a stale CA or no client certificate
shows on a dashboard instead of only in the clients' logs.

The reasons are a closed set: OpenSSL's own reason codes are many and change between versions, and
each would be a label value.
"""

from __future__ import annotations

import ssl
import threading
import weakref
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog

FAMILY = "ragpulse_tls_handshake_failures_total"
REASONS = ("not_tls", "no_client_certificate", "client_certificate_rejected", "server_certificate_rejected",
           "timeout", "closed", "protocol")
# What a client that speaks no TLS at all makes OpenSSL say: plain HTTP, or any other bytes.
_NOT_TLS = frozenset({"HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL",
                      "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE"})

OnFailure = Callable[[str], None]

# One family per registry: the collector and the scorer share a registry when they run in one
# process, and each of their servers counts into it under its own `server` label.
_counters: weakref.WeakKeyDictionary[CollectorRegistry, Any] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def counter(registry: CollectorRegistry) -> Any:
    with _lock:
        family = _counters.get(registry)
        if family is None:
            family = _counters[registry] = catalog.counter(registry, FAMILY)
        return family


def counting(registry: CollectorRegistry, server: str) -> OnFailure:
    """A server's on-failure callback: counts the reason under `server`."""
    family = counter(registry)
    children = {reason: family.labels(server=server, reason=reason) for reason in REASONS}
    return lambda reason: children[reason].inc()


def reason(error: BaseException) -> str:
    """The counted reason of the exception a server-side handshake raised."""
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, ssl.SSLCertVerificationError):
        return "client_certificate_rejected"
    if isinstance(error, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError)):
        return "closed"
    code = getattr(error, "reason", None) or ""
    if code in _NOT_TLS:
        return "not_tls"
    if code == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "no_client_certificate"
    # The client's alert about our certificate: unknown CA, bad, expired, revoked, unsupported...
    if "ALERT" in code and ("CERTIFICATE" in code or code.endswith("UNKNOWN_CA")):
        return "server_certificate_rejected"
    return "protocol"
