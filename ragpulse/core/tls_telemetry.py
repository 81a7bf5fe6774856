"""What ragpulse's TLS servers count: failed handshakes on the HTTP servers, sorted into a few
reasons (ragpulse_tls_handshake_failures_total), so a client fleet with a stale CA or no client
certificate shows on a dashboard instead of only in the clients' logs; and certificate reloads
(ragpulse_tls_reloads_total, tls.reload_interval_s), so a renewal that did not load shows too.

The reasons are a closed set: OpenSSL's own reason codes are many and change between versions, and
each would be a label value.
"""

from __future__ import annotations

import ssl
import threading
import weakref
from typing import Any

from prometheus_client import CollectorRegistry

from ragpulse.core import telemetry_catalog as catalog

HANDSHAKE_FAILURES = "ragpulse_tls_handshake_failures_total"
RELOADS = "ragpulse_tls_reloads_total"
REASONS = ("not_tls", "no_client_certificate", "client_certificate_rejected", "server_certificate_rejected",
           "timeout", "closed", "protocol")
# What a client that speaks no TLS at all makes OpenSSL say: plain HTTP, or any other bytes.
_NOT_TLS = frozenset({"HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "WRONG_VERSION_NUMBER", "UNKNOWN_PROTOCOL",
                      "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE"})

# The families per registry: the collector and the scorer share a registry when they run in one
# process, and each of their servers counts into it under its own `server` label.
_families: weakref.WeakKeyDictionary[CollectorRegistry, dict[str, Any]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _family(registry: CollectorRegistry, name: str) -> Any:
    with _lock:
        families = _families.setdefault(registry, {})
        if name not in families:
            families[name] = catalog.counter(registry, name)
        return families[name]


class TlsCounts:
    """One server's counts (`server`: otlp_http, otlp_grpc, metrics, page). `handshakes`: whether
    the server can see its failed handshakes (grpc cannot); without, no series shows zeros forever."""

    def __init__(self, registry: CollectorRegistry, server: str, handshakes: bool = True) -> None:
        failures = _family(registry, HANDSHAKE_FAILURES)
        reloads = _family(registry, RELOADS)
        self._failures = {reason: failures.labels(server=server, reason=reason)
                          for reason in (REASONS if handshakes else ())}
        self._reloads = {ok: reloads.labels(server=server, outcome="ok" if ok else "failed") for ok in (True, False)}

    def handshake_failed(self, reason: str) -> None:
        self._failures[reason].inc()

    def reloaded(self, ok: bool) -> None:
        self._reloads[ok].inc()


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
